"""Keyboard only (WCAG 2.1.1, 2.4.7, 2.1.4), in a real browser: pick a query and block a cell in the
Playground, open a head of the trained model, answer a tutorial exercise — Tab, arrows, Enter, Esc,
and no mouse. The step-through arrows never take a key from a text box."""

from __future__ import annotations

import math

import numpy as np
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

import core
from core import pretrained, tokens
from ui import state, view
from ui.i18n import table
from ui.state import css_class as css

from .a11y_audit import settle
from .helpers import PG_WEIGHTS, PLOTLY_VALUES, wait_z

pytestmark = pytest.mark.browser


def _model_installed() -> bool:
    try:
        pretrained.model_zip_path()
    except pretrained.ModelNotInstalled:
        return False
    return True


# the element that has the keyboard focus, through shadow roots (the maps are components)
ACTIVE = """() => { let a = document.activeElement;
  while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; return a; }"""
# the nearest registry key around it, across shadow roots (a map drawn by a component of its own)
DESCRIBE = ("() => { const a = (" + ACTIVE + ")(); if (!a) return null; let panel = null;"
            " for (let e = a; e && !panel; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {"
            "   if ([...(e.classList || [])].some((c) => c.startsWith('st-key-'))) panel = e; }"
            " return {tag: a.tagName, i: a.dataset.i ?? null, j: a.dataset.j ?? null, role: a.getAttribute('role'),"
            " text: (a.innerText || a.value || '').slice(0, 60), outline: getComputedStyle(a).outlineStyle,"
            " outlineWidth: parseFloat(getComputedStyle(a).outlineWidth) || 0,"
            " key: panel ? [...panel.classList].find((c) => c.startsWith('st-key-')) : null}; }")


def _key_class(key: str) -> str:
    return css(key)[1:]


def focused(page) -> dict:
    return page.evaluate(DESCRIBE) or {}


def tab_until(page, predicate, *, limit: int = 200, shift: bool = False) -> dict:
    """Press Tab until the focused element satisfies predicate(description); fail after `limit` presses."""
    for _ in range(limit):
        page.keyboard.press("Shift+Tab" if shift else "Tab")
        now = focused(page)
        if predicate(now):
            return now
    pytest.fail(f"Tab never reached the element after {limit} presses (last: {focused(page)})")


def in_map(key: str, tag: str = "TD"):
    """A predicate: the focus is on a cell (or the canvas) of the map with this registry key."""
    cls = _key_class(key)
    return lambda d: d.get("tag") == tag and d.get("key") == cls


def wait_focus(page, predicate_js: str, timeout: int = 120_000) -> None:
    page.wait_for_function("() => { const a = (" + ACTIVE + ")(); return !!a && (" + predicate_js + "); }", timeout=timeout)


