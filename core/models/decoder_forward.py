r"""The decoder's forward pass, computed with the project's own attention (part of ``core.models.decoder``).

One engine for two families (:class:`core.models.decoder_load.LlamaConfig` holds the choices). The forward pass, row
convention, for n new tokens at positions p₀ … p₀+n−1 after c cached ones (SmolLM2's sizes, Gemma 3's after them)::

    X⁰ = E[ids]   (Gemma: · √d_model)                                        (n, 576 | 640)
    for block l = 1..L (30 | 18):
        H  = N(Xˡ⁻¹; g_attn)                                                  (n, d)
        Q  = H W_q,  K = H W_k,  V = H W_v                  (9, n, 64), (3, n, 64) | (4, n, 256), (1, n, 256)
        Gemma: Q ← N(Q; g_q), K ← N(K; g_k) per head (QK-norm)
        Q, K ← RoPE(Q), RoPE(K), base θ_l (Gemma: 10,000 local, 1,000,000 global)
        K, V ← [cached K, V ; K, V]                                           (G, c + n, d_head)
        A  = Concat_h softmax(s · Q_h K_g(h)ᵀ + M_l) V_g(h) · W_o     s = 1/√d_head | 256^(−1/2)    (n, d)
             M_l: causal; in Gemma's local blocks also j > i − 512 (the block's sliding window)
        Y  = Xˡ⁻¹ + A             (Gemma: + N(A; g_post_attn))
        F  = (act(N(Y; g_ffn) W_gate) ⊙ (N(Y; g_ffn) W_up)) W_down   act = SiLU | GELU-tanh    (n, d_ff) → (n, d)
        Xˡ = Y + F                (Gemma: + N(F; g_post_ffn))
    logits = N(Xᴸ; g_final) Eᵀ                                                (n, 49152 | 262144)

N(x; g) = RMSNorm(x) ⊙ g for Llama, ⊙ (1 + g) for Gemma; RMSNorm(x) = x / √(mean(x²) + ε). Every weight is the
file's own value in float32 (exact; a block matrix kept in 16 bits by explicit choice is widened for each product,
:func:`linear`); every activation is float32. :class:`Mechanism` changes the attention (heads or blocks off, a KV
window with sinks) for the page's experiments.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.mechanism.kv_cache import KVCache, attend_with_cache, kv_cache_bytes
from core.mechanism.multihead import grouped_query_attention, merge_heads
from core.mechanism.norms import rms_norm
from core.mechanism.positional import RopeTables, rope_cos_sin, rope_tables
from core.models.decoder_load import LlamaConfig, LlamaWeights


@dataclass(frozen=True)
class Mechanism:
    """Changes to the attention mechanism (what the page's experiments switch).

    heads_off:   (layer, head) pairs whose attention output is zeroed before W_o
    layers_off:  blocks whose whole attention output is zeroed (the residual stream skips it)
    window:      keep only the last ``window`` keys (a capped KV cache); None = all
    sinks:       with a window, also keep the first ``sinks`` keys (StreamingLLM's attention sinks)
    local_window: narrow the sliding window of the model's own local blocks (Gemma 3's 512, which never bites on a
                 short prompt) to this many keys; its global blocks unchanged. None = the file's windows
    reindex:     with a window and sinks, give RoPE positions within the cache, as StreamingLLM does (§3.2): the sinks
                 at 0 … s − 1, the window's keys after them, the query last — so a query far into the text sees the
                 sinks just before its window (:func:`reindex_bias`); False keeps every token's original position
    """

    heads_off: frozenset[tuple[int, int]] = frozenset()
    layers_off: frozenset[int] = frozenset()
    window: int | None = None
    sinks: int = 0
    local_window: int | None = None
    reindex: bool = False

    @property
    def is_plain(self) -> bool:
        return not self.heads_off and not self.layers_off and self.window is None and self.local_window is None


PLAIN = Mechanism()


def linear(x: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """x W, summed in x's dtype: the block matrices are float32 (the file's values); one kept in 16 bits by explicit
    choice is widened for the product (exactly: every float16 is a float32). x (..., d_in), W (d_in, d_out) → (..., d_out).

    On the CPU a product of one row is computed as two (the row twice, the first kept). For one row the CPU's BLAS
    takes a matrix-vector kernel, which sums in another order than its matrix-matrix kernel; from two rows on, a
    row's sums came out the same bits however many rows shared the product (measured on one thread, rows 2 to 500 at
    any offset: BENCHMARKS.md, "One row computed as two"). So a token decoded alone and the same token in a batch
    (``core.models.decoder_batch``) get the same products, and their logits differ only by what attention adds."""
    W = W.to(x.dtype)
    if x.dim() == 2 and x.shape[0] == 1 and x.device.type == "cpu":
        return (x.expand(2, -1) @ W)[:1]  # (2, d_out) → (1, d_out)
    return x @ W


def swiglu(x: torch.Tensor, W_gate: torch.Tensor, W_up: torch.Tensor, W_down: torch.Tensor,
           activation: str = "silu") -> torch.Tensor:
    """(act(x W_gate) ⊙ (x W_up)) W_down; x (..., d) → (..., d_ff) → (..., d). act: SiLU (SwiGLU, Llama) or
    ``activation="gelu_tanh"``, GELU's tanh form (GeGLU, Gemma)."""
    gate = linear(x, W_gate)  # (..., d_ff)
    gate = F.silu(gate) if activation == "silu" else F.gelu(gate, approximate="tanh")
    return linear(gate * linear(x, W_up), W_down)


