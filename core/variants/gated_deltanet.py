r"""The whole Gated DeltaNet layer (Qwen3-Next, Qwen3.5, OLMo-Hybrid; issue 55), row convention (x @ W).

:func:`core.variants.delta.gated_delta_rule` is the kernel. The layer around it, as transformers'
``Qwen3NextGatedDeltaNet`` runs it::

    q, k = x W_q, x W_k  (H_k heads of d_k),   v, z = x W_v, x W_z  (H_v heads of d_v),   H_k divides H_v
    [q | k | v] ← SiLU(causal depthwise conv, kernel κ = 4)            each channel mixes its last κ inputs
    β_t = β_max · σ(x W_b)           β_max = 1, or 2 with negative eigenvalues allowed (OLMo-Hybrid)
    g_t = −exp(A_log) · softplus(x W_a + dt_bias)       one log-decay per value head and token, ≤ 0
    o = gated_delta_rule(L2(q), L2(k), v; β, g)         query/key head ⌊h / (H_v/H_k)⌋ for value head h
    y = (RMSNorm(o_h) ⊙ w_norm ⊙ SiLU(z_h)) W_out       the gated RMSNorm, per value head

Kimi Delta Attention (:func:`kimi_delta_attention`) is the same layer with one decay per key channel, diag(exp g_t),
where Gated DeltaNet has one per head, and low-rank gates.

The cache is fixed in size: the state S (d_k × d_v per value head) and the conv's last κ − 1 inputs, whatever the
length. Both layers take that cache (:class:`DeltaNetCache`) and return the new one, so a prompt then one token at a
time equals the whole pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.checks import TensorLike, as_bool_mask, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.multihead import merge_heads, project, split_heads
from core.mechanism.norms import rms_norm
from core.variants.delta import gated_delta_rule


@dataclass(frozen=True, eq=False)
class DeltaNetCache:
    """What a Gated DeltaNet layer keeps per sequence: state (B, H_v, d_k, d_v) and conv (B, κ − 1, C), the last
    κ − 1 inputs of the convolution (C = 2·H_k·d_k + H_v·d_v channels)."""

    state: torch.Tensor
    conv: torch.Tensor

    @property
    def values(self) -> int:
        """Numbers held per sequence (one batch row), at any length."""
        return int(self.state[0].numel() + self.conv[0].numel())


@dataclass(frozen=True, eq=False)
class GatedDeltaNetTrace:
    """Every step of :func:`gated_deltanet`; B batch rows, n new tokens.

    conv_in, conv_out (B, n, C): [q | k | v] before and after the conv (with its SiLU); taps (C, κ): the conv's kernel
    q, k (B, H_v, n, d_k) L2-normalised, each query/key head repeated for its value heads;  v (B, H_v, n, d_v)
    beta (B, H_v, n) the write strength;  decay (B, H_v, n) α_t = exp(g_t);  states (B, H_v, n, d_k, d_v)
    core (B, H_v, n, d_v): the delta rule's output;  gate (B, H_v, n, d_v): SiLU(z);  normed (B, H_v, n, d_v)
    output (B, n, d_out);  cache: the layer's cache after these tokens
    """

    conv_in: torch.Tensor
    conv_out: torch.Tensor
    taps: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    beta: torch.Tensor
    decay: torch.Tensor
    states: torch.Tensor
    core: torch.Tensor
    gate: torch.Tensor
    normed: torch.Tensor
    output: torch.Tensor
    cache: DeltaNetCache


def causal_conv(x: torch.Tensor, taps: torch.Tensor, past: torch.Tensor | None = None,
                bias: torch.Tensor | None = None) -> torch.Tensor:
    """Causal depthwise convolution with SiLU: out_t,c = SiLU(Σ_j taps[c, j] · x_{t − κ + 1 + j, c} + bias_c).

    x (B, n, C), taps (C, κ), past (B, κ − 1, C): the inputs before x (None: zeros), bias (C,) or None → (B, n, C).
    Gated DeltaNet and Mamba-2 (:mod:`core.variants.mamba2`) both run it."""
    kappa = taps.shape[-1]
    if past is None:
        past = torch.zeros(*x.shape[:-2], kappa - 1, x.shape[-1], dtype=x.dtype, device=x.device)
    full = torch.cat([past, x], dim=-2).transpose(-1, -2)  # (B, C, κ − 1 + n)
    out = F.conv1d(full, taps.unsqueeze(1), bias, groups=taps.shape[0])  # (B, C, n): each channel its own taps
    return F.silu(out).transpose(-1, -2)  # (B, n, C)


def conv_state(x: torch.Tensor, past: torch.Tensor | None, kappa: int) -> torch.Tensor:
    """The conv's cache after x (B, n, C): its last κ − 1 inputs (B, κ − 1, C), zeros before the first token."""
    history = x if past is None else torch.cat([past, x], dim=-2)  # (B, κ − 1 + n, C) or (B, n, C)
    if history.shape[-2] < kappa - 1:  # fewer inputs than the conv reaches back
        history = F.pad(history, (0, 0, kappa - 1 - history.shape[-2], 0))
    return history[..., history.shape[-2] - (kappa - 1):, :]


