r"""Multi-head attention (C20, C21), grouped-query / multi-query attention and the fused QKV
projection (C17), row convention.

    Q = X_q W_q + b_q,  K = X_kv W_k + b_k,  V = X_kv W_v + b_v
    head_h = softmax(Q_h K_{g(h)}ᵀ / √d_k) V_{g(h)}
    MHA(X) = Concat(head_1, …, head_H) W_o + b_o

With ``n_kv_heads = G`` (G divides H) the queries have H heads but keys and values only G:
query head h reads K/V head g(h) = ⌊h / (H/G)⌋, so each group of H/G consecutive query heads
shares one K/V head (grouped-query attention). G = H is ordinary multi-head attention, G = 1
is multi-query attention. This is what ``F.scaled_dot_product_attention(..., enable_gqa=True)``
and Hugging Face's ``repeat_kv`` do (``repeat_interleave`` over the head axis).

Weight layout follows the math (x @ W), so ``torch.nn.MultiheadAttention`` holds the
transposes: ``in_proj_weight = cat(W_qᵀ, W_kᵀ, W_vᵀ)``, ``out_proj.weight = W_oᵀ``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, shape_str
from core.mechanism.attention import AttentionTrace, attention
from core.mechanism.positional import RopeTables, rope_tables


@dataclass(frozen=True, eq=False)
class MultiHeadTrace:
    """Every step of multi-head attention, with B = leading batch dims, H query heads, G K/V heads.

    x_q (B, n_q, d_model), x_kv (B, n_k, d_kv)
    q_proj (B, n_q, H·d_k), k_proj (B, n_k, G·d_k), v_proj (B, n_k, G·d_v)  — before the split
    q (B, H, n_q, d_k), k (B, G, n_k, d_k), v (B, G, n_k, d_v)              — after split + transpose
    heads: AttentionTrace with weights (B, H, n_q, n_k) and output (B, H, n_q, d_v); its k and v
           are the K/V heads repeated for every query head, (B, H, n_k, d)
    concat (B, n_q, H·d_v), output (B, n_q, d_out)
    kv_head_of: query head h reads K/V head ``kv_head_of[h]`` (length H; (0, 1, …) when G = H)
    rope_base: RoPE's θ when q and k were rotated (then q and k are the rotated ones), else None
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
    n_kv_heads: int | None = None
    kv_head_of: tuple[int, ...] = ()
    rope_base: float | None = None

    @property
    def group_size(self) -> int:
        """Query heads per K/V head, H / G (1 for multi-head, H for multi-query)."""
        return self.n_heads // (self.n_kv_heads or self.n_heads)

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


