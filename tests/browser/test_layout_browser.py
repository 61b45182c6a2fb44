"""Real browser: nothing is clipped — no formula, code line, text or map is wider than its box — on any page and in
any lesson (its predictions revealed) at 1920 pixels wide, in both languages. At 1280 and at 390 (a phone) the same
check runs in the same page views as the accessibility audit (test_a11y_browser.py): one view of each page per
language and width."""

from __future__ import annotations

import pytest

from ui import nav

from .conftest import settled, wait_idle
from .helpers import DRAWN, OVERFLOW, open_every_map, shot

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1920])
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


@pytest.mark.parametrize("width", [1920])
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
            open_every_map(page, lesson)
            page.wait_for_function(DRAWN, timeout=60_000)
            found = page.evaluate(OVERFLOW, False)
            if found:
                clipped[lesson.id] = found
                shot(page, f"clipped-lesson-{lesson.id}-{width}-{lang}")
        assert not clipped, clipped
    finally:
        ctx.close()
