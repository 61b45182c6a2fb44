r"""DeepSeek-V4's compressed attention (issue 55), row convention; transformers' ``DeepseekV4Attention`` with its
``DeepseekV4CSACompressor`` / ``DeepseekV4HCACompressor`` / ``DeepseekV4Indexer``.

Every layer attends with one key/value head where K = V, over two sets of keys::

    window:      kv_t = RoPE(RMSNorm(x_t W_kv) ⊙ w)              the last w tokens (a sliding window, causal)
    compressed:  c_s = RoPE(RMSNorm(Σ_j softmax_j(z_j + b_j) ⊙ x_j W_c) ⊙ w)    one entry for every m tokens
    q = RoPE(RMSNorm_h((RMSNorm(x W_qa) ⊙ w_qa) W_qb)),   α = softmax([q Kᵀ/√d + mask | z_sink]) (sink dropped)
    o = RoPE⁻¹(α V)  (the output's rope slice turned back to relative position),  y = Concat_g(o_g W_oa,g) W_ob

* **HCA** (heavily compressed attention) pools each closed window of m' = 128 tokens into one entry (gates softmaxed
  over the window, per channel); query t sees entry s when its window has closed: s < ⌊(t + 1)/m'⌋.
* **CSA** (compressed sparse attention) pools every m = 4 tokens over *overlapping* windows: entry s mixes the m
  tokens of window s − 1 (their first half of channels, C_a) with the m of window s (the second half, C_b), 2m slots
  under one softmax. A lightning indexer of its own (:func:`compressed_index`) scores the entries,
  Σ_h w_t,h · ReLU(q_t,h · k_s), and each query keeps its top k.

RoPE rotates the *trailing* r dims of each head with adjacent pairs (the checkpoints' interleaved layout); a
compressed entry sits at the position of its window's first token.

Decoding (:func:`compressed_step`) keeps a :class:`CompressedCache`: the window's last w K = V rows, the entries
closed so far (and the indexer's keys for CSA), the raw inputs of the window not yet closed, and for CSA the last
closed window's C_a share that the next entry mixes in. The full pass (:func:`compressed_attention`) is one step
from an empty cache, so a prefill then steps computes the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.attention import attention
from core.mechanism.masks import window as window_mask
from core.mechanism.norms import rms_norm
from core.mechanism.positional import RopeTables
from core.variants.sparse import topk_mask

KINDS = ("sliding", "csa", "hca")


def rope_trailing(x: torch.Tensor, tables: RopeTables) -> torch.Tensor:
    """Rotate the last r dims of x (..., n, d) by the tables (n, r/2); the first d − r pass (V4's [nope | rope])."""
    r = tables.rotated_dims
    return torch.cat([x[..., :-r], tables.apply(x[..., -r:])], dim=-1)


def unrotate(tables: RopeTables) -> RopeTables:
    """The inverse rotation: the same angles turned back (cos, −sin)."""
    return RopeTables(tables.cos, -tables.sin, tables.pairing)


@dataclass(frozen=True, eq=False)
class Pooled:
    """The compressed entries one call closed: entries (B, T, d) after norm and RoPE; weights (B, T, slots, d): each
    slot's softmax gate per channel (slots = m, or 2m with overlap); positions (T,): where each entry sits (its
    window's first token). With overlap (CSA) share_kv, share_gate (B, m, d): the last closed window's C_a share (its
    projections and biased gate logits), which the next entry mixes in; None before any window has closed."""

    entries: torch.Tensor
    weights: torch.Tensor
    positions: torch.Tensor
    share_kv: torch.Tensor | None = None
    share_gate: torch.Tensor | None = None


def pool(x: torch.Tensor, W_c: torch.Tensor, W_gate: torch.Tensor, position_bias: torch.Tensor, norm_weight: torch.Tensor,
         m: int, *, overlap: bool, rope: RopeTables, eps: float, first: int = 0,
         share: tuple[torch.Tensor, torch.Tensor] | None = None) -> Pooled:
    """Every closed window of m tokens of x (B, n, d_model) as one entry (see the module doc). x starts at position
    ``first``, a window boundary; its last n mod m tokens close no window (a decoding cache keeps them for later).
    Without overlap W_c, W_gate (d_model, d), position_bias (m, d); with overlap (CSA) they have 2d columns: the first
    d the token's share in the next window's entry, the last d its share in its own, and ``share`` (kv, gate), each
    (B, m, d), is the C_a share of the window before x's first (None: there is none, so weight 0).
    rope: tables for positions 0 … first + n − 1 (or more)."""
    B, n = x.shape[0], x.shape[-2]
    T = n // m  # closed windows
    width = W_c.shape[-1]
    kv = (x[:, :T * m] @ W_c).view(B, T, m, width)  # (B, T, m, d or 2d)
    gate = (x[:, :T * m] @ W_gate).view(B, T, m, width) + position_bias  # (B, T, m, d or 2d): the slot's learned bias
    share_kv = share_gate = None
    if overlap:
        d = width // 2
        before = share or (kv.new_zeros(B, m, d), kv.new_full((B, m, d), float("-inf")))  # gate −∞: weight 0
        before_kv = torch.cat([before[0].unsqueeze(1), kv[..., :d]], dim=1)  # (B, T + 1, m, d): C_a of windows s − 1
        before_gate = torch.cat([before[1].unsqueeze(1), gate[..., :d]], dim=1)
        if T or share is not None:
            share_kv, share_gate = before_kv[:, -1], before_gate[:, -1]  # (B, m, d): for the next entry
        kv = torch.cat([before_kv[:, :-1], kv[..., d:]], dim=2)  # (B, T, 2m, d)
        gate = torch.cat([before_gate[:, :-1], gate[..., d:]], dim=2)
    weights = gate.softmax(dim=2)  # (B, T, slots, d): per channel, over the window's slots
    pooled = rms_norm((kv * weights).sum(dim=2), norm_weight, eps)  # (B, T, d)
    positions = first + torch.arange(T, device=x.device) * m  # (T,)
    entries = rope_trailing(pooled, RopeTables(rope.cos[..., positions, :], rope.sin[..., positions, :], rope.pairing))
    return Pooled(entries=entries, weights=weights, positions=positions, share_kv=share_kv, share_gate=share_gate)


def visible(n: int, T: int, m: int, device=None, *, first: int = 0) -> torch.Tensor:
    """(n, T): the query at position first + i may read compressed entry s once its window has closed,
    s < ⌊(first + i + 1) / m⌋."""
    closed = (torch.arange(first, first + n, device=device) + 1) // m  # (n,)
    return torch.arange(T, device=device)[None, :] < closed[:, None]


@dataclass(frozen=True, eq=False)
class CompressedIndex:
    """:func:`compressed_index`: keys (B, T, d_I) the indexer's compressed keys it scored; scores (B, n, T) (−∞ where
    an entry is not yet closed); chosen (B, n, T) the top-k entries each query keeps."""

    keys: torch.Tensor
    scores: torch.Tensor
    chosen: torch.Tensor


def compressed_index(x: torch.Tensor, q_latent: torch.Tensor, keys: torch.Tensor, *, W_q: torch.Tensor,
                     W_w: torch.Tensor, n_heads: int, m: int, top_k: int, rope: RopeTables,
                     first: int = 0) -> CompressedIndex:
    """CSA's lightning indexer for the n queries x (B, n, d_model), q_latent (B, n, d_q) at positions first … first +
    n − 1 (rope: their tables (n, r/2)), over keys (B, T, d_I), its own overlapping pool (:func:`pool`) at width d_I:
    q_t,h = RoPE((q_latent W_q)_h), scores Σ_h (x W_w)_t,h / √H_I · ReLU(q_t,h · k_s) / √d_I, the top ``top_k``."""
    B, n = x.shape[0], x.shape[-2]
    q = rope_trailing((q_latent @ W_q).view(B, n, n_heads, -1).transpose(1, 2), rope)  # (B, H_I, n, d_I)
    d_I = q.shape[-1]
    per_head = F.relu(q @ keys.unsqueeze(1).transpose(-1, -2)) * d_I ** -0.5  # (B, H_I, n, T)
    w = (x @ W_w) * n_heads ** -0.5  # (B, n, H_I)
    scores = (per_head * w.transpose(-1, -2).unsqueeze(-1)).sum(1)  # (B, n, T)
    scores = scores.masked_fill(~visible(n, scores.shape[-1], m, device=x.device, first=first), float("-inf"))
    chosen = topk_mask(scores, top_k) if scores.shape[-1] else torch.zeros_like(scores, dtype=torch.bool)  # (B, n, T)
    return CompressedIndex(keys=keys, scores=scores, chosen=chosen)


@dataclass(frozen=True, eq=False)
class PoolState:
    """One compressed series after t tokens (the compressor's, or CSA's indexer's): entries (B, ⌊t/m⌋, d) after norm
    and RoPE; with overlap share_kv, share_gate (B, m, d): the last closed window's C_a share, which the next entry
    mixes in (None without overlap, and before the first window closes)."""

    entries: torch.Tensor
    share_kv: torch.Tensor | None = None
    share_gate: torch.Tensor | None = None

    @property
    def share(self) -> tuple[torch.Tensor, torch.Tensor] | None:
        return None if self.share_kv is None else (self.share_kv, self.share_gate)

    def grown(self, pooled: Pooled) -> PoolState:
        """The series with the entries one call closed appended (and its share, the newest window's)."""
        return PoolState(torch.cat([self.entries, pooled.entries], dim=-2), pooled.share_kv, pooled.share_gate)


@dataclass(frozen=True, eq=False)
class CompressedCache:
    """What a DeepSeek-V4 layer keeps after t tokens (transformers' ``DeepseekV4HCACache`` / ``DeepseekV4CSACache``)::

        window_kv   (B, min(t, w), d)      the last w K = V rows, rotated (transformers keeps w − 1: the newest row
                                           arrives with its query; core keeps the w the last query read)
        pending     (B, t mod m, d_model)  the raw inputs of the window not yet closed (transformers keeps their
                                           projections, per series); None for a sliding layer
        compressor  PoolState              entries (B, ⌊t/m⌋, d), and CSA's C_a share (B, m, d) of the last window
        indexer     PoolState              CSA: the indexer's keys (B, ⌊t/m⌋, d_I) and its share (B, m, d_I)

    Per token of context it grows by d / m (+ d_I / m for CSA); the window, pending and the shares are bounded."""

    kind: str
    length: int
    window_kv: torch.Tensor
    pending: torch.Tensor | None = None
    compressor: PoolState | None = None
    indexer: PoolState | None = None

    @property
    def kept_values(self) -> int:
        """Numbers per batch row that grow with t, as core.variants.kept counts them: d · min(t, w) + d · ⌊t/m⌋
        (+ d_I · ⌊t/m⌋ for CSA's indexer keys)."""
        parts = [self.window_kv] + [s.entries for s in (self.compressor, self.indexer) if s is not None]
        return sum(p[0].numel() for p in parts)

    @property
    def buffered_values(self) -> int:
        """Numbers per batch row held between windows, bounded whatever t: the pending inputs and the shares."""
        parts = [self.pending] + [p for s in (self.compressor, self.indexer) if s is not None
                                  for p in (s.share_kv, s.share_gate)]
        return sum(p[0].numel() for p in parts if p is not None)


@dataclass(frozen=True, eq=False)
class CompressedTrace:
    """:func:`compressed_step` / :func:`compressed_attention` for n new tokens at positions t … t + n − 1 after a
    cache whose window holds c rows (t = c = 0 for the full pass): q (B, H, n, d) rotated; window_kv (B, c + n, d)
    the window's keys (cached, then new); pooled (the compressed entries this call closed, or None for a sliding
    layer); index_pooled and index (CSA's indexer: its entries this call closed, its scores and choice over all T, or
    None); mask (B, 1, n, c + n + T); weights (B, H, n, c + n + T) (the window's keys first, then every entry so far,
    ``cache.compressor.entries``); sink_weight (B, H, n); output (B, n, d_out); cache: the cache after these tokens."""

    kind: str
    q: torch.Tensor
    window_kv: torch.Tensor
    pooled: Pooled | None
    index_pooled: Pooled | None
    index: CompressedIndex | None
    mask: torch.Tensor
    weights: torch.Tensor
    sink_weight: torch.Tensor
    output: torch.Tensor
    cache: CompressedCache

    @property
    def cache_values_per_token(self) -> float:
        """Cached numbers per token of context, the window aside: d per compressed entry, one entry per m tokens."""
        if self.cache.compressor is None:
            return 0.0
        return self.window_kv.shape[-1] * self.cache.compressor.entries.shape[-2] / max(1, self.cache.length)


def compressed_step(
    x: TensorLike,
    cache: CompressedCache | None = None,
    *,
    kind: str,
    W_qa: TensorLike,
    q_norm: TensorLike,
    W_qb: TensorLike,
    W_kv: TensorLike,
    kv_norm: TensorLike,
    sinks: TensorLike,
    W_oa: TensorLike,
    W_ob: TensorLike,
    n_heads: int,
    window: int,
    rope: RopeTables,
    compressor: dict | None = None,
    indexer: dict | None = None,
    top_k: int | None = None,
    norm_eps: float = 1e-6,
    device=None,
    dtype=None,
) -> CompressedTrace:
    r"""A DeepSeek-V4 layer decoding n new tokens x (B, n, d_model) after the t tokens of ``cache`` (None: t = 0, a
    prefill), as transformers' ``DeepseekV4Attention`` runs with its cache:

        window:      K = V rows of the new tokens appended; each query reads the last w                 (B, c + n, d)
        compressed:  [pending ; x] pooled (:func:`pool`), its closed windows appended as entries        (B, T, d)
                     (CSA: the cached C_a share opens the first one), the rest pending for later
        CSA:         the indexer pools the same inputs at width d_I and keeps each query's top k        (B, n, T)

    The weights and arguments are those of :func:`compressed_attention`; rope: the layer's tables for positions
    0 … t + n − 1 (or more: one table for the whole sequence serves every step). Returns the trace of the new rows,
    with ``cache`` the cache after them. A prefill then steps equals the full pass row by row (up to rounding)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if (kind == "sliding") != (compressor is None) or (kind == "csa") != (indexer is not None):
        raise ValueError("a sliding layer takes no compressor; csa takes a compressor and an indexer; hca a compressor")
    H, eps = int_at_least("n_heads", n_heads), positive_number("norm_eps", norm_eps)
    w = int_at_least("window", window)
    t = as_tensors(given(x=x, W_qa=W_qa, q_norm=q_norm, W_qb=W_qb, W_kv=W_kv, kv_norm=kv_norm, sinks=sinks, W_oa=W_oa,
                         W_ob=W_ob), device=device, dtype=dtype)
    X = t["x"]
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    B, n = X.shape[:2]
    start = 0 if cache is None else cache.length  # the new tokens sit at start … start + n − 1
    if cache is not None and (cache.kind != kind or cache.window_kv.shape[0] != B):
        raise ValueError(f"the cache is of a {cache.kind} layer with batch {cache.window_kv.shape[0]}, not {kind} "
                         f"with batch {B}")
    if rope.n < start + n:
        raise ValueError(f"RoPE tables for {rope.n} positions do not reach position {start + n - 1}")
    here = rope.at(slice(start, start + n))  # the new rows' tables (n, r/2)
    q_latent = rms_norm(X @ t["W_qa"], t["q_norm"], eps)  # (B, n, d_q)
    q = rope_trailing(rms_norm((q_latent @ t["W_qb"]).view(B, n, H, -1).transpose(1, 2), eps=eps), here)  # (B, H, n, d)
    kv = rope_trailing(rms_norm(X @ t["W_kv"], t["kv_norm"], eps), here)  # (B, n, d): K = V, one head
    window_kv = kv if cache is None else torch.cat([cache.window_kv, kv], dim=-2)  # (B, c + n, d)
    c = window_kv.shape[-2] - n
    mask = window_mask(c + n, w, causal_only=True, device=X.device)[c:].expand(B, 1, n, c + n)  # the last n queries
    pooled = index_pooled = index = pending = comp = ix_state = None
    keys = window_kv
    if compressor is not None:
        cw = as_tensors({k: v for k, v in compressor.items() if k != "m"}, device=X.device, dtype=X.dtype)
        m = int_at_least("the pool size m", compressor["m"])
        opened = X if cache is None else torch.cat([cache.pending, X], dim=-2)  # (B, t mod m + n, d_model)
        first = start - (opened.shape[-2] - n)  # the open window's first position: a window boundary
        before = PoolState(X.new_zeros(B, 0, window_kv.shape[-1])) if cache is None else cache.compressor
        pooled = pool(opened, cw["W_c"], cw["W_gate"], cw["position_bias"], cw["norm_weight"], m, overlap=kind == "csa",
                      rope=rope, eps=eps, first=first, share=before.share)
        comp = before.grown(pooled)  # entries (B, T, d)
        pending = opened[:, pooled.entries.shape[-2] * m:]  # (B, (t + n) mod m, d_model)
        T = comp.entries.shape[-2]
        reach = visible(n, T, m, device=X.device, first=start).expand(B, n, T)  # (B, n, T)
        if indexer is not None:
            ix = as_tensors({k: v for k, v in indexer.items() if k != "n_heads"}, device=X.device, dtype=X.dtype)
            ix_before = PoolState(X.new_zeros(B, 0, ix["norm_weight"].shape[-1])) if cache is None else cache.indexer
            index_pooled = pool(opened, ix["W_c"], ix["W_gate"], ix["position_bias"], ix["norm_weight"], m, overlap=True,
                                rope=rope, eps=eps, first=first, share=ix_before.share)
            ix_state = ix_before.grown(index_pooled)  # keys (B, T, d_I)
            index = compressed_index(X, q_latent, ix_state.entries, W_q=ix["W_q"], W_w=ix["W_w"],
                                     n_heads=int_at_least("the indexer's n_heads", indexer["n_heads"]), m=m,
                                     top_k=int_at_least("top_k", top_k), rope=here, first=start)
            reach = reach & index.chosen
        keys = torch.cat([window_kv, comp.entries], dim=-2)  # (B, c + n + T, d): the window's keys, then the entries
        mask = torch.cat([mask, reach.unsqueeze(1)], dim=-1)  # (B, 1, n, c + n + T)
    d = q.shape[-1]
    z = t["sinks"].reshape(H, 1)  # (H, 1): one sink logit per head, every row
    heads = attention(q, keys.unsqueeze(1), keys.unsqueeze(1), mask=mask, scale=d ** -0.5, sinks=z)  # (B, H, n, ·)
    o = rope_trailing(heads.output, unrotate(here))  # (B, H, n, d): the rope slice turned back
    g = t["W_oa"].shape[0]
    grouped = o.transpose(1, 2).reshape(B, n, g, -1)  # (B, n, g, H·d/g)
    low = torch.einsum("bngi,gir->bngr", grouped, t["W_oa"]).flatten(-2)  # (B, n, g·r_o)
    after = CompressedCache(kind=kind, length=start + n, window_kv=window_kv[:, -w:], pending=pending, compressor=comp,
                            indexer=ix_state)
    return CompressedTrace(kind=kind, q=q, window_kv=window_kv, pooled=pooled, index_pooled=index_pooled, index=index,
                           mask=mask, weights=heads.weights, sink_weight=heads.sink_weight, output=low @ t["W_ob"],
                           cache=after)


def compressed_attention(
    x: TensorLike,
    *,
    kind: str,
    W_qa: TensorLike,
    q_norm: TensorLike,
    W_qb: TensorLike,
    W_kv: TensorLike,
    kv_norm: TensorLike,
    sinks: TensorLike,
    W_oa: TensorLike,
    W_ob: TensorLike,
    n_heads: int,
    window: int,
    rope: RopeTables,
    compressor: dict | None = None,
    indexer: dict | None = None,
    top_k: int | None = None,
    norm_eps: float = 1e-6,
    device=None,
    dtype=None,
) -> CompressedTrace:
    r"""One DeepSeek-V4 attention layer over x (B, n, d_model) (module doc): :func:`compressed_step` from an empty
    cache. ``kind``: "sliding" (the window alone), "csa" or "hca". W_qa (d_model, d_q), q_norm (d_q,), W_qb (d_q, H·d);
    W_kv (d_model, d), kv_norm (d,); sinks (H,); W_oa (g, H·d/g, r_o) the grouped low-rank output, W_ob (g·r_o, d_out);
    rope: the layer's tables (n, r/2), adjacent pairs (V4 rotates compressed layers with its "compress" θ).
    compressor: W_c, W_gate, position_bias, norm_weight, m (CSA: 2d columns); indexer (CSA): W_c, W_gate,
    position_bias, norm_weight, W_q, W_w, n_heads, and ``top_k``. The trace's ``cache`` is what decoding goes on from."""
    return compressed_step(x, None, kind=kind, W_qa=W_qa, q_norm=q_norm, W_qb=W_qb, W_kv=W_kv, kv_norm=kv_norm,
                           sinks=sinks, W_oa=W_oa, W_ob=W_ob, n_heads=n_heads, window=window, rope=rope,
                           compressor=compressor, indexer=indexer, top_k=top_k, norm_eps=norm_eps, device=device,
                           dtype=dtype)
