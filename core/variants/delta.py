r"""The gated delta rule (Yang, Kautz & Hatamizadeh 2024, "Gated Delta Networks"; Qwen3-Next's linear
layers), row convention, per head.

Linear attention keeps a d_k × d_v state instead of a growing cache. The delta rule writes to it like a
learning step: it reads what the state already predicts for key k_t, and stores only the correction::

    α_t = exp(g_t)                                   decay in (0, 1], g_t ≤ 0 in log space
    S_t = α_t S_{t−1} + β_t k_t (v_t − α_t S_{t−1}ᵀ k_t)ᵀ  =  α_t (I − β_t k_t k_tᵀ) S_{t−1} + β_t k_t v_tᵀ
    o_t = S_tᵀ (q_t · scale)                         scale = 1/√d_k

Special cases (``g``, ``beta``, ``delta``):

* ``g = 0`` (no decay): the plain delta rule (DeltaNet, Schlag et al. 2021).
* ``delta=False``: S_t = α_t S_{t−1} + β_t k_t v_tᵀ, gated linear attention (a scalar decay per head, as
  Mamba-2 / RetNet-style layers). With g = 0 and β = 1 it is causal linear attention with the identity
  feature map and no normaliser: o_t = Σ_{s≤t} (q_t·k_s)·scale · v_s.
* with orthonormal keys the delta rule's read S_{t−1}ᵀk_t is 0 and it equals linear attention.

:func:`gated_delta_rule` runs the recurrence token by token and keeps every state;
:func:`gated_delta_rule_chunked` computes the same outputs a chunk of C tokens at a time (the WY / UT
transform: one triangular solve per chunk, then matrix products), which is how it is trained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.shapes import MODELS

# Qwen3-Next-80B-A3B, a 3:1 hybrid: 12 × (3 Gated DeltaNet + 1 gated attention), one state of 128 × 128 per value
# head (its numbers and sources: core.shapes.MODELS)
QWEN3_NEXT_HYBRID = MODELS["qwen3-next-80b-a3b"]

@dataclass(frozen=True, eq=False)
class DeltaRuleTrace:
    """The recurrence of :func:`gated_delta_rule`; B batch dims, H heads, n tokens.

    q (B, H, n, d_k) (L2-normalised when asked, not yet scaled), k (B, H, n, d_k), v (B, H, n, d_v)
    beta (B, H, n), decay (B, H, n) or (B, H, n, d_k) per key channel: α_t = exp(g_t)
    states (B, H, n, d_k, d_v): S_t after token t;  final_state (B, H, d_k, d_v)
    output (B, H, n, d_v): o_t = S_tᵀ q_t · scale;  delta: the delta rule (True) or linear attention (False)
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    beta: torch.Tensor
    decay: torch.Tensor
    states: torch.Tensor
    final_state: torch.Tensor
    output: torch.Tensor
    scale: float
    delta: bool


@dataclass(frozen=True, eq=False)
class ChunkedDeltaTrace:
    """:func:`gated_delta_rule_chunked`: output (B, H, n, d_v), the states at the chunk boundaries
    boundary_states (B, H, n_chunks + 1, d_k, d_v) (the first is the initial state), final_state."""

    output: torch.Tensor
    boundary_states: torch.Tensor
    final_state: torch.Tensor
    chunk_size: int
    scale: float
    delta: bool


def _l2(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + eps)  # as the FLA kernels (ε inside the root)


