"""Checks and counts read off the mechanism that the pages show as numbers: RoPE's two pairings as one rotation,
RoPE keeping each vector's length, which dimensions a pair turns, and a cached decoding step's multiply-adds as a fixed
part plus a part per cached key. Each calls ``core.mechanism.positional`` / ``core.mechanism.kv_cache``; the tests
check them against numpy (``tests/core/test_measures.py``)."""

from __future__ import annotations

import torch

from core.mechanism import kv_cache, positional
from core.mechanism.attention import max_abs_diff


def rope_pairing_gap(x: torch.Tensor, *, base: float) -> float:
    """max |rope(x[:, perm], half) − rope(x, adjacent)[:, perm]| for x (n, d): the two pairings are one rotation
    with the dimensions permuted (``positional.rope_permutation``), so this is rounding only."""
    perm = positional.rope_permutation(x.shape[-1])
    return max_abs_diff(positional.rope(x[..., perm], base=base, pairing="half"),
                        positional.rope(x, base=base, pairing="adjacent")[..., perm])


def rope_norm_gap(q: torch.Tensor, n: int, *, base: float, pairing: str) -> float:
    """max over positions 0 … n−1 of | ‖rope(q) at m‖ − ‖q‖ | for one vector q (d,): rotations keep lengths."""
    rotated = positional.rope(q.expand(n, q.shape[-1]), positions=torch.arange(n), base=base, pairing=pairing)
    return max_abs_diff(rotated.norm(dim=-1), q.norm().expand(n))


def rope_pair_dims(pair: int, d: int, pairing: str) -> tuple[int, int]:
    """The two dimensions pair ``pair`` turns: (2i, 2i+1) with the adjacent pairing, (i, i + d/2) with the half one."""
    return (2 * pair, 2 * pair + 1) if pairing == "adjacent" else (pair, pair + d // 2)


def decode_step_parts(d_model: int, n_heads: int, n_kv_heads: int) -> dict:
    """A cached decoding step's multiply-adds (``kv_cache.decode_step_macs``, d_head = d_model / H) as
    ``macs_fixed`` + ``macs_per_key`` · (keys in the cache): the count is linear in the cache's length, so the
    difference of two lengths is the per-key part."""
    shape = {"d_model": d_model, "n_heads": n_heads, "n_kv_heads": n_kv_heads, "d_head": d_model // n_heads}
    one, two = (kv_cache.decode_step_macs(**shape, length=n) for n in (1, 2))
    return {"macs_fixed": one - (two - one), "macs_per_key": two - one}
