"""AppTest: the MLA page (multi-head latent attention) against core.mla and core.mla_cache_values: the cached latent
and rotary key, both forms' outputs and their gap, the cache sizes here and of the published models; impossible or
tampered shapes get a message and the page keeps its last valid result."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page, spec, texts

PAGE = "app_pages/mla.py"
KEYS = state.MLA
C18 = list(tokens.C18_TOKENS)


def reference(d: int, H: int, d_c: int, d_r: int, seed: int = 0):
    """core.mla on the page's seeded projections (d_h = d_model / H, RoPE θ 10000, causal)."""
    X = tokens.embed(C18, d, seed=seed)
    d_h = d // H
    shapes = {"W_DKV": (d, d_c), "W_KR": (d, d_r), "W_UK": (d_c, H * d_h), "W_UV": (d_c, H * d_h),
              "W_UQ": (d, H * d_h), "W_QR": (d, H * d_r), "W_o": (H * d_h, d)}
    W = {k: tokens.projection(*s, seed=seed, name=f"mla.{k}") for k, s in shapes.items()}
    return core.mla(X, **W, n_heads=H, rope=10000.0, causal=True)


def run(**shape):
    at = page(PAGE, run=False)
    for key, value in shape.items():
        at.session_state[getattr(KEYS, key)] = value
    return at.run()