def gated_deltanet(
    x: TensorLike,
    cache: DeltaNetCache | None = None,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    W_v: TensorLike,
    W_z: TensorLike,
    W_b: TensorLike,
    W_a: TensorLike,
    conv_taps: TensorLike,
    A_log: TensorLike,
    dt_bias: TensorLike,
    norm_weight: TensorLike,
    W_out: TensorLike,
    n_key_heads: int,
    n_value_heads: int,
    beta_max: float = 1.0,
    norm_eps: float = 1e-6,
    padding: TensorLike | None = None,
    device=None,
    dtype=None,
) -> GatedDeltaNetTrace:
    r"""The Gated DeltaNet layer of the module doc over the new tokens x (B, n, d_model), after ``cache``.

    W_q, W_k (d_model, H_k·d_k); W_v, W_z (d_model, H_v·d_v); W_b, W_a (d_model, H_v); conv_taps (C, κ) with
    C = 2·H_k·d_k + H_v·d_v in the order q, k, v; A_log, dt_bias (H_v,); norm_weight (d_v,); W_out (H_v·d_v, d_out).
    beta_max: 1 (β in (0, 1)) or 2 (β in (0, 2), negative eigenvalues of I − β k kᵀ allowed).
    padding (B, n): True for a real token; a padded token's input is zeroed first, as transformers does.
    """
    Hk, Hv = int_at_least("n_key_heads", n_key_heads), int_at_least("n_value_heads", n_value_heads)
    if Hv % Hk:
        raise ValueError(f"n_key_heads={Hk} must divide n_value_heads={Hv} (each query/key head serves value heads)")
    if beta_max not in (1.0, 2.0):
        raise ValueError(f"beta_max must be 1 or 2 (β in (0, 1), or (0, 2) with negative eigenvalues), got {beta_max!r}")
    named = given(x=x, W_q=W_q, W_k=W_k, W_v=W_v, W_z=W_z, W_b=W_b, W_a=W_a, conv_taps=conv_taps, A_log=A_log,
                  dt_bias=dt_bias, norm_weight=norm_weight, W_out=W_out)
    if cache is not None:
        named |= {"cache.state": cache.state, "cache.conv": cache.conv}
    t = as_tensors(named, device=device, dtype=dtype)
    X = t["x"]
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    if padding is not None:
        real = as_bool_mask(padding, device=X.device)
        if real.shape != X.shape[:-1]:
            raise ValueError(f"padding {shape_str(real.shape)} must be (B, n) = {shape_str(X.shape[:-1])}")
        t["x"] = X = X * real.unsqueeze(-1).to(X.dtype)  # (B, n, d_model): padded tokens write nothing
    conv_in = torch.cat([project(t, "x", "W_q"), project(t, "x", "W_k"), project(t, "x", "W_v")], -1)  # (B, n, C)
    d_k, d_v = t["W_q"].shape[-1] // Hk, t["W_v"].shape[-1] // Hv
    if t["conv_taps"].shape[0] != conv_in.shape[-1] or t["conv_taps"].dim() != 2:
        raise ValueError(f"conv_taps {shape_str(t['conv_taps'].shape)} must be (C, κ) with C = {conv_in.shape[-1]}")
    for name, shape in (("A_log", (Hv,)), ("dt_bias", (Hv,)), ("norm_weight", (d_v,))):
        if t[name].shape != shape:
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs {shape_str(shape)}")
    past = None if cache is None else t["cache.conv"]
    conv_out = causal_conv(conv_in, t["conv_taps"], past)  # (B, n, C)
    q, k, v = conv_out.split([Hk * d_k, Hk * d_k, Hv * d_v], dim=-1)
    per = Hv // Hk  # value heads per query/key head
    q = split_heads(q, Hk).repeat_interleave(per, dim=-3)  # (B, H_v, n, d_k)
    k = split_heads(k, Hk).repeat_interleave(per, dim=-3)  # (B, H_v, n, d_k)
    v = split_heads(v, Hv)  # (B, H_v, n, d_v)
    beta = (beta_max * torch.sigmoid(project(t, "x", "W_b"))).transpose(-1, -2)  # (B, H_v, n)
    g = (-torch.exp(t["A_log"]) * F.softplus(project(t, "x", "W_a") + t["dt_bias"])).transpose(-1, -2)  # (B, H_v, n)
    rule = gated_delta_rule(q, k, v, beta=beta, g=g, l2_normalize_qk=True,
                            initial_state=None if cache is None else t["cache.state"])  # output (B, H_v, n, d_v)
    gate = F.silu(split_heads(project(t, "x", "W_z"), Hv))  # (B, H_v, n, d_v)
    normed = rms_norm(rule.output, t["norm_weight"], positive_number("norm_eps", norm_eps)) * gate  # (B, H_v, n, d_v)
    t["merged"] = merge_heads(normed)  # (B, n, H_v·d_v)
    new_cache = DeltaNetCache(state=rule.final_state, conv=conv_state(conv_in, past, t["conv_taps"].shape[-1]))
    return GatedDeltaNetTrace(conv_in=conv_in, conv_out=conv_out, taps=t["conv_taps"], q=rule.q, k=rule.k, v=v,
                              beta=beta, decay=rule.decay, states=rule.states, core=rule.output, gate=gate,
                              normed=normed, output=project(t, "merged", "W_out"), cache=new_cache)


