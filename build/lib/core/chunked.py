r"""Memory-efficient attention: the key axis in blocks with an online softmax (FlashAttention's idea).

For each key block B_c the running row maximum m, running denominator ℓ and running
numerator acc are updated so that, at the end, acc / ℓ = softmax(QKᵀ·s) V exactly:

    S_c   = Q K_cᵀ · s                    (n_q × c) — the only scores held at once
    m'    = max(m, rowmax(S_c))
    ℓ'    = ℓ · e^{m − m'} + rowsum(e^{S_c − m'})
    acc'  = acc · e^{m − m'} + e^{S_c − m'} V_c
"""

from __future__ import annotations

import math

import torch

from ._tensor import TensorLike, as_bool_mask, as_tensors, shape_str


def chunked_attention(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    *,
    mask: TensorLike | None = None,
    scale: float | None = None,
    chunk_size: int = 128,
    device=None,
    dtype=None,
) -> torch.Tensor:
    """Scaled-dot attention, row convention, never holding more than n_q × chunk_size scores.

    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v); mask broadcastable to
    (..., n_q, n_k), True = may attend. Returns the output (..., n_q, d_v); a fully masked
    query gets 0, like :func:`core.attention`.
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    t = as_tensors({"Q": q, "K": k, "V": v}, device=device, dtype=dtype)
    Q, K, V = t["Q"], t["K"], t["V"]
    if min(Q.dim(), K.dim(), V.dim()) < 2:
        raise ValueError(f"Q, K, V must be (..., n, d): {shape_str(Q.shape)}, {shape_str(K.shape)}, {shape_str(V.shape)}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"K has d_k={K.shape[-1]} but Q has d_k={Q.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has n_k={K.shape[-2]} keys but V has {V.shape[-2]} values")
    n_q, n_k = Q.shape[-2], K.shape[-2]
    s = 1.0 / math.sqrt(Q.shape[-1]) if scale is None else float(scale)
    lead = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])

    m_full = None
    if mask is not None:
        m_full = as_bool_mask(mask, device=Q.device)
        try:
            ok = torch.broadcast_shapes(m_full.shape, (*lead, n_q, n_k)) == (*lead, n_q, n_k)
        except RuntimeError:
            ok = False
        if not ok:
            raise ValueError(f"mask of shape {shape_str(m_full.shape)} does not broadcast to {shape_str((*lead, n_q, n_k))}")

    row_max = torch.full((*lead, n_q, 1), float("-inf"), dtype=Q.dtype, device=Q.device)  # m
    denom = torch.zeros((*lead, n_q, 1), dtype=Q.dtype, device=Q.device)  # ℓ
    acc = torch.zeros((*lead, n_q, V.shape[-1]), dtype=Q.dtype, device=Q.device)  # numerator
    for start in range(0, n_k, chunk_size):
        stop = min(start + chunk_size, n_k)
        K_c, V_c = K[..., start:stop, :], V[..., start:stop, :]
        S_c = (Q @ K_c.transpose(-1, -2)) * s  # (..., n_q, c)
        if m_full is not None:
            S_c = S_c.masked_fill(~m_full[..., start:stop], float("-inf"))
        new_max = torch.maximum(row_max, S_c.amax(dim=-1, keepdim=True))  # (..., n_q, 1)
        # a row with nothing visible yet keeps max −inf; use 0 there so no (−inf) − (−inf)
        safe_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
        correction = torch.exp(row_max - safe_max)  # rescales the old sums to the new max
        P_c = torch.exp(S_c - safe_max)  # (..., n_q, c); masked entries give exp(−inf) = 0
        denom = denom * correction + P_c.sum(dim=-1, keepdim=True)
        acc = acc * correction + P_c @ V_c  # (..., n_q, d_v)
        row_max = new_max
        del S_c, P_c
    # fully masked rows have ℓ = 0 → output 0
    return torch.where(denom > 0, acc / denom.clamp_min(torch.finfo(Q.dtype).tiny), torch.zeros_like(acc))
