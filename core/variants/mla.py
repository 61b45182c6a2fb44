r"""Multi-head latent attention (MLA; DeepSeek-V2 §2.1, DeepSeek-V3), row convention (x @ W).

Keys and values are not cached per head: every token is compressed to one latent c_KV and one rotary key
k_R shared by all heads, and the heads' keys and values are read out of the latent::

    c_KV = RMSNorm(x W_DKV)            (n, d_c)        the cached latent
    k_R  = RoPE(x W_KR)                (n, d_R)        the decoupled rotary key, one for all heads (cached)
    c_Q  = RMSNorm(x W_DQ)             (n, d_cq)       q-LoRA (optional; without it c_Q = x)
    q_C  = c_Q W_UQ,  q_R = RoPE(c_Q W_QR)     (n, H·d_h), (n, H·d_R)
    k_C,h = c_KV W_UK,h,  v_h = c_KV W_UV,h    (n, d_h), (n, d_v) per head
    s_h = ([q_C,h ; q_R,h] [k_C,h ; k_R]ᵀ) · scale,   o_h = softmax(s_h) v_h,   out = Concat(o_h) W_o

**Absorbed form** (what inference runs): q_C,h k_C,hᵀ = (q_C,h W_UK,hᵀ) c_KVᵀ, so W_UK folds into the query
and the scores read the latent directly; and o_h W_o,h = (α_h c_KV)(W_UV,h W_o,h), so W_UV folds into the
output projection. Keys and values are never expanded: the cache holds d_c + d_R numbers per token and
layer instead of 2·H·d_h (:func:`mla_cache_values`). Both forms are computed; their gap is rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.attention import attention
from core.mechanism.masks import causal as causal_mask
from core.mechanism.masks import self_attention as self_attention_mask
from core.mechanism.multihead import merge_heads, project, split_heads
from core.mechanism.norms import rms_norm
from core.mechanism.positional import check_pairing, rope_for, rope_tables
from core.shapes import MODELS


@dataclass(frozen=True, eq=False)
class MLATrace:
    """Every step of :func:`mla`; B batch dims, H heads, n tokens.

    c_kv (B, n, d_c): the normalised latent;  k_rope (B, n, d_R): the rotated shared key (both cached)
    c_q (B, n, d_cq) the normalised q-LoRA latent, or None without q-LoRA
    q_nope (B, H, n, d_h), q_rope (B, H, n, d_R): the query's two parts (q_rope rotated)
    k (B, H, n, d_h + d_R): explicit keys [c_KV W_UK,h ; k_R];  v (B, H, n, d_v): explicit values
    logits (B, H, n, n) (−∞ where masked), weights (B, H, n, n), heads_output (B, H, n, d_v), output (B, n, d_out)
    q_absorbed (B, H, n, d_c): q_C,h W_UK,hᵀ — the query that reads the latent directly
    latent_output (B, H, n, d_c): α_h c_KV;  W_o_absorbed (H, d_c, d_out): W_UV,h W_o,h
    output_absorbed (B, n, d_out): Σ_h latent_output_h W_o_absorbed_h;  form_gap: max |output − output_absorbed|
    """

    c_kv: torch.Tensor
    k_rope: torch.Tensor
    c_q: torch.Tensor | None
    q_nope: torch.Tensor
    q_rope: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    logits: torch.Tensor
    weights: torch.Tensor
    heads_output: torch.Tensor
    output: torch.Tensor
    q_absorbed: torch.Tensor
    latent_output: torch.Tensor
    W_o_absorbed: torch.Tensor
    output_absorbed: torch.Tensor
    form_gap: float
    mask: torch.Tensor | None
    scale: float

    @property
    def cache_values_per_token(self) -> int:
        """Numbers the MLA cache holds per token and layer: d_c + d_R."""
        return int(self.c_kv.shape[-1] + self.k_rope.shape[-1])


def mla(
    x: TensorLike,
    *,
    W_DKV: TensorLike,
    W_KR: TensorLike,
    W_UK: TensorLike,
    W_UV: TensorLike,
    W_UQ: TensorLike,
    W_QR: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    W_DQ: TensorLike | None = None,
    kv_norm: TensorLike | None = None,
    q_norm: TensorLike | None = None,
    norm_eps: float = 1e-6,
    rope=None,
    rope_pairing: str = "adjacent",
    scale: float | None = None,
    causal: bool = True,
    mask: TensorLike | None = None,
    device=None,
    dtype=None,
) -> MLATrace:
    r"""Multi-head latent attention, explicit and absorbed (see the module doc for the equations).

    x (B, n, d_model); W_DKV (d_model, d_c), W_KR (d_model, d_R), W_UK (d_c, H·d_h), W_UV (d_c, H·d_v),
    W_o (H·d_v, d_out). Query: W_UQ (d_q, H·d_h) and W_QR (d_q, H·d_R) with d_q = d_cq after the q-LoRA
    down-projection W_DQ (d_model, d_cq), or d_q = d_model without it (``W_DQ=None``).
    kv_norm (d_c,), q_norm (d_cq,): RMSNorm weights of the two latents (None: weight 1), ε = ``norm_eps``.
    rope: base θ or (cos, sin) tables (n, d_R/2) or (B, n, d_R/2) for q_R and k_R; DeepSeek-V3's checkpoints
    pair adjacent dims (``rope_interleave``), hence ``rope_pairing="adjacent"``. scale: default
    1/√(d_h + d_R) (DeepSeek-V3 multiplies in its YaRN mscale² for long contexts). causal and ``mask``
    (True = may attend, broadcastable to (B, H, n, n)) combine with "and".
    """
    H = int_at_least("n_heads", n_heads)
    t = as_tensors(given(x=x, W_DKV=W_DKV, W_KR=W_KR, W_UK=W_UK, W_UV=W_UV, W_UQ=W_UQ, W_QR=W_QR, W_o=W_o,
                          W_DQ=W_DQ, kv_norm=kv_norm, q_norm=q_norm), device=device, dtype=dtype)
    X = t["x"]
    n = X.shape[-2]
    c_kv, k_r, c_q, q_nope, q_rope, d_c, d_R, d_h, d_v = _project(t, H, positive_number("norm_eps", norm_eps))
    tables = rope_for(rope, n, d_R, pairing=check_pairing(rope_pairing), device=X.device, dtype=X.dtype)
    if tables is not None:
        q_rope = tables.apply(q_rope)  # (B, H, n, d_R)
        k_r = tables.apply(k_r.unsqueeze(-3)).squeeze(-3)  # (B, n, d_R): one key for all heads
    k_rope = k_r
    scale_f = 1.0 / math.sqrt(d_h + d_R) if scale is None else positive_number("scale", scale)
    m = self_attention_mask(n, causal=causal, mask=mask, device=X.device)  # (…, n, n) or None

    # explicit: expand every head's keys and values out of the latent, then the one attention function
    k_nope = split_heads(c_kv @ t["W_UK"], H)  # (B, H, n, d_h)
    k = torch.cat([k_nope, k_rope.unsqueeze(-3).expand(*k_nope.shape[:-1], d_R)], dim=-1)  # (B, H, n, d_h + d_R)
    v = split_heads(c_kv @ t["W_UV"], H)  # (B, H, n, d_v)
    q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, n, d_h + d_R)
    explicit = attention(q, k, v, mask=m, scale=scale_f)  # weights (B, H, n, n)
    logits, weights, heads_output = explicit.logits, explicit.weights, explicit.output  # heads_output (B, H, n, d_v)
    t["concat"] = merge_heads(heads_output)  # (B, n, H·d_v)
    output = project(t, "concat", "W_o")  # (B, n, d_out)

    # absorbed: W_UK into the query, W_UV into the output projection; keys and values stay latent
    q_absorbed, latent_output, W_o_absorbed, output_absorbed, _ = _absorbed(t, H, q_nope, q_rope, c_kv, k_rope, m,
                                                                             scale_f)
    gap = float((output - output_absorbed).abs().max())
    return MLATrace(c_kv=c_kv, k_rope=k_rope, c_q=c_q, q_nope=q_nope, q_rope=q_rope, k=k, v=v, logits=logits,
                    weights=weights, heads_output=heads_output, output=output, q_absorbed=q_absorbed,
                    latent_output=latent_output, W_o_absorbed=W_o_absorbed, output_absorbed=output_absorbed,
                    form_gap=gap, mask=m, scale=scale_f)


def _project(t: dict, H: int, eps: float):
    """The projections both forms and the decoding step share, checked: the normalised latent c_KV (B, n, d_c), the
    rotary key before RoPE (B, n, d_R), the q-LoRA latent (B, n, d_cq) or None, the query's parts q_C (B, H, n, d_h)
    and q_R before RoPE (B, H, n, d_R), and the widths d_c, d_R, d_h, d_v."""
    X = t["x"]
    if X.dim() < 2 or X.shape[-2] == 0:
        raise ValueError(f"x must be (..., n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    c_kv = project(t, "x", "W_DKV")  # (B, n, d_c)
    d_c = c_kv.shape[-1]
    if "kv_norm" in t and t["kv_norm"].shape != (d_c,):
        raise ValueError(f"kv_norm has shape {shape_str(t['kv_norm'].shape)} but needs (d_c,) = ({d_c},)")
    c_kv = rms_norm(c_kv, t.get("kv_norm"), eps=eps)
    k_r = project(t, "x", "W_KR")  # (B, n, d_R)
    d_R = k_r.shape[-1]
    c_q = None
    if "W_DQ" in t:  # q-LoRA: a low-rank query through its own normalised latent
        c_q = project(t, "x", "W_DQ")  # (B, n, d_cq)
        if "q_norm" in t and t["q_norm"].shape != (c_q.shape[-1],):
            raise ValueError(f"q_norm has shape {shape_str(t['q_norm'].shape)} but needs (d_cq,) = ({c_q.shape[-1]},)")
        c_q = rms_norm(c_q, t.get("q_norm"), eps=eps)
        t["c_q"] = c_q
    elif "q_norm" in t:
        raise ValueError("q_norm normalises the q-LoRA latent: give W_DQ too (or drop q_norm)")
    src = "c_q" if c_q is not None else "x"
    for wname in ("W_UK", "W_UV"):
        if t[wname].dim() != 2 or t[wname].shape[0] != d_c:
            raise ValueError(f"{wname} {shape_str(t[wname].shape)} must have d_c = {d_c} rows (W_DKV's width)")
    for wname in ("W_UK", "W_UV", "W_UQ", "W_QR"):
        if t[wname].dim() != 2 or t[wname].shape[-1] % H:
            raise ValueError(f"{wname} has {t[wname].shape[-1]} columns, not divisible by n_heads={H}")
    d_h, d_v = t["W_UK"].shape[1] // H, t["W_UV"].shape[1] // H
    q_nope = split_heads(project(t, src, "W_UQ"), H)  # (B, H, n, d_h)
    q_rope = split_heads(project(t, src, "W_QR"), H)  # (B, H, n, d_R)
    if q_nope.shape[-1] != d_h or q_rope.shape[-1] != d_R:
        raise ValueError(f"W_UQ gives {q_nope.shape[-1]} and W_QR {q_rope.shape[-1]} dims per head, but the keys have "
                         f"d_h = {d_h} (W_UK) and d_R = {d_R} (W_KR)")
    return c_kv, k_r, c_q, q_nope, q_rope, d_c, d_R, d_h, d_v


def _absorbed(t: dict, H: int, q_nope, q_rope, c_kv, k_rope, mask, scale: float):
    """The absorbed form over the latent keys given: the scores [q_C,h W_UK,hᵀ ; q_R,h] · [c_KV ; k_R]ᵀ are the
    explicit ones, and the one attention function reads the latent. q_nope (B, H, s, d_h), q_rope (B, H, s, d_R)
    rotated; c_kv (B, T, d_c), k_rope (B, T, d_R) rotated; mask broadcastable to (B, H, s, T). Returns q_absorbed
    (B, H, s, d_c), latent_output α_h c_KV (B, H, s, d_c), W_o_absorbed = W_UV,h W_o,h (H, d_c, d_out), the output
    (B, s, d_out) and the attention trace."""
    d_c = c_kv.shape[-1]
    W_UK_h = t["W_UK"].reshape(d_c, H, -1).permute(1, 0, 2)  # (H, d_c, d_h)
    W_UV_h = t["W_UV"].reshape(d_c, H, -1).permute(1, 0, 2)  # (H, d_c, d_v)
    W_o_h = t["W_o"].reshape(H, W_UV_h.shape[-1], -1)  # (H, d_v, d_out)
    q_absorbed = q_nope @ W_UK_h.transpose(-1, -2)  # (B, H, s, d_c)
    latent_keys = torch.cat([c_kv, k_rope], dim=-1).unsqueeze(-3)  # (B, 1, T, d_c + d_R): one for every head
    tr = attention(torch.cat([q_absorbed, q_rope], dim=-1), latent_keys, c_kv.unsqueeze(-3), mask=mask,
                   scale=scale)  # weights (B, H, s, T)
    W_o_absorbed = W_UV_h @ W_o_h  # (H, d_c, d_out)
    return q_absorbed, tr.output, W_o_absorbed, (tr.output @ W_o_absorbed).sum(-3), tr  # output (B, s, d_out)


@dataclass(frozen=True, eq=False)
class LatentCache:
    """MLA's cache after t tokens: the latent c_KV (B, t, d_c) and the rotated shared key k_R (B, t, d_R) — d_c + d_R
    numbers per token and layer, whatever the number of heads."""

    c_kv: torch.Tensor
    k_rope: torch.Tensor

    @property
    def length(self) -> int:
        return int(self.c_kv.shape[-2])


@dataclass(frozen=True, eq=False)
class MLAStep:
    """One decoding step of :func:`mla_decode` for s new tokens at positions t … t + s − 1 (absorbed form).

    q_absorbed (B, H, s, d_c): q_C,h W_UK,hᵀ, the query that reads the latent;  q_rope (B, H, s, d_R): rotated
    weights (B, H, s, t + s): over every cached token and the new ones (causal);  latent_output (B, H, s, d_c)
    output (B, s, d_out);  cache: the cache after the step (the new tokens' c_KV and k_R appended)
    """

    q_absorbed: torch.Tensor
    q_rope: torch.Tensor
    weights: torch.Tensor
    latent_output: torch.Tensor
    output: torch.Tensor
    cache: LatentCache


def mla_decode(
    x: TensorLike,
    cache: LatentCache | None = None,
    *,
    W_DKV: TensorLike,
    W_KR: TensorLike,
    W_UK: TensorLike,
    W_UV: TensorLike,
    W_UQ: TensorLike,
    W_QR: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    W_DQ: TensorLike | None = None,
    kv_norm: TensorLike | None = None,
    q_norm: TensorLike | None = None,
    norm_eps: float = 1e-6,
    rope_base: float | None = None,
    rope_pairing: str = "adjacent",
    scale: float | None = None,
    device=None,
    dtype=None,
) -> MLAStep:
    r"""A decoding step against the cached latent, as inference runs MLA (absorbed; keys and values never expanded).

        c_KV, k_R of the new tokens → appended to the cache                                 (B, t + s, d_c), (B, t + s, d_R)
        α_h = softmax([q_C,h W_UK,hᵀ ; q_R,h] · [c_KV ; k_R]ᵀ · scale),  causal            (B, H, s, t + s)
        out = Σ_h (α_h c_KV) (W_UV,h W_o,h)                                                 (B, s, d_out)

    x (B, s, d_model): the s new tokens (the prompt at once, or one token); cache: the :class:`LatentCache` of the t
    tokens before them, or None. RoPE at positions t … t + s − 1 with base θ ``rope_base`` (None: no RoPE). The weights
    and norms are those of :func:`mla`; step by step it equals :func:`mla`'s outputs row by row (up to rounding).
    """
    H = int_at_least("n_heads", n_heads)
    named = given(x=x, W_DKV=W_DKV, W_KR=W_KR, W_UK=W_UK, W_UV=W_UV, W_UQ=W_UQ, W_QR=W_QR, W_o=W_o, W_DQ=W_DQ,
                  kv_norm=kv_norm, q_norm=q_norm)
    if cache is not None:
        named |= {"cache.c_kv": cache.c_kv, "cache.k_rope": cache.k_rope}
    t = as_tensors(named, device=device, dtype=dtype)
    c_new, k_new, _, q_nope, q_rope, d_c, d_R, d_h, _ = _project(t, H, positive_number("norm_eps", norm_eps))
    s, past = c_new.shape[-2], 0 if cache is None else cache.length
    if cache is not None and (t["cache.c_kv"].shape[-1] != d_c or t["cache.k_rope"].shape[-1] != d_R):
        raise ValueError(f"the cache holds latents of width {t['cache.c_kv'].shape[-1]} and rotary keys of "
                         f"{t['cache.k_rope'].shape[-1]}, the weights make {d_c} and {d_R}")
    if rope_base is not None:
        tables = rope_tables(s, d_R, base=positive_number("rope_base", rope_base), pairing=check_pairing(rope_pairing),
                             start=past, device=c_new.device, dtype=c_new.dtype)  # (s, d_R/2): positions t … t+s−1
        q_rope, k_new = tables.apply(q_rope), tables.apply(k_new.unsqueeze(-3)).squeeze(-3)
    c_all, k_all = c_new, k_new
    if cache is not None:
        c_all = torch.cat([t["cache.c_kv"], c_new], dim=-2)  # (B, t + s, d_c)
        k_all = torch.cat([t["cache.k_rope"], k_new], dim=-2)  # (B, t + s, d_R)
    scale_f = 1.0 / math.sqrt(d_h + d_R) if scale is None else positive_number("scale", scale)
    mask = causal_mask(s, past + s, device=c_new.device)  # (s, t + s): new token i sees keys ≤ t + i
    q_absorbed, latent_output, _, output, tr = _absorbed(t, H, q_nope, q_rope, c_all, k_all, mask, scale_f)
    return MLAStep(q_absorbed=q_absorbed, q_rope=q_rope, weights=tr.weights, latent_output=latent_output,
                   output=output, cache=LatentCache(c_kv=c_all, k_rope=k_all))


@dataclass(frozen=True)
class MLACacheSize:
    """Cached numbers per token and layer: MLA's d_c + d_R against multi-head attention's 2·H·d_h."""

    mla: int
    mha: int

    @property
    def ratio(self) -> float:
        """How many times smaller the MLA cache is."""
        return self.mha / self.mla


# the MLA models the pages and lessons name (their numbers and sources: core.shapes.MODELS): DeepSeek-V3 and Kimi K2
PUBLISHED = (MODELS["deepseek-v3"], MODELS["kimi-k2"])


def mla_cache_values(*, kv_rank: int, rope_dim: int, n_heads: int, head_dim: int) -> MLACacheSize:
    """Per token and layer: d_c + d_R (the latent and the shared rotary key) vs 2·H·d_h (K and V of every head).

    DeepSeek-V3 (``core.shapes.MODELS["deepseek-v3"]``: kv_lora_rank 512, qk_rope_head_dim 64, 128 heads,
    qk_nope_head_dim 128): 576 vs 32,768 numbers — 57× smaller.
    """
    d_c, d_R = int_at_least("kv_rank", kv_rank), int_at_least("rope_dim", rope_dim, minimum=0)
    H, d_h = int_at_least("n_heads", n_heads), int_at_least("head_dim", head_dim)
    return MLACacheSize(mla=d_c + d_R, mha=2 * H * d_h)
