"""Real browser: the six pages of "Attention in today's LLMs" in both languages at 1280×720, 1920×1080 and
on a 390-px phone — nothing cut off on the wide screens, nothing wider than the phone (its maps and
formulas scroll inside their own boxes); a screenshot of each in test-artifacts/."""

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
            if width == 390:  # as on the Playground (test_classroom_browser): nothing makes the page wider than the
                # phone; long formulas and maps scroll sideways inside their own boxes
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                found = [f"the page is {scroll} px wide"] if scroll > width + 1 else []
            else:
                found = page.evaluate(OVERFLOW)
            assert not page.get_by_text("Something went wrong").count()
            if found:
                problems[info.name] = found
        assert not problems, problems
    finally:
        ctx.close()