def norm(x: torch.Tensor, g: torch.Tensor, c: LlamaConfig) -> torch.Tensor:
    """The family's RMSNorm over the last axis: x (..., d) ⊙ g (d,) (Llama), or ⊙ (1 + g) (Gemma)."""
    return rms_norm(x, 1 + g if c.norm_plus_one else g, c.eps)


def window_mask(q_pos: torch.Tensor, n_keys: int, size: int | None, sinks: int = 0) -> torch.Tensor:
    """Which keys 0 … n_keys − 1 each query at q_pos (...,) sees: causal, and with a window ``size`` only its last
    ``size`` keys i − size < j ≤ i (and the first ``sinks``) — ``core.masks.window``'s rows for these positions.
    Returns a bool mask (..., n_keys)."""
    j, i = torch.arange(n_keys, device=q_pos.device), q_pos[..., None]  # (n_keys,), (..., 1)
    seen = j <= i  # (..., n_keys)
    return seen if size is None else seen & ((i - j < size) | (j < sinks))


def reindex_bias(q: torch.Tensor, k: torch.Tensor, rope: RopeTables, q_pos: torch.Tensor, size: int, sinks: int,
                 base: float, scale: float) -> torch.Tensor:
    """The additive bias that turns a window-with-sinks pass at original positions into StreamingLLM's positions
    within the cache. A query at position i whose window has slid past the sinks (i ≥ s + w) sits at cache position
    s + w − 1 and sees sink j at distance s + w − 1 − j instead of i − j; its window keys keep their distances. RoPE's
    score depends only on the distance, so only the sink columns change:

        bias_ij = scale · (R(s + w − 1) q_i − R(i) q_i) · R(j) k_j      j < s,  i ≥ s + w;  0 elsewhere

    q (H, n, d) and k (G, n, d) before RoPE, a full pass (positions 0 … n − 1); rope: its tables; → (H, n, n)."""
    H, n, d = q.shape
    g_of_h = torch.arange(H, device=q.device) // (H // k.shape[0])  # (H,): query head h's K/V head
    k_sinks = rope.at(slice(0, sinks)).apply(k[:, :sinks]).index_select(0, g_of_h)  # (H, s, d), at their positions
    at_cache = q_pos.clamp(max=sinks + size - 1)  # (n,): the query's position within the cache
    cos, sin = rope_cos_sin(at_cache, rope.rotated_dims, base=base, device=q.device, dtype=q.dtype)  # (n, d/2)
    moved = RopeTables(cos, sin, rope.pairing).apply(q) - rope.apply(q)  # (H, n, d): 0 where nothing slid
    bias = torch.zeros(H, n, n, dtype=q.dtype, device=q.device)
    bias[:, :, :sinks] = scale * (moved @ k_sinks.transpose(-1, -2))  # (H, n, s)
    return bias


def cache_bytes(c: LlamaConfig, positions: int, *, kv_heads: int | None = None, bytes_per_value: int = 4) -> int:
    """Bytes of this model's KV cache holding ``positions`` tokens (``core.kv_cache_bytes``; float32 here)."""
    return kv_cache_bytes(layers=c.n_layers, n_kv_heads=c.n_kv_heads if kv_heads is None else kv_heads, d_head=c.d_head,
                          tokens=positions, bytes_per_value=bytes_per_value)


