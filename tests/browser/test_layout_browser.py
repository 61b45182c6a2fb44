"""Real browser: nothing is clipped — no formula, code line, text or map is wider than its box —
on any page at 1280 and 1920 pixels wide, in both languages."""

from __future__ import annotations

import pytest

from ui import nav

from .conftest import wait_idle
from .helpers import shot

# every element whose content could be cut off at the right edge; maps scroll on purpose only
# when they hold more tokens than fit (not at the default sentence)
OVERFLOW = """() => {
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
      if (e.scrollWidth > e.clientWidth + 4 && getComputedStyle(e).overflowX !== 'visible') {
        out.push((el.getAttribute('data-testid') || el.className) + ': ' + (el.innerText || '').slice(0, 60)
                 + ' [' + e.scrollWidth + ' > ' + e.clientWidth + ']');
        break;
      }
    }
  }
  return out;
}"""


@pytest.mark.parametrize("width", [1280, 1920])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_nothing_is_clipped_on_any_page(server_url, chromium, width, lang):
    ctx = chromium.new_context(viewport={"width": width, "height": 1000}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        clipped = {}
        for info in nav.PAGES:
            page.goto(f"{server_url}/{info.url}?lang={lang}")
            wait_idle(page)
            page.wait_for_timeout(800)  # components and formulas lay out after the script finishes
            found = page.evaluate(OVERFLOW)
            if found:
                clipped[info.name] = found
                shot(page, f"clipped-{info.name}-{width}-{lang}")
        assert not clipped, clipped
    finally:
        ctx.close()
