"""attention_lab.notebook: core's traces drawn with the app's own components, and the static SVG.

The maps' numbers are checked against core's traces computed here (and, for the pretrained model,
against its own attention weights); the widget's JavaScript is checked to be the component files
themselves; the SVG is parsed as XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
import torch

import core
from attention_lab import notebook as N
from core import masks, tokens

C18 = ["나는", "오늘", "사과를", "먹었다"]


def _svg_values(svg: str, step: str) -> np.ndarray:
    rows = N.values_in(svg, step)
    return np.array([[np.nan if v in ("−∞", "NaN") else float(v) for v in row] for row in rows])


def test_the_widget_is_made_of_the_apps_component_files():
    js = N.widget_js()
    for name in ("dom_lib.js", "heatmap_lib.js", "bars_lib.js"):
        assert (N.COMPONENTS / name).read_text(encoding="utf-8") in js
    for name, fn in (("maps.js", "alMaps"), ("inspector.js", "alInspector")):
        src = (N.COMPONENTS / name).read_text(encoding="utf-8")
        assert src.replace("export default function", f"const {fn} = function", 1) in js
    assert js.count("export default") == 1 and "render: alRender" in js
    assert (N.COMPONENTS / "maps.css").read_text(encoding="utf-8") in N.widget_css()


def test_a_playground_trace_shows_five_steps_with_the_traces_numbers_in_the_svg_and_the_widget():
    X = tokens.c18_embedding()
    tr = core.lab.playground(X, X, mask=masks.causal(4))
    view = N.show(tr, tokens=C18, lang="ko")
    assert [p["key"] for p in view.panels] == ["scores", "scaled", "masked", "weights", "output"]
    assert view.panels[0]["title"].startswith("1 · 점수")
    svg = view.svg()
    ET.fromstring(svg)  # well-formed
    np.testing.assert_allclose(_svg_values(svg, "weights"), tr.attn.weights.numpy().round(3), atol=1e-12)
    masked = N.values_in(svg, "masked")
    assert masked[0][1] == "−∞" and masked[1][0] != "−∞"
    np.testing.assert_allclose(_svg_values(svg, "output"), tr.attn.output.numpy().round(3), atol=1e-12)
    w = view.widget()
    data = w.get_state()["data"]
    weights = next(p for p in data["panels"] if p["key"] == "weights")
    np.testing.assert_allclose(np.array(weights["map"]["z"], dtype=float), tr.attn.weights.numpy().round(3))
    assert len(data["inspectors"]) == 4 and data["inspectors"][3]["options"] == C18
    alpha = data["inspectors"][3]["sections"][0]["bars"]["rows"]
    assert [r["value_text"] for r in alpha] == [f"{v:.3f}" for v in tr.attn.weights[3].tolist()]
    assert w.get_state()["_esm"] == N.widget_js()
    w.close()


def test_the_column_notation_and_an_attention_trace_alone():
    X = tokens.c18_embedding()
    col = core.attention(X.T, X.T, X.T, convention="column")
    view = N.show(col, tokens=C18, decimals=2)
    np.testing.assert_allclose(_svg_values(view.svg(), "weights"), col.weights.numpy().round(2), atol=1e-12)
    assert view.conv == "column" and view.panels[3]["shape"] == "softmax (4×4) → (4×4)"
    with pytest.raises(ValueError, match="one \\(n_q, n_k\\) map"):
        N.show(core.attention(torch.ones(2, 3, 4), torch.ones(2, 3, 4), torch.ones(2, 3, 4)))
    with pytest.raises(TypeError, match=r"show\(\) draws core's traces .*, not str$"):
        N.show("not a trace")


def test_a_multi_head_trace_every_head_and_one_heads_pipeline():
    g = torch.Generator().manual_seed(0)
    W = {name: torch.randn(8, 8, generator=g) for name in ("W_q", "W_k", "W_v", "W_o")}
    mh = core.multi_head_attention(torch.randn(1, 5, 8, generator=g), n_heads=2, **W)
    words = ["a", "b", "c", "d", "e"]
    view = N.show(mh, tokens=words)
    assert [p["title"] for p in view.panels] == ["head 0", "head 1"]
    for h in range(2):
        np.testing.assert_allclose(_svg_values(view.svg(), f"head{h}"), mh.weights[0, h].numpy().round(3), atol=1e-12)
    one = N.show(mh, tokens=words, head=1, lang="ko")
    np.testing.assert_allclose(_svg_values(one.svg(), "weights"), mh.weights[0, 1].numpy().round(3), atol=1e-12)
    assert N.show(mh, lang="ko").panels[1]["title"] == "헤드 1"


def test_a_pretrained_models_trace():
    pre = pytest.importorskip("core.models.pretrained")
    try:
        model = pre.minilm()
    except pre.ModelNotInstalled:
        pytest.skip("the pretrained model is not installed (requirements-model.txt)")
    tr = model.trace("the cat sat on the mat")
    view = N.show(tr, layer=2)
    assert len(view.panels) == tr.n_heads
    np.testing.assert_allclose(_svg_values(view.svg(), "head5"), tr.attentions[2, 5].numpy().round(3), atol=1e-12)
    one = N.show(tr, layer=2, head=5)  # the head's own Q, K, V through the pipeline: the model's weights again
    np.testing.assert_allclose(_svg_values(one.svg(), "weights"), tr.attentions[2, 5].numpy().round(3), atol=2e-3)


def test_large_maps_have_colours_but_no_printed_values_and_stay_well_formed():
    X = tokens.embed([f"t{i}" for i in range(20)], 4, seed=1)
    tr = core.lab.playground(X, X)
    view = N.show(tr)
    assert view.inspectors is None  # more than 16 queries: no inspector
    svg = view.svg()
    ET.fromstring(svg)
    vals = _svg_values(svg, "weights")
    np.testing.assert_allclose(vals, tr.attn.weights.numpy().round(3), atol=1e-12)  # in the cells' data and titles
    assert svg.count('<g class="cell"') == 5 * 20 * 20 - 20 * 20 + 20 * 4  # 4 square maps + the output (20 × 4)


def test_learner_text_stays_text_in_the_svg():
    X = tokens.c18_embedding()
    view = N.show(core.lab.playground(X, X), tokens=["<script>x</script>", "a&b", '"q"', "ok"])
    svg = view.svg()
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    ET.fromstring(svg)


def test_outputs_without_a_kernel_are_the_static_svg_then_the_widget_with_its_state():
    X = tokens.c18_embedding()
    view = N.show(core.lab.playground(X, X), steps=["weights"])
    outs, state = view.outputs()
    assert [o.output_type for o in outs] == ["display_data", "display_data"]
    assert f'data-al-static="{view.static_id}"' in outs[0]["data"]["text/html"]
    model_id = outs[1]["data"]["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert state[model_id]["model_module"] == "anywidget" and state[model_id]["state"]["data"]["static_id"] == view.static_id
