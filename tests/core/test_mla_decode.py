"""MLA's decoding step against the cached latent (issue 55): prefill then one token at a time equals the full pass
(explicit and absorbed) row by row, the cache grows by d_c + d_R numbers a token, and a wrong cache is refused."""

from __future__ import annotations

import pytest
import torch

import core


def _weights(d=12, H=3, d_c=5, d_R=4, d_h=3, d_cq=6, seed=0, q_lora=True):
    g = torch.Generator().manual_seed(seed)

    def w(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64) * 0.4

    d_q = d_cq if q_lora else d
    out = dict(W_DKV=w(d, d_c), W_KR=w(d, d_R), W_UK=w(d_c, H * d_h), W_UV=w(d_c, H * d_h), W_UQ=w(d_q, H * d_h),
               W_QR=w(d_q, H * d_R), W_o=w(H * d_h, d), n_heads=H, kv_norm=1 + w(d_c))
    if q_lora:
        out |= dict(W_DQ=w(d, d_cq), q_norm=1 + w(d_cq))
    return out


@pytest.mark.parametrize("q_lora", [True, False])
@pytest.mark.parametrize("prefill", [1, 3])
def test_prefill_then_steps_equal_the_full_pass(q_lora, prefill):
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 7, 12, generator=g, dtype=torch.float64)  # (B, n, d_model)
    W = _weights(q_lora=q_lora)
    full = core.mla(x, **W, rope=500.0)
    step = core.mla_decode(x[:, :prefill], **W, rope_base=500.0)
    outs = [step.output]
    for i in range(prefill, 7):
        step = core.mla_decode(x[:, i:i + 1], step.cache, **W, rope_base=500.0)
        outs.append(step.output)
        assert step.cache.length == i + 1 and step.weights.shape == (2, 3, 1, i + 1)
    got = torch.cat(outs, dim=-2)  # (B, n, d_model)
    torch.testing.assert_close(got, full.output_absorbed, atol=1e-12, rtol=0)
    torch.testing.assert_close(got, full.output, atol=1e-12, rtol=0)
    torch.testing.assert_close(step.cache.c_kv, full.c_kv, atol=1e-12, rtol=0)
    torch.testing.assert_close(step.cache.k_rope, full.k_rope, atol=1e-12, rtol=0)
    torch.testing.assert_close(step.weights[:, :, 0], full.weights[:, :, -1], atol=1e-12, rtol=0)
    assert step.cache.c_kv.shape[-1] + step.cache.k_rope.shape[-1] == full.cache_values_per_token


def test_a_negative_control_the_wrong_position_fails():
    """Decoding the last token as if it stood at position 0 (the cache's offset forgotten) moves the output."""
    g = torch.Generator().manual_seed(6)
    x = torch.randn(1, 4, 12, generator=g, dtype=torch.float64)
    W = _weights()
    full = core.mla(x, **W, rope=500.0)
    cache = core.mla_decode(x[:, :3], **W, rope_base=500.0).cache
    wrong = core.mla_decode(x[:, 3:], core.LatentCache(c_kv=cache.c_kv[:, :0], k_rope=cache.k_rope[:, :0]), **W,
                            rope_base=500.0)
    assert (wrong.output - full.output_absorbed[:, 3:]).abs().max() > 1e-3


def test_a_cache_of_other_widths_is_refused():
    W = _weights()
    x = torch.zeros(1, 1, 12, dtype=torch.float64)
    bad = core.LatentCache(c_kv=torch.zeros(1, 2, 7, dtype=torch.float64), k_rope=torch.zeros(1, 2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="latents of width 7"):
        core.mla_decode(x, bad, **W)
