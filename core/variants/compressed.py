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
    """Compressed entries: entries (B, T, d) after norm and RoPE; weights (B, T, slots, d): each slot's softmax gate
    per channel (slots = m, or 2m with overlap); positions (T,): where each entry sits (its window's first token)."""

    entries: torch.Tensor
    weights: torch.Tensor
    positions: torch.Tensor


def pool(x: torch.Tensor, W_c: torch.Tensor, W_gate: torch.Tensor, position_bias: torch.Tensor, norm_weight: torch.Tensor,
         m: int, *, overlap: bool, rope: RopeTables, eps: float) -> Pooled:
    """Every closed window of m tokens of x (B, n, d_model) as one entry (see the module doc). Without overlap
    W_c, W_gate (d_model, d), position_bias (m, d); with overlap (CSA) they have 2d columns: the first d the token's
    share in the next window's entry, the last d its share in its own. rope: tables for positions 0 … n − 1."""
    B, n = x.shape[0], x.shape[-2]
    T = n // m  # closed windows
    kv, gate = x[:, :T * m] @ W_c, x[:, :T * m] @ W_gate  # (B, T·m, d or 2d)
    kv = kv.view(B, T, m, W_c.shape[-1])
    gate = gate.view(B, T, m, W_c.shape[-1]) + position_bias  # (B, T, m, d or 2d): the slot's learned bias
    if overlap:
        d = kv.shape[-1] // 2
        prev_kv = F.pad(kv[:, :-1, :, :d], (0, 0, 0, 0, 1, 0))  # (B, T, m, d): window s − 1's C_a, zeros for s = 0
        prev_gate = F.pad(gate[:, :-1, :, :d], (0, 0, 0, 0, 1, 0), value=float("-inf"))  # weight 0 before the first
        kv = torch.cat([prev_kv, kv[..., d:]], dim=2)  # (B, T, 2m, d)
        gate = torch.cat([prev_gate, gate[..., d:]], dim=2)
    weights = gate.softmax(dim=2)  # (B, T, slots, d): per channel, over the window's slots
    pooled = rms_norm((kv * weights).sum(dim=2), norm_weight, eps)  # (B, T, d)
    positions = torch.arange(T, device=x.device) * m  # (T,)
    entries = rope_trailing(pooled, RopeTables(rope.cos[..., positions, :], rope.sin[..., positions, :], rope.pairing))
    return Pooled(entries=entries, weights=weights, positions=positions)


