r"""Positional information (C23, C24).

Sinusoidal encoding of the Transformer:

    PE[pos, 2i]   = sin(pos / 10000^{2i/d})
    PE[pos, 2i+1] = cos(pos / 10000^{2i/d})
"""

from __future__ import annotations

import torch

from .seeded import seeded_normal


def _check(n: int, d: int) -> None:
    for name, val in (("n", n), ("d", d)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")


def sinusoidal(n: int, d: int, *, base: float = 10000.0, dtype=torch.float32, device=None) -> torch.Tensor:
    """Sinusoidal table (n, d): row = position, column = dimension (odd d drops the last cosine)."""
    _check(n, d)
    pos = torch.arange(n, dtype=torch.float64, device=device).unsqueeze(1)  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64, device=device)  # (⌈d/2⌉,)
    angle = pos / base ** (two_i / d)  # (n, ⌈d/2⌉)
    pe = torch.zeros(n, d, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe.to(dtype)


def learned(n: int, d: int, *, seed: int = 0, std: float = 0.5, dtype=torch.float32, device=None) -> torch.Tensor:
    """A learned-style table (n, d): one trainable vector per position, here seeded random N(0, std²)."""
    _check(n, d)
    return seeded_normal((n, d), seed=seed, salt="positional.learned", std=std, dtype=dtype, device=device)


def add(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """x̃_i = x_i + p_i  (n, d) + (n, d) → (n, d)."""
    if x.shape != pe.shape:
        raise ValueError(f"cannot add positions {tuple(pe.shape)} to embeddings {tuple(x.shape)}")
    return x + pe


def concat(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """x̃_i = [x_i ; p_i]  (n, d) ⊕ (n, d_p) → (n, d + d_p)."""
    if x.shape[:-1] != pe.shape[:-1]:
        raise ValueError(f"cannot concatenate positions {tuple(pe.shape)} to embeddings {tuple(x.shape)}")
    return torch.cat([x, pe], dim=-1)
