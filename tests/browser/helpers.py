"""Helpers for the real-browser tests: read a heatmap's numbers in the page, wait for them, screenshots; what is cut
off on a page (OVERFLOW), every component drawn (DRAWN), a lesson's hidden maps revealed."""

from __future__ import annotations

import numpy as np

from ui import state
from ui.state import css_class as css

from .conftest import ARTIFACTS, settled, wait_idle

# a download made on the click (a notebook with its outputs, a CSV): a bound for a hung one, never a pace. (A missing
# download under load was a click on a button being redrawn, not a slow file: see download() below.)
DOWNLOAD_WAIT = 300_000
PG_WEIGHTS = state.item(state.PLAYGROUND.pipeline, "weights")  # the Playground's weights map
# a map's root: a component of its own, or a panel of the Playground pipeline's one component
FIND_Z = ("let root = null; const host = document.querySelector('.st-key-' + key + ' [data-testid=stBidiComponentIsolated]');"
          " if (host && host.shadowRoot) { root = host.shadowRoot.querySelector('.alhm'); } else {"
          "  for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]')) {"
          "   const r = h.shadowRoot && h.shadowRoot.querySelector('.panel.st-key-' + key + ' .alhm');"
          "   if (r) { root = r; break; } } }"
          " const z = root && root.dataset.z ? JSON.parse(root.dataset.z) : null;")
Z = "(key) => { " + FIND_Z + " return z; }"
GEOM = "() => { const key = '" + css(PG_WEIGHTS)[len(".st-key-"):] + "'; " + FIND_Z + " return root.dataset.geom; }"


def z(page, key: str) -> np.ndarray:
    """The values a heatmap (registry key) holds in the browser."""
    found = page.evaluate(Z, css(key)[len(".st-key-"):])
    return np.array([[np.nan if v is None else v for v in row] for row in found], dtype=float)


def wait_z(page, key: str, predicate: str, timeout: int = 120_000) -> np.ndarray:
    """Wait until the heatmap's z satisfies a JS predicate on `z`, then return it."""
    page.wait_for_function(
        "([key, body]) => { " + FIND_Z + " if (!z) return false; return (new Function('z', 'return ' + body))(z); }",
        arg=[css(key)[len(".st-key-"):], predicate], timeout=timeout)
    return z(page, key)


def shot(page, name: str) -> None:
    settled(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


# the values of a plotly heatmap as plotly.js holds them once drawn (the app sends them as a typed array:
# float32 bytes), row by row as plain arrays; null before the chart is drawn
PLOTLY_VALUES = "((gd) => gd && gd._fullData && gd._fullData[0] ? Array.from(gd._fullData[0].z, (row) => Array.from(row)) : null)"


def download(page, selector: str, attempts: int = 3):
    """Click the download button at ``selector`` and return the Download. On a busy machine the button can be
    drawn again between the page settling and the click: the click then lands on the copy being replaced and
    no download starts (seen twice in CI runs under load, never quietly). A learner would click again; so does
    this, on the button drawn now, up to ``attempts`` times, each waiting its share of DOWNLOAD_WAIT."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(attempts):
        try:
            with page.expect_download(timeout=DOWNLOAD_WAIT // attempts) as started:
                page.locator(selector).click()
            return started.value
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                raise
            settled(page)
    raise AssertionError("unreachable")



# every map's picture buttons (SVG, PNG) against its column labels: the labels they cover
BUTTONS_OVER_LABELS = """() => {
  const out = [];
  const roots = [document, ...[...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]
    .map((h) => h.shadowRoot).filter(Boolean)];
  for (const r of roots) {
    for (const m of r.querySelectorAll('.alhm')) {
      const bar = m.querySelector(':scope > .export');
      if (!bar) continue;
      const b = bar.getBoundingClientRect();
      for (const th of m.querySelectorAll('th.col')) {
        const c = th.getBoundingClientRect();
        if (b.left < c.right && c.left < b.right && b.top < c.bottom && c.top < b.bottom) out.push(th.textContent);
      }
    }
  }
  return out;
}"""


# every element whose content could be cut off at the right edge; maps scroll on purpose only
# when they hold more tokens than fit (not at the default sentence)
OVERFLOW = """(allowScroll) => {
  const sel = '[data-testid=stMarkdownContainer], .katex-display, [data-testid=stCode] pre, [data-testid=stCaptionContainer],'
            + ' [data-testid=stAlertContainer], [data-testid=stBidiComponentIsolated], .stPlotlyChart, [data-testid=stDataFrame]';
  const out = [];
  for (const el of document.querySelectorAll(sel)) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    const roots = [el];
    if (el.shadowRoot) roots.push(...el.shadowRoot.querySelectorAll('*'));
    for (const e of roots) {
      if (e.clientWidth <= 1 && e.clientHeight <= 1) continue;  // visually hidden text for screen readers (.sr-only)
      // KaTeX's display box is 1–3 px narrower than its last glyph's ink box: 4 px of slack
      const ox = getComputedStyle(e).overflowX;
      // on a phone a box that scrolls sideways keeps all of its content reachable (README: "In a classroom")
      if (allowScroll && (ox === 'auto' || ox === 'scroll')) continue;
      if (e.scrollWidth > e.clientWidth + 4 && ox !== 'visible') {
        out.push((el.getAttribute('data-testid') || el.className) + ': ' + (el.innerText || '').slice(0, 60)
                 + ' [' + e.scrollWidth + ' > ' + e.clientWidth + ']');
        break;
      }
    }
  }
  return out;
}"""


# every component on the page has drawn its content (a map, bars, a view): the post-condition for measuring
DRAWN = """() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].every(h => {
  const r = h.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return true;
  const root = h.shadowRoot;
  // the frame's invisible components (language, connection guard) draw one marker element only
  return !!root && (!!root.querySelector('.al-silent') || root.querySelectorAll('*').length > 2);
})"""


def open_every_map(page, lesson) -> None:
    """Reveal the lesson's predictions so that the maps they hide are drawn (and measured) too."""
    for ex in lesson.exercises:
        if ex.kind == "predict":
            page.locator(css(state.item(state.TUTORIAL.reveal, "button", ex.id)) + " button").click()
            wait_idle(page)


# every text node holding Hangul, with its element's font stack (open shadow roots included)
HANGUL_FONTS = """() => {
  const out = [];
  const walk = (root) => {
    const it = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (let n = it.currentNode; n; n = it.nextNode()) {
      if (n.nodeType === Node.ELEMENT_NODE && n.shadowRoot) walk(n.shadowRoot);
      if (n.nodeType === Node.TEXT_NODE && /[\\uac00-\\ud7a3]/.test(n.textContent) && n.parentElement)
        out.push([n.textContent.trim().slice(0, 40), getComputedStyle(n.parentElement).fontFamily]);
    }
  };
  walk(document.body);
  return out;
}"""
