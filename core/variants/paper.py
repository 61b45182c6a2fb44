r"""The math-paper form of multi-head self-attention (000, C22), column convention.

    Attention(X) = X + Σ_{h=1}^{H} (W_h^V X) · Softmax[(W_h^K X)ᵀ (W_h^Q X)]

X (d, n) holds one token per column. Unlike Concat(heads)·W_O it sums the heads, keeps
the residual X inside, and uses the unscaled dot product. With H = 1 and without the
residual it is plain single-head attention V·Softmax(KᵀQ).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, shape_str
from core.mechanism.attention import AttentionTrace, attention


@dataclass(frozen=True, eq=False)
class PaperTrace:
    """X (d, n); Q, K (H, d_k, n); V (H, d, n); heads: column-convention AttentionTrace with
    weights (H, n, n) (entry (i, j) = weight of key i for query j); head_outputs (H, d, n);
    attended = Σ_h head_outputs (d, n); output = X + attended (d, n)."""

    X: torch.Tensor
    Q: torch.Tensor
    K: torch.Tensor
    V: torch.Tensor
    heads: AttentionTrace
    head_outputs: torch.Tensor
    attended: torch.Tensor
    output: torch.Tensor


def paper_attention(X: TensorLike, W_Q: TensorLike, W_K: TensorLike, W_V: TensorLike, *, device=None, dtype=None) -> PaperTrace:
    """X (d, n), W_Q and W_K (H, d_k, d), W_V (H, d, d) → :class:`PaperTrace` whose ``output`` is (d, n)."""
    t = as_tensors({"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V}, device=device, dtype=dtype)
    X_t = t["X"]
    if X_t.dim() != 2:
        raise ValueError(f"X must be (d, n) but has shape {shape_str(X_t.shape)}")
    d = X_t.shape[0]
    for name in ("W_Q", "W_K", "W_V"):
        W = t[name]
        if W.dim() != 3 or W.shape[-1] != d:
            raise ValueError(f"{name} must be (H, d_out, {d}) to multiply X {shape_str(X_t.shape)}, got {shape_str(W.shape)}")
    if t["W_Q"].shape != t["W_K"].shape:
        raise ValueError(f"W_Q {shape_str(t['W_Q'].shape)} and W_K {shape_str(t['W_K'].shape)} must match")
    if t["W_V"].shape != (t["W_Q"].shape[0], d, d):
        raise ValueError(f"W_V must be ({t['W_Q'].shape[0]}, {d}, {d}), got {shape_str(t['W_V'].shape)}")

    Q = t["W_Q"] @ X_t  # (H, d_k, n)
    K = t["W_K"] @ X_t  # (H, d_k, n)
    V = t["W_V"] @ X_t  # (H, d, n)
    # per head: (W^V X) Softmax[(W^K X)ᵀ (W^Q X)], softmax over each column (keys)
    heads = attention(Q, K, V, score="dot", convention="column")  # weights (H, n, n)
    head_outputs = heads.output  # (H, d, n)
    attended = head_outputs.sum(dim=0)  # Σ_h: (d, n)
    return PaperTrace(X=X_t, Q=Q, K=K, V=V, heads=heads, head_outputs=head_outputs,
                      attended=attended, output=X_t + attended)