@dataclass(frozen=True, eq=False)
class _Pass:
    """What one forward pass returns (tensors for the new positions only)."""

    logits: torch.Tensor  # (n, vocab) — or (1, vocab) with logits_for="last"
    hidden: torch.Tensor  # (L + 1, n, d_model)
    attentions: torch.Tensor  # (L, H, n, c + n)
    q: torch.Tensor | None  # (L, H, n, d_head), after RoPE
    k: torch.Tensor | None  # (L, G, c + n, d_head), after RoPE
    v: torch.Tensor | None  # (L, G, c + n, d_head)
    caches: tuple[KVCache, ...] | None  # every block's cache after this pass (when one was asked for)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache: KVCache | None, c: LlamaConfig,
            mech: Mechanism, rope: RopeTables, layer: int):
    """Block ``layer``'s attention for n new tokens: q (H, n, d_head), k, v (G, n, d_head), before RoPE.

    Where no window bites, plain causal attention through ``core.kv_cache.attend_with_cache`` (RoPE at the cache's
    offset, GQA, the cache extended); else the same ``core.mechanism.multihead.grouped_query_attention`` with the rows
    of the causal window mask (:func:`window_mask`) for these positions. The window: the block's own (Gemma's local
    blocks, 512; ``mech.local_window`` narrows it), narrowed by ``mech.window`` (with its sinks) in every block.
    rope: RoPE's tables (n, d_head/2) at the new positions for this block's base, shared by the blocks of that base.
    The tensors come from the model's own matmuls, so the NaN/∞ scans meant for typed input are skipped.
    Returns (weights (H, n, c + n), output (H, n, d_head), q rotated, cache after).
    """
    n, past = q.shape[-2], 0 if cache is None else cache.length
    own = c.window_of(layer)  # the block's window (None: global), narrowed by mech.local_window in a local block
    own = own if own is None or mech.local_window is None else min(own, mech.local_window)
    size = min((w for w in (own, mech.window) if w is not None), default=None)
    if size is None or (size >= past + n and not mech.sinks):  # nothing hidden: causal
        step = attend_with_cache(q, k, v, cache, tables=rope, scale=c.scale, check_finite=False)
        return step.weights, step.output, step.q, step.cache
    q_pos = torch.arange(past, past + n, device=q.device)  # (n,)
    mask = window_mask(q_pos, past + n, size, mech.sinks)  # (n, c + n)
    bias = None
    if mech.reindex and mech.sinks and mech.window is not None:
        if cache is not None:
            raise ValueError("positions within the cache (reindex) are computed for a whole pass, not a cached step")
        scale = c.scale if c.scale is not None else q.shape[-1] ** -0.5
        bias = reindex_bias(q, k, rope, q_pos, size, mech.sinks, c.base_of(layer), scale)  # (H, n, n)
    q, k, v, heads = grouped_query_attention(q, k, v, past=None if cache is None else (cache.k, cache.v), rope=rope,
                                             mask=mask, bias=bias, scale=c.scale, check_finite=False)  # (H, n, c + n)
    return heads.weights, heads.output, q, KVCache(k=k, v=v)


def forward(ids: torch.Tensor, P: LlamaWeights, c: LlamaConfig, *, caches: tuple[KVCache, ...] | None = None,
            use_cache: bool = False, mech: Mechanism = PLAIN, keep_qkv: bool = True, logits_for: str = "all") -> _Pass:
    """The module docstring's forward pass for ids (n,) after the tokens held in ``caches`` (one per block).

    Returns every block's new cache in ``.caches`` when ``use_cache`` (or ``caches``) is given.
    ``logits_for="last"`` computes the output head for the last position only (generation).
    """
    n = ids.shape[0]
    past = 0 if caches is None else caches[0].length
    ropes = {b: rope_tables(n, c.d_head, base=b, pairing=c.rope_pairing, start=past, device=P.device, dtype=P.dtype)
             for b in {c.base_of(l) for l in range(c.n_layers)}}  # (n, d_head/2) per RoPE base, shared by its blocks
    x = P.embed(ids)  # (n, d)
    if c.embed_scale:
        x = x * torch.tensor(c.d_model ** 0.5, dtype=x.dtype)  # Gemma: E[ids] · √d_model
    hidden, attns, qs, ks, vs, new_caches = [x], [], [], [], [], []
    for l, layer in enumerate(P.layers):
        h = norm(x, layer.g_attn, c)  # (n, d)
        q = linear(h, layer.W_q).view(n, c.n_heads, c.d_head).transpose(0, 1)  # (H, n, d_head)
        k = linear(h, layer.W_k).view(n, c.n_kv_heads, c.d_head).transpose(0, 1)  # (G, n, d_head)
        v = linear(h, layer.W_v).view(n, c.n_kv_heads, c.d_head).transpose(0, 1)  # (G, n, d_head)
        if c.qk_norm:
            q, k = norm(q, layer.g_q, c), norm(k, layer.g_k, c)  # each head's q and k normed over d_head
        weights, out, q_rot, cache = _attend(q, k, v, None if caches is None else caches[l], c, mech,
                                             ropes[c.base_of(l)], l)
        if l in mech.layers_off:
            out = torch.zeros_like(out)  # the block's attention adds nothing to the residual stream
        elif any(ll == l for ll, _ in mech.heads_off):
            out = out.clone()
            out[[hh for ll, hh in mech.heads_off if ll == l]] = 0.0  # those heads' outputs zeroed before W_o
        a = linear(merge_heads(out), layer.W_o)  # (H, n, d_head) → (n, H·d_head) → (n, d)
        x = x + (norm(a, layer.g_post_attn, c) if c.post_norms else a)
        f = swiglu(norm(x, layer.g_ffn, c), layer.W_gate, layer.W_up, layer.W_down, c.activation)  # (n, d)
        x = x + (norm(f, layer.g_post_ffn, c) if c.post_norms else f)
        hidden.append(x)
        attns.append(weights)
        new_caches.append(cache)
        if keep_qkv:
            qs.append(q_rot)
            ks.append(cache.k)
            vs.append(cache.v)
    last = x if logits_for == "all" else x[-1:]
    logits = P.logits(norm(last, P.g_final, c))  # (n, vocab), the head tied to the embedding
    stack = torch.stack if keep_qkv else (lambda xs: None)
    return _Pass(logits=logits, hidden=torch.stack(hidden), attentions=torch.stack(attns), q=stack(qs), k=stack(ks),
                 v=stack(vs), caches=tuple(new_caches) if (use_cache or caches is not None) else None)
