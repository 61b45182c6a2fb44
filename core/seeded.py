"""Deterministic random numbers: the same (seed, salt) always gives the same tensor,
in any process, on any machine (no dependence on Python's hash randomisation)."""

from __future__ import annotations

import hashlib

import torch


def derive_seed(seed: int, salt: str) -> int:
    """A 63-bit generator seed from a user seed and a text label."""
    digest = hashlib.sha256(f"{int(seed)}\x1f{salt}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def seeded_normal(shape, *, seed: int, salt: str, std: float = 1.0, dtype=torch.float32, device=None) -> torch.Tensor:
    """N(0, std²) samples of ``shape``, drawn on CPU with a private generator, then moved."""
    gen = torch.Generator().manual_seed(derive_seed(seed, salt))
    x = torch.randn(tuple(shape), generator=gen, dtype=torch.float64) * std
    return x.to(dtype=dtype, device=device)
