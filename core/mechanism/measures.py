"""Checks and counts read off the mechanism that the pages show as numbers: RoPE's two pairings as one rotation,
RoPE keeping each vector's length, which dimensions a pair turns, and a cached decoding step's multiply-adds as a fixed
part plus a part per cached key. Each calls ``core.mechanism.positional`` / ``core.mechanism.kv_cache``; the tests
check them against numpy (``tests/core/test_measures.py``). :func:`counted_macs` counts the multiply-adds a call
really runs (``tests/core/test_cost_counts.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

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


# ---------------------------------------------------------------------------
# Counting what a call runs
# ---------------------------------------------------------------------------

_MUL = torch.ops.aten.mul


def _products(a, b, *, out_shape, **_) -> int:
    """Element-wise products of two tensors of at least two elements each (a scaling by a number is not one)."""
    tensors = [x for x in (a, b) if isinstance(x, torch.Size)]
    return math.prod(out_shape) if len(tensors) == 2 and all(math.prod(x) > 1 for x in tensors) else 0


@dataclass(frozen=True, eq=False)
class Counted:
    """What :func:`counted_macs` counted while one call ran.

    macs: the multiply-adds of the matrix products, as ``torch.utils.flop_counter.FlopCounterMode`` counts them
    (FLOPs = 2 × multiply-adds of mm, addmm, bmm, baddbmm, the matmul/einsum/linear calls that become them,
    convolutions and the fused SDPA kernels; never softmax, norms, exp or any other element-wise op);
    by_op: those multiply-adds per aten op ("mm", "bmm", "convolution", …);
    products: element-wise products of two tensors (aten.mul, each operand ≥ 2 elements) — norms, RoPE, gates, decays,
    and any contraction written as a product then a sum (the delta rule's state reads and writes), which
    FlopCounterMode does not see; a scaling by a number is not counted. result: what the call returned.
    """

    macs: int
    by_op: Mapping[str, int]
    products: int
    result: Any


def counted_macs(fn: Callable, *args, **kwargs) -> Counted:
    """Run ``fn(*args, **kwargs)`` once under ``FlopCounterMode`` (no autograd) and count what it ran (:class:`Counted`).

    The count depends only on the shapes the call meets, not on the values, so seeded random inputs of a model's
    shapes count what that model's layer runs."""
    counter = FlopCounterMode(display=False, custom_mapping={_MUL: _products})
    with torch.no_grad(), counter:
        result = fn(*args, **kwargs)
    ops = counter.get_flop_counts().get("Global", {})
    products = sum(v for op, v in ops.items() if op is _MUL)
    flops = {str(op).split(".")[-1]: v for op, v in ops.items() if op is not _MUL and v}
    if any(v % 2 for v in flops.values()):
        raise ValueError(f"FlopCounterMode counted an odd number of FLOPs {flops}: not 2 per multiply-add")
    return Counted(macs=sum(flops.values()) // 2, by_op={op: v // 2 for op, v in flops.items()}, products=products,
                   result=result)
