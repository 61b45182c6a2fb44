"""Real browser: the six pages of "Attention in today's LLMs" in both languages at 1280×720, 1920×1080 and
on a 390-px phone — nothing cut off, nothing wider than the phone; a screenshot of each in test-artifacts/."""

from __future__ import annotations

import pytest

from ui import nav

from .conftest import ARTIFACTS, wait_idle
from .test_layout_browser import OVERFLOW

pytestmark = pytest.mark.browser
# the post-condition for measuring: every component has drawn into its shadow root, every chart has its
# SVG, and the fonts (the Korean web font included) are loaded
DRAWN = """() => document.fonts.status === 'loaded'
  && [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]
       .every(h => h.shadowRoot && h.shadowRoot.querySelector('*'))
  && [...document.querySelectorAll('.stPlotlyChart')].every(c => c.querySelector('svg.main-svg'))
  && document.querySelectorAll('[data-testid=stBidiComponentIsolated]').length > 0"""
PAGES = [p for p in nav.PAGES if p.section == "modern"]
# the widest element on the page (shadow roots included), ignoring boxes that scroll on purpose
WIDEST = """(limit) => {
  const out = [];
  const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width > limit + 1 && getComputedStyle(el).position !== 'fixed') {
      let p = el.parentElement, scrolls = false;
      while (p) {
        const o = getComputedStyle(p).overflowX;
        if (o === 'auto' || o === 'scroll' || o === 'hidden') { scrolls = true; break; }
        p = p.parentElement;
      }
      if (!scrolls) out.push((el.getAttribute('data-testid') || el.tagName) + ' ' + Math.round(r.width));
    }
    if (el.shadowRoot) walk(el.shadowRoot);
  } };
  walk(document);
  return out.slice(0, 10);
}"""


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080), (390, 844)])
def test_the_new_pages_fit(server_url, chromium, width, height, lang):
    ctx = chromium.new_context(viewport={"width": width, "height": height}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        problems = {}
        for info in PAGES:
            page.goto(f"{server_url}/{info.url}?lang={lang}")
            wait_idle(page)
            page.wait_for_function(DRAWN, timeout=60_000)  # every map drawn, fonts loaded: the layout is final
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"llm-{info.name}-{width}x{height}-{lang}.png"))
            found = page.evaluate(OVERFLOW)
            if width == 390:
                found += page.evaluate(WIDEST, width)
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                if scroll > width + 1:
                    found.append(f"page scrolls sideways: {scroll}")
            assert not page.get_by_text("Something went wrong").count()
            if found:
                problems[info.name] = found
        assert not problems, problems
    finally:
        ctx.close()
