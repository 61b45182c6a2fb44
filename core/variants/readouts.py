"""Numbers read off a variant's trace that its pages show beside the trace: what the delta rule's state predicted
and wrote, the "oracle" selection of sparse attention, how much weight a selection keeps, a row's peak share, and
the period of a layer schedule.

Each is a few tensor operations on a trace of ``core.variants`` or ``core.mechanism.attention`` (no new mechanism):
written once here so the app computes them as the tests check them (``tests/core/test_readouts.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from core.variants.delta import DeltaRuleTrace


def delta_readout(trace: DeltaRuleTrace, *, delta: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """Per token t of a delta-rule run from a zero state (``gated_delta_rule``): what the state predicted for k_t
    just before the write, α_t S_{t−1}ᵀ k_t, and what was written, β_t (v_t − prediction) — or β_t v_t when
    ``delta`` is False (gated linear attention). Both (..., n, d_v), read from the trace's states, decay, k, v, beta."""
    S = trace.states  # (..., n, d_k, d_v): S_t after token t
    before = torch.cat([torch.zeros_like(S[..., :1, :, :]), S[..., :-1, :, :]], dim=-3) * trace.decay[..., None, None]
    prediction = (before * trace.k[..., :, None]).sum(-2)  # (..., n, d_v)
    write = (trace.v - prediction if delta else trace.v) * trace.beta[..., None]
    return prediction, write


def oracle_index(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Index scores that choose the keys attention itself weighs most: attention's scores (..., H, n_q, n_k) — the
    trace's raw ``scores``; a scale common to the heads chooses the same keys — with −∞ where ``mask`` (True = may
    attend, broadcast to them) forbids, averaged over the heads → (..., n_q, n_k). What an indexer trained to match
    attention aims at (for ``sparse_topk_attention(index_scores=…)``)."""
    masked = scores if mask is None else scores.masked_fill(~mask, float("-inf"))
    return masked.mean(-3)


def weight_kept(weights: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """The share of each query's attention weight (…, n_q, n_k) that falls on the ``chosen`` keys (1/0 or bool,
    broadcast to it) → (…, n_q)."""
    return (weights * chosen).sum(-1)


def peak_share(weights: torch.Tensor) -> torch.Tensor:
    """Each row's largest absolute weight over the row's total absolute weight, max_j |w_ij| / Σ_j |w_ij| (…, n_q):
    1 when one key takes everything; meaningful for signed maps too (differential attention)."""
    a = weights.abs()
    return a.amax(-1) / a.sum(-1).clamp_min(1e-30)


def schedule_period(kinds: Sequence) -> list:
    """The shortest prefix of ``kinds`` (one entry per layer) whose repetition gives every layer."""
    kinds = list(kinds)
    p = next(p for p in range(1, len(kinds) + 1) if all(kinds[i] == kinds[i % p] for i in range(len(kinds))))
    return kinds[:p]
