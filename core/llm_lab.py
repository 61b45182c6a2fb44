r"""The computations behind the "Attention in today's LLMs" pages that are experiments, not
building blocks: the permutation experiment (C23) run with each way of giving positions.

    added (sinusoidal, learned):  x̃_i = x_i + p_i, then Q = X̃W_q, K = X̃W_k, V = X̃W_v
    RoPE:                         q_i = R(i) W_qᵀx_i, k_j = R(j) W_kᵀx_j   (V unrotated)
    ALiBi:                        logits_ij = q_iᵀk_j/√d − m·|i − j|        (one head, slope m)

In every case the position belongs to the *slot* i, not to the token: shuffling the tokens
moves x but not p_i, R(i) or the bias, so SA(PX) ≠ P·SA(X) — order becomes visible.
Shapes: X (n, d), W_* (d, d), outputs (n, d).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import positional
from ._tensor import TensorLike, as_tensors, shape_str
from .attention import attention

POSITION_KINDS = ("none", "sinusoidal", "learned", "rope", "alibi")


@dataclass(frozen=True)
class PositionPermutation:
    """SA(PX) beside P·SA(X) for one kind of positions; ``max_diff`` = max |SA(PX) − P·SA(X)|."""

    kind: str
    perm: torch.Tensor  # (n,) long
    sa_x: torch.Tensor  # (n, d)
    sa_px: torch.Tensor  # (n, d)
    p_sa_x: torch.Tensor  # (n, d)
    max_diff: float


def self_attention_with_positions(X: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, W_v: torch.Tensor, kind: str,
                                  *, table: torch.Tensor | None = None, base: float = 10000.0,
                                  slope: float = 0.5) -> torch.Tensor:
    """One head of self-attention of X (n, d) with positions of ``kind`` given to slot i; (n, d_v)."""
    n = X.shape[-2]
    if kind in ("sinusoidal", "learned"):
        if table is None or tuple(table.shape) != tuple(X.shape):
            raise ValueError(f"added positions need a table of X's shape {tuple(X.shape)}")
        X = X + table  # x̃_i = x_i + p_i
    q, k, v = X @ W_q, X @ W_k, X @ W_v  # (n, d)
    if kind == "rope":
        q, k = positional.rope(q, base=base), positional.rope(k, base=base)  # rotated by slot 0 … n−1
    # ALiBi: −m·|i − j| for one head (symmetric: self-attention without a causal mask), (n, n)
    bias = (positional.alibi_bias(1, n, symmetric=True, slope=slope, dtype=q.dtype, device=q.device)[0]
            if kind == "alibi" else None)
    return attention(q, k, v, bias=bias).output  # (n, d_v): softmax(q kᵀ/√d + bias) v


def permutation_check(X: TensorLike, perm, *, W_q: TensorLike, W_k: TensorLike, W_v: TensorLike, kind: str = "none",
                      table: TensorLike | None = None, base: float = 10000.0, slope: float = 0.5) -> PositionPermutation:
    """The permutation experiment with positions of ``kind`` (one of POSITION_KINDS).

    X (n, d); perm a permutation of 0 … n−1 (row i of PX is row perm[i] of X); table (n, d) for the
    added kinds; base θ > 0 for RoPE; slope m > 0 for ALiBi. Raises ValueError on bad input."""
    if kind not in POSITION_KINDS:
        raise ValueError(f"unknown kind of positions '{kind}'; choose one of {', '.join(POSITION_KINDS)}")
    if kind == "alibi" and not slope > 0:
        raise ValueError(f"the ALiBi slope m must be positive, got {slope!r}")
    t = as_tensors({"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v} | ({} if table is None else {"P": table}))
    Xt = t["X"]
    n = Xt.shape[0]
    for name in ("W_q", "W_k", "W_v"):
        if Xt.dim() != 2 or t[name].dim() != 2 or t[name].shape[0] != Xt.shape[1]:
            raise ValueError(f"X {shape_str(Xt.shape)} and {name} {shape_str(t[name].shape)} do not fit: X @ {name} "
                             "needs X (n, d) and W (d, d_out)")
    p = torch.as_tensor(list(perm), dtype=torch.long, device=Xt.device)
    if sorted(p.tolist()) != list(range(n)):
        raise ValueError(f"{list(perm)} is not a permutation of 0..{n - 1}")

    def sa(Z: torch.Tensor) -> torch.Tensor:
        return self_attention_with_positions(Z, t["W_q"], t["W_k"], t["W_v"], kind, table=t.get("P"), base=base,
                                             slope=slope)

    sa_x = sa(Xt)
    sa_px = sa(Xt[p])  # the tokens move; the positions stay with their slots
    p_sa_x = sa_x[p]
    return PositionPermutation(kind=kind, perm=p, sa_x=sa_x, sa_px=sa_px, p_sa_x=p_sa_x,
                               max_diff=float((sa_px - p_sa_x).abs().max()))
