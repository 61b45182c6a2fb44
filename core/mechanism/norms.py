r"""RMSNorm, the one copy every model and variant uses.

    RMSNorm(x) ⊙ w = x / √(mean(x²) + ε) ⊙ w          over the last axis

Llama, SmolLM2, Qwen3's QK-norm, MLA's latents and DIFF's head norm all call :func:`rms_norm`. Gemma and
Qwen3-Next store w − 1 and multiply by 1 + weight: pass ``1 + weight``.
"""

from __future__ import annotations

import torch


def rms_norm(x: torch.Tensor, weight: torch.Tensor | None = None, eps: float = 1e-6) -> torch.Tensor:
    """x / √(mean(x²) + ε) ⊙ w over the last axis: x (..., d), weight (d,) or None (no weight) → (..., d)."""
    out = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # (..., d)
    return out if weight is None else out * weight
