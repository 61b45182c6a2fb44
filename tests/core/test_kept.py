"""What a model keeps per sequence (core.variants.kept, issue 55's chart), counted by hand from the published shapes."""

from __future__ import annotations

import pytest

import core
from core.shapes import MODELS
from core.variants.kept import kept


def test_attention_models_keep_what_the_kv_cache_counts():
    for key in ("gpt2", "llama-3-8b", "mistral-7b", "smollm2-135m"):
        for t in (1, 100, 5000):
            assert kept(MODELS[key], t).total == core.MODEL_PRESETS[key].kv_cache_bytes(t, bytes_per_value=1)


def test_mla_keeps_its_latent_and_rotary_key():
    v3 = MODELS["deepseek-v3"]
    assert kept(v3, 1000).total == 61 * (512 + 64) * 1000  # 576 a token and layer (the V3 report's figure)


def test_deepseek_v4_keeps_about_160_and_4_values_a_token_beyond_its_window():
    v4 = MODELS["deepseek-v4-flash"]
    a, b = kept(v4, 100_000), kept(v4, 100_000 + 512)  # 512 = a multiple of both rates
    csa_layers, hca_layers = v4.count("csa"), v4.count("hca")
    per_token = (b.total - a.total) / 512
    assert per_token == csa_layers * (512 / 4 + 128 / 4) + hca_layers * (512 / 128)  # 160 (CSA) and 4 (HCA) a layer
    assert a.by_kind["csa"][0] == 20 and a.by_kind["hca"][0] == 23


def test_linear_and_state_space_layers_keep_a_fixed_state():
    q = MODELS["qwen3.5-27b"]
    state = 32 * 128 * 128 + 3 * (2 * 16 * 128 + 32 * 128)
    for t in (1, 10_000):
        assert kept(q, t).by_kind["linear"] == (24, 24 * state)
    m = MODELS["mamba2"]
    assert kept(m, 7).total == kept(m, 70_000).total == 64 * (128 * 128 * 64 + 3 * (128 * 64 + 2 * 8 * 128))
    kimi = kept(MODELS["kimi-linear-48b-a3b"], 1000)
    assert kimi.by_kind["mla"] == (6, 6 * 576 * 1000) and kimi.by_kind["linear"][0] == 21


def test_windows_and_reused_layers():
    g = MODELS["gemma-4-e2b"]
    k = kept(g, 10_000)
    assert k.by_kind["window"] == (25, 25 * 2 * 4 * 256 * 512) and k.by_kind["global"] == (5, 5 * 2 * 4 * 512 * 10_000)
    shared = core.shapes.Published(**{**g.__dict__, "kv_shared_layers": 10})
    s = kept(shared, 10_000)
    assert s.by_kind["window (reused)"][1] == 0 and s.total < k.total
    assert sum(n for n, _ in s.by_kind.values()) == 30


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="tokens must be an integer ≥ 1"):
        kept(MODELS["gpt2"], 0)
