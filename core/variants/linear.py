r"""Linear attention (Katharopoulos et al. 2020, "Transformers are RNNs"), row convention.

Softmax attention weighs key j for query i by exp(q_iᵀk_j/√d) / Σ_j' exp(q_iᵀk_j'/√d). Linear
attention replaces the exponential with a product of positive features, sim(q, k) = φ(q)ᵀφ(k) with
φ(x) = elu(x) + 1, so the weights are

    α_ij = φ(q_i)ᵀφ(k_j) / Σ_j' φ(q_i)ᵀφ(k_j')

and the product can be taken in either order:

    quadratic:    (φ(Q) φ(K)ᵀ) V     — the n_q × n_k matrix, then V:      n_q·n_k·(d_k + d_v) multiply-adds
    associative:  φ(Q) (φ(K)ᵀ V)     — a d_k × d_v summary, never n × n:   (n_k + n_q)·d_k·d_v

Both give the same output (matrix products are associative). Causal linear attention keeps running
sums S_i = Σ_{j≤i} φ(k_j) v_jᵀ and z_i = Σ_{j≤i} φ(k_j) (prefix sums: the "RNN" form) and equals
the masked quadratic form.

**This is a different attention, not an approximation of softmax attention**: on the same Q and K
its weights differ from softmax's (the trace measures by how much), and a model has to be trained
with it. (Kernel methods that *do* approximate the softmax kernel, such as Performer's random
features, are another family.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, qkv_tensors
from core.mechanism.attention import attention
from core.mechanism.masks import causal as causal_mask


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """φ(x) = elu(x) + 1: x + 1 for x > 0, eˣ otherwise — always positive, so every weight is ≥ 0."""
    return torch.nn.functional.elu(x) + 1.0


@dataclass(frozen=True, eq=False)
class LinearAttentionTrace:
    """Linear attention of q (..., n_q, d_k) over k (..., n_k, d_k), v (..., n_k, d_v).

    phi_q (..., n_q, d_k), phi_k (..., n_k, d_k): φ of the queries and keys
    kv:   φ(K)ᵀV (..., d_k, d_v); causal: the prefix sums S_i = Σ_{j≤i} φ(k_j)v_jᵀ (..., n, d_k, d_v)
    z:    Σ_j φ(k_j) (..., d_k); causal: its prefix sums (..., n, d_k)
    output (..., n_q, d_v): the associative (causal: prefix-sum) form φ(q_i)ᵀkv / φ(q_i)ᵀz
    weights (..., n_q, n_k): α_ij of the quadratic form (0 above the diagonal when causal)
    output_quadratic (..., n_q, d_v): weights · V
    form_gap: max |output − output_quadratic| (0 up to rounding)
    softmax_weights (..., n_q, n_k): softmax(QKᵀ/√d_k) on the same Q, K (causal mask when causal)
    total_variation (..., n_q): ½ Σ_j |α_ij − softmax_ij| per query, in [0, 1)
    weight_gap: max |weights − softmax_weights|
    macs_quadratic, macs_associative: multiply-adds of the two orders (element-wise φ not counted)
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    causal: bool
    phi_q: torch.Tensor
    phi_k: torch.Tensor
    kv: torch.Tensor
    z: torch.Tensor
    output: torch.Tensor
    weights: torch.Tensor
    output_quadratic: torch.Tensor
    form_gap: float
    softmax_weights: torch.Tensor
    total_variation: torch.Tensor
    weight_gap: float
    macs_quadratic: int
    macs_associative: int


def linear_attention_macs(n_q: int, n_k: int, d_k: int, d_v: int, *, causal: bool = False) -> tuple[int, int]:
    """(quadratic, associative) multiply-adds of linear attention.

    quadratic: φ(Q)φ(K)ᵀ n_q·n_k·d_k, then · V n_q·n_k·d_v (a dense matrix, masked half included when causal).
    associative: φ(K)ᵀV n_k·d_k·d_v (causal: one outer product per key, the same count), φ(Q)·(φ(K)ᵀV)
    n_q·d_k·d_v, the denominators φ(Q)·z n_q·d_k.
    """
    return n_q * n_k * (d_k + d_v), n_k * d_k * d_v + n_q * d_k * d_v + n_q * d_k