def visible(n: int, T: int, m: int, device=None) -> torch.Tensor:
    """(n, T): query t may read compressed entry s once its window has closed, s < ⌊(t + 1) / m⌋."""
    return torch.arange(T, device=device)[None, :] < ((torch.arange(n, device=device) + 1) // m)[:, None]


@dataclass(frozen=True, eq=False)
class CompressedIndex:
    """:func:`compressed_index`: keys (B, T, d_I) the indexer's own compressed keys; scores (B, n, T) (−∞ where an
    entry is not yet closed); chosen (B, n, T) the top-k entries each query keeps."""

    keys: Pooled
    scores: torch.Tensor
    chosen: torch.Tensor


def compressed_index(x: torch.Tensor, q_latent: torch.Tensor, *, W_c: torch.Tensor, W_gate: torch.Tensor,
                     position_bias: torch.Tensor, norm_weight: torch.Tensor, W_q: torch.Tensor, W_w: torch.Tensor,
                     n_heads: int, m: int, top_k: int, rope: RopeTables, eps: float) -> CompressedIndex:
    """CSA's lightning indexer over compressed entries: its own overlapping pool at width d_I, queries
    q_t,h = RoPE((q_latent W_q)_h), scores Σ_h (x W_w)_t,h / √H_I · ReLU(q_t,h · k_s) / √d_I, the top ``top_k``."""
    keys = pool(x, W_c, W_gate, position_bias, norm_weight, m, overlap=True, rope=rope, eps=eps)  # entries (B, T, d_I)
    B, n = x.shape[0], x.shape[-2]
    q = rope_trailing((q_latent @ W_q).view(B, n, n_heads, -1).transpose(1, 2), rope)  # (B, H_I, n, d_I)
    d_I = q.shape[-1]
    per_head = F.relu(q @ keys.entries.unsqueeze(1).transpose(-1, -2)) * d_I ** -0.5  # (B, H_I, n, T)
    w = (x @ W_w) * n_heads ** -0.5  # (B, n, H_I)
    scores = (per_head * w.transpose(-1, -2).unsqueeze(-1)).sum(1)  # (B, n, T)
    scores = scores.masked_fill(~visible(n, scores.shape[-1], m, device=x.device), float("-inf"))
    chosen = topk_mask(scores, top_k) if scores.shape[-1] else torch.zeros_like(scores, dtype=torch.bool)  # (B, n, T)
    return CompressedIndex(keys=keys, scores=scores, chosen=chosen)


@dataclass(frozen=True, eq=False)
class CompressedTrace:
    """:func:`compressed_attention`: q (B, H, n, d) rotated; window_kv (B, n, d); pooled (the compressed entries, or
    None for a sliding layer); index (CSA's indexer, or None); mask (B or 1, 1, n, n + T); weights (B, H, n, n + T)
    (the window's keys first, then the entries); sink_weight (B, H, n); output (B, n, d_out)."""

    kind: str
    q: torch.Tensor
    window_kv: torch.Tensor
    pooled: Pooled | None
    index: CompressedIndex | None
    mask: torch.Tensor
    weights: torch.Tensor
    sink_weight: torch.Tensor
    output: torch.Tensor

    @property
    def cache_values_per_token(self) -> float:
        """Cached numbers per token of context, the window aside: d per compressed entry, one entry per m tokens."""
        if self.pooled is None:
            return 0.0
        return self.window_kv.shape[-1] * self.pooled.entries.shape[-2] / max(1, self.q.shape[-2])


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
    r"""One DeepSeek-V4 attention layer over x (B, n, d_model) (module doc). ``kind``: "sliding" (the window alone),
    "csa" or "hca". W_qa (d_model, d_q), q_norm (d_q,), W_qb (d_q, H·d); W_kv (d_model, d), kv_norm (d,); sinks (H,);
    W_oa (g, H·d/g, r_o) the grouped low-rank output, W_ob (g·r_o, d_out); rope: the layer's tables (n, r/2), adjacent
    pairs (V4 rotates compressed layers with its "compress" θ). compressor: W_c, W_gate, position_bias, norm_weight,
    m (CSA: 2d columns); indexer (CSA): W_c, W_gate, position_bias, norm_weight, W_q, W_w, n_heads, and ``top_k``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if (kind == "sliding") != (compressor is None) or (kind == "csa") != (indexer is not None):
        raise ValueError("a sliding layer takes no compressor; csa takes a compressor and an indexer; hca a compressor")
    H, eps = int_at_least("n_heads", n_heads), positive_number("norm_eps", norm_eps)
    t = as_tensors(given(x=x, W_qa=W_qa, q_norm=q_norm, W_qb=W_qb, W_kv=W_kv, kv_norm=kv_norm, sinks=sinks, W_oa=W_oa,
                         W_ob=W_ob), device=device, dtype=dtype)
    X = t["x"]
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    B, n = X.shape[:2]
    q_latent = rms_norm(X @ t["W_qa"], t["q_norm"], eps)  # (B, n, d_q)
    q = rope_trailing(rms_norm((q_latent @ t["W_qb"]).view(B, n, H, -1).transpose(1, 2), eps=eps), rope)  # (B, H, n, d)
    kv = rope_trailing(rms_norm(X @ t["W_kv"], t["kv_norm"], eps), rope)  # (B, n, d): K = V, one head
    mask = window_mask(n, int_at_least("window", window), causal_only=True, device=X.device).expand(B, 1, n, n)
    pooled = index = None
    keys = kv
    if compressor is not None:
        c = as_tensors({k: v for k, v in compressor.items() if k != "m"}, device=X.device, dtype=X.dtype)
        m = int_at_least("the pool size m", compressor["m"])
        pooled = pool(X, c["W_c"], c["W_gate"], c["position_bias"], c["norm_weight"], m, overlap=kind == "csa",
                      rope=rope, eps=eps)
        T = pooled.entries.shape[-2]
        reach = visible(n, T, m, device=X.device).expand(B, n, T)  # (B, n, T)
        if indexer is not None:
            ix = as_tensors({k: v for k, v in indexer.items() if k != "n_heads"}, device=X.device, dtype=X.dtype)
            k_top = int_at_least("top_k", top_k)
            index = compressed_index(X, q_latent, W_c=ix["W_c"], W_gate=ix["W_gate"], position_bias=ix["position_bias"],
                                     norm_weight=ix["norm_weight"], W_q=ix["W_q"], W_w=ix["W_w"],
                                     n_heads=int_at_least("the indexer's n_heads", indexer["n_heads"]), m=m,
                                     top_k=k_top, rope=rope, eps=eps)
            reach = reach & index.chosen
        keys = torch.cat([kv, pooled.entries], dim=-2)  # (B, n + T, d): the window's keys, then the entries
        mask = torch.cat([mask, reach.unsqueeze(1)], dim=-1)  # (B, 1, n, n + T)
    d = q.shape[-1]
    z = t["sinks"].reshape(H, 1)  # (H, 1): one sink logit per head, every row
    heads = attention(q, keys.unsqueeze(1), keys.unsqueeze(1), mask=mask, scale=d ** -0.5, sinks=z)  # (B, H, n, n + T)
    o = rope_trailing(heads.output, unrotate(rope))  # (B, H, n, d): the rope slice turned back
    g = t["W_oa"].shape[0]
    grouped = o.transpose(1, 2).reshape(B, n, g, -1)  # (B, n, g, H·d/g)
    low = torch.einsum("bngi,gir->bngr", grouped, t["W_oa"]).flatten(-2)  # (B, n, g·r_o)
    return CompressedTrace(kind=kind, q=q, window_kv=kv, pooled=pooled, index=index, mask=mask, weights=heads.weights,
                           sink_weight=heads.sink_weight, output=low @ t["W_ob"])
