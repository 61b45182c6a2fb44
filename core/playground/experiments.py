r"""Why divide by √d_k (C10), as a seeded experiment.

For q, k with i.i.d. N(0, 1) entries, qᵀk has mean 0 and variance d. Unscaled logits of
size ~√d push softmax toward one-hot (max weight → 1, entropy → 0) and shrink its gradient;
dividing by √d keeps all three steady as d grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

DEFAULT_DIMS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


@dataclass(frozen=True, eq=False)
class ScalingExperiment:
    """Per dimension d (len D): measured Var(qᵀk); mean max softmax weight, entropy (nats) and
    gradient norm ‖∂L/∂logits‖ over the trials, unscaled and scaled by 1/√d. ``dots`` holds the
    raw qᵀk samples (D, n_samples) for histograms, ``dots_scaled`` the same divided by √d."""

    dims: tuple[int, ...]
    n_keys: int
    var_dot: torch.Tensor
    dots: torch.Tensor
    dots_scaled: torch.Tensor
    max_weight: torch.Tensor
    max_weight_scaled: torch.Tensor
    entropy: torch.Tensor
    entropy_scaled: torch.Tensor
    grad_norm: torch.Tensor
    grad_norm_scaled: torch.Tensor


def _softmax_stats(logits: torch.Tensor, upstream: torch.Tensor):
    """(mean max weight, mean entropy, mean gradient norm) of softmax over the last axis."""
    s = logits.detach().requires_grad_(True)
    p = torch.softmax(s, dim=-1)  # (trials, n_keys)
    (p * upstream).sum().backward()  # L = Σ gᵢ pᵢ with a fixed random upstream gradient g
    entropy = -(p * torch.log(p.clamp_min(1e-30))).sum(dim=-1)
    return p.max(dim=-1).values.mean().detach(), entropy.mean().detach(), s.grad.norm(dim=-1).mean()


def scaling_experiment(dims=DEFAULT_DIMS, *, n_keys: int = 16, n_samples: int = 2000, n_trials: int = 200,
                       seed: int = 0) -> ScalingExperiment:
    """Run the experiment with a private generator: the same seed always gives the same numbers."""
    dims = tuple(int(d) for d in dims)
    if not dims or min(dims) < 1 or n_keys < 2 or n_samples < 2 or n_trials < 1:
        raise ValueError("dims must be positive; n_keys ≥ 2, n_samples ≥ 2, n_trials ≥ 1")
    g = torch.Generator().manual_seed(int(seed))
    D = len(dims)
    var_dot, dots = torch.zeros(D), torch.zeros(D, n_samples)
    out = {name: torch.zeros(D) for name in ("mw", "mws", "ent", "ents", "gn", "gns")}
    upstream = torch.randn(n_trials, n_keys, generator=g)
    for i, d in enumerate(dims):
        q = torch.randn(n_samples, d, generator=g)
        k = torch.randn(n_samples, d, generator=g)
        dot = (q * k).sum(dim=-1)  # (n_samples,): one qᵀk per pair
        dots[i] = dot
        var_dot[i] = dot.var()
        qt = torch.randn(n_trials, 1, d, generator=g)
        kt = torch.randn(n_trials, n_keys, d, generator=g)
        logits = (qt @ kt.transpose(-1, -2)).squeeze(1)  # (n_trials, n_keys)
        out["mw"][i], out["ent"][i], out["gn"][i] = _softmax_stats(logits, upstream)
        out["mws"][i], out["ents"][i], out["gns"][i] = _softmax_stats(logits / math.sqrt(d), upstream)
    return ScalingExperiment(
        dims=dims, n_keys=n_keys, var_dot=var_dot, dots=dots,
        dots_scaled=dots / torch.tensor(dims, dtype=dots.dtype).sqrt().unsqueeze(1),  # qᵀk / √d, (D, n_samples)
        max_weight=out["mw"], max_weight_scaled=out["mws"],
        entropy=out["ent"], entropy_scaled=out["ents"], grad_norm=out["gn"], grad_norm_scaled=out["gns"],
    )
