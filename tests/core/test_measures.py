"""core.mechanism.measures: RoPE's pairing and norm checks against a rotation written in numpy, and a cached step's
fixed and per-key multiply-adds against core.kv_cache.decode_step_macs at many lengths."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core.mechanism import kv_cache, measures, positional


def _rotate_adjacent(x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
    """Pairs (2i, 2i+1) turned by m·θ_i, θ_i = base^(−2i/d), in numpy."""
    d = x.shape[-1]
    theta = positions[:, None] * base ** (-np.arange(0, d, 2) / d)
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = a * np.cos(theta) - b * np.sin(theta), a * np.sin(theta) + b * np.cos(theta)
    return out


@pytest.mark.parametrize("pairing", ["adjacent", "half"])
def test_rope_keeps_lengths_and_the_gap_says_so(pairing):
    q = torch.randn(8, generator=torch.Generator().manual_seed(1))
    gap = measures.rope_norm_gap(q, 12, base=100.0, pairing=pairing)
    rotated = _rotate_adjacent(np.tile(q.double().numpy(), (12, 1)), np.arange(12.0), 100.0)
    want = np.abs(np.linalg.norm(rotated, axis=-1) - np.linalg.norm(q.double().numpy())).max()
    assert gap < 1e-5 and want < 1e-12


def test_the_two_pairings_are_one_rotation():
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(2))
    assert measures.rope_pairing_gap(x, base=100.0) < 1e-5
    np.testing.assert_allclose(positional.rope(x, base=100.0, pairing="adjacent").numpy(),
                               _rotate_adjacent(x.double().numpy(), np.arange(6.0), 100.0), atol=1e-5)
    # and the gap sees a difference: the half pairing without the permutation is another rotation
    assert torch.max(torch.abs(positional.rope(x, base=100.0, pairing="half")
                               - positional.rope(x, base=100.0, pairing="adjacent"))) > 1e-2


def test_the_dims_a_pair_turns():
    assert measures.rope_pair_dims(1, 8, "adjacent") == (2, 3)
    assert measures.rope_pair_dims(1, 8, "half") == (1, 5)
    perm = positional.rope_permutation(8).tolist()  # pair i's dims in the half layout are perm's i and i + d/2
    assert (perm[measures.rope_pair_dims(1, 8, "half")[0]], perm[measures.rope_pair_dims(1, 8, "half")[1]]) == (2, 3)


@pytest.mark.parametrize("shape", [(16, 4, 2), (64, 8, 8), (576, 9, 3)])
def test_a_cached_step_is_a_fixed_part_plus_one_per_key(shape):
    d, H, G = shape
    parts = measures.decode_step_parts(d, H, G)
    assert parts["macs_per_key"] == H * 2 * (d // H)  # a score and a weighted value per head and key
    for n in (1, 5, 100):
        assert kv_cache.decode_step_macs(d_model=d, n_heads=H, n_kv_heads=G, d_head=d // H, length=n) == \
            parts["macs_fixed"] + parts["macs_per_key"] * n
