"""core.variants.kept_chart: the 2026 chart's curves are core.kept's counts, and the lesson's numbers by hand."""

from __future__ import annotations

import dataclasses

import pytest

import core
from core.shapes import MODELS
from core.variants import kept_chart as kc


def test_every_curve_is_kept_at_each_context_and_names_its_source():
    cs = kc.curves()
    assert [c.key for c in cs] == [k for k, _ in kc.CHART_MODELS] and len(cs) == 8
    for c in cs:
        p = MODELS[c.key]
        assert c.values == tuple(core.kept(p, n).total for n in kc.CONTEXTS)
        assert c.million == core.kept(p, 1_000_000).total and c.source == p.source and c.name == p.name
    assert kc.CONTEXTS[0] == 128 and kc.CONTEXTS[-1] == 2 ** 20


def test_by_hand_gpt2_and_llama_grow_by_their_kv_cache_and_mamba_alone_stays_flat():
    cs = {c.key: c for c in kc.curves()}
    assert cs["gpt2"].million == 2 * 12 * 12 * 64 * 1_000_000  # 2 · L · H · d_head · t
    assert cs["llama-3-8b"].million == 2 * 32 * 8 * 128 * 1_000_000
    assert cs["deepseek-v3"].million == 61 * 576 * 1_000_000
    # Mamba-2: 64 layers of H·N·P + 3·(H·P + 2·G·N), whatever the context
    assert cs["mamba2"].million == 64 * (128 * 128 * 64 + 3 * (128 * 64 + 2 * 8 * 128))
    assert [k for k, c in cs.items() if c.flat] == ["mamba2"]
    assert cs["deepseek-v4-flash"].bytes(2)[0] == 2 * cs["deepseek-v4-flash"].values[0]


def test_growth_per_layer_beyond_the_window_by_hand():
    v4 = MODELS["deepseek-v4-flash"]
    assert kc.growth_per_layer(v4, "csa") == 512 / 4 + 128 / 4 == 160  # d/m + d_I/m
    assert kc.growth_per_layer(v4, "hca") == 512 / 128 == 4
    assert kc.growth_per_layer(MODELS["deepseek-v3"], "mla") == 576
    assert kc.growth_per_layer(MODELS["qwen3.5-27b"], "linear") == 0
    with pytest.raises(ValueError, match="no layer of kind"):
        kc.growth_per_layer(v4, "mla")


def test_head_state_is_dk_by_dv_and_refused_without_a_linear_layer():
    assert kc.head_state(MODELS["qwen3.5-27b"]) == 128 * 128
    with pytest.raises(ValueError, match="no linear"):
        kc.head_state(MODELS["gpt2"])
    with pytest.raises(ValueError, match="no published shapes"):
        kc.curve("nope", "mha")


def test_gemma4_sharing_meter_by_hand():
    """Gemma 4 E2B (30 layers, 5 window : 1 global): with the last 10 shared, the first 20 keep a cache; at 8,192
    tokens a window layer keeps 2·4·256·512 and a global layer 2·4·512·8192; reuse layers read the last earlier one."""
    m = kc.sharing_meter(10, 8192)
    window, glob = 2 * 4 * 256 * 512, 2 * 4 * 512 * 8192
    assert m.plan.cached_layers == 20 and m.per_layer[20:] == (0,) * 10
    assert m.per_layer[:6] == (window,) * 5 + (glob,)
    assert m.shared == 17 * window + 3 * glob and m.alone == 25 * window + 5 * glob
    assert m.plan.source[-1] == 17 and m.plan.source[-2] == 19  # the last global layer before 20 is 17; window 19
    assert m.shared == core.kept(dataclasses.replace(MODELS["gemma-4-e2b"], kv_shared_layers=10), 8192).total
    assert kc.sharing_meter(0, 8192).fraction == 1
    with pytest.raises(ValueError, match="needs an earlier layer"):
        kc.sharing_meter(30, 8192)


def test_deepseek_v4_strips_by_hand():
    s = kc.cache_strips(1_000_000)
    assert (s.window, s.csa, s.hca) == (128, 1_000_000 // 4, 1_000_000 // 128)
    assert s.csa_layer == 512 * (128 + 250_000) + 128 * 250_000 and s.hca_layer == 512 * (128 + 7812)
    small = kc.cache_strips(100, 8, 64)
    assert (small.window, small.csa, small.hca) == (100, 12, 1)
    with pytest.raises(ValueError, match="csa_rate"):
        kc.cache_strips(1000, 0)
