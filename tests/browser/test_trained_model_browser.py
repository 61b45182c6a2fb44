"""Real browser: the trained-model page (all-MiniLM-L6-v2) on a real server — the model view on one
canvas, a click that opens a head, the head view's hover, HTML typed as text, both languages."""

from __future__ import annotations

import json

import numpy as np
import pytest
from playwright.sync_api import expect

from attention_lab import colours
from core import pretrained
from ui import state
from ui.i18n import table
from ui.state import css_class as css

from .conftest import wait_idle
from .helpers import shot, wait_z

KEYS = state.TRAINED_MODEL
WEIGHTS = state.item(KEYS.pipeline, "weights")
SENTENCE = "The animal didn't cross the street because it was too tired"

try:
    pretrained.model_zip_path()
except pretrained.ModelNotInstalled:
    pytest.skip(f"the model package is not installed ({pretrained.INSTALL_HINT})", allow_module_level=True)

VISIBLE_LINES = """(key) => {
  const host = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');
  const root = host.shadowRoot.querySelector('.alhv');
  const shown = [...root.querySelectorAll('line')].filter((l) => getComputedStyle(l).display !== 'none');
  return {total: +root.dataset.lines, shown: shown.map((l) => [+l.dataset.i, +l.dataset.j]), focus: root.dataset.focus};
}"""
GEOM = """(key) => {
  const host = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');
  const root = host && host.shadowRoot && host.shadowRoot.querySelector('.almv');
  return root && root.dataset.geom ? root.dataset.geom : null;
}"""


# one pixel of the model view's canvas, at (x, y) CSS pixels of its box
PIXEL = """([key, x, y]) => {
  const host = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');
  const c = host.shadowRoot.querySelector('.almv canvas');
  const s = c.width / c.getBoundingClientRect().width;
  return [...c.getContext('2d').getImageData(Math.floor(x * s), Math.floor(y * s), 1, 1).data].slice(0, 3);
}"""


def _palette(w: float) -> list[int]:
    """The colour the canvas gives weight w: 4 decimals on the wire, then one of 256 steps of the maps' palette
    (attention_lab.colours.SEQ, interpolated between its stops; JavaScript's Math.round)."""
    half_up = lambda x: int(np.floor(x + 0.5))  # noqa: E731
    t = min(255, half_up(half_up(w * 10_000) * 255 / 10_000)) / 255
    (t0, c0), (t1, c1) = next((a, b) for a, b in zip(colours.SEQ, colours.SEQ[1:], strict=False) if t <= b[0])
    return [half_up(a + (t - t0) / (t1 - t0) * (b - a)) for a, b in zip(c0, c1, strict=True)]


def _key(key: str) -> str:
    return css(key)[len(".st-key-"):]


@pytest.fixture(scope="module")
def trace():
    return pretrained.minilm().trace(SENTENCE)


def _geometry(page) -> dict:
    page.wait_for_function(GEOM, arg=_key(KEYS.grid), timeout=60_000)
    return json.loads(page.evaluate(GEOM, _key(KEYS.grid)))


def test_model_view_click_opens_a_head_and_hover_shows_one_tokens_lines(server_url, new_page, trace):
    page = new_page(f"{server_url}/Trained_model")
    g = _geometry(page)
    canvas = page.locator(css(KEYS.grid) + " canvas")
    box = canvas.bounding_box()
    assert box["width"] >= g["left"] + 12 * (g["size"] + g["gap"]) - 1  # 12 heads across
    assert box["height"] >= g["top"] + 6 * (g["size"] + g["gap"]) - 1  # 6 layers down
    shot(page, "trained-model-en")
    # its colours are the maps' palette (one copy, sent with the data): cells of layer 1, head 2, at their centres
    n = len(trace.tokens)
    for i, j in ((0, 0), (5, 7), (n - 1, 2), (3, 3)):
        x = g["left"] + 2 * (g["size"] + g["gap"]) + (j + 0.5) * g["size"] / n
        y = g["top"] + 1 * (g["size"] + g["gap"]) + (i + 0.5) * g["size"] / n
        got = page.evaluate(PIXEL, [_key(KEYS.grid), x, y])
        want = _palette(float(trace.attentions[1, 2, i, j]))
        assert max(abs(a - b) for a, b in zip(got, want, strict=True)) <= 1, (i, j, got, want)
    # click the map of layer 2, head 3: the pipeline below shows that head's weights
    l, h = 2, 3
    canvas.click(position={"x": g["left"] + h * (g["size"] + g["gap"]) + g["size"] / 2,
                           "y": g["top"] + l * (g["size"] + g["gap"]) + g["size"] / 2})
    want = np.round(trace.attentions[l, h].numpy(), 3)
    got = wait_z(page, WEIGHTS, f"Math.abs(z[1][0] - {want[1, 0]}) < 2e-3 && Math.abs(z[5][7] - {want[5, 7]}) < 2e-3",
                 timeout=60_000)
    np.testing.assert_allclose(got, want, atol=1.5e-3)
    expect(page.get_by_text(f"Layer {l}, head {h}", exact=True)).to_be_visible()
    # hover "it" (token 10) in the head view: only its lines stay visible
    view = page.locator(css(KEYS.head_view))
    view.scroll_into_view_if_needed()
    view.locator(".left .tok").nth(10).hover()
    seen = page.evaluate(VISIBLE_LINES, _key(KEYS.head_view))
    assert seen["focus"] == "i10"
    assert seen["shown"] and all(i == 10 for i, _ in seen["shown"])
    assert len(seen["shown"]) < seen["total"]
    drawn = {j for _, j in seen["shown"]}
    assert drawn == {j for j in range(len(trace.tokens)) if round(float(trace.attentions[l, h, 10, j]), 4) >= 0.005}
    view.screenshot(path=str(_artifact("trained-model-head-view-hover")))
    page.mouse.move(5, 5)  # leaving the view shows every line again
    expect(view.locator("line.off")).to_have_count(0)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_korean_page_and_html_typed_as_text(server_url, new_page):
    page = new_page(f"{server_url}/Trained_model?lang=ko", locale="ko-KR")
    expect(page.get_by_role("heading", name=table("ko")["tm.patterns"])).to_be_visible(timeout=60_000)
    _geometry(page)
    box = page.locator(css(KEYS.text) + " input")
    box.fill("<b>bold</b> and <img src=x onerror=alert(1)>")
    box.press("Enter")
    wait_idle(page)
    expect(page.locator(css(KEYS.head_view) + " .left .tok").nth(1)).to_have_text("<", timeout=60_000)
    assert page.locator("[data-testid=stMain] b", has_text="bold").count() == 0
    assert page.locator("[data-testid=stMain] img[src=x]").count() == 0
    assert not page.dialogs
    box.fill("나는 오늘 사과를 먹었다")
    box.press("Enter")
    wait_idle(page)
    expect(page.locator(css(KEYS.head_view) + " .left .tok")).to_have_count(20, timeout=60_000)  # jamo pieces, [UNK]
    expect(page.get_by_text("[UNK]").first).to_be_visible()
    shot(page, "trained-model-ko")
    assert page.locator('[data-testid="stException"]').count() == 0


def _artifact(name: str):
    from .conftest import ARTIFACTS

    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}.png"