def test_playground_by_keyboard_pick_a_query_then_block_a_cell(server_url, chromium):
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang=en")
        settle(page, "en")
        wait_z(page, PG_WEIGHTS, "z.length === 4")
        cell = tab_until(page, in_map(PG_WEIGHTS))  # Tab into the weights map: one cell is in the Tab order
        assert (cell["i"], cell["j"]) == ("0", "0")
        assert cell["outline"] != "none" and cell["outlineWidth"] >= 2  # the focus is visible
        for key in ("ArrowDown", "ArrowDown", "ArrowRight"):
            page.keyboard.press(key)
        assert (focused(page)["i"], focused(page)["j"]) == ("2", "1")
        page.keyboard.press("Enter")  # = a click: query 2 goes to the inspector
        expect(page.locator(css(state.scenario_picker("query")) + " select")).to_have_value("2", timeout=120_000)
        expect(page.locator(css(PG_WEIGHTS) + " tr.hl th.row")).to_have_text("2 사과를", timeout=120_000)
        wait_focus(page, "a.tagName === 'TD' && a.dataset.i === '2' && a.dataset.j === '1'")  # focus kept through the rerun
        # the pick's run has ended and drawn (nothing stale, every component drawn) before the next key: a key
        # pressed while Streamlit re-renders the tab strip can land on an element that is being replaced
        settle(page, "en")
        page.keyboard.press("Escape")  # leaves the grid
        assert focused(page).get("tag") != "TD"
        # block a cell: the ④ Mask tab by keyboard, then its clickable mask map
        tab = tab_until(page, lambda d: d.get("role") == "tab", shift=True)
        for _ in range(6):
            if tab["text"].startswith("④"):
                break
            page.keyboard.press("ArrowRight")
            tab = focused(page)
        assert tab["text"].startswith("④"), tab
        settle(page, "en")
        # still on the tab after the wait: each arrow was a run, and a run that redraws the strip while the learner
        # is on it (a busy server) drops the focus to the page; the frame (frame_a11y.js) gives it back
        assert focused(page).get("text", "").startswith("④"), focused(page)
        page.evaluate("() => document.activeElement.blur()")  # the focus lost to the page, not by the mouse:
        wait_focus(page, "a.getAttribute('role') === 'tab' && a.textContent.startsWith('④')")  # it comes back
        page.keyboard.press("Enter")
        expect(page.get_by_role("tab", name="④ Mask")).to_have_attribute("aria-selected", "true")
        mask = state.PLAYGROUND.chart_mask
        page.locator(css(mask) + " td[data-i]").first.wait_for(timeout=120_000)
        tab_until(page, in_map(mask))
        page.keyboard.press("ArrowRight")  # query 0, key 1
        page.keyboard.press("Enter")
        W = wait_z(page, PG_WEIGHTS, "z[0][1] === 0")
        X = tokens.c18_embedding()
        blocked = np.ones((4, 4), dtype=bool)
        blocked[0, 1] = False
        np.testing.assert_allclose(W, core.attention(X, X, X, mask=blocked).weights, atol=6e-4)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        ctx.close()


def test_step_through_arrows_leave_text_boxes_alone(server_url, chromium):
    label = table("en")["pg.steps.label"]
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang=en&step=2")
        settle(page, "en")
        expect(page.get_by_text(label.format(k=2, n=view.STEP_COUNT), exact=False).first).to_be_visible(timeout=120_000)
        # the step's sentence is announced: it sits in a live region (role=status)
        expect(page.locator("[role=status]").filter(has_text=label.format(k=2, n=view.STEP_COUNT))).to_have_count(1)
        box = page.locator(css(state.SCENARIO.tokens) + " input")
        box.focus()  # in the token box the arrows move the caret, never the step
        box.press("End")
        box.press("ArrowLeft")
        box.press("ArrowLeft")
        box.press("ArrowRight")
        page.keyboard.type("X")
        assert box.input_value().endswith("먹었X다")
        expect(page.get_by_text(label.format(k=2, n=view.STEP_COUNT), exact=False).first).to_be_visible()
        assert page.get_by_text(label.format(k=3, n=view.STEP_COUNT), exact=False).count() == 0
        box.press("Escape")
        page.locator("[data-testid=stMain] h1").first.click()  # focus out of the box: now → steps
        page.keyboard.press("ArrowRight")
        expect(page.get_by_text(label.format(k=3, n=view.STEP_COUNT), exact=False).first).to_be_visible(timeout=120_000)
    finally:
        ctx.close()


@pytest.mark.skipif(not _model_installed(), reason="the model package is not installed")
def test_trained_model_open_a_head_by_keyboard(server_url, chromium):
    KEYS = state.TRAINED_MODEL
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Trained_model?lang=en")
        settle(page, "en")
        page.locator(css(KEYS.grid) + " canvas").wait_for(timeout=60_000)
        before = page.evaluate("() => document.querySelector('" + css(KEYS.grid) + " [data-testid=stBidiComponentIsolated]')"
                               ".shadowRoot.querySelector('.almv').dataset.selected")
        got = tab_until(page, lambda d: d.get("tag") == "CANVAS" and d.get("role") == "application")
        assert got["outline"] != "none"
        start = [int(v) for v in before.strip("[]").split(",")]
        page.keyboard.press("ArrowDown")
        page.keyboard.press("ArrowRight")
        want = [min(5, start[0] + 1), min(11, start[1] + 1)]
        live = page.locator(css(KEYS.grid) + " .hover")
        expect(live).to_have_attribute("aria-live", "polite")
        expect(live).to_have_text(f"layer {want[0]}, head {want[1]}")
        page.keyboard.press("Enter")
        expect(page.get_by_text(f"Layer {want[0]}, head {want[1]}", exact=True)).to_be_visible(timeout=60_000)
        wait_focus(page, "a.tagName === 'CANVAS'")  # the focus stays on the model view
    finally:
        ctx.close()


