r"""Attention as 2024–2025 language models run it (issue 33), row convention (x @ W).

One self-attention layer with the switches today's open models add to multi-head attention:

    q_h = RoPE(RMSNorm(x W_q)_h · w_q),  k_g = RoPE(RMSNorm(x W_k)_g · w_k),  v_g = (x W_v)_g      qk_norm (Qwen3)
    s_h = q_h k_g(h)ᵀ · scale                                                   (B, H, n, n)
    s_h ← c · tanh(s_h / c)                                                     softcap (Gemma 2)
    [α_h | α_sink] = softmax([s_h (−∞ where masked) | z_h])  per row; α_sink dropped         sinks (gpt-oss)
    o_h = α_h v_g(h);   o = Concat(o_h) ⊙ σ(x W_gate)                           output gate (Qwen3-Next)
    out = o W_o

Each switch is off by default, so with all of them off this is grouped-query attention with RoPE
(:func:`core.multi_head_attention`). Differential attention (DIFF Transformer) is here too
(:func:`differential_attention`); latent attention, the gated delta rule, sparse top-k attention,
layer schedules and the paged cache live in the sibling modules ``core.modern_*``.

RoPE (``rope=``) is a base θ (angles from :func:`core.positional.rope_cos_sin`) or precomputed
``(cos, sin)`` tables of shape (n, r/2) or (B, n, r/2) — a Hugging Face model's rotary embedding gives
``cat(freqs, freqs)``, pass its first half ``cos[..., :r/2]``. The first r dims of every head are rotated
(r = 2·cos.shape[-1], or ``rope_dims`` with a base; fewer than d_k is "partial rotary"), the rest pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.attention import attention
from core.mechanism.masks import self_attention as self_attention_mask
from core.mechanism.multihead import (
    grouped_query_attention,
    kv_head_map,
    merge_heads,
    project,
    project_heads,
    repeat_kv,
    split_heads,
)
from core.mechanism.norms import rms_norm
from core.mechanism.positional import check_pairing, rope_for

# ---------------------------------------------------------------------------
# Sinks, output gate, QK-norm, softcap
# ---------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class ModernAttentionTrace:
    """Every step of :func:`modern_attention`; B batch dims, H query heads, G K/V heads, n tokens.

    q_proj (B, n, H·d_k), k_proj (B, n, G·d_k), v_proj (B, n, G·d_v): the projections
    q (B, H, n, d_k), k (B, G, n, d_k): after QK-norm and RoPE;  v (B, G, n, d_v)
    scaled (B, H, n, n): q kᵀ · scale;  capped: c·tanh(scaled / c) (``scaled`` itself without softcap)
    logits (B, H, n, n): ``capped`` with −∞ where the mask forbids
    weights (B, H, n, n): the attention weights; with sinks each row sums to 1 − sink_weight
    sink_weight (B, H, n): the share of each row the sink took (0 without sinks)
    heads_output (B, H, n, d_v); concat (B, n, H·d_v): before the gate
    gate (B, n, H·d_v) or (B, n, H): σ(x W_gate + b), or None;  gated (B, n, H·d_v): concat ⊙ gate
    output (B, n, d_out);  mask: boolean (…, n, n), True = may attend, or None
    """

    x: torch.Tensor
    q_proj: torch.Tensor
    k_proj: torch.Tensor
    v_proj: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scaled: torch.Tensor
    capped: torch.Tensor
    logits: torch.Tensor
    weights: torch.Tensor
    sink_weight: torch.Tensor
    heads_output: torch.Tensor
    concat: torch.Tensor
    gate: torch.Tensor | None
    gated: torch.Tensor
    output: torch.Tensor
    mask: torch.Tensor | None
    n_heads: int
    n_kv_heads: int
    kv_head_of: tuple[int, ...]
    scale: float
    softcap: float | None

    @property
    def weight_sums(self) -> torch.Tensor:
        """Σ_j α_ij per row (B, H, n): 1 without sinks, 1 − sink_weight with them."""
        return self.weights.sum(-1)


def modern_attention(
    x: TensorLike,
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
    rope=None,
    rope_pairing: str = "half",
    rope_dims: int | None = None,
    q_norm: TensorLike | None = None,
    k_norm: TensorLike | None = None,
    norm_eps: float = 1e-6,
    sinks: TensorLike | None = None,
    gate_W: TensorLike | None = None,
    b_gate: TensorLike | None = None,
    softcap: float | None = None,
    scale: float | None = None,
    causal: bool = True,
    window: int | None = None,
    mask: TensorLike | None = None,
    device=None,
    dtype=None,
) -> ModernAttentionTrace:
    """Self-attention with learned sinks, an output gate, QK-norm and logit soft-capping (each optional).

    x (B, n, d_model); W_q (d_model, H·d_k), W_k (d_model, G·d_k), W_v (d_model, G·d_v), W_o (H·d_v, d_out);
    biases b_* are vectors of those widths. G = ``n_kv_heads`` divides H (grouped-query attention).
    rope: None, a base θ, or (cos, sin) tables (see the module doc); ``rope_pairing`` "half" (Hugging Face
    ``rotate_half``) or "adjacent"; applied after the QK-norm.
    q_norm, k_norm (d_k,): RMSNorm weights on every query / key head before RoPE (Qwen3); ε = ``norm_eps``.
    sinks (H,): one learned logit z_h per head, appended to every row before the softmax and dropped after
    it (gpt-oss) — the row's weights then sum to 1 − σ-share of the sink, so a head can attend to "nothing".
    gate_W (d_model, H·d_v) elementwise or (d_model, H) one gate per head: o ⊙ σ(x W_gate + b_gate) before
    W_o (Qwen3-Next). softcap c > 0: logits ← c·tanh(logits / c) after the scale, before the mask (Gemma 2).
    scale: default 1/√d_k. causal (default True), window w (keys with i − j < w), and ``mask`` broadcastable
    to (B, H, n, n) (True = may attend) combine with "and".
    """
    H = int_at_least("n_heads", n_heads)
    head_of = kv_head_map(H, n_kv_heads)
    G = H if n_kv_heads is None else n_kv_heads
    named = given(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o, q_norm=q_norm,
                   k_norm=k_norm, sinks=sinks, gate_W=gate_W, b_gate=b_gate)
    t = as_tensors(named, device=device, dtype=dtype)
    X = t["x"]
    if X.dim() < 2 or X.shape[-2] == 0:
        raise ValueError(f"x must be (..., n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    n = X.shape[-2]
    q_proj, k_proj, v_proj, d_k, d_v = project_heads(t, H, G)  # (B, n, H·d_k), (B, n, G·d_k), (B, n, G·d_v)
    q, k, v = split_heads(q_proj, H), split_heads(k_proj, G), split_heads(v_proj, G)  # (B, H|G, n, d)
    eps = positive_number("norm_eps", norm_eps)
    for name in ("q_norm", "k_norm"):
        if name in t and t[name].shape != (d_k,):
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs (d_k,) = ({d_k},)")
    if "q_norm" in t:  # QK-norm: RMSNorm over each head's d_k features, before RoPE
        q = rms_norm(q, t["q_norm"], eps=eps)
    if "k_norm" in t:
        k = rms_norm(k, t["k_norm"], eps=eps)
    tables = rope_for(rope, n, d_k, pairing=check_pairing(rope_pairing), rope_dims=rope_dims, device=X.device,
                      dtype=X.dtype)
    if tables is not None:
        q, k = tables.apply(q), tables.apply(k)  # (B, H|G, n, d_k)

    scale_f = 1.0 / math.sqrt(d_k) if scale is None else positive_number("scale", scale)
    cap = None if softcap is None else positive_number("softcap", softcap)
    m = self_attention_mask(n, causal=causal, window=window, mask=mask, device=X.device)  # (…, n, n) or None
    z = None
    if "sinks" in t:
        if t["sinks"].shape != (H,):
            raise ValueError(f"sinks has shape {shape_str(t['sinks'].shape)} but needs one logit per head, ({H},)")
        z = t["sinks"].reshape(H, 1)  # (H, 1): one logit per head, for every query row
    # the one attention function: scale, soft-cap, mask, softmax with the sink; K/V head g(h) for query head h
    heads = grouped_query_attention(q, k, v, mask=m, scale=scale_f, softcap=cap, sinks=z)[3]  # weights (B, H, n, n)
    scaled, logits, weights = heads.scaled, heads.logits, heads.weights
    capped = scaled if heads.capped is None else heads.capped  # (B, H, n, n)
    sink_weight = torch.zeros_like(weights[..., 0]) if heads.sink_weight is None else heads.sink_weight  # (B, H, n)
    m = heads.mask
    heads_output = heads.output  # (B, H, n, d_v)
    concat = merge_heads(heads_output)  # (B, n, H·d_v)
    gate = None
    gated = concat
    if "gate_W" in t:
        g_lin = project(t, "x", "gate_W", "b_gate")  # (B, n, H·d_v) or (B, n, H)
        gate = torch.sigmoid(g_lin)
        if gate.shape[-1] == H * d_v:
            gated = concat * gate
        elif gate.shape[-1] == H:
            gated = concat * gate.repeat_interleave(d_v, dim=-1)  # one gate per head, spread over its d_v
        else:
            raise ValueError(f"gate_W has {gate.shape[-1]} columns; it needs H·d_v = {H * d_v} (elementwise) "
                             f"or H = {H} (one per head)")
    t["gated"] = gated
    output = project(t, "gated", "W_o", "b_o")  # (B, n, d_out)
    return ModernAttentionTrace(
        x=X, q_proj=q_proj, k_proj=k_proj, v_proj=v_proj, q=q, k=k, v=v, scaled=scaled, capped=capped,
        logits=logits, weights=weights, sink_weight=sink_weight, heads_output=heads_output, concat=concat,
        gate=gate, gated=gated, output=output, mask=m, n_heads=H, n_kv_heads=G, kv_head_of=head_of,
        scale=scale_f, softcap=cap,
    )


# ---------------------------------------------------------------------------
# Differential attention (Ye et al. 2024, "Differential Transformer")
# ---------------------------------------------------------------------------

def lambda_init(layer_idx: int) -> float:
    """λ_init = 0.8 − 0.6·exp(−0.3·layer_idx) with layer_idx counted from 0 — the paper's
    0.8 − 0.6·exp(−0.3·(l − 1)) for l = 1 … L, and Hugging Face's DiffLlama ``lambda_init_fn(layer_idx)``."""
    return 0.8 - 0.6 * math.exp(-0.3 * int_at_least("layer_idx", layer_idx, minimum=0))


