r"""What goes wrong: the mistakes the sources warn about (C12, C19, C34, C35), computed for real.

Each function takes row-convention tensors (..., n_q, n_k) and returns what the mistaken
computation gives, so a page can show it beside the correct one from :func:`core.attention`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.checks import TensorLike, as_bool_mask, as_tensor, as_tensors
from core.mechanism.attention import masked_softmax


@dataclass(frozen=True, eq=False)
class PitfallResult:
    """weights (..., n_q, n_k) from the mistaken recipe; their sums per query (over keys, the
    axis that should sum to 1) and per key (over queries)."""

    weights: torch.Tensor
    sums_per_query: torch.Tensor
    sums_per_key: torch.Tensor


def _result(w: torch.Tensor) -> PitfallResult:
    return PitfallResult(weights=w, sums_per_query=w.sum(dim=-1), sums_per_key=w.sum(dim=-2))


def wrong_axis_softmax(logits: TensorLike) -> PitfallResult:
    """C34: softmax over the **query** axis (dim=-2) instead of the keys (dim=-1).

    Each key's weights over the queries then sum to 1, and a query's weights no longer do.
    ``logits`` may hold −∞ for masked entries; a key masked for every query gets zeros.
    """
    L = as_tensor(logits, "logits", finite=False)
    if torch.isnan(L).any() or torch.isposinf(L).any():
        raise ValueError("logits must be finite or −∞")
    allowed = ~torch.isneginf(L)
    w, _ = masked_softmax(L, allowed, dim=-2)  # (..., n_q, n_k), wrong axis
    return _result(w)


def mask_after_softmax(scaled: TensorLike, mask: TensorLike) -> PitfallResult:
    """C12/C35: softmax first, then multiply by a 0/1 mask — the rows no longer sum to 1."""
    S = as_tensor(scaled, "scaled")
    m = as_bool_mask(mask, device=S.device).expand(S.shape)
    w = torch.softmax(S, dim=-1) * m.to(S.dtype)  # (..., n_q, n_k)
    return _result(w)


def mask_with_value(scaled: TensorLike, mask: TensorLike, value: float = -1e9) -> PitfallResult:
    """Masking with a large negative number instead of −∞: the same weights up to rounding while
    a query can still see something; a fully masked query gets a *uniform* row instead of zeros."""
    S = as_tensor(scaled, "scaled")
    m = as_bool_mask(mask, device=S.device).expand(S.shape)
    w = torch.softmax(S.masked_fill(~m, float(value)), dim=-1)
    return _result(w)


def torch_sdpa(q: TensorLike, k: TensorLike, v: TensorLike, *, mask: TensorLike | None = None,
               scale: float | None = None) -> torch.Tensor:
    """PyTorch's own ``scaled_dot_product_attention`` on the same numbers (row convention).

    For a fully masked query torch 2.13 returns zeros, as core does (older releases, and
    ``nn.MultiheadAttention``, return NaN).
    """
    t = as_tensors({"Q": q, "K": k, "V": v})
    m = None if mask is None else as_bool_mask(mask, device=t["Q"].device)
    return F.scaled_dot_product_attention(t["Q"], t["K"], t["V"], attn_mask=m, scale=scale)


def naive_softmax(logits: TensorLike) -> torch.Tensor:
    """``torch.softmax`` applied straight to masked logits: a row that is all −∞ becomes NaN
    (0 / 0), and the NaN then spreads through ``weights @ V``."""
    L = as_tensor(logits, "logits", finite=False)
    return torch.softmax(L, dim=-1)


def split_heads_without_transpose(x: TensorLike, n_heads: int) -> torch.Tensor:
    """C36: (B, N, H·d) reshaped straight to (B, H, N, d) — no transpose.

    The memory order is token-major, so "head h" then holds a block of consecutive features
    from several tokens: tokens and heads are mixed. Compare :func:`core.split_heads`.
    """
    t = as_tensor(x, "x")
    *lead, n, hd = t.shape
    if n_heads < 1 or hd % n_heads:
        raise ValueError(f"width {hd} is not divisible by n_heads={n_heads}")
    return t.reshape(*lead, n_heads, n, hd // n_heads)  # (B, H, N, d) but scrambled


def scrambled_source(n_tokens: int, width: int, n_heads: int) -> torch.Tensor:
    """Where each entry of the no-transpose split came from: (H, N, d, 2) holding the
    (token, feature) of x that lands at (head, row, column)."""
    tok = torch.arange(n_tokens).unsqueeze(1).expand(n_tokens, width)
    feat = torch.arange(width).unsqueeze(0).expand(n_tokens, width)
    src = torch.stack([tok, feat], dim=-1)  # (N, H·d, 2)
    return src.reshape(n_heads, n_tokens, width // n_heads, 2)


@dataclass(frozen=True, eq=False)
class ScrambleRow:
    """One row of one head after the no-transpose split: what it holds and what it should hold.

    ``got_tokens`` are the tokens its features come from (one or more), ``got_features`` the
    first and last feature index it holds; the right split holds token ``row`` and features
    ``want_features`` = (h·d_head, (h+1)·d_head − 1)."""

    head: int
    row: int
    got_tokens: tuple[int, ...]
    got_features: tuple[int, int]
    want_token: int
    want_features: tuple[int, int]


def scramble_table(n_tokens: int, width: int, n_heads: int, head: int = 0) -> list[ScrambleRow]:
    """Row by row, what head ``head`` holds after the C36 bug and what it should hold."""
    if n_heads < 1 or width % n_heads or not 0 <= head < n_heads:
        raise ValueError(f"width {width} must split into {n_heads} heads and head {head} must exist")
    src = scrambled_source(n_tokens, width, n_heads)[head]  # (N, d_head, 2)
    d_head = width // n_heads
    rows = []
    for r in range(n_tokens):
        toks = tuple(dict.fromkeys(int(v) for v in src[r, :, 0]))
        rows.append(ScrambleRow(head=head, row=r, got_tokens=toks,
                                got_features=(int(src[r, 0, 1]), int(src[r, -1, 1])),
                                want_token=r, want_features=(head * d_head, (head + 1) * d_head - 1)))
    return rows


def multi_head_without_transpose(x: TensorLike, *, W_q: TensorLike, W_k: TensorLike, W_v: TensorLike,
                                 W_o: TensorLike, n_heads: int) -> torch.Tensor:
    """Multi-head attention written with the C36 bug: heads split (and merged back) by a bare
    reshape. x (B, N, d_model) → output (B, N, d_out), different from the correct one."""
    from core.mechanism.attention import attention

    t = as_tensors({"x": x, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o})
    q, k, v = (split_heads_without_transpose(t["x"] @ t[w], n_heads) for w in ("W_q", "W_k", "W_v"))
    heads = attention(q, k, v).output  # (B, H, N, d_v), computed on scrambled rows
    *lead, h, n, d = heads.shape
    concat = heads.reshape(*lead, n, h * d)  # the same bug on the way back
    return concat @ t["W_o"]


@dataclass(frozen=True, eq=False)
class HeadLayouts:
    """The attention weights of one multi-head layer laid out four ways (C21, C36), for x (B, n, d):

    ``right``        (B, H, n, n): split (B, n, H, d_k) → transpose → QKᵀ per head
    ``heads_last``   (B, n, H, n): the same numbers as einsum("bnhd,bmhd->bnhm") lays them out
    ``no_transpose`` (B, n, H, H): split to (B, n, H, d_k) and QKᵀ without the transpose — each
                     token's heads scored against each other
    ``view_only``    (B, H, n, n): view(B, H, n, d_k) straight away: the right shape, wrong numbers
    ``averaged``     (B, n, n): averaged over the heads (nn.MultiheadAttention's default output)
    ``view_gap``     max |view_only − right|."""

    right: torch.Tensor
    heads_last: torch.Tensor
    no_transpose: torch.Tensor
    view_only: torch.Tensor
    averaged: torch.Tensor
    view_gap: float


def head_layouts(x: TensorLike, W_q: TensorLike, W_k: TensorLike, n_heads: int) -> HeadLayouts:
    """Scaled-dot attention weights of x (B, n, d) with x @ W_q, x @ W_k (d, H·d_k) in the layouts
    of :class:`HeadLayouts`."""
    t = as_tensor(x, "x")
    Wq, Wk = as_tensor(W_q, "W_q").to(t), as_tensor(W_k, "W_k").to(t)
    B, n, _ = t.shape
    hd = Wq.shape[1]
    if n_heads < 1 or hd % n_heads:
        raise ValueError(f"width {hd} is not divisible by n_heads={n_heads}")
    d_k = hd // n_heads
    q, k = t @ Wq, t @ Wk  # (B, n, H·d_k)
    q4, k4 = q.reshape(B, n, n_heads, d_k), k.reshape(B, n, n_heads, d_k)  # (B, n, H, d_k)

    def soft(s):
        return torch.softmax(s / d_k**0.5, dim=-1)

    right = soft(q4.transpose(1, 2) @ k4.transpose(1, 2).transpose(-2, -1))  # (B, H, n, n)
    heads_last = soft(torch.einsum("bnhd,bmhd->bnhm", q4, k4))  # (B, n, H, n)
    no_transpose = soft(q4 @ k4.transpose(-2, -1))  # (B, n, H, d_k)(B, n, d_k, H) → (B, n, H, H)
    qv, kv = q.view(B, n_heads, n, d_k), k.view(B, n_heads, n, d_k)  # scrambled (B, H, n, d_k)
    view_only = soft(qv @ kv.transpose(-2, -1))  # (B, H, n, n)
    return HeadLayouts(right=right, heads_last=heads_last, no_transpose=no_transpose, view_only=view_only,
                       averaged=right.mean(dim=1), view_gap=float((view_only - right).abs().max()))