def test_tutorial_exercise_by_keyboard_with_the_feedback_in_a_live_region(server_url, chromium):
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Tutorial?lesson=masks&lang=en")
        settle(page, "en")
        answer = css(state.item(state.TUTORIAL.answer, "masks.weight"))
        page.locator(answer + " input").wait_for(timeout=120_000)
        tab_until(page, lambda d: d.get("tag") == "INPUT" and d.get("key") == answer[1:])
        X = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=float)
        z = np.where(np.tril(np.ones((4, 4), dtype=bool)), X @ X.T / math.sqrt(3), -np.inf)
        w = np.exp(z - z.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        page.keyboard.type(f"{w[1, 0]:.2f}")
        page.keyboard.press("Enter")
        check = css(state.item(state.TUTORIAL.check, "masks.weight"))
        tab_until(page, lambda d: d.get("tag") == "BUTTON" and d.get("key") == check[1:])
        page.keyboard.press("Enter")
        box = page.locator(css(state.item(state.TUTORIAL.panel, "exercise", "masks.weight")))
        ok = box.locator("[data-testid=stAlertContentSuccess]")
        expect(ok).to_be_visible(timeout=120_000)
        # the feedback is announced: it sits in a live region (role=status)
        assert box.locator("[role=status] [data-testid=stAlertContentSuccess]").count() == 1
    finally:
        ctx.close()


LARGE = 70  # tokens: over TABLE_LIMIT, so every map of the pipeline is a plotly image with its text alternative
# a large map's element (its summary and cell picker): the shadow root of the component under the image
LARGE_ROOT = ("(key) => { const h = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');"
              " return h && h.shadowRoot ? h.shadowRoot : null; }")
SUMMARY = ("(key) => { const r = (" + LARGE_ROOT + ")(key); const t = r && r.querySelector('table.summary');"
           " return t ? {nodes: r.querySelectorAll('*').length, caption: t.querySelector('caption').textContent,"
           " cols: [...t.querySelectorAll('th[scope=col]')].map((th) => th.textContent),"
           " rows: [...t.querySelectorAll('th[scope=row]')].map((th) => th.textContent),"
           " cells: [...t.querySelectorAll('tr')].slice(1)"
           ".map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent))}"
           " : (r ? {nodes: r.querySelectorAll('*').length} : null); }")
# the values a plotly map holds, found by its accessible name (the chart's role=figure label)
PLOTLY_Z = ("(name) => { const f = [...document.querySelectorAll('[data-testid=stPlotlyChart][role=figure]')]"
            ".find((e) => (e.getAttribute('aria-label') || '').startsWith(name));"
            " return " + PLOTLY_VALUES + "(f && f.querySelector('.js-plotly-plot')); }")


def test_a_large_map_by_keyboard_pick_a_query_block_a_cell_and_read_its_summary(server_url, chromium):
    from attention_lab.heatmap_spec import SUMMARY_TOP

    words = table("en")
    weights_alt = _key_class(state.item(PG_WEIGHTS, "a11y"))[len("st-key-"):]
    toks = [f"w{i}" for i in range(LARGE)]
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang=en&tok=" + "+".join(toks))
        settle(page, "en")
        # the image is a named figure: what it is and its shape
        expect(page.get_by_role("figure", name=f"{words['step.weights']} — a map of {LARGE} × {LARGE}", exact=False)
               ).to_have_count(1, timeout=120_000)
        picker = css(state.item(PG_WEIGHTS, "a11y"))
        page.locator(picker + " input[data-part=row]").wait_for(timeout=120_000)
        closed = page.evaluate(SUMMARY, weights_alt)["nodes"]
        got = tab_until(page, lambda d: d.get("tag") == "INPUT" and d.get("key") == _key_class(state.item(PG_WEIGHTS, "a11y")),
                        limit=300)
        assert got["outline"] != "none"  # the focus is visible
        page.keyboard.press("Control+A")
        page.keyboard.type("5")
        expect(page.locator(picker + " .picker .hover")).to_contain_text("5 w5")  # the live line names the cell
        page.keyboard.press("Enter")  # = a click on a cell of row 5: query 5 goes to the inspector
        expect(page.locator(css(state.scenario_picker("query")) + " select")).to_have_value("5", timeout=120_000)
        wait_focus(page, "a.tagName === 'INPUT' && a.dataset.part === 'row'")  # focus kept through the rerun
        # the summary table by keyboard: Tab to its button, Enter
        tab_until(page, lambda d: d.get("tag") == "BUTTON" and d.get("text") == words["a11y.big.table"], limit=6)
        page.keyboard.press("Enter")
        page.locator(picker + " table.summary").wait_for(timeout=10_000)
        s = page.evaluate(SUMMARY, weights_alt)
        X, _ = core.lab.c18_lookup(toks, fallback_seed=0)
        assert len(s["rows"]) == LARGE and s["rows"][5] == "5 w5" and f"{LARGE} × {LARGE}" in s["caption"]
        W = core.attention(X, X, X).weights.numpy()
        for i in (0, 5, LARGE - 1):  # each row's largest weights as core has them (ties after rounding: either)
            third = np.sort(W[i])[::-1][SUMMARY_TOP - 1]
            for cell in s["cells"][i]:
                label, value = cell.split(": ")
                j = int(label.split(" ")[0])
                assert label == f"{j} w{j}" and abs(float(value) - W[i, j]) <= 5e-4 + 1e-9 and W[i, j] >= third - 1e-3, (i, cell)
            assert len({c.split(":")[0] for c in s["cells"][i]}) == SUMMARY_TOP
        # the DOM it costs: a row per query (header + SUMMARY_TOP cells), nothing while closed
        assert s["nodes"] - closed <= (LARGE + 1) * (SUMMARY_TOP + 2) + 4, (closed, s["nodes"])
        # block a cell: the ④ Mask tab by keyboard, then its map's picker (query 0, key 1)
        tab = tab_until(page, lambda d: d.get("role") == "tab", shift=True, limit=300)
        for _ in range(6):
            if tab["text"].startswith("④"):
                break
            page.keyboard.press("ArrowRight")
            tab = focused(page)
        page.keyboard.press("Enter")
        mask = state.PLAYGROUND.chart_mask
        mask_picker = css(state.item(mask, "a11y"))
        for attempt in range(3):  # the tab strip drawn anew by a run under way can lose the Enter: press it again
            settle(page, "en")
            try:
                page.locator(mask_picker + " input[data-part=col]").wait_for(timeout=15_000)
                break
            except PlaywrightTimeout:
                if attempt == 2:
                    raise
                page.get_by_role("tab", name=tab["text"]).focus()
                page.keyboard.press("Enter")
        tab_until(page, lambda d: d.get("tag") == "INPUT" and d.get("key") == _key_class(state.item(mask, "a11y")), limit=100)
        page.keyboard.press("Control+A")
        page.keyboard.type("0")
        page.keyboard.press("Tab")
        page.keyboard.press("Control+A")
        page.keyboard.type("1")
        page.keyboard.press("Enter")
        page.wait_for_function("(name) => { const z = (" + PLOTLY_Z + ")(name); return !!z && z[0][1] === 0; }",
                               arg=words["step.weights"], timeout=120_000)
        got = np.array(page.evaluate(PLOTLY_Z, words["step.weights"]), dtype=float)
        blocked = np.ones((LARGE, LARGE), dtype=bool)
        blocked[0, 1] = False
        np.testing.assert_allclose(got, core.attention(X, X, X, mask=blocked).weights.numpy(), atol=6e-4)
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        ctx.close()