@dataclass(frozen=True, eq=False)
class DifferentialTrace:
    """Every step of :func:`differential_attention`; D = H/2 differential heads, each of two softmax maps.

    q1, q2 (B, D, n, d): query heads i and i + D;  k1, k2 (B, D, n, d): their K/V heads
    v (B, D, n, 2d): the value of pair i, [v_g ; v_{g+G/2}]
    weights1, weights2 (B, D, n, n): softmax(Q1K1ᵀ·s), softmax(Q2K2ᵀ·s) (masked)
    weights (B, D, n, n): weights1 − λ·weights2 — rows sum to 1 − λ, entries may be negative
    heads_output (B, D, n, 2d): weights · v;  normed (B, D, n, 2d): (1 − λ_init)·RMSNorm(heads_output)
    output (B, n, d_out);  lam: λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init (a 0-d tensor)
    """

    q1: torch.Tensor
    q2: torch.Tensor
    k1: torch.Tensor
    k2: torch.Tensor
    v: torch.Tensor
    weights1: torch.Tensor
    weights2: torch.Tensor
    weights: torch.Tensor
    heads_output: torch.Tensor
    normed: torch.Tensor
    output: torch.Tensor
    lam: torch.Tensor
    lambda_init: float
    mask: torch.Tensor | None


