"""200 % browser zoom at 1280 px (WCAG 1.4.4, 1.4.10), the high-contrast setting and reduced motion
(2.3.3), in a real browser; screenshots of both languages in test-artifacts/.

200 % zoom of a 1280×800 window is a 640×400 CSS-pixel viewport at device scale 2: the layout the
browser gives it is the one a zoomed window shows."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from attention_lab import colours
from ui import nav, state
from ui.i18n import table
from ui.state import css_class as css

from .a11y_audit import settle
from .conftest import ARTIFACTS, settled
from .helpers import PG_WEIGHTS

pytestmark = pytest.mark.browser

# text that reflows: no paragraph, heading, label, caption or message is wider than its box, and the
# page itself never scrolls sideways. Maps, formulas, code and data grids may scroll inside their own
# box (two-dimensional content, which 1.4.10 exempts).
REFLOW = """() => {
  const page = document.scrollingElement, main = document.querySelector('[data-testid=stMain]');
  const out = [];
  if (page.scrollWidth > window.innerWidth + 1) out.push('page scrolls sideways: ' + page.scrollWidth);
  if (main && main.scrollWidth > main.clientWidth + 1) out.push('main scrolls sideways: ' + main.scrollWidth);
  const exempt = '.katex-display, pre, [data-testid=stDataFrame], [data-testid=stTable], '
    + '[data-testid=stBidiComponentIsolated], .js-plotly-plot';
  const text = '[data-testid=stMain] :is(p, li, h1, h2, h3, label, [data-testid=stCaptionContainer], '
    + '[data-testid=stAlertContainer])';
  for (const el of document.querySelectorAll(text)) {
    if (el.closest(exempt)) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0) continue;
    if (el.scrollWidth > el.clientWidth + 2 && getComputedStyle(el).overflowX !== 'visible') {
      out.push('clipped: ' + el.tagName + ' ' + (el.innerText || '').slice(0, 50));
    } else if (r.right > window.innerWidth + 2) {
      out.push('beyond the window: ' + el.tagName + ' ' + (el.innerText || '').slice(0, 50) + ' [' + Math.round(r.right) + ']');
    }
  }
  return out;
}"""


def _zoomed(chromium, lang: str, **kw):
    return chromium.new_context(viewport={"width": 640, "height": 400}, device_scale_factor=2,
                                locale="ko-KR" if lang == "ko" else "en-US", **kw)


def test_every_page_reflows_at_200_percent_zoom(server_url, chromium):
    ctx = _zoomed(chromium, "en")
    try:
        page = ctx.new_page()
        lost = {}
        for info in nav.PAGES:
            page.goto(f"{server_url}/{info.url}?lang=en")
            settle(page, "en")
            found = page.evaluate(REFLOW)
            if found:
                lost[info.name] = found[:8]
        assert not lost, lost
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_screenshots_at_200_percent_zoom_and_with_high_contrast(server_url, chromium, lang):
    """Artifacts: the Playground and a lesson at 200 % zoom, and with the high-contrast setting
    (which the link keeps: hc=1), in both languages; the Korean is drawn with the app's web font."""
    ARTIFACTS.mkdir(exist_ok=True)
    ctx = _zoomed(chromium, lang)
    try:
        page = ctx.new_page()
        further = {"playground": css(PG_WEIGHTS), "tutorial": css(state.item(state.TUTORIAL.panel, "exercise", "masks.weight"))}
        for name, path in (("playground", "Playground"), ("tutorial", "Tutorial?lesson=masks")):
            sep = "&" if "?" in path else "?"
            page.goto(f"{server_url}/{path}{sep}lang={lang}")
            settle(page, lang)
            assert page.evaluate(REFLOW) == []
            page.screenshot(path=str(ARTIFACTS / f"a11y-zoom200-{name}-{lang}.png"))
            page.locator(further[name]).first.scroll_into_view_if_needed()  # further down: a map, an exercise
            page.screenshot(path=str(ARTIFACTS / f"a11y-zoom200-{name}-{lang}-2.png"))
    finally:
        ctx.close()
    ctx = chromium.new_context(viewport={"width": 1280, "height": 1000}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang={lang}&hc=1")
        settle(page, lang)
        expect(page.locator("html")).to_have_class("al-hc")
        toggle = page.get_by_role("switch", name=table(lang)["settings.contrast"])
        expect(toggle).to_be_checked()
        # the maps draw their cells outlined in black (waited for: a map draws after the page's class is set)
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]"
                               ".some((h) => h.shadowRoot && h.shadowRoot.querySelector('.almaps.hc, .alhm.hc'))",
                               timeout=30_000)
        page.screenshot(path=str(ARTIFACTS / f"a11y-high-contrast-playground-{lang}.png"))
        toggle.press("Space")  # off again, by keyboard: the class and the link parameter go
        expect(page.locator("html")).not_to_have_class("al-hc", timeout=30_000)
        expect(toggle).not_to_be_checked(timeout=30_000)
        # the link loses hc= in the rerun after the class went: wait for the URL itself
        expect(page).not_to_have_url(re.compile(r"[?&]hc="), timeout=30_000)
    finally:
        ctx.close()