@pytest.mark.parametrize(("d", "H", "d_c", "d_r"), [(16, 4, 6, 4), (8, 2, 3, 2), (32, 8, 32, 8)])
def test_the_cached_latent_and_both_outputs_are_cores(d, H, d_c, d_r):
    at = run(d_model=d, heads=H, d_c=d_c, d_r=d_r)
    no_errors(at)
    tr = reference(d, H, d_c, d_r)
    close(heat(at, KEYS.latent), tr.c_kv)
    close(heat(at, KEYS.rope_key), tr.k_rope)
    close(heat(at, KEYS.explicit), tr.output)
    close(heat(at, KEYS.absorbed), tr.output_absorbed)
    assert heat(at, KEYS.latent).shape == (len(C18), d_c) and heat(at, KEYS.rope_key).shape == (len(C18), d_r)
    assert tr.form_gap < core.lab.EQUAL_TOL
    assert f"max |explicit − absorbed| = {core.lab.gap_text(tr.form_gap)}" in "\n".join(s.value for s in at.success)
    size = core.mla_cache_values(kv_rank=d_c, rope_dim=d_r, n_heads=H, head_dim=d // H)
    latex = "\n".join(str(x.value) for x in at.latex)
    assert f"= {d_c} + {d_r} = {size.mla}" in latex and f"= 2 \\cdot {H} \\cdot {d // H} = {size.mha}" in latex


def test_the_published_models_table():
    at = run()
    no_errors(at)
    df = at.dataframe[0].value
    rows = {r.iloc[0]: r for _, r in df.iterrows()}
    assert list(rows) == ["DeepSeek-V3", "Kimi K2", "Llama-3-8B", "GPT-2 small"]
    # DeepSeek-V3: 512 + 64 per layer, against 2 · 128 heads · 128 = 32,768; 61 layers
    assert (rows["DeepSeek-V3"].iloc[4], rows["DeepSeek-V3"].iloc[5], rows["DeepSeek-V3"].iloc[7]) == \
        ("576", f"{61 * 576:,}", "32,768")
    assert (rows["Kimi K2"].iloc[4], rows["Kimi K2"].iloc[7]) == ("576", "16,384")
    llama, gpt2 = core.MODEL_PRESETS["llama-3-8b"], core.MODEL_PRESETS["gpt2"]
    assert rows["Llama-3-8B"].iloc[4] == f"{2 * llama.n_kv_heads * llama.d_head:,}" and rows["Llama-3-8B"].iloc[1] == "GQA"
    assert rows["GPT-2 small"].iloc[5] == f"{2 * gpt2.n_heads * gpt2.d_head * gpt2.layers:,}"
    assert "57× fewer" in texts(at)  # 32,768 / 576


def test_a_latent_wider_than_d_model_is_refused_and_the_last_result_stays():
    at = run(d_model=16, heads=4, d_c=6, d_r=4)
    before = heat(at, KEYS.latent)
    at.session_state[KEYS.d_c] = 24
    at.run()
    assert not at.exception
    assert any("d_c = 24 is larger than d_model = 16" in e.value for e in at.error), [e.value for e in at.error]
    np.testing.assert_array_equal(heat(at, KEYS.latent), before)  # the last valid result (d_c = 6)
    at.session_state[KEYS.d_model] = 32  # now 24 ≤ 32: computed again
    at.run()
    no_errors(at)
    close(heat(at, KEYS.latent), reference(32, 4, 24, 4).c_kv)


@pytest.mark.parametrize(("key", "value"), [("d_model", 7), ("heads", "four"), ("d_r", 3), ("d_c", 0), ("d_c", True),
                                            ("d_c", 10**9)])
def test_tampered_values_are_named_and_replaced(key, value):
    at = run(**{key: value})
    assert not at.exception
    assert any("is not a value of" in e.value for e in at.error), [e.value for e in at.error]
    close(heat(at, KEYS.latent), reference(8, 2, 4, 2).c_kv)  # the defaults


def test_korean_opens_and_says_why_in_korean():
    at = page(PAGE, run=False, query={"lang": "ko"})
    at.session_state[KEYS.d_c] = 20
    at.session_state[KEYS.d_model] = 8
    at.run()
    assert not at.exception
    assert any("d_c = 20이 d_model = 8보다 큽니다" in e.value for e in at.error), [e.value for e in at.error]
    assert "멀티헤드 잠재 어텐션" in texts(at)


def test_the_shape_comes_back_from_the_link():
    at = run(d_model=32, heads=8, d_c=12, d_r=8)
    params = {k: (v[0] if isinstance(v, list) else v) for k in at.query_params for v in [at.query_params[k]]}
    assert (params["mla_d"], params["mla_h"], params["mla_c"], params["mla_r"]) == ("32", "8", "12", "8")
    again = page(PAGE, query=params)
    no_errors(again)
    close(heat(again, KEYS.latent), reference(32, 8, 12, 8).c_kv)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_no_saving_message_holds_whatever_h_is(lang):
    """Here d_h = d_model / H, so multi-head attention caches 2·d_model numbers for every H: a latent that saves
    nothing (d_c + d_R ≥ 2·d_model) saves nothing at any H, and the message does not tell the learner to raise H."""
    d, d_c, d_r = 8, 8, 8
    for H in (1, 2, 4, 8):
        at = page(PAGE, run=False, query={"lang": lang})
        for key, value in (("d_model", d), ("heads", H), ("d_c", d_c), ("d_r", d_r)):
            at.session_state[getattr(KEYS, key)] = value
        at.run()
        no_errors(at)
        size = core.mla_cache_values(kv_rank=d_c, rope_dim=d_r, n_heads=H, head_dim=d // H)
        assert size.mha == 2 * d and size.mla >= size.mha  # the condition under which the page says "no saving"
        said = texts(at)
        if lang == "en":
            assert "raising H changes nothing" in said and "Raise H" not in said
        else:
            assert "H를 늘려도 달라지는 것이 없습니다" in said and "H를 늘리거나" not in said
    at = run(d_model=8, heads=2, d_c=4, d_r=2)  # d_c + d_R < 2·d_model: the latent saves
    assert "raising H" not in texts(at) and "fewer than multi-head attention" in texts(at)


# ---------------------------------------------------------------- DeepSeek-V4's three strips (issue 55)
def _strips_key(name: str) -> str:
    return state.item(state.MLA.table, name)


@pytest.mark.parametrize(("n", "m", "m2"), [(65536, 4, 128), (1_048_576, 16, 256)])
def test_v4_strips_equal_core(n, m, m2):
    from core.variants import kept_chart

    at = page(PAGE, run=False)
    at.session_state[_strips_key("v4_n")] = n
    at.session_state[_strips_key("csa_m")] = m
    at.session_state[_strips_key("hca_m")] = m2
    at.run()
    no_errors(at)
    s = kept_chart.cache_strips(n, m, m2)
    text = " ".join(x.value for x in at.markdown)
    assert (f"window **{s.window:,}** entries, CSA **{s.csa:,}** entries (m = {m}), HCA **{s.hca:,}** entries"
            in text), text
    assert f"**{s.csa_layer:,}**" in text and f"**{s.hca_layer:,}**" in text
    fig = spec(at, _strips_key("strips"))
    for trace, k in zip(fig["data"], ("window", "csa", "hca"), strict=True):
        assert trace["y"] == [getattr(kept_chart.cache_strips(c, m, m2), k) for c in kept_chart.CONTEXTS]
    assert "#kept-2026" in text


@pytest.mark.parametrize("key", ["csa_m", "hca_m"])
@pytest.mark.parametrize("value", [0, -4, "four"])
def test_a_pool_of_zero_is_named_not_a_traceback(key, value):
    at = page(PAGE, run=False)
    at.session_state[_strips_key(key)] = value
    at.run()
    assert not at.exception
    assert any("is not a pool size" in e.value for e in at.error), [e.value for e in at.error]


def test_a_tampered_pool_in_the_link_is_refused_in_korean():
    at = page(PAGE, query={"csa_m": "0", "lang": "ko"})
    assert not at.exception and any("csa_m" in w.value for w in at.warning)
    assert any("캐시의 세 띠" in h.value for h in at.subheader)
