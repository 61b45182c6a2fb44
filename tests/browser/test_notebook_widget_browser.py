"""The notebook widget's JavaScript (attention_lab/widget.js + the app's component files) in Chromium.

Jupyter is not needed to run the widget's code: anywidget hands ``render({model, el})`` a model with
``get / set / on / off / save_changes`` (a Backbone model, whose ``set`` fires ``change:<name>``).
The page below is that host, in a few lines; everything drawn is the widget's own code. Checked:
the maps and their values, hover text, a click on the weights map and the query picker moving the
query (highlighted row, inspector), the language picker, and the static twin hidden once the widget draws."""

from __future__ import annotations

import json

import numpy as np
import pytest
from playwright.sync_api import expect

import core
from attention_lab import notebook as N
from core import masks, tokens

pytestmark = pytest.mark.browser

C18 = ["나는", "오늘", "사과를", "먹었다"]
HOST = """<!doctype html><meta charset="utf-8"><style>%(css)s</style>
<div data-al-static="%(sid)s" id="twin">the static SVG</div><div id="out"></div>
<script type="module">
const vals = %(vals)s, listeners = {};
window.changes = [];
const model = {
  get: (k) => vals[k],
  set: (k, v) => { vals[k] = v; window.changes.push([k, v]); (listeners["change:" + k] || []).forEach((f) => f()); },
  save_changes: () => {},
  on: (e, f) => { (listeners[e] = listeners[e] || []).push(f); },
  off: (e, f) => { listeners[e] = (listeners[e] || []).filter((g) => g !== f); },
};
const url = URL.createObjectURL(new Blob([%(esm)s], { type: "text/javascript" }));
const mod = await import(url);
mod.default.render({ model, el: document.getElementById("out") });
window.rendered = true;
</script>"""


def test_the_widget_draws_the_maps_and_moves_the_query(chromium):
    X = tokens.c18_embedding()
    tr = core.lab.playground(X, X, mask=masks.causal(4))
    view = N.show(tr, tokens=C18)
    html = HOST % {"css": N.widget_css(), "sid": view.static_id, "esm": json.dumps(N.widget_js()),
                   "vals": json.dumps({"data": view.data(), "query": 0, "lang": "en"}, ensure_ascii=False)}
    ctx = chromium.new_context(viewport={"width": 1400, "height": 1800})
    try:
        page = ctx.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.set_content(html)
        page.wait_for_function("window.rendered === true")
        weights = page.locator('.almaps .panel[data-key="weights"] td[data-i]')
        expect(weights).to_have_count(16)
        shown = np.array(weights.all_inner_texts(), dtype=float).reshape(4, 4)
        np.testing.assert_allclose(shown, tr.attn.weights.numpy().round(3), atol=1e-12)
        expect(page.locator("#twin")).to_be_hidden()
        expect(page.locator('.almaps .panel[data-key="weights"] tr.hl th.row')).to_have_text(C18[0])
        # hover: the cell's query, key and value in its tooltip
        cell = page.locator('.almaps .panel[data-key="weights"] td[data-i="3"][data-j="2"]')
        cell.hover()
        expect(cell).to_have_attribute("title", f"query: {C18[3]}\nkey: {C18[2]}\n{tr.attn.weights[3, 2]:.3f}")
        # a click on a weights cell picks its query: the row is highlighted, the inspector follows
        page.locator('.almaps .panel[data-key="weights"] td[data-i="2"][data-j="0"]').click()
        expect(page.locator('.almaps .panel[data-key="weights"] tr.hl th.row')).to_have_text(C18[2])
        expect(page.locator(".alinspector select")).to_have_value("2")
        assert page.evaluate("window.changes") == [["query", 2]]
        bars = page.locator(".alinspector .section.al-alpha")
        expect(bars).to_contain_text(C18[2])
        # the query picker
        page.locator(".alinspector select").select_option("3")
        expect(page.locator('.almaps .panel[data-key="weights"] tr.hl th.row')).to_have_text(C18[3])
        expect(page.locator(".alinspector .section.al-alpha")).to_contain_text(f"{tr.attn.weights[3, 3]:.3f}")
        # the masked logits as the app draws them: −∞ above the diagonal
        expect(page.locator('.almaps .panel[data-key="masked"] td', has_text="−∞")).to_have_count(6)
        # the language picker: the same maps, every text in Korean, the picked query kept
        page.locator("select.al-lang").select_option("ko")
        expect(page.locator('.almaps .panel[data-key="weights"] .title')).to_have_text("4 · 소프트맥스 가중치 α")
        expect(page.locator('.almaps .panel[data-key="weights"] tr.hl th.row')).to_have_text(C18[3])
        expect(page.locator(".alinspector .head .title")).to_have_text(view.langs["ko"]["inspectors"][3]["title"])
        assert page.evaluate("window.changes")[-1] == ["lang", "ko"]
        assert not errors, errors
    finally:
        ctx.close()