@dataclass(frozen=True, eq=False)
class KimiDeltaTrace:
    """Every step of :func:`kimi_delta_attention`; B batch rows, H heads, n new tokens.

    conv_out (B, n, 3·H·d): [q | k | v] after the conv;  q, k (B, H, n, d) L2-normalised;  v (B, H, n, d)
    log_decay (B, H, n, d): g_t per key channel, ≤ 0 — the fade of each row of the state (GDN has one per head)
    beta (B, H, n);  states (B, H, n, d, d);  core (B, H, n, d);  gate (B, H, n, d): σ(the low-rank output gate)
    output (B, n, d_out);  cache: the layer's cache after these tokens
    """

    conv_out: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    log_decay: torch.Tensor
    beta: torch.Tensor
    states: torch.Tensor
    core: torch.Tensor
    gate: torch.Tensor
    output: torch.Tensor
    cache: DeltaNetCache


def kimi_delta_attention(
    x: TensorLike,
    cache: DeltaNetCache | None = None,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    W_v: TensorLike,
    conv_taps: TensorLike,
    W_fa: TensorLike,
    W_fb: TensorLike,
    dt_bias: TensorLike,
    A_log: TensorLike,
    W_b: TensorLike,
    W_ga: TensorLike,
    W_gb: TensorLike,
    norm_weight: TensorLike,
    W_out: TensorLike,
    n_heads: int,
    norm_eps: float = 1e-6,
    device=None,
    dtype=None,
) -> KimiDeltaTrace:
    r"""Kimi Delta Attention (Kimi Linear; transformers' ``KimiLinearDeltaAttention``): Gated DeltaNet with a decay
    per key channel instead of one per head, and low-rank gates::

        [q | k | v] ← SiLU(causal depthwise conv of x W_q, x W_k, x W_v)          H heads of width d
        g_t = −exp(A_log_h) · softplus(x W_fa W_fb + dt_bias)       (B, n, H, d): each key channel fades at its own rate
        S_t = diag(exp g_t) S_{t−1} + β_t k_t (v_t − (diag(exp g_t) S_{t−1})ᵀ k_t)ᵀ,   β_t = σ(x W_b)
        y = (RMSNorm(o_h) ⊙ w_norm ⊙ σ(x W_ga W_gb)_h) W_out

    W_q, W_k, W_v (d_model, H·d); conv_taps (3·H·d, κ); W_fa (d_model, d), W_fb (d, H·d), dt_bias (H·d,), A_log (H,);
    W_b (d_model, H); W_ga (d_model, d), W_gb (d, H·d); norm_weight (d,); W_out (H·d, d_out).
    """
    H = int_at_least("n_heads", n_heads)
    named = given(x=x, W_q=W_q, W_k=W_k, W_v=W_v, conv_taps=conv_taps, W_fa=W_fa, W_fb=W_fb, dt_bias=dt_bias,
                  A_log=A_log, W_b=W_b, W_ga=W_ga, W_gb=W_gb, norm_weight=norm_weight, W_out=W_out)
    if cache is not None:
        named |= {"cache.state": cache.state, "cache.conv": cache.conv}
    t = as_tensors(named, device=device, dtype=dtype)
    X = t["x"]
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    conv_in = torch.cat([project(t, "x", "W_q"), project(t, "x", "W_k"), project(t, "x", "W_v")], -1)  # (B, n, 3·H·d)
    d = t["W_q"].shape[-1] // H
    for name, shape in (("dt_bias", (H * d,)), ("A_log", (H,)), ("norm_weight", (d,)), ("conv_taps", (3 * H * d,))):
        if t[name].shape[:len(shape)] != shape:
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs {shape_str(shape)}")
    past = None if cache is None else t["cache.conv"]
    conv_out = causal_conv(conv_in, t["conv_taps"], past)  # (B, n, 3·H·d)
    q, k, v = (split_heads(part, H) for part in conv_out.split(H * d, dim=-1))  # (B, H, n, d) each
    t["f"] = project(t, "x", "W_fa")  # (B, n, d): the forget gate's low rank
    rate = torch.exp(t["A_log"])[:, None, None]  # (H, 1, 1)
    g = -rate * F.softplus(split_heads(project(t, "f", "W_fb") + t["dt_bias"], H))  # (B, H, n, d), ≤ 0
    beta = torch.sigmoid(project(t, "x", "W_b")).transpose(-1, -2)  # (B, H, n)
    rule = gated_delta_rule(q, k, v, beta=beta, g=g, l2_normalize_qk=True,
                            initial_state=None if cache is None else t["cache.state"])  # output (B, H, n, d)
    t["ga"] = project(t, "x", "W_ga")  # (B, n, d)
    gate = torch.sigmoid(split_heads(project(t, "ga", "W_gb"), H))  # (B, H, n, d)
    t["merged"] = merge_heads(rms_norm(rule.output, t["norm_weight"], positive_number("norm_eps", norm_eps)) * gate)
    return KimiDeltaTrace(conv_out=conv_out, q=rule.q, k=rule.k, v=v, log_decay=g, beta=beta, states=rule.states,
                          core=rule.output, gate=gate, output=project(t, "merged", "W_out"),
                          cache=DeltaNetCache(state=rule.final_state,
                                              conv=conv_state(conv_in, past, t["conv_taps"].shape[-1])))