def _prepare(q, k, v, beta, g, initial_state, scale, l2_normalize_qk, device, dtype):
    named = given(q=q, k=k, v=v, beta=beta, g=g, initial_state=initial_state)
    t = as_tensors(named, device=device, dtype=dtype)
    Q, K, V = t["q"], t["k"], t["v"]
    if Q.dim() < 2 or Q.shape != K.shape or K.shape[:-1] != V.shape[:-1] or Q.shape[-2] == 0:
        raise ValueError(f"q and k must be (..., n, d_k) of one shape and v (..., n, d_v) with n ≥ 1, got "
                         f"q {shape_str(Q.shape)}, k {shape_str(K.shape)}, v {shape_str(V.shape)}")
    lead = Q.shape[:-1]  # (..., n)
    if t["beta"].shape != lead:
        raise ValueError(f"beta has shape {shape_str(t['beta'].shape)} but needs one number per token, "
                         f"{shape_str(lead)}")
    G = t.get("g", torch.zeros_like(t["beta"]))
    if G.shape not in (lead, (*lead, K.shape[-1])):
        raise ValueError(f"g has shape {shape_str(G.shape)} but needs one log-decay per token, {shape_str(lead)}, or "
                         f"one per token and key channel, {shape_str((*lead, K.shape[-1]))}")
    if bool((G > 0).any()):
        raise ValueError("g is the log of the decay and must be ≤ 0 (decay exp(g) ≤ 1)")
    d_k, d_v = K.shape[-1], V.shape[-1]
    S0 = t.get("initial_state")
    if S0 is None:
        S0 = torch.zeros(*lead[:-1], d_k, d_v, dtype=V.dtype, device=V.device)
    elif S0.shape != (*lead[:-1], d_k, d_v):
        raise ValueError(f"initial_state has shape {shape_str(S0.shape)} but needs {shape_str((*lead[:-1], d_k, d_v))}")
    if l2_normalize_qk:
        Q, K = _l2(Q), _l2(K)
    s = 1.0 / math.sqrt(d_k) if scale is None else positive_number("scale", scale)
    return Q, K, V, t["beta"], G, S0, s


def gated_delta_rule(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    *,
    beta: TensorLike,
    g: TensorLike | None = None,
    scale: float | None = None,
    l2_normalize_qk: bool = False,
    initial_state: TensorLike | None = None,
    delta: bool = True,
    device=None,
    dtype=None,
) -> DeltaRuleTrace:
    r"""The gated delta rule, token by token (see the module doc), with the state after every token.

    q, k (..., n, d_k), v (..., n, d_v) — per head, e.g. (B, H, n, d); beta (..., n) the write strength
    (usually in (0, 1)), g (..., n) the log decay ≤ 0 (None: 0, no decay) — or (..., n, d_k), one rate per key
    channel: S_t = diag(exp g_t) S_{t−1} + … (Kimi Delta Attention); initial_state (..., d_k, d_v).
    l2_normalize_qk: q, k ← x/√(Σx² + 10⁻⁶) first (Qwen3-Next does). scale: default 1/√d_k on q.
    ``delta=False`` drops the correction (gated linear attention).
    """
    Q, K, V, Bt, G, S, s = _prepare(q, k, v, beta, g, initial_state, scale, l2_normalize_qk, device, dtype)
    decay = torch.exp(G)  # (..., n), or (..., n, d_k) per key channel
    states, outs = [], []
    for i in range(Q.shape[-2]):
        q_t, k_t, v_t = Q[..., i, :] * s, K[..., i, :], V[..., i, :]  # (..., d_k), (..., d_k), (..., d_v)
        # (..., d_k, d_v): forget — one rate for the whole state, or one per key channel (row of S; Kimi Delta Attention)
        S = S * (decay[..., i, None, None] if decay.dim() == Bt.dim() else decay[..., i, :, None])
        if delta:
            pred = (S * k_t.unsqueeze(-1)).sum(-2)  # Sᵀk_t (..., d_v): what the state says for k_t
            write = (v_t - pred) * Bt[..., i, None]  # the correction
        else:
            write = v_t * Bt[..., i, None]
        S = S + k_t.unsqueeze(-1) * write.unsqueeze(-2)  # + k_t writeᵀ (..., d_k, d_v)
        states.append(S)
        outs.append((S * q_t.unsqueeze(-1)).sum(-2))  # Sᵀq_t (..., d_v)
    return DeltaRuleTrace(q=Q, k=K, v=V, beta=Bt, decay=decay, states=torch.stack(states, dim=-3),
                          final_state=S, output=torch.stack(outs, dim=-2), scale=s, delta=bool(delta))