def differential_attention(
    x: TensorLike,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    W_v: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    n_kv_heads: int | None = None,
    lambda_q1: TensorLike,
    lambda_k1: TensorLike,
    lambda_q2: TensorLike,
    lambda_k2: TensorLike,
    layer_idx: int = 0,
    lambda_init_value: float | None = None,
    norm_eps: float = 1e-6,
    rope=None,
    rope_pairing: str = "half",
    scale: float | None = None,
    causal: bool = True,
    mask: TensorLike | None = None,
    device=None,
    dtype=None,
) -> DifferentialTrace:
    r"""Differential attention as DiffLlama lays it out: (softmax(Q1K1ᵀ·s) − λ·softmax(Q2K2ᵀ·s)) V.

    x (B, n, d_model); W_q (d_model, H·d), W_k (d_model, G·d), W_v (d_model, G·d), W_o (H·d, d_out), with H
    and G even. Query head i (< H/2) is Q1 and head i + H/2 is Q2 of differential head i; their K/V heads g
    and g + G/2 give K1, K2, and the value of the pair is the two value heads side by side (width 2d).
    λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init, the four λ vectors (d,) shared by all heads;
    λ_init from ``layer_idx`` (0-based, :func:`lambda_init`) unless ``lambda_init_value`` is given.
    Each head's output is RMS-normalised over its 2d features (no weight, ε = ``norm_eps``) and scaled by
    1 − λ_init. scale defaults to 1/√d; rope as in :func:`modern_attention`.
    """
    H = int_at_least("n_heads", n_heads)
    G = H if n_kv_heads is None else n_kv_heads
    kv_head_map(H, G)
    if H % 2 or G % 2:
        raise ValueError(f"differential attention pairs heads: n_heads={H} and n_kv_heads={G} must be even")
    t = as_tensors(given(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, lambda_q1=lambda_q1, lambda_k1=lambda_k1,
                          lambda_q2=lambda_q2, lambda_k2=lambda_k2), device=device, dtype=dtype)
    X = t["x"]
    if X.dim() < 2 or X.shape[-2] == 0:
        raise ValueError(f"x must be (..., n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    n = X.shape[-2]
    q_proj, k_proj, v_proj, d, d_v = project_heads(t, H, G)  # (B, n, H·d), (B, n, G·d), (B, n, G·d)
    if d_v != d:
        raise ValueError(f"W_q, W_k, W_v need the same width per head d={d} (W_v {shape_str(t['W_v'].shape)}, G={G})")
    for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
        if t[name].shape != (d,):
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs (d,) = ({d},)")
    q, k, v = split_heads(q_proj, H), split_heads(k_proj, G), split_heads(v_proj, G)  # (B, H|G, n, d)
    tables = rope_for(rope, n, d, pairing=check_pairing(rope_pairing), device=X.device, dtype=X.dtype)
    if tables is not None:
        q, k = tables.apply(q), tables.apply(k)  # (B, H|G, n, d)
    k_full, v_full = repeat_kv(k, H), repeat_kv(v, H)  # (B, H, n, d): query head h's K/V head
    D = H // 2
    q1, q2, k1, k2 = q[..., :D, :, :], q[..., D:, :, :], k_full[..., :D, :, :], k_full[..., D:, :, :]
    v_pair = torch.cat([v_full[..., :D, :, :], v_full[..., D:, :, :]], dim=-1)  # (B, D, n, 2d)
    s = 1.0 / math.sqrt(d) if scale is None else positive_number("scale", scale)
    m = self_attention_mask(n, causal=causal, mask=mask, device=X.device)  # (…, n, n) or None
    # the one attention function, twice: softmax(Q1K1ᵀ·s) and softmax(Q2K2ᵀ·s) over the same keys' mask
    w1 = attention(q1, k1, v_pair, mask=m, scale=s).weights  # (B, D, n, n)
    w2 = attention(q2, k2, v_pair, mask=m, scale=s).weights  # (B, D, n, n)
    lam_init = lambda_init(layer_idx) if lambda_init_value is None else float(lambda_init_value)
    lam = (torch.exp((t["lambda_q1"] * t["lambda_k1"]).sum()) - torch.exp((t["lambda_q2"] * t["lambda_k2"]).sum())
           + lam_init)  # a 0-d tensor
    weights = w1 - lam * w2  # (B, D, n, n): the differential map
    heads_output = weights @ v_pair  # (B, D, n, 2d)
    normed = (1 - lam_init) * rms_norm(heads_output, eps=positive_number("norm_eps", norm_eps))  # (B, D, n, 2d)
    t["merged"] = merge_heads(normed)  # (B, n, D·2d) = (B, n, H·d)
    output = project(t, "merged", "W_o")  # (B, n, d_out)
    return DifferentialTrace(q1=q1, q2=q2, k1=k1, k2=k2, v=v_pair, weights1=w1, weights2=w2, weights=weights,
                             heads_output=heads_output, normed=normed, output=output, lam=lam, lambda_init=lam_init,
                             mask=m)
