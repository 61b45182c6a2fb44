r"""Sparse top-k attention with DeepSeek-V3.2's lightning indexer (DeepSeek Sparse Attention), row convention.

A small, cheap scorer picks for every query the k keys worth attending to; attention then runs over those
keys only (cost n·k instead of n²). The indexer (DeepSeek-V3.2-Exp report, eq. 1) has H_I heads of width
d_I, a key shared by all of them, and a per-query weight for each head::

    q_I = c_Q W_Iq              (n, H_I·d_I)   from the query's q-LoRA latent c_Q
    k_I = LayerNorm(x W_Ik)     (n, d_I)       one key per token (RoPE on its first d_R dims, as q_I)
    w   = x W_w · H_I^(−1/2)    (n, H_I)
    I_ts = Σ_j w_tj · ReLU(q_I,tj · k_I,s / √d_I)         (n, n)   the index score of key s for query t

    chosen_t = top-k_s I_ts among the keys the causal mask allows          (a query with ≤ k keys keeps all)
    o_t = softmax over chosen_t of (q_t k_sᵀ · scale) · V

Ties in I (e.g. two keys whose every head is cut by the ReLU) are broken by ``torch.topk``'s order.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensor, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.attention import AttentionTrace
from core.mechanism.masks import causal as causal_mask
from core.mechanism.masks import self_attention as self_attention_mask
from core.mechanism.multihead import grouped_query_attention, project, split_heads
from core.mechanism.positional import check_pairing, rope_for


@dataclass(frozen=True, eq=False)
class IndexerTrace:
    """:func:`lightning_indexer`: q (B, H_I, n, d_I), k (B, n, d_I) (normalised, rotated), head_weights (B, n, H_I),
    head_scores (B, H_I, n, n) ReLU(q·k/√d_I), scores (B, n, n) Σ_j w_j·head_scores_j with −∞ where masked."""

    q: torch.Tensor
    k: torch.Tensor
    head_weights: torch.Tensor
    head_scores: torch.Tensor
    scores: torch.Tensor
    mask: torch.Tensor | None


def lightning_indexer(
    x: TensorLike,
    c_q: TensorLike,
    *,
    W_Iq: TensorLike,
    W_Ik: TensorLike,
    W_w: TensorLike,
    n_index_heads: int,
    k_norm_weight: TensorLike | None = None,
    k_norm_bias: TensorLike | None = None,
    norm_eps: float = 1e-6,
    rope=None,
    rope_pairing: str = "half",
    causal: bool = True,
    mask: TensorLike | None = None,
    device=None,
    dtype=None,
) -> IndexerTrace:
    """DeepSeek-V3.2's index scores I (B, n, n) (see the module doc).

    x (B, n, d_model), c_q (B, n, d_cq) the q-LoRA latent; W_Iq (d_cq, H_I·d_I), W_Ik (d_model, d_I),
    W_w (d_model, H_I); LayerNorm on the key with ``k_norm_weight``/``k_norm_bias`` (d_I,) (None: 1 and 0).
    rope: base θ or (cos, sin) tables (n, d_R/2) / (B, n, d_R/2): the first d_R dims of q_I and k_I turn
    (V3.2 pairs the halves here, unlike its MLA, hence ``rope_pairing="half"``).
    """
    H_I = int_at_least("n_index_heads", n_index_heads)
    t = as_tensors(given(x=x, c_q=c_q, W_Iq=W_Iq, W_Ik=W_Ik, W_w=W_w, k_norm_weight=k_norm_weight,
                          k_norm_bias=k_norm_bias), device=device, dtype=dtype)
    X = t["x"]
    if X.dim() < 2 or X.shape[-2] == 0 or t["c_q"].shape[:-1] != X.shape[:-1]:
        raise ValueError(f"x (..., n, d_model) and c_q (..., n, d_cq) need the same tokens, got x {shape_str(X.shape)} "
                         f"and c_q {shape_str(t['c_q'].shape)}")
    n = X.shape[-2]
    q_all = project(t, "c_q", "W_Iq")  # (B, n, H_I·d_I)
    if q_all.shape[-1] % H_I:
        raise ValueError(f"W_Iq has {q_all.shape[-1]} columns, not divisible by n_index_heads={H_I}")
    q = split_heads(q_all, H_I)  # (B, H_I, n, d_I)
    d_I = q.shape[-1]
    k_lin = project(t, "x", "W_Ik")  # (B, n, d_I)
    if k_lin.shape[-1] != d_I:
        raise ValueError(f"W_Ik gives keys of width {k_lin.shape[-1]} but the index queries have d_I = {d_I}")
    for name in ("k_norm_weight", "k_norm_bias"):
        if name in t and t[name].shape != (d_I,):
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs (d_I,) = ({d_I},)")
    k = torch.nn.functional.layer_norm(k_lin, (d_I,), t.get("k_norm_weight"), t.get("k_norm_bias"),
                                       eps=positive_number("norm_eps", norm_eps))  # (B, n, d_I)
    tables = rope_for(rope, n, d_I, pairing=check_pairing(rope_pairing), device=X.device, dtype=X.dtype)
    if tables is not None:
        q = tables.apply(q)  # (B, H_I, n, d_I)
        k = tables.apply(k.unsqueeze(-3)).squeeze(-3)  # (B, n, d_I)
    head_scores = torch.relu(q @ k.unsqueeze(-3).transpose(-1, -2) * d_I ** -0.5)  # (B, H_I, n, n)
    w = project(t, "x", "W_w") * H_I ** -0.5  # (B, n, H_I)
    if w.shape[-1] != H_I:
        raise ValueError(f"W_w has {w.shape[-1]} columns but needs one weight per index head, {H_I}")
    scores = (w.transpose(-1, -2).unsqueeze(-1) * head_scores).sum(-3)  # (B, n, n): Σ_j w_tj · ReLU(…)
    m = self_attention_mask(n, causal=causal, mask=mask, device=X.device)
    if m is not None:
        scores = scores.masked_fill(~m, float("-inf"))
    return IndexerTrace(q=q, k=k, head_weights=w, head_scores=head_scores, scores=scores, mask=m)


@dataclass(frozen=True, eq=False)
class SparseTopKTrace:
    """:func:`sparse_topk_attention`: index_scores (B, n_q, n_k), chosen (B, n_q, n_k) boolean (the top-k keys
    each query attends to), attention: the AttentionTrace over the chosen keys (weights (B, H, n_q, n_k),
    0 off the chosen set), output (B, H, n_q, d_v), top_k as asked."""

    index_scores: torch.Tensor
    chosen: torch.Tensor
    attention: AttentionTrace
    output: torch.Tensor
    top_k: int

    @property
    def keys_per_query(self) -> torch.Tensor:
        """How many keys each query attends to (B, n_q): min(top_k, the keys its mask allows)."""
        return self.chosen.sum(-1)


def topk_mask(index_scores: torch.Tensor, top_k: int) -> torch.Tensor:
    """True at the ``top_k`` highest finite scores of each row (…, n_q, n_k) → boolean of the same shape."""
    k = min(int_at_least("top_k", top_k), index_scores.shape[-1])
    idx = index_scores.topk(k, dim=-1).indices  # (…, n_q, k)
    chosen = torch.zeros_like(index_scores, dtype=torch.bool).scatter(-1, idx, True)
    return chosen & torch.isfinite(index_scores)  # a masked (−∞) key is never chosen


def sparse_topk_attention(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    *,
    index_scores: TensorLike,
    top_k: int,
    causal: bool = True,
    scale: float | None = None,
    device=None,
    dtype=None,
) -> SparseTopKTrace:
    """Attention of every query over its ``top_k`` keys by ``index_scores`` only.

    q (B, H, n_q, d_k), k (B, G, n_k, d_k), v (B, G, n_k, d_v) with G dividing H (K/V head g serves H/G query
    heads); index_scores (B, n_q, n_k), one selection shared by all heads (e.g. ``lightning_indexer(…).scores``).
    causal: keys after the query (queries are the last n_q positions) are never chosen. scale: 1/√d_k.
    """
    t = as_tensors({"q": q, "k": k, "v": v}, device=device, dtype=dtype)
    Q, K, V = t["q"], t["k"], t["v"]
    I = as_tensor(index_scores, "index_scores", device=Q.device, dtype=Q.dtype, finite=False)  # noqa: E741 (−∞ = masked)
    if bool(torch.isnan(I).any()):
        raise ValueError("index_scores contains NaN")
    if Q.dim() < 3 or K.dim() != Q.dim() or V.dim() != Q.dim():
        raise ValueError(f"q, k, v must be (…, heads, n, d), got q {shape_str(Q.shape)}, k {shape_str(K.shape)}, "
                         f"v {shape_str(V.shape)}")
    H, G = Q.shape[-3], K.shape[-3]
    if G < 1 or H % G:
        raise ValueError(f"k and v have {G} heads, which must divide q's {H} heads")
    n_q, n_k = Q.shape[-2], K.shape[-2]
    if I.shape[-2:] != (n_q, n_k):
        raise ValueError(f"index_scores {shape_str(I.shape)} must end in (n_q, n_k) = ({n_q}, {n_k})")
    if causal:
        I = I.masked_fill(~causal_mask(n_q, n_k, device=I.device), float("-inf"))  # noqa: E741
    chosen = topk_mask(I, top_k)  # (B, n_q, n_k)
    tr = grouped_query_attention(Q, K, V, mask=chosen.unsqueeze(-3), scale=scale)[3]  # weights (B, H, n_q, n_k)
    return SparseTopKTrace(index_scores=I, chosen=chosen, attention=tr, output=tr.output, top_k=top_k)


@dataclass(frozen=True)
class SparseCost:
    """Multiply-adds of one layer over n tokens: ``full`` attention, ``indexer`` (the index scores), ``selected``
    (attention over the chosen keys only) and ``sparse`` = indexer + selected. Dense counts: every query against
    every key (the causal half included), as a dense implementation computes them; element-wise work (ReLU,
    softmax, the heads' weighting) is not counted."""

    n: int
    top_k: int
    full: int
    indexer: int
    selected: int

    @property
    def sparse(self) -> int:
        return self.indexer + self.selected


def sparse_topk_macs(n: int, top_k: int, *, n_heads: int, d_k: int, d_v: int, n_index_heads: int,
                     d_index: int) -> SparseCost:
    r"""The cost of sparse top-k attention against full attention, in multiply-adds::

        full     = H · n · n · (d_k + d_v)          QKᵀ and αV over every key
        indexer  = H_I · n · n · d_I                 the index queries against every index key
        selected = H · n · min(k, n) · (d_k + d_v)   QKᵀ and αV over the k chosen keys

    The indexer still reads every key, but with H_I·d_I multiply-adds per pair where attention spends
    H·(d_k + d_v); the V3.2 report counts it the same way (its indexer is small and runs in FP8)."""
    for name, value in (("n", n), ("top_k", top_k), ("n_heads", n_heads), ("d_k", d_k), ("d_v", d_v),
                        ("n_index_heads", n_index_heads), ("d_index", d_index)):
        int_at_least(name, value)
    pair = n_heads * (d_k + d_v)
    return SparseCost(n=n, top_k=top_k, full=n * n * pair, indexer=n_index_heads * n * n * d_index,
                      selected=n * min(top_k, n) * pair)
