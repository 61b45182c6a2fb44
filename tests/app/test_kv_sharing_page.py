"""AppTest: the KV-sharing page (grouped-query / multi-query attention, the KV cache of real models) against core."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import core
from core import tokens
from ui import state

from .helpers import close, element_of, heat, no_errors, page, panels, spec

PAGE = "app_pages/kv_sharing.py"
KEYS = state.KV_SHARING
C18 = list(tokens.C18_TOKENS)


def reference(H: int, G: int, d: int = 16, seed: int = 0) -> np.ndarray:
    """Grouped-query weights (H, n, n) from torch's SDPA with enable_gqa, on the page's seeded numbers."""
    X = tokens.embed(C18, d, seed=seed)
    dh = d // H
    W = {n: tokens.projection(d, w, seed=seed, name=f"kvs.{n}") for n, w in (("W_q", d), ("W_k", G * dh), ("W_v", G * dh))}
    q = (X @ W["W_q"]).view(-1, H, dh).transpose(0, 1)  # (H, n, dh)
    k = (X @ W["W_k"]).view(-1, G, dh).transpose(0, 1)  # (G, n, dh)
    # the weights themselves: softmax(q kᵀ/√d) with each K/V head repeated for its group
    k_rep = k.repeat_interleave(H // G, dim=0)
    w = torch.softmax(q @ k_rep.transpose(-1, -2) / dh ** 0.5, dim=-1)
    # SDPA with enable_gqa on an identity V returns exactly these weights
    eye = torch.eye(len(C18)).expand(G, -1, -1)
    via_sdpa = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], eye[None], enable_gqa=True)[0]
    torch.testing.assert_close(via_sdpa, w, atol=1e-6, rtol=0)
    return w.numpy()


@pytest.mark.parametrize(("H", "G"), [(4, 2), (8, 1), (2, 2)])
def test_every_head_equals_sdpa_with_enable_gqa(H, G):
    at = page(PAGE, run=False)
    at.session_state[KEYS.heads] = H
    at.session_state[KEYS.kv_heads] = G
    at.run()
    no_errors(at)
    ref = reference(H, G)
    shown = panels(at)
    for h in range(H):
        close(shown[state.item(KEYS.weights, h)]["map"]["z"], ref[h], tol=2e-6)
        assert shown[state.item(KEYS.weights, h)]["title"].endswith(f"K/V head {h // (H // G)}")
    reads = heat(at, KEYS.groups)
    assert reads.shape == (H, G) and (reads.sum(axis=1) == 1).all()
    assert [int(np.argmax(r)) for r in reads] == list(core.mechanism.multihead.kv_head_map(H, G))


def test_a_g_that_does_not_divide_h_is_named_and_replaced():
    at = page(PAGE, run=False)
    at.session_state[KEYS.heads] = 8
    at.session_state[KEYS.kv_heads] = 3  # tampered: 3 does not divide 8
    at.run()
    assert not at.exception
    assert any("does not divide" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state[KEYS.kv_heads] == 8
    close(panels(at)[state.item(KEYS.weights, 0)]["map"]["z"], reference(8, 8)[0], tol=2e-6)


def test_tampered_heads_are_refused():
    at = page(PAGE, run=False)
    at.session_state[KEYS.heads] = 5
    at.run()
    assert not at.exception and at.error
    assert at.session_state[KEYS.heads] == 4


def _table(at) -> list[dict]:
    return json.loads(at.dataframe[0].value.to_json(orient="records"))


def test_cache_table_equals_core_for_every_preset():
    at = page(PAGE, run=False)
    at.session_state[KEYS.tokens] = 32768
    at.session_state[KEYS.batch] = 4
    at.run()
    no_errors(at)
    df = at.dataframe[0].value
    presets = core.MODEL_PRESETS
    assert len(df) == len(presets) >= 4
    for (_, row), p in zip(df.iterrows(), presets.values(), strict=True):
        want = core.kv_cache_bytes(layers=p.layers, n_kv_heads=p.n_kv_heads, d_head=p.d_head, tokens=32768, batch=4,
                                   bytes_per_value=2)
        assert row["G"] == p.n_kv_heads and row["L"] == p.layers
        assert f"{want / 2**30:.2f} GiB" in row.iloc[5]
    llama = next(r for _, r in df.iterrows() if "Llama-3-8B" in r.iloc[0])
    # 2 × 32 layers × 8 heads × 128 × 32768 tokens × 4 × 2 bytes = 16 GiB
    assert llama.iloc[5].startswith("16.00 GiB")


@pytest.mark.parametrize(("key", "value"), [(KEYS.tokens, 10**12), (KEYS.tokens, 0), (KEYS.batch, -3), (KEYS.tokens, "many")])
def test_huge_or_bad_context_lengths_get_a_message(key, value):
    at = page(PAGE, run=False)
    at.session_state[key] = value
    at.run()
    assert not at.exception
    assert any("whole number from 1 to" in e.value for e in at.error), [e.value for e in at.error]
    assert at.dataframe[0].value is not None


KEPT_KEY = state.item(KEYS.chart, "kept")


@pytest.mark.parametrize(("dtype", "bpv"), [("bf16", 2), ("fp32", 4)])
def test_what_a_2026_model_keeps_equals_core_kept_over_the_registry(dtype, bpv):
    """The chart's every point, the 1M-token text and the sources table are core.kept over core.shapes' records."""
    from core.shapes import MODELS
    from core.variants import kept_chart

    at = page(PAGE, run=False)
    at.session_state[KEYS.dtype] = dtype
    at.run()
    no_errors(at)
    fig = spec(at, KEPT_KEY)
    assert len(fig["data"]) == len(kept_chart.CHART_MODELS) == 8
    text = " ".join(m.value for m in at.markdown)
    for trace, (key, _) in zip(fig["data"], kept_chart.CHART_MODELS, strict=True):
        p = MODELS[key]
        assert trace["name"].startswith(p.name) and trace["x"] == list(kept_chart.CONTEXTS)
        want = [core.kept(p, n).total * bpv / 2**30 for n in kept_chart.CONTEXTS]
        np.testing.assert_allclose(trace["y"], want, rtol=1e-12)
        million = core.kept(p, 1_000_000).total
        assert f"**{p.name}**: {million * bpv / 2**30:,.2f} GiB ({million:,} numbers)." in text
    assert "adds **160** numbers per token" in text and "**4** (d/m′)" in text and "**576**" in text
    table = next(d.value for d in at.dataframe if "source of the shapes" in d.value.columns)
    assert list(table["source of the shapes"]) == [MODELS[k].source for k, _ in kept_chart.CHART_MODELS]
    assert "transformers' configuration describes it" in at.caption[-1].value
    alt = str(element_of(at, KEPT_KEY)[1].proto)  # the chart's accessible name: every model's 1M-token cost
    assert "Line chart" in alt
    for key, _ in kept_chart.CHART_MODELS:
        p = MODELS[key]
        assert f"{p.name} {core.kept(p, 1_000_000).total * bpv / 2**30:,.2f} GiB" in alt


def test_the_chart_has_a_stable_anchor_and_a_tampered_number_format_gets_a_message():
    at = page(PAGE, query={"dtype": "fp64<script>"})
    assert not at.exception
    assert any("dtype" in w.value for w in at.warning), "a tampered number format must be named"
    assert any(getattr(h.proto, "anchor", "") == "kept-2026" for h in at.subheader)
    assert len(spec(at, KEPT_KEY)["data"]) == 8  # drawn at the default format


def test_the_chart_in_korean_names_every_model():
    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    text = " ".join(m.value for m in at.markdown)
    assert "2026년 모델이 토큰마다 보관하는 것" in " ".join(h.value for h in at.subheader)
    assert "숫자 **160**개" in text and "DeepSeek-V4-Flash" in text


@pytest.mark.parametrize("n_shared", [0, 10])
def test_gemma4_stack_and_meter_equal_core(n_shared):
    """Every layer's bar is core.kept's count for it (0 for a reuse layer, which names the layer it reads from
    core.sharing_plan); the meter's GiB are core.kept with and without the sharing."""
    import dataclasses

    from core.shapes import MODELS

    at = page(PAGE, run=False)
    at.session_state[state.item(KEYS.chart, "shared")] = n_shared
    at.run()
    no_errors(at)
    g4 = MODELS["gemma-4-e2b"]
    kinds = ["sliding_attention" if k == "window" else "full_attention" for k in (g4.layer_pattern * 5)[:30]]
    plan = core.sharing_plan(kinds, n_shared)
    fig = spec(at, state.item(KEYS.chart, "stack"))
    shown_gib = [next(tr["x"][i] for tr in fig["data"] if tr["x"][i] is not None) for i in range(30)]
    assert shown_gib[30 - n_shared:] == [0.0] * n_shared
    reads = [x for tr in fig["data"] for x in tr["text"] if x]
    assert reads == [f"reads L{s}" for s in plan.source[30 - n_shared:]]
    total = core.kept(dataclasses.replace(g4, kv_shared_layers=n_shared), 8192).total
    alone = core.kept(dataclasses.replace(g4, kv_shared_layers=0), 8192).total
    np.testing.assert_allclose(sum(shown_gib), total * 2 / 2**30, rtol=1e-12)
    meter = " ".join(str(p.proto.text) for p in at.get("progress"))
    assert f"{total * 2 / 2**30:,.3f} GiB of {alone * 2 / 2**30:,.3f} GiB" in meter


@pytest.mark.parametrize(("value", "message"), [(40, "is not a number of shared layers"), ("x", "is not a number of shared"),
                                                (29, "would have no earlier layer of its kind")])
def test_a_shared_layer_that_does_not_exist_is_named(value, message):
    at = page(PAGE, run=False)
    at.session_state[state.item(KEYS.chart, "shared")] = value
    at.run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]


def test_a_tampered_shared_count_in_the_link_is_refused():
    at = page(PAGE, query={"shared": "99"})
    assert not at.exception and any("shared" in w.value for w in at.warning)