def _safe_div(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den for positive den; an underflowed 0 denominator (φ → e^{−100}) gives 0, never NaN."""
    return torch.where(den > 0, num / den.clamp_min(torch.finfo(num.dtype).tiny), torch.zeros_like(num))


def associative_form(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor):
    """φ(Q)(φ(K)ᵀV) / φ(Q)·Σφ(k): returns (output (..., n_q, d_v), kv (..., d_k, d_v), z (..., d_k))."""
    kv = phi_k.transpose(-1, -2) @ v  # (..., d_k, d_v): the whole sequence summarised
    z = phi_k.sum(dim=-2)  # (..., d_k)
    num = phi_q @ kv  # (..., n_q, d_v)
    den = phi_q @ z.unsqueeze(-1)  # (..., n_q, 1)
    return _safe_div(num, den), kv, z


def _prefix(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor):
    """Causal form by prefix sums: S_i = Σ_{j≤i} φ(k_j)v_jᵀ, z_i = Σ_{j≤i} φ(k_j); out_i = φ(q_i)ᵀS_i / φ(q_i)ᵀz_i."""
    S = torch.cumsum(phi_k.unsqueeze(-1) * v.unsqueeze(-2), dim=-3)  # (..., n, d_k, d_v)
    z = torch.cumsum(phi_k, dim=-2)  # (..., n, d_k)
    num = (phi_q.unsqueeze(-2) @ S).squeeze(-2)  # (..., n, d_v)
    den = (phi_q * z).sum(dim=-1, keepdim=True)  # (..., n, 1)
    return _safe_div(num, den), S, z


def quadratic_form(phi_q: torch.Tensor, phi_k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None):
    """(φ(Q)φ(K)ᵀ, masked, row-normalised) · V: returns (output (..., n_q, d_v), weights (..., n_q, n_k))."""
    sim = phi_q @ phi_k.transpose(-1, -2)  # (..., n_q, n_k), every entry > 0
    if mask is not None:
        sim = sim.masked_fill(~mask, 0.0)
    weights = _safe_div(sim, sim.sum(dim=-1, keepdim=True))  # (..., n_q, n_k)
    return weights @ v, weights


def linear_attention(q: TensorLike, k: TensorLike, v: TensorLike, *, causal: bool = False, device=None,
                     dtype=None) -> LinearAttentionTrace:
    """Linear attention with φ = elu + 1, both orders of the product, and its distance from softmax's weights.

    q (..., n_q, d_k), k (..., n_k, d_k), v (..., n_k, d_v); ``causal=True`` needs n_q = n_k (query i sees
    keys j ≤ i) and uses prefix sums. Returns a :class:`LinearAttentionTrace` with ``.output``.
    A different attention from softmax's, not an approximation of it (see the module's docstring).
    """
    Q, K, V = qkv_tensors(q, k, v, device=device, dtype=dtype)  # (..., n_q, d_k), (..., n_k, d_k), (..., n_k, d_v)
    n_q, n_k, d_k, d_v = Q.shape[-2], K.shape[-2], K.shape[-1], V.shape[-1]
    if causal and n_q != n_k:
        raise ValueError(f"causal linear attention needs as many queries as keys, got n_q={n_q}, n_k={n_k}")
    phi_q, phi_k = elu_feature_map(Q), elu_feature_map(K)  # (..., n, d_k), positive
    mask = causal_mask(n_q, device=Q.device) if causal else None  # (n, n)
    output, kv, z = (_prefix if causal else associative_form)(phi_q, phi_k, V)
    out_quad, weights = quadratic_form(phi_q, phi_k, V, mask)
    soft = attention(Q, K, V, mask=mask).weights  # (..., n_q, n_k): softmax(QKᵀ/√d_k), the same Q and K
    tv = 0.5 * (weights - soft).abs().sum(dim=-1)  # (..., n_q)
    macs_q, macs_a = linear_attention_macs(n_q, n_k, d_k, d_v, causal=causal)
    return LinearAttentionTrace(
        q=Q, k=K, v=V, causal=bool(causal), phi_q=phi_q, phi_k=phi_k, kv=kv, z=z, output=output, weights=weights,
        output_quadratic=out_quad, form_gap=float((output - out_quad).abs().max()), softmax_weights=soft,
        total_variation=tv, weight_gap=float((weights - soft).abs().max()), macs_quadratic=macs_q, macs_associative=macs_a,
    )
