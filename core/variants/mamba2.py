r"""Mamba-2 as gated linear attention (Dao & Gu 2024, "Transformers are SSMs"; issue 55), row convention.

A Mamba-2 mixer keeps, per head h, a state h_t of P × N numbers (head width P, state size N) and updates it as::

    h_t = exp(Δ_t A_h) · h_{t−1} + Δ_t · x_t B_tᵀ          Δ_t = softplus(x W_dt + dt_bias)_h > 0,  A_h = −exp(A_log_h)
    y_t = h_t C_t + D_h · x_t

That is core's gated linear attention — :func:`core.variants.delta.gated_delta_rule` with ``delta=False`` — read
with new names: query q = C, key k = B, value v = x, decay α_t = exp(Δ_t A_h), write strength β_t = Δ_t, scale 1,
plus a skip D·x. The state is the same d_k × d_v matrix (N × P here), written one outer product k vᵀ a token and
read by q. Around the scan, as transformers' ``BambaMixer`` (and ``NemotronHMamba2Mixer``, ``FalconH1Mixer``)::

    z, [x | B | C], Δ = x_in W_z, x_in W_xBC, x_in W_dt         G groups of B and C, head h reads group ⌊h / (H/G)⌋
    [x | B | C] ← SiLU(causal depthwise conv + bias)            (:func:`core.variants.gated_deltanet.causal_conv`)
    y ← RMSNorm_per_group(y ⊙ SiLU(z)) ⊙ w_norm;   out = y W_out      the gate before the norm (norm_before_gate=False)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.multihead import merge_heads, project, split_heads
from core.mechanism.norms import rms_norm
from core.variants.delta import DeltaRuleTrace, gated_delta_rule
from core.variants.gated_deltanet import causal_conv, conv_state


@dataclass(frozen=True, eq=False)
class Mamba2Cache:
    """A Mamba-2 layer's cache per sequence: state (B, H, N, P) — core's (d_k, d_v) = (N, P) — and conv (B, κ − 1, C)."""

    state: torch.Tensor
    conv: torch.Tensor


@dataclass(frozen=True, eq=False)
class Mamba2Trace:
    """:func:`mamba2`: scan — the gated linear attention it is (q = C, k = B, v = x, decay exp(ΔA), β = Δ, scale 1;
    its states (B, H, n, N, P)); dt (B, H, n) the step Δ; skip (B, H, n, P) D·x; y (B, H, n, P) = scan + skip;
    gated (B, n, I) y ⊙ SiLU(z) normalised per group; output (B, n, d_out); cache after these tokens."""

    scan: DeltaRuleTrace
    dt: torch.Tensor
    skip: torch.Tensor
    y: torch.Tensor
    gated: torch.Tensor
    output: torch.Tensor
    cache: Mamba2Cache


def mamba2(
    x: TensorLike,
    cache: Mamba2Cache | None = None,
    *,
    W_z: TensorLike,
    W_xBC: TensorLike,
    W_dt: TensorLike,
    conv_taps: TensorLike,
    dt_bias: TensorLike,
    A_log: TensorLike,
    D: TensorLike,
    norm_weight: TensorLike,
    W_out: TensorLike,
    n_heads: int,
    n_groups: int,
    conv_bias: TensorLike | None = None,
    norm_eps: float = 1e-6,
    device=None,
    dtype=None,
) -> Mamba2Trace:
    r"""The Mamba-2 mixer of the module doc over the new tokens x (B, n, d_model), after ``cache``.

    W_z (d_model, I) with I = H·P; W_xBC (d_model, C), C = I + 2·G·N, the channels in the order x, B, C;
    W_dt (d_model, H); conv_taps (C, κ), conv_bias (C,) or None; dt_bias, A_log, D (H,); norm_weight (I,);
    W_out (I, d_out). G = ``n_groups`` divides H.
    """
    H, G = int_at_least("n_heads", n_heads), int_at_least("n_groups", n_groups)
    if H % G:
        raise ValueError(f"n_groups={G} must divide n_heads={H} (each group's B and C serve H/G heads)")
    named = given(x=x, W_z=W_z, W_xBC=W_xBC, W_dt=W_dt, conv_taps=conv_taps, conv_bias=conv_bias, dt_bias=dt_bias,
                  A_log=A_log, D=D, norm_weight=norm_weight, W_out=W_out)
    if cache is not None:
        named |= {"cache.state": cache.state, "cache.conv": cache.conv}
    t = as_tensors(named, device=device, dtype=dtype)
    X = t["x"]
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    inner = t["W_z"].shape[-1]
    xBC = project(t, "x", "W_xBC")  # (B, n, C)
    N2 = xBC.shape[-1] - inner
    if inner % H or N2 <= 0 or N2 % (2 * G):
        raise ValueError(f"W_z's width {inner} must be H·P and W_xBC's {xBC.shape[-1]} must be I + 2·G·N")
    N = N2 // (2 * G)  # the state size; P = I / H, the head width
    for name, shape in (("dt_bias", (H,)), ("A_log", (H,)), ("D", (H,)), ("norm_weight", (inner,))):
        if t[name].shape != shape:
            raise ValueError(f"{name} has shape {shape_str(t[name].shape)} but needs {shape_str(shape)}")
    past = None if cache is None else t["cache.conv"]
    conv_out = causal_conv(xBC, t["conv_taps"], past, t.get("conv_bias"))  # (B, n, C)
    xs, Bs, Cs = conv_out.split([inner, G * N, G * N], dim=-1)
    v = split_heads(xs, H)  # (B, H, n, P): the values
    k = split_heads(Bs, G).repeat_interleave(H // G, dim=-3)  # (B, H, n, N): the keys, B of head h's group
    q = split_heads(Cs, G).repeat_interleave(H // G, dim=-3)  # (B, H, n, N): the queries, C
    dt = F.softplus(project(t, "x", "W_dt") + t["dt_bias"]).transpose(-1, -2)  # (B, H, n): Δ_t > 0
    log_decay = dt * -torch.exp(t["A_log"]).unsqueeze(-1)  # (B, H, n): Δ_t A_h ≤ 0
    scan = gated_delta_rule(q, k, v, beta=dt, g=log_decay, scale=1.0, delta=False,
                            initial_state=None if cache is None else t["cache.state"])  # output (B, H, n, P)
    skip = t["D"][:, None, None] * v  # (B, H, n, P)
    y = scan.output + skip
    gated = merge_heads(y) * F.silu(project(t, "x", "W_z"))  # (B, n, I): the gate before the norm
    grouped = gated.unflatten(-1, (G, inner // G))  # (B, n, G, I/G): RMSNorm over each group's channels
    t["normed"] = rms_norm(grouped, eps=positive_number("norm_eps", norm_eps)).flatten(-2) * t["norm_weight"]
    return Mamba2Trace(scan=scan, dt=dt, skip=skip, y=y, gated=t["normed"], output=project(t, "normed", "W_out"),
                       cache=Mamba2Cache(state=scan.final_state, conv=conv_state(xBC, past, t["conv_taps"].shape[-1])))