# pixels of a canvas map (a panel of the Playground's pipeline): the gap right of cell (1, 0), the
# centre of that cell, and a point on the main diagonal of cell (0, 1), masked by the causal mask
CANVAS_PIXELS = """(key) => { let root = null;
  for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]')) {
    const r = h.shadowRoot && h.shadowRoot.querySelector('.panel.st-key-' + key + ' .alhm');
    if (r) { root = r; break; } }
  const c = root && root.querySelector('canvas');
  if (!c || !root.dataset.geom) return null;
  const g = JSON.parse(root.dataset.geom), dpr = c.width / parseFloat(c.style.width), ctx = c.getContext('2d');
  const px = (x, y) => Array.from(ctx.getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data);
  const x = (j) => g.left + j * g.cell, y = (i) => g.top + i * g.cell, q = Math.floor(g.cell / 4);
  return {cell: g.cell, gap: px(x(0) + g.cell - 1, y(1) + Math.floor(g.cell / 2)),
          centre: px(x(0) + Math.floor(g.cell / 2), y(1) + Math.floor(g.cell / 2)), diagonal: px(x(1) + q, y(0) + q)}; }"""


def test_high_contrast_outlines_the_canvas_cells_and_cross_hatches_the_masked_ones(server_url, chromium):
    """A canvas map (17–64 tokens) follows the setting: its cells are drawn on black (a black line between
    cells), masked cells get a second, black hatch; the cells' colours stay those of the scale."""
    key = css(state.item(state.PLAYGROUND.pipeline, "masked"))[len(".st-key-"):]
    toks = "+".join(f"w{i}" for i in range(20))
    seen = {}
    for hc in (0, 1):
        ctx = chromium.new_context(viewport={"width": 1280, "height": 1000})
        try:
            page = ctx.new_page()
            page.goto(f"{server_url}/Playground?lang=en&causal=1&tok={toks}" + ("&hc=1" if hc else ""))
            settle(page, "en")
            page.wait_for_function(CANVAS_PIXELS, arg=key, timeout=30_000)
            # the canvas is drawn again when its box settles (a scroll bar, the fonts): read the geometry once it
            # is the same on two consecutive animation frames, not the first one drawn
            page.evaluate("() => { window.__alGeom = null; }")
            page.wait_for_function("(key) => { const r = (" + CANVAS_PIXELS + ")(key); const g = r && r.cell;"
                                   " const same = g !== null && window.__alGeom === g; window.__alGeom = g; return same; }",
                                   arg=key, timeout=30_000, polling="raf")
            settled(page)
            seen[hc] = page.evaluate(CANVAS_PIXELS, key)
        finally:
            ctx.close()
    # each load sizes its cells to its own box (10 or 12 px at 1280, as a scroll bar comes or not): every pixel
    # below is read relative to that load's own geometry, so the two need not be the same size
    assert seen[0]["cell"] >= 6 and seen[1]["cell"] >= 6, seen
    assert seen[0]["gap"][3] == 0 and seen[1]["gap"] == [0, 0, 0, 255], seen  # transparent gap → a black line
    assert seen[0]["centre"] == seen[1]["centre"], seen  # the scale's colour is the same
    assert all(abs(a - b) <= 3 for a, b in zip(seen[0]["diagonal"][:3], colours.MASKED_RGB, strict=True)), seen
    assert max(seen[1]["diagonal"][:3]) < 128, seen  # the masked cell's second hatch, in black


PROBE = """() => { const d = document.createElement('div');
  d.style.cssText = 'animation: al-probe 1s infinite; transition: opacity 1s'; document.body.appendChild(d);
  const c = getComputedStyle(d); const out = [c.animationDuration, c.transitionDuration]; d.remove();
  const running = document.getAnimations().filter((a) => { const t = a.effect && a.effect.getTiming();
    return t && typeof t.duration === 'number' && t.duration > 1; }).length;
  return {animation: out[0], transition: out[1], running}; }"""


def test_no_animation_when_the_system_asks_for_reduced_motion(server_url, chromium):
    seen = {}
    for motion in ("reduce", "no-preference"):
        ctx = chromium.new_context(viewport={"width": 1280, "height": 800}, reduced_motion=motion)
        try:
            page = ctx.new_page()
            page.goto(f"{server_url}/Playground?lang=en")
            settle(page, "en")
            seen[motion] = page.evaluate(PROBE)
        finally:
            ctx.close()
    assert seen["no-preference"]["animation"] == "1s"  # the probe itself animates without the request
    assert float(seen["reduce"]["animation"].rstrip("s")) < 1e-3 and float(seen["reduce"]["transition"].rstrip("s")) < 1e-3
    assert seen["reduce"]["running"] == 0, seen
