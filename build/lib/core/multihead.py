r"""Multi-head attention (C20, C21) and the fused QKV projection (C17), row convention.

    Q = X_q W_q + b_q,  K = X_kv W_k + b_k,  V = X_kv W_v + b_v
    head_h = softmax(Q_h K_hᵀ / √d_k) V_h
    MHA(X) = Concat(head_1, …, head_H) W_o + b_o

Weight layout follows the math (x @ W), so ``torch.nn.MultiheadAttention`` holds the
transposes: ``in_proj_weight = cat(W_qᵀ, W_kᵀ, W_vᵀ)``, ``out_proj.weight = W_oᵀ``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._tensor import TensorLike, as_tensors, shape_str
from .attention import AttentionTrace, attention


@dataclass(frozen=True, eq=False)
class MultiHeadTrace:
    """Every step of multi-head attention, with B = leading batch dims.

    x_q (B, n_q, d_model), x_kv (B, n_k, d_kv)
    q_proj (B, n_q, H·d_k), k_proj (B, n_k, H·d_k), v_proj (B, n_k, H·d_v)  — before the split
    q (B, H, n_q, d_k), k (B, H, n_k, d_k), v (B, H, n_k, d_v)              — after split + transpose
    heads: AttentionTrace with weights (B, H, n_q, n_k) and output (B, H, n_q, d_v)
    concat (B, n_q, H·d_v), output (B, n_q, d_out)
    """

    x_q: torch.Tensor
    x_kv: torch.Tensor
    q_proj: torch.Tensor
    k_proj: torch.Tensor
    v_proj: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    heads: AttentionTrace
    concat: torch.Tensor
    output: torch.Tensor
    n_heads: int
    self_attention: bool

    @property
    def weights(self) -> torch.Tensor:
        """Per-head attention weights (B, H, n_q, n_k)."""
        return self.heads.weights


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, n, H·d) → (B, H, n, d): view the features as H heads, then move H before n."""
    *lead, n, hd = x.shape
    return x.reshape(*lead, n, n_heads, hd // n_heads).transpose(-3, -2)  # (B, H, n, d)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, n, d) → (B, n, H·d): the inverse of :func:`split_heads` (transpose, then reshape)."""
    *lead, h, n, d = x.shape
    return x.transpose(-3, -2).reshape(*lead, n, h * d)  # (B, n, H·d)


def fuse_qkv_weights(W_q: TensorLike, W_k: TensorLike, W_v: TensorLike) -> torch.Tensor:
    """Stack three projections side by side: W_qkv = [W_q | W_k | W_v]  (d_model, 2·H·d_k + H·d_v)."""
    t = as_tensors({"W_q": W_q, "W_k": W_k, "W_v": W_v})
    rows = {n: w.shape[0] for n, w in t.items()}
    if len(set(rows.values())) != 1:
        raise ValueError(f"W_q, W_k, W_v need the same number of rows (d_model), got {rows}")
    return torch.cat([t["W_q"], t["W_k"], t["W_v"]], dim=-1)


def fused_qkv(x: TensorLike, W_qkv: TensorLike, b_qkv: TensorLike | None = None, *, d_v: int | None = None):
    """One matmul instead of three (C17): ``x @ W_qkv + b_qkv`` split into Q, K, V.

    x (..., n, d_model), W_qkv (d_model, 2·D_k + D_v) with D_v = ``d_v`` (default: equal thirds).
    Returns (Q, K, V), each (..., n, D).
    """
    named = {"x": x, "W_qkv": W_qkv} | ({} if b_qkv is None else {"b_qkv": b_qkv})
    t = as_tensors(named)
    W = t["W_qkv"]
    if W.dim() != 2 or t["x"].shape[-1] != W.shape[0]:
        raise ValueError(f"x {shape_str(t['x'].shape)} and W_qkv {shape_str(W.shape)} do not multiply")
    total = W.shape[1]
    D_v = total // 3 if d_v is None else d_v
    D_k = (total - D_v) // 2
    if 2 * D_k + D_v != total or D_k <= 0 or D_v <= 0:
        raise ValueError(f"W_qkv has {total} columns, which is not 2·D_k + D_v with D_v={D_v}")
    qkv = t["x"] @ W  # (..., n, 2·D_k + D_v): the single fused matmul
    if "b_qkv" in t:
        qkv = qkv + t["b_qkv"]
    return qkv.split([D_k, D_k, D_v], dim=-1)


def multi_head_attention(
    x_q: TensorLike,
    x_kv: TensorLike | None = None,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    W_v: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    b_q: TensorLike | None = None,
    b_k: TensorLike | None = None,
    b_v: TensorLike | None = None,
    b_o: TensorLike | None = None,
    mask: TensorLike | None = None,
    score: str = "scaled_dot",
    params=None,
    device=None,
    dtype=None,
) -> MultiHeadTrace:
    """Multi-head attention (row convention); ``x_kv=None`` is self-attention.

    x_q (B, n_q, d_model), x_kv (B, n_k, d_kv); W_q (d_model, H·d_k), W_k (d_kv, H·d_k),
    W_v (d_kv, H·d_v), W_o (H·d_v, d_out); biases are vectors of the matching widths.
    mask broadcasts to (B, H, n_q, n_k); True = may attend.
    """
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    self_attn = x_kv is None
    named = {"x_q": x_q, "x_kv": x_q if self_attn else x_kv, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}
    for name, b in (("b_q", b_q), ("b_k", b_k), ("b_v", b_v), ("b_o", b_o)):
        if b is not None:
            named[name] = b
    t = as_tensors(named, device=device, dtype=dtype)
    xq, xkv = t["x_q"], t["x_kv"]
    for name in ("x_q", "x_kv"):
        if t[name].dim() < 2:
            raise ValueError(f"{name} must be (..., n, d_model) but has shape {shape_str(t[name].shape)}")
    for name in ("W_q", "W_k", "W_v", "W_o"):
        if t[name].dim() != 2:
            raise ValueError(f"{name} must be a matrix but has shape {shape_str(t[name].shape)}")

    def project(x, xname, wname, bname):
        W = t[wname]
        if x.shape[-1] != W.shape[0]:
            raise ValueError(
                f"{xname} has width {x.shape[-1]} but {wname} {shape_str(W.shape)} expects {W.shape[0]} rows"
            )
        if W.shape[1] % n_heads:
            raise ValueError(f"{wname} has {W.shape[1]} columns, not divisible by n_heads={n_heads}")
        out = x @ W  # (B, n, H·d)
        if bname in t:
            if t[bname].shape != (W.shape[1],):
                raise ValueError(f"{bname} has shape {shape_str(t[bname].shape)} but needs ({W.shape[1]},)")
            out = out + t[bname]
        return out

    # the three projections (fused_qkv does them as one matmul)
    q_proj = project(xq, "x_q", "W_q", "b_q")  # (B, n_q, H·d_k)
    k_proj = project(xkv, "x_kv", "W_k", "b_k")  # (B, n_k, H·d_k)
    v_proj = project(xkv, "x_kv", "W_v", "b_v")  # (B, n_k, H·d_v)
    if q_proj.shape[-1] != k_proj.shape[-1]:
        raise ValueError(f"W_q {shape_str(t['W_q'].shape)} and W_k {shape_str(t['W_k'].shape)} need the same width")

    # split into heads: (B, n, H·d) → (B, n, H, d) → (B, H, n, d)
    q, k, v = (split_heads(p, n_heads) for p in (q_proj, k_proj, v_proj))
    # every head at once: softmax(Q_h K_hᵀ/√d_k) V_h
    heads = attention(q, k, v, score=score, mask=mask, params=params)  # weights (B, H, n_q, n_k)
    # concat: (B, H, n_q, d_v) → (B, n_q, H, d_v) → (B, n_q, H·d_v)
    concat = merge_heads(heads.output)
    W_o_t = t["W_o"]
    if concat.shape[-1] != W_o_t.shape[0]:
        raise ValueError(f"concat width {concat.shape[-1]} (H·d_v) but W_o {shape_str(W_o_t.shape)}")
    output = concat @ W_o_t  # (B, n_q, d_out)
    if "b_o" in t:
        output = output + t["b_o"]
    return MultiHeadTrace(
        x_q=xq, x_kv=xkv, q_proj=q_proj, k_proj=k_proj, v_proj=v_proj, q=q, k=k, v=v,
        heads=heads, concat=concat, output=output, n_heads=n_heads, self_attention=self_attn,
    )


def fused_qkv_gap(x: TensorLike, W_q: TensorLike, W_k: TensorLike, W_v: TensorLike) -> float:
    """Largest difference between one fused matmul ``x @ [W_q | W_k | W_v]`` and three separate
    ones (C17): 0 up to rounding. x (..., n, d_model)."""
    t = as_tensors({"x": x, "W_q": W_q, "W_k": W_k, "W_v": W_v})
    Q, K, V = fused_qkv(t["x"], fuse_qkv_weights(t["W_q"], t["W_k"], t["W_v"]), d_v=t["W_v"].shape[-1])
    return max(float((a - t["x"] @ t[w]).abs().max()) for a, w in ((Q, "W_q"), (K, "W_k"), (V, "W_v")))