def kv_head_map(n_heads: int, n_kv_heads: int | None = None) -> tuple[int, ...]:
    """Which K/V head each query head reads: g(h) = ⌊h / (H/G)⌋, a tuple of length H.

    ``n_kv_heads=None`` means G = H (every query head has its own K/V head). Raises ValueError
    unless 1 ≤ G ≤ H and G divides H.
    """
    H = _check_heads("n_heads", n_heads)
    G = H if n_kv_heads is None else _check_heads("n_kv_heads", n_kv_heads)
    if G > H or H % G:
        raise ValueError(f"n_kv_heads={G} must divide n_heads={H} (1 ≤ G ≤ H); divisors of {H}: "
                         + ", ".join(str(g) for g in range(1, H + 1) if H % g == 0))
    return tuple(h // (H // G) for h in range(H))


def repeat_kv(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, G, n, d) → (B, H, n, d): K/V head g repeated for its H/G query heads (``repeat_interleave``)."""
    G = x.shape[-3]
    return x if G == n_heads else x.repeat_interleave(n_heads // G, dim=-3)  # (B, H, n, d)


def _check_heads(name: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return n


def project(t: dict, xname: str, wname: str, bname: str | None = None) -> torch.Tensor:
    """x @ W (+ b) with shape checks naming the arguments: (B, n, d_in) @ (d_in, d_out) → (B, n, d_out)."""
    x, W = t[xname], t[wname]
    if W.dim() != 2:
        raise ValueError(f"{wname} must be a matrix but has shape {shape_str(W.shape)}")
    if x.shape[-1] != W.shape[0]:
        raise ValueError(f"{xname} has width {x.shape[-1]} but {wname} {shape_str(W.shape)} expects {W.shape[0]} rows")
    out = x @ W  # (B, n, d_out)
    if bname is not None and bname in t:
        if t[bname].shape != (W.shape[1],):
            raise ValueError(f"{bname} has shape {shape_str(t[bname].shape)} but needs ({W.shape[1]},)")
        out = out + t[bname]
    return out


def head_width(width: int, heads: int, wname: str, what: str) -> int:
    """The width per head of a projection with ``width`` columns over ``heads`` heads; ValueError if they don't divide."""
    if width % heads:
        raise ValueError(f"{wname} has {width} columns, not divisible by {what}={heads}")
    return width // heads


def project_heads(t: dict, H: int, G: int, *, x_q: str = "x", x_kv: str | None = None,
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int, int]:
    """The one set of weight checks and projections of every grouped-query layer here:
    Q = x_q W_q (+ b_q) (B, n_q, H·d_k), K = x_kv W_k (+ b_k) (B, n_k, G·d_k), V = x_kv W_v (+ b_v) (B, n_k, G·d_v).

    ``t`` holds the tensors by name (x_q's and x_kv's names given; x_kv defaults to x_q); W_o, when present, must
    have H·d_v rows. Returns (Q, K, V, d_k, d_v); ValueError naming the argument on any mismatch."""
    x_kv = x_q if x_kv is None else x_kv
    for name in dict.fromkeys((x_q, x_kv)):
        if t[name].dim() < 2:
            raise ValueError(f"{name} must be (..., n, d_model) but has shape {shape_str(t[name].shape)}")
    Q, K, V = project(t, x_q, "W_q", "b_q"), project(t, x_kv, "W_k", "b_k"), project(t, x_kv, "W_v", "b_v")
    d_k = head_width(Q.shape[-1], H, "W_q", "n_heads")
    if head_width(K.shape[-1], G, "W_k", "n_kv_heads" if G != H else "n_heads") != d_k:
        raise ValueError(
            f"W_q {shape_str(t['W_q'].shape)} over {H} heads and W_k {shape_str(t['W_k'].shape)} over "
            f"{G} K/V heads need the same width per head (d_k)" if G != H else
            f"W_q {shape_str(t['W_q'].shape)} and W_k {shape_str(t['W_k'].shape)} need the same width")
    d_v = head_width(V.shape[-1], G, "W_v", "n_kv_heads" if G != H else "n_heads")
    if "W_o" in t:
        if t["W_o"].dim() != 2:
            raise ValueError(f"W_o must be a matrix but has shape {shape_str(t['W_o'].shape)}")
        if t["W_o"].shape[0] != H * d_v:
            raise ValueError(f"concat width {H * d_v} (H·d_v) but W_o {shape_str(t['W_o'].shape)}: it needs H·d_v = "
                             f"{H * d_v} rows")
    return Q, K, V, d_k, d_v


def grouped_query_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                            past: tuple[torch.Tensor, torch.Tensor] | None = None, rope: RopeTables | None = None,
                            mask=None, bias=None, score: str = "scaled_dot", params=None, scale: float | None = None,
                            softcap: float | None = None, sinks=None,
                            check_finite: bool = True) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, AttentionTrace]:
    r"""The one grouped-query attention with RoPE: multi-head attention, the caches, the variants and the decoder use it.

        k ← R(pos) k,  q ← R(pos_q) q          (RoPE: the new keys at their positions, queries at the last n_q)
        K = [K_past; k],  V = [V_past; v]       (the cache, when ``past`` is given)
        head_h = attention(q_h, K_{g(h)}, V_{g(h)}; mask, bias, softcap, sinks),   g(h) = ⌊h / (H/G)⌋

    q (..., H, n_q, d_k); k (..., G, s, d_k), v (..., G, s, d_v): the s new keys and values, before RoPE;
    past: the cached (K, V) (..., G, t, d) already rotated, or None; rope: :class:`RopeTables` for the new keys'
    positions (:func:`core.mechanism.positional.rope_tables`) or None — queries take its last n_q rows.
    mask/bias broadcast to (..., H, n_q, t+s); softcap and sinks as in :func:`core.mechanism.attention.attention`.
    Returns (q, K, V, heads) with q rotated and K, V every key and value attended (the new cache);
    heads.weights (..., H, n_q, t+s).
    """
    H = q.shape[-3]
    if rope is not None:
        q = rope.last(q.shape[-2]).apply(q)  # (..., H, n_q, d_k)
        k = rope.apply(k)  # (..., G, s, d_k)
    if past is not None:
        k, v = torch.cat([past[0], k], dim=-2), torch.cat([past[1], v], dim=-2)  # (..., G, t+s, d)
    heads = attention(q, repeat_kv(k, H), repeat_kv(v, H), score=score, mask=mask, params=params, bias=bias,
                      scale=scale, softcap=softcap, sinks=sinks, check_finite=check_finite)  # weights (..., H, n_q, t+s)
    return q, k, v, heads


