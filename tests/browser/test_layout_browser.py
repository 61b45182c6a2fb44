"""Real browser: nothing is clipped — no formula, code line, text or map is wider than its box —
on any page at 1280 and 1920 pixels wide, in both languages."""

from __future__ import annotations

import pytest

from ui import nav

from .conftest import settled, wait_idle
from .helpers import shot

pytestmark = pytest.mark.browser

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


@pytest.mark.parametrize("width", [1280, 1920])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_nothing_is_clipped_on_any_page(server_url, chromium, width, lang):
    ctx = chromium.new_context(viewport={"width": width, "height": 1000}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        clipped = {}
        for info in nav.PAGES:
            page.goto(f"{server_url}/{info.url}?lang={lang}")
            settled(page)  # components and formulas lay out after the script finishes
            found = page.evaluate(OVERFLOW, False)
            if found:
                clipped[info.name] = found
                shot(page, f"clipped-{info.name}-{width}-{lang}")
        assert not clipped, clipped
    finally:
        ctx.close()


# every component on the page has drawn its content (a map, bars, a view): the post-condition for measuring
DRAWN = """() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].every(h => {
  const r = h.getBoundingClientRect();
  if (r.width === 0 || r.height === 0) return true;
  const root = h.shadowRoot;
  // the frame's invisible components (language, connection guard) draw one marker element only
  return !!root && (!!root.querySelector('.al-silent') || root.querySelectorAll('*').length > 2);
})"""


def _open_every_map(page, lesson) -> None:
    """Reveal the lesson's predictions so that the maps they hide are drawn (and measured) too."""
    from ui import state
    from ui.state import css_class as css

    for ex in lesson.exercises:
        if ex.kind == "predict":
            page.locator(css(state.item(state.TUTORIAL.reveal, "button", ex.id)) + " button").click()
            wait_idle(page)


@pytest.mark.parametrize("width", [1280, 1920, 390])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_nothing_is_clipped_in_any_lesson_panel(server_url, chromium, width, lang):
    from playwright.sync_api import expect

    from attention_lab import tutorial as tut

    ctx = chromium.new_context(viewport={"width": width, "height": 900}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        clipped = {}
        for i, lesson in enumerate(tut.LESSONS, 1):
            page.goto(f"{server_url}/Tutorial?lesson={lesson.id}&lang={lang}")
            expect(page.get_by_text(f"{i}. {tut.lesson_title(lesson.id, lang)}")).to_be_visible(timeout=60_000)
            wait_idle(page)
            _open_every_map(page, lesson)
            page.wait_for_function(DRAWN, timeout=60_000)
            found = page.evaluate(OVERFLOW, width < 500)  # a phone: sideways scrolling boxes are fine, cut ones are not
            if found:
                clipped[lesson.id] = found
                shot(page, f"clipped-lesson-{lesson.id}-{width}-{lang}")
        assert not clipped, clipped
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_nothing_is_clipped_on_a_phone(server_url, chromium, lang):
    """Every page (the trained-model page and any page added later included) at 390 px."""
    ctx = chromium.new_context(viewport={"width": 390, "height": 844}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        clipped = {}
        for info in nav.PAGES:
            page.goto(f"{server_url}/{info.url}?lang={lang}")
            wait_idle(page)
            page.wait_for_function(DRAWN, timeout=60_000)
            found = page.evaluate(OVERFLOW, True)
            if found:
                clipped[info.name] = found
                shot(page, f"clipped-{info.name}-390-{lang}")
        assert not clipped, clipped
    finally:
        ctx.close()