def gated_delta_rule_chunked(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    *,
    beta: TensorLike,
    g: TensorLike | None = None,
    chunk_size: int = 64,
    scale: float | None = None,
    l2_normalize_qk: bool = False,
    initial_state: TensorLike | None = None,
    delta: bool = True,
    device=None,
    dtype=None,
) -> ChunkedDeltaTrace:
    r"""The same outputs as :func:`gated_delta_rule`, C = ``chunk_size`` tokens at a time.

    Inside a chunk with start state S₀ and cumulative log decay Γ_t = Σ_{s≤t} g_s, the C updates are
    solved at once: with T = I + strict-lower((β⊙K) Kᵀ ⊙ D), D_ts = exp(Γ_t − Γ_s) (s ≤ t),

        U = T⁻¹(β⊙V),  W = T⁻¹(β⊙K⊙e^Γ),  V_new = U − W S₀            (delta=False: V_new = β⊙V)
        O = (Q⊙e^Γ) S₀ + ((Q Kᵀ) ⊙ D) V_new,   S_C = e^{Γ_C} S₀ + (K⊙e^{Γ_C − Γ})ᵀ V_new

    (Q already scaled). A short last chunk is padded with β = 0, g = 0 tokens, which change nothing.
    """
    C = int_at_least("chunk_size", chunk_size)
    Q, K, V, Bt, G, S, s = _prepare(q, k, v, beta, g, initial_state, scale, l2_normalize_qk, device, dtype)
    if G.dim() != Bt.dim():
        raise ValueError("the chunked form takes one log-decay per token; run a per-channel decay with gated_delta_rule")
    n = Q.shape[-2]
    pad = (-n) % C
    if pad:  # zeros after the last token: β = 0 and g = 0 leave the state as it is
        Q, K, V = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (Q, K, V))
        Bt, G = (torch.nn.functional.pad(x, (0, pad)) for x in (Bt, G))
    lead = Q.shape[:-2]
    nc = Q.shape[-2] // C
    Qc = (Q * s).reshape(*lead, nc, C, -1)  # (..., n_c, C, d_k)
    Kc, Vc = K.reshape(*lead, nc, C, -1), V.reshape(*lead, nc, C, -1)  # (..., n_c, C, d)
    Bc, Gam = Bt.reshape(*lead, nc, C), G.reshape(*lead, nc, C).cumsum(-1)  # (..., n_c, C): β, Γ
    lower = torch.ones(C, C, dtype=torch.bool, device=Q.device).tril()  # (C, C): s ≤ t
    D = torch.exp((Gam.unsqueeze(-1) - Gam.unsqueeze(-2)).masked_fill(~lower, float("-inf")))  # (..., n_c, C, C)
    kb = Kc * Bc.unsqueeze(-1)  # β⊙K (..., n_c, C, d_k)
    if delta:
        T = torch.eye(C, dtype=Q.dtype, device=Q.device) + (kb @ Kc.transpose(-1, -2) * D).tril(-1)  # (..., C, C)
        U = torch.linalg.solve_triangular(T, Vc * Bc.unsqueeze(-1), upper=False, unitriangular=True)  # (.., C, d_v)
        W = torch.linalg.solve_triangular(T, kb * Gam.exp().unsqueeze(-1), upper=False, unitriangular=True)
    else:
        U, W = Vc * Bc.unsqueeze(-1), None
    intra = Qc @ Kc.transpose(-1, -2) * D  # (..., n_c, C, C): within-chunk scores with decay
    q_dec = Qc * Gam.exp().unsqueeze(-1)  # (..., n_c, C, d_k): queries reading the start state
    k_dec = Kc * (Gam[..., -1:] - Gam).exp().unsqueeze(-1)  # (..., n_c, C, d_k): keys decayed to the chunk end
    outs, bounds = [], [S]
    for c in range(nc):
        v_new = U[..., c, :, :] if W is None else U[..., c, :, :] - W[..., c, :, :] @ S  # (..., C, d_v)
        outs.append(q_dec[..., c, :, :] @ S + intra[..., c, :, :] @ v_new)  # (..., C, d_v)
        S = S * Gam[..., c, -1].exp()[..., None, None] + k_dec[..., c, :, :].transpose(-1, -2) @ v_new  # (.., d_k, d_v)
        bounds.append(S)
    output = torch.cat(outs, dim=-2)[..., :n, :]  # (..., n, d_v)
    return ChunkedDeltaTrace(output=output, boundary_states=torch.stack(bounds, dim=-3), final_state=S,
                             chunk_size=C, scale=s, delta=bool(delta))