def multi_head_attention(
    x_q: TensorLike,
    x_kv: TensorLike | None = None,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    W_v: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    n_kv_heads: int | None = None,
    b_q: TensorLike | None = None,
    b_k: TensorLike | None = None,
    b_v: TensorLike | None = None,
    b_o: TensorLike | None = None,
    mask: TensorLike | None = None,
    score: str = "scaled_dot",
    params=None,
    rope_base: float | None = None,
    rope_pairing: str = "adjacent",
    bias: TensorLike | None = None,
    device=None,
    dtype=None,
) -> MultiHeadTrace:
    """Multi-head attention (row convention); ``x_kv=None`` is self-attention.

    x_q (B, n_q, d_model), x_kv (B, n_k, d_kv); W_q (d_model, H·d_k), W_k (d_kv, G·d_k),
    W_v (d_kv, G·d_v), W_o (H·d_v, d_out); biases are vectors of the matching widths.
    n_kv_heads = G K/V heads (None: G = H; 1: multi-query), G divides H; d_k = W_q's width / H.
    mask broadcasts to (B, H, n_q, n_k); True = may attend. bias: an additive bias on the scaled scores
    before the mask, broadcastable to (B, H, n_q, n_k) — e.g. ALiBi's (H, n_q, n_k).
    rope_base: rotate every head's q and k by position (:func:`core.positional.rope`, base θ, pairing
    ``rope_pairing``) before the scores; keys sit at positions 0 … n_k−1, queries at the last n_q of
    them (n_k − n_q … n_k − 1, as :func:`core.masks.causal` and a KV cache count). The trace's q and k
    are then the rotated ones.
    """
    head_of = kv_head_map(n_heads, n_kv_heads)
    G = n_heads if n_kv_heads is None else n_kv_heads
    self_attn = x_kv is None
    named = {"x_q": x_q, "x_kv": x_q if self_attn else x_kv, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}
    for name, b in (("b_q", b_q), ("b_k", b_k), ("b_v", b_v), ("b_o", b_o)):
        if b is not None:
            named[name] = b
    t = as_tensors(named, device=device, dtype=dtype)
    xq, xkv = t["x_q"], t["x_kv"]
    q_proj, k_proj, v_proj, _, _ = project_heads(t, n_heads, G, x_q="x_q", x_kv="x_kv")  # (B, n, heads·d)
    # split into heads: (B, n, H·d) → (B, n, H, d) → (B, H, n, d); keys and values into G heads
    q = split_heads(q_proj, n_heads)  # (B, H, n_q, d_k)
    k, v = split_heads(k_proj, G), split_heads(v_proj, G)  # (B, G, n_k, d)
    tables = (None if rope_base is None else
              rope_tables(k.shape[-2], q.shape[-1], base=rope_base, pairing=rope_pairing, device=q.device,
                          dtype=q.dtype))  # (n_k, d_k/2) each: keys at 0 … n_k−1
    # every head at once: softmax(Q_h K_g(h)ᵀ/√d_k) V_g(h) (after RoPE), K/V head g shared by its H/G query heads
    q, k, v, heads = grouped_query_attention(q, k, v, rope=tables, mask=mask, bias=bias, score=score,
                                             params=params)  # weights (B, H, n_q, n_k)
    # concat: (B, H, n_q, d_v) → (B, n_q, H, d_v) → (B, n_q, H·d_v)
    concat = merge_heads(heads.output)
    output = concat @ t["W_o"]  # (B, n_q, d_out)
    if "b_o" in t:
        output = output + t["b_o"]
    return MultiHeadTrace(
        x_q=xq, x_kv=xkv, q_proj=q_proj, k_proj=k_proj, v_proj=v_proj, q=q, k=k, v=v,
        heads=heads, concat=concat, output=output, n_heads=n_heads, self_attention=self_attn,
        n_kv_heads=G, kv_head_of=head_of, rope_base=None if rope_base is None else float(rope_base),
    )


def fused_qkv_gap(x: TensorLike, W_q: TensorLike, W_k: TensorLike, W_v: TensorLike) -> float:
    """Largest difference between one fused matmul ``x @ [W_q | W_k | W_v]`` and three separate
    ones (C17): 0 up to rounding. x (..., n, d_model)."""
    t = as_tensors({"x": x, "W_q": W_q, "W_k": W_k, "W_v": W_v})
    Q, K, V = fused_qkv(t["x"], fuse_qkv_weights(t["W_q"], t["W_k"], t["W_v"]), d_v=t["W_v"].shape[-1])
    return max(float((a - t["x"] @ t[w]).abs().max()) for a, w in ((Q, "W_q"), (K, "W_k"), (V, "W_v")))
