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

from core.checks import TensorLike, as_bool_mask, as_tensors, shape_str
from core.mechanism.attention import masked_softmax
from core.mechanism.masks import causal as causal_mask
from core.mechanism.multihead import kv_head_map, merge_heads, project, project_heads, repeat_kv, split_heads
from core.mechanism.positional import ROPE_PAIRINGS, rope_cos_sin, rotate

# ---------------------------------------------------------------------------
# Shared pieces (also used by core.variants.mla and core.variants.sparse)
# ---------------------------------------------------------------------------

def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, *, eps: float = 1e-6) -> torch.Tensor:
    """RMSNorm over the last axis: x / √(mean(x²) + ε) · w  (x (..., d), w (d,) or None for no weight).

    Hugging Face's Gemma 2 / Qwen3-Next norms store w − 1 (they multiply by 1 + weight): pass 1 + weight.
    """
    out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # (..., d)
    return out if weight is None else out * weight


def _int(name: str, n, *, minimum: int = 1) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {n!r}")
    return n


def _positive(name: str, value) -> float:
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def rope_tables(rope, n: int, d: int, *, rope_dims: int | None = None, device=None,
                dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(cos, sin) of shape (..., n, r/2) for ``rope`` (None, a base θ, or (cos, sin) tables), checked against
    positions 0 … n − 1 and head width d; r = rotated dims (≤ d, even; ``rope_dims`` counts only with a base θ).
    None when ``rope`` is None."""
    if rope is None:
        return None
    if isinstance(rope, (tuple, list)):
        if len(rope) != 2:
            raise ValueError("rope must be a base θ or a pair (cos, sin) of tables")
        t = as_tensors({"cos": rope[0], "sin": rope[1]}, device=device, dtype=dtype)
        cos, sin = t["cos"], t["sin"]
        if cos.shape != sin.shape or cos.dim() < 2 or cos.shape[-2] != n or 2 * cos.shape[-1] > d:
            raise ValueError(f"rope tables cos {shape_str(cos.shape)}, sin {shape_str(sin.shape)} must be equal "
                             f"(n, r/2) or (B, n, r/2) with n={n} and r ≤ d={d}")
        return cos, sin
    base = _positive("the RoPE base θ", rope)
    r = d if rope_dims is None else _int("rope_dims", rope_dims)
    if r % 2 or r > d:
        raise ValueError(f"rope_dims must be even and ≤ the head width {d}, got {r}")
    return rope_cos_sin(torch.arange(n), r, base=base, device=device, dtype=dtype)


def apply_rope(x: torch.Tensor, tables: tuple[torch.Tensor, torch.Tensor] | None, pairing: str) -> torch.Tensor:
    """Rotate the first r dims of every head of x (..., H, n, d) by (cos, sin) (..., n, r/2); the rest pass."""
    if tables is None:
        return x
    cos, sin = tables
    if cos.dim() >= 3:  # (B, n, r/2) → (B, 1, n, r/2): one table for every head
        cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
    r = 2 * cos.shape[-1]
    if r == x.shape[-1]:
        return rotate(x, cos, sin, pairing=pairing)
    return torch.cat([rotate(x[..., :r], cos, sin, pairing=pairing), x[..., r:]], dim=-1)  # (..., n, d)


def check_pairing(pairing: str) -> str:
    if pairing not in ROPE_PAIRINGS:
        raise ValueError(f"unknown RoPE pairing '{pairing}'; choose 'adjacent' or 'half'")
    return pairing


def self_mask(n: int, *, causal: bool, window: int | None, mask: TensorLike | None,
              device: torch.device) -> torch.Tensor | None:
    """The (…, n, n) boolean mask (True = may attend) of causal & sliding window (i − j < w) & ``mask``."""
    m = None
    if causal:
        m = causal_mask(n, device=device)  # (n, n)
    if window is not None:
        w = _int("window", window)
        i = torch.arange(n, device=device).unsqueeze(1)
        j = torch.arange(n, device=device).unsqueeze(0)
        band = (i - j < w) & (j - i < w)  # (n, n): |i − j| < w; with causal, the w most recent keys
        m = band if m is None else m & band
    if mask is not None:
        user = as_bool_mask(mask, device=device)
        try:
            m = user & torch.ones(n, n, dtype=torch.bool, device=device) if m is None else m & user
        except RuntimeError:
            raise ValueError(f"mask {shape_str(user.shape)} does not broadcast to the ({n}, {n}) weights") from None
    return m


def expand_mask(m: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """The mask broadcast to the weights' shape, or ValueError naming both shapes."""
    try:
        return m.expand(shape)
    except RuntimeError:
        raise ValueError(f"mask {shape_str(m.shape)} does not broadcast to the weights {shape_str(shape)}") from None


def _named(**kw) -> dict:
    return {k: v for k, v in kw.items() if v is not None}


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
    H = _int("n_heads", n_heads)
    head_of = kv_head_map(H, n_kv_heads)
    G = H if n_kv_heads is None else n_kv_heads
    named = _named(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o, q_norm=q_norm,
                   k_norm=k_norm, sinks=sinks, gate_W=gate_W, b_gate=b_gate)
    t = as_tensors(named, device=device, dtype=dtype)
    X = t["x"]
    if X.dim() < 2 or X.shape[-2] == 0:
        raise ValueError(f"x must be (..., n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    n = X.shape[-2]
    q_proj, k_proj, v_proj, d_k, d_v = project_heads(t, H, G)  # (B, n, H·d_k), (B, n, G·d_k), (B, n, G·d_v)
    q, k, v = split_heads(q_proj, H), split_heads(k_proj, G), split_heads(v_proj, G)  # (B, H|G, n, d)
    eps = _positive("norm_eps", norm_eps)
    for name in ("q_norm", "k_norm"):
        if name in t and t[name].shape != (d_k,):
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs (d_k,) = ({d_k},)")
    if "q_norm" in t:  # QK-norm: RMSNorm over each head's d_k features, before RoPE
        q = rms_norm(q, t["q_norm"], eps=eps)
    if "k_norm" in t:
        k = rms_norm(k, t["k_norm"], eps=eps)
    tables = rope_tables(rope, n, d_k, rope_dims=rope_dims, device=X.device, dtype=X.dtype)
    pairing = check_pairing(rope_pairing)
    q, k = apply_rope(q, tables, pairing), apply_rope(k, tables, pairing)

    scale_f = 1.0 / math.sqrt(d_k) if scale is None else _positive("scale", scale)
    scaled = q @ repeat_kv(k, H).transpose(-1, -2) * scale_f  # (B, H, n, n)
    cap = None if softcap is None else _positive("softcap", softcap)
    capped = scaled if cap is None else cap * torch.tanh(scaled / cap)  # (B, H, n, n), in (−c, c)
    m = self_mask(n, causal=causal, window=window, mask=mask, device=X.device)
    if m is not None:
        m = expand_mask(m, capped.shape)  # (B, H, n, n)
    logits = capped if m is None else capped.masked_fill(~m, float("-inf"))
    if "sinks" in t:
        z = t["sinks"]
        if z.shape != (H,):
            raise ValueError(f"sinks has shape {shape_str(z.shape)} but needs one logit per head, ({H},)")
        sink_col = z.reshape(H, 1, 1).expand(*logits.shape[:-1], 1)  # (B, H, n, 1)
        full_mask = None if m is None else torch.cat([m, torch.ones_like(m[..., :1])], dim=-1)  # (B, H, n, n+1)
        probs, _ = masked_softmax(torch.cat([logits, sink_col], dim=-1), full_mask)  # (B, H, n, n+1)
        weights, sink_weight = probs[..., :-1], probs[..., -1]  # (B, H, n, n), (B, H, n): the sink is dropped
    else:
        weights, _ = masked_softmax(logits, m)  # (B, H, n, n)
        sink_weight = torch.zeros_like(weights[..., 0])  # (B, H, n)
    heads_output = weights @ repeat_kv(v, H)  # (B, H, n, d_v)
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
    return 0.8 - 0.6 * math.exp(-0.3 * _int("layer_idx", layer_idx, minimum=0))


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
    H = _int("n_heads", n_heads)
    G = H if n_kv_heads is None else n_kv_heads
    kv_head_map(H, G)
    if H % 2 or G % 2:
        raise ValueError(f"differential attention pairs heads: n_heads={H} and n_kv_heads={G} must be even")
    t = as_tensors(_named(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, lambda_q1=lambda_q1, lambda_k1=lambda_k1,
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
    tables = rope_tables(rope, n, d, device=X.device, dtype=X.dtype)
    pairing = check_pairing(rope_pairing)
    q, k = apply_rope(q, tables, pairing), apply_rope(k, tables, pairing)
    k_full, v_full = repeat_kv(k, H), repeat_kv(v, H)  # (B, H, n, d): query head h's K/V head
    D = H // 2
    q1, q2, k1, k2 = q[..., :D, :, :], q[..., D:, :, :], k_full[..., :D, :, :], k_full[..., D:, :, :]
    v_pair = torch.cat([v_full[..., :D, :, :], v_full[..., D:, :, :]], dim=-1)  # (B, D, n, 2d)
    s = 1.0 / math.sqrt(d) if scale is None else _positive("scale", scale)
    m = self_mask(n, causal=causal, window=None, mask=mask, device=X.device)

    def softmax_map(qa, ka):
        logits = qa @ ka.transpose(-1, -2) * s  # (B, D, n, n)
        mm = None if m is None else expand_mask(m, logits.shape)
        if mm is not None:
            logits = logits.masked_fill(~mm, float("-inf"))
        return masked_softmax(logits, mm)[0]

    w1, w2 = softmax_map(q1, k1), softmax_map(q2, k2)  # (B, D, n, n) each
    lam_init = lambda_init(layer_idx) if lambda_init_value is None else float(lambda_init_value)
    lam = (torch.exp((t["lambda_q1"] * t["lambda_k1"]).sum()) - torch.exp((t["lambda_q2"] * t["lambda_k2"]).sum())
           + lam_init)  # a 0-d tensor
    weights = w1 - lam * w2  # (B, D, n, n): the differential map
    heads_output = weights @ v_pair  # (B, D, n, 2d)
    normed = (1 - lam_init) * rms_norm(heads_output, eps=_positive("norm_eps", norm_eps))  # (B, D, n, 2d)
    t["merged"] = merge_heads(normed)  # (B, n, D·2d) = (B, n, H·d)
    output = project(t, "merged", "W_o")  # (B, n, d_out)
    return DifferentialTrace(q1=q1, q2=q2, k1=k1, k2=k2, v=v_pair, weights1=w1, weights2=w2, weights=weights,
                             heads_output=heads_output, normed=normed, output=output, lam=lam, lambda_init=lam_init,
                             mask=m)
