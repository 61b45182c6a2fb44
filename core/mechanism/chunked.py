r"""Memory-efficient attention: the key axis in blocks with an online softmax (FlashAttention's idea).

For each key block B_c the running row maximum m, running denominator ℓ and running
numerator acc are updated so that, at the end, acc / ℓ = softmax(QKᵀ·s) V exactly:

    S_c   = Q K_cᵀ · s                    (n_q × c) — the only scores held at once
    m'    = max(m, rowmax(S_c))
    ℓ'    = ℓ · e^{m − m'} + rowsum(e^{S_c − m'})
    acc'  = acc · e^{m − m'} + e^{S_c − m'} V_c

:func:`tiled_attention` runs the same update with the queries in blocks too (query block × key block
tiles, as FlashAttention does on a GPU) and keeps every tile's m, ℓ and partial output for replay.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_bool_mask, qkv_tensors, shape_str


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
    Q, K, V, m_full, s, lead = _prepare(q, k, v, mask, scale, device, dtype)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    row_max, denom, acc = _start(lead, n_q, V.shape[-1], Q)  # m, ℓ, numerator
    for start in range(0, n_k, chunk_size):
        stop = min(start + chunk_size, n_k)
        S_c = _tile_scores(Q, K[..., start:stop, :], s, None if m_full is None else m_full[..., start:stop])
        row_max, denom, acc, _, P_c = _online_update(row_max, denom, acc, S_c, V[..., start:stop, :])
        del S_c, P_c
    return _normalise(acc, denom)


def _prepare(q, k, v, mask, scale, device, dtype):
    """Checked Q, K, V, the boolean mask (or None), the scale s and the broadcast batch shape."""
    Q, K, V = qkv_tensors(q, k, v, device=device, dtype=dtype)  # (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
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
    return Q, K, V, m_full, s, lead


def _start(lead, n_q: int, d_v: int, Q: torch.Tensor):
    """m = −∞, ℓ = 0, acc = 0 for n_q queries: (..., n_q, 1), (..., n_q, 1), (..., n_q, d_v)."""
    row_max = torch.full((*lead, n_q, 1), float("-inf"), dtype=Q.dtype, device=Q.device)  # m
    denom = torch.zeros((*lead, n_q, 1), dtype=Q.dtype, device=Q.device)  # ℓ
    acc = torch.zeros((*lead, n_q, d_v), dtype=Q.dtype, device=Q.device)  # numerator
    return row_max, denom, acc


def _tile_scores(Q: torch.Tensor, K_c: torch.Tensor, s: float, mask_c: torch.Tensor | None) -> torch.Tensor:
    """S_c = Q K_cᵀ · s with −∞ where the mask forbids: (..., n_q, c)."""
    S_c = (Q @ K_c.transpose(-1, -2)) * s  # (..., n_q, c)
    return S_c if mask_c is None else S_c.masked_fill(~mask_c, float("-inf"))


def _online_update(row_max, denom, acc, S_c, V_c):
    """One key block of the online softmax: returns (m', ℓ', acc', e^{m − m'}, P_c = e^{S_c − m'})."""
    new_max = torch.maximum(row_max, S_c.amax(dim=-1, keepdim=True))  # (..., n_q, 1)
    # a row with nothing visible yet keeps max −inf; use 0 there so no (−inf) − (−inf)
    safe_max = torch.where(torch.isinf(new_max), torch.zeros_like(new_max), new_max)
    correction = torch.exp(row_max - safe_max)  # rescales the old sums to the new max
    P_c = (S_c - safe_max).exp_()  # (..., n_q, c); masked entries give exp(−inf) = 0 (in place: one block less)
    denom = denom * correction + P_c.sum(dim=-1, keepdim=True)
    acc = (P_c @ V_c).add_(acc * correction)  # (..., n_q, d_v)
    return new_max, denom, acc, correction, P_c


def _normalise(acc: torch.Tensor, denom: torch.Tensor) -> torch.Tensor:
    """acc / ℓ; rows with ℓ = 0 (nothing visible yet, or fully masked) give 0."""
    return torch.where(denom > 0, acc / denom.clamp_min(torch.finfo(acc.dtype).tiny), torch.zeros_like(acc))


# ---------------------------------------------------------------------------
# Every tile, for replaying the algorithm
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Tile:
    """One (query block × key block) step of the online softmax, for the query rows [q_start, q_stop)
    and key columns [k_start, k_stop); b_q = q_stop − q_start, c = k_stop − k_start.

    scores S (..., b_q, c) scaled, −∞ where masked; m_before / m_after the running row maximum
    (..., b_q) before and after this block; correction e^{m_before − m_after} (..., b_q), the factor
    that rescales the old sums; p = e^{S − m_after} (..., b_q, c); l_before / l_after the running
    denominator ℓ (..., b_q); partial_output = acc / ℓ (..., b_q, d_v), the rescaled partial output:
    softmax attention over the keys seen so far (0 … k_stop − 1) — exact, not an estimate.
    """

    q_block: int
    k_block: int
    q_start: int
    q_stop: int
    k_start: int
    k_stop: int
    scores: torch.Tensor
    m_before: torch.Tensor
    m_after: torch.Tensor
    correction: torch.Tensor
    p: torch.Tensor
    l_before: torch.Tensor
    l_after: torch.Tensor
    partial_output: torch.Tensor
    last_of_row: bool  # the tile that finishes its query block: its partial output is the final output


@dataclass(frozen=True, eq=False)
class TiledTrace:
    """Attention computed tile by tile (FlashAttention's order: each query block runs over every key block).

    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v); tiles in the order computed; output
    (..., n_q, d_v) = softmax(QKᵀ·s) V; m, l the final row maximum and denominator (..., n_q), so
    log Σ_j e^{s_ij} = m + log ℓ. ``largest_tile`` is the most scores held at once (b_q · c), against
    n_q · n_k for the full matrix.
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    tiles: tuple[Tile, ...]
    output: torch.Tensor
    m: torch.Tensor
    l: torch.Tensor
    scale: float
    block_q: int
    block_k: int

    @property
    def n_q_blocks(self) -> int:
        return -(-self.q.shape[-2] // self.block_q)

    @property
    def n_k_blocks(self) -> int:
        return -(-self.k.shape[-2] // self.block_k)

    @property
    def largest_tile(self) -> int:
        return max(t.scores.shape[-2] * t.scores.shape[-1] for t in self.tiles)


def tiled_attention(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    *,
    mask: TensorLike | None = None,
    scale: float | None = None,
    block_q: int | None = None,
    block_k: int = 128,
    device=None,
    dtype=None,
) -> TiledTrace:
    """:func:`chunked_attention` with the queries in blocks too, keeping a :class:`Tile` for every step.

    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v); mask broadcastable to (..., n_q, n_k),
    True = may attend; block_q queries (None: all of them) × block_k keys per tile. The update is the
    same code as :func:`chunked_attention`'s. The trace keeps every tile (n_q·n_k scores in all), so it
    is for replaying small examples; :func:`chunked_attention` is the one that saves memory.
    """
    for name, val in (("block_q", block_q), ("block_k", block_k)):
        if val is not None and (isinstance(val, bool) or not isinstance(val, int) or val < 1):
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    Q, K, V, m_full, s, lead = _prepare(q, k, v, mask, scale, device, dtype)
    n_q, n_k = Q.shape[-2], K.shape[-2]
    bq = n_q if block_q is None else min(block_q, n_q)
    tiles, outs, ms, ls = [], [], [], []
    for qi, q0 in enumerate(range(0, n_q, bq)):
        q1 = min(q0 + bq, n_q)
        Q_b = Q[..., q0:q1, :]  # (..., b_q, d_k)
        mask_b = None if m_full is None else m_full[..., q0:q1, :] if m_full.dim() >= 2 and m_full.shape[-2] > 1 \
            else m_full
        row_max, denom, acc = _start(lead, q1 - q0, V.shape[-1], Q)
        for ki, k0 in enumerate(range(0, n_k, block_k)):
            k1 = min(k0 + block_k, n_k)
            S_c = _tile_scores(Q_b, K[..., k0:k1, :], s, None if mask_b is None else mask_b[..., k0:k1])
            new_max, new_denom, acc, corr, P_c = _online_update(row_max, denom, acc, S_c, V[..., k0:k1, :])
            tiles.append(Tile(q_block=qi, k_block=ki, q_start=q0, q_stop=q1, k_start=k0, k_stop=k1, scores=S_c,
                              m_before=row_max[..., 0], m_after=new_max[..., 0], correction=corr[..., 0], p=P_c,
                              l_before=denom[..., 0], l_after=new_denom[..., 0], partial_output=_normalise(acc, new_denom),
                              last_of_row=k1 == n_k))
            row_max, denom = new_max, new_denom
        outs.append(_normalise(acc, denom))
        ms.append(row_max[..., 0])
        ls.append(denom[..., 0])
    return TiledTrace(q=Q, k=K, v=V, tiles=tuple(tiles), output=torch.cat(outs, dim=-2), m=torch.cat(ms, dim=-1),
                      l=torch.cat(ls, dim=-1), scale=s, block_q=bq, block_k=block_k)
