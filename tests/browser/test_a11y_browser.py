"""WCAG 2.2 AA in a real browser, both languages: axe-core on every page (ui.nav's list, so pages added
later are covered) and the Playground with the X editor and each setup tab open at 1280×800 and
390×844, every tutorial lesson (both widths); <html lang> follows the language. The large maps' and the
bars' text alternatives: test_a11y_text_browser.py.

The same page views are measured for clipping (test_layout_browser.py measures 1920): nothing cut off at 1280; on a
phone nothing wider than its box except what scrolls sideways in it, and the page no wider than the phone; no page
shows the error boundary; in Korean every Korean text can use the shipped Korean font. One view per page, language
and width serves all of these; the pages of "Attention in today's LLMs" leave a screenshot each in test-artifacts/.

Streamlit's own remaining violations (the sidebar navigation's list markup) are counted apart and
may not grow (README, "Accessibility")."""

from __future__ import annotations

import time

import pytest

from attention_lab import tutorial
from ui import nav
from ui.i18n import table

from .a11y_audit import MAP_TABLES, SHOW_TABLES, audit, grown, settle, table_mismatches
from .conftest import ARTIFACTS, settled
from .helpers import DRAWN, HANGUL_FONTS, OVERFLOW, open_every_map

pytestmark = pytest.mark.browser
CIRCLED = "①②③④⑤"  # the Playground numbers its setup tabs so (app_pages/playground.py)

WIDTHS = {1280: 800, 390: 844}
# the tab is selected and the rerun its click started has drawn the tab's controls into its panel
SELECTED_TAB_DRAWN = """(label) => { const tab = [...document.querySelectorAll('[role=tab]')].find((t) =>
    t.innerText.trim() === label && t.getAttribute('aria-selected') === 'true');
  const panel = tab && document.getElementById(tab.getAttribute('aria-controls'));
  return !!panel && !!panel.querySelector('[data-testid=stElementContainer]')
    && !document.querySelector('[data-stale=true]'); }"""
TIMES: dict[str, float] = {}  # seconds per test, written to test-artifacts/a11y-times.txt


def browser_context(chromium, width: int, lang: str):
    return chromium.new_context(viewport={"width": width, "height": WIDTHS[width]},
                                locale="ko-KR" if lang == "ko" else "en-US")


def _record(name: str, started: float) -> None:
    TIMES[name] = time.perf_counter() - started
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "a11y-times.txt").write_text("".join(f"{k}\t{v:.1f} s\n" for k, v in sorted(TIMES.items())),
                                              encoding="utf-8")


def clipped(page, width: int) -> list[str]:
    """What is cut off in the page as laid out now (a phone: boxes that scroll sideways are fine, the page itself may
    not be wider than the phone), and the error boundary if it shows."""
    found = page.evaluate(OVERFLOW, width < 500)
    if width < 500 and (wide := page.evaluate("() => document.documentElement.scrollWidth")) > width + 1:
        found.append(f"the page is {wide} px wide")
    if page.get_by_text(table("en")["err.unexpected"][:20]).count() or page.get_by_text(
            table("ko")["err.unexpected"][:12]).count():
        found.append("the error boundary shows")
    return found


def check_views(views: dict) -> None:
    own = {name: found[0] for name, found in views.items() if found[0]}
    more = {name: grown(found[1]) for name, found in views.items() if grown(found[1])}
    assert not own, "the app's own serious/critical violations:\n" + "\n".join(
        f"[{name}] {line}" for name, lines in own.items() for line in lines)
    assert not more, f"Streamlit's own violations grew beyond the README's list: {more}"


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_axe_every_page(server_url, chromium, lang, width):
    started = time.perf_counter()
    ctx = browser_context(chromium, width, lang)
    try:
        page = ctx.new_page()
        views, tables, cut, fonts = {}, {}, {}, {}
        for info in nav.PAGES:
            page.goto(f"{server_url}/{info.url}?lang={lang}")
            settle(page, lang)
            page.wait_for_function(DRAWN, timeout=60_000)
            settled(page)  # components and formulas lay out after the script finishes
            if found := clipped(page, width):
                cut[info.name] = found
                page.screenshot(path=str(ARTIFACTS / f"clipped-{info.name}-{width}-{lang}.png"))
            if info.section == "modern":
                page.screenshot(path=str(ARTIFACTS / f"llm-{info.name}-{width}-{lang}.png"))
            if lang == "ko" and width == 1280:  # wherever Korean appears (labels, shape lines, code, charts), the
                # element's font stack has the app's Korean web font: a machine without one would show boxes
                texts = page.evaluate(HANGUL_FONTS)
                if len(texts) <= 10 or (missing := [(x, f) for x, f in texts if "attention-lab-kr" not in f]):
                    fonts[info.name] = missing[:5] if len(texts) > 10 else f"{len(texts)} Korean texts"
            views[info.name] = audit(page)
            if width == 1280:  # every map's values as a table with token headers, equal to the map's numbers
                page.evaluate(SHOW_TABLES)
                tables[info.name] = table_mismatches(page.evaluate(MAP_TABLES))
        assert not cut, cut
        assert not fonts, fonts
        check_views(views)
        assert not any(tables.values()), {k: v[:5] for k, v in tables.items() if v}
    finally:
        ctx.close()
        _record(f"pages-{lang}-{width}", started)


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_axe_every_tutorial_lesson(server_url, chromium, lang, width):
    """Every lesson at both widths, its predictions revealed: audited and measured for clipping."""
    started = time.perf_counter()
    ctx = browser_context(chromium, width, lang)
    try:
        page = ctx.new_page()
        views, cut = {}, {}
        for lesson in tutorial.LESSONS:
            page.goto(f"{server_url}/Tutorial?lesson={lesson.id}&lang={lang}")
            settle(page, lang)
            open_every_map(page, lesson)  # the maps its predictions hide are drawn, measured and audited too
            settle(page, lang)
            page.wait_for_function(DRAWN, timeout=60_000)
            if found := clipped(page, width):
                cut[lesson.id] = found
                page.screenshot(path=str(ARTIFACTS / f"clipped-lesson-{lesson.id}-{width}-{lang}.png"))
            views[lesson.id] = audit(page)
        assert not cut, cut
        check_views(views)
    finally:
        ctx.close()
        _record(f"lessons-{lang}-{width}", started)


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_axe_playground_with_the_x_editor_and_every_setup_tab_open(server_url, chromium, lang, width):
    started = time.perf_counter()
    strings = table(lang)
    ctx = browser_context(chromium, width, lang)
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang={lang}")
        settle(page, lang)
        views = {}
        page.get_by_text(strings["pg.edit_x.fold"], exact=True).click()
        page.locator("[data-testid=stDataFrame]").first.wait_for(timeout=30_000)
        settle(page, lang)
        views["x-editor-open"] = audit(page)
        order = ("embed", "qkv", "score", "mask", "share")  # numbered as the page numbers them (a full link)
        for tab in ("qkv", "score", "mask", "share", "embed"):
            label = f"{CIRCLED[order.index(tab)]} {strings[f'class.tab.{tab}']}"
            page.get_by_role("tab", name=label).click()
            page.wait_for_function(SELECTED_TAB_DRAWN, arg=label, timeout=60_000)
            settle(page, lang)
            views[f"tab-{tab}"] = audit(page)
        check_views(views)
    finally:
        ctx.close()
        _record(f"playground-open-{lang}-{width}", started)


def test_html_lang_follows_the_chosen_language(server_url, chromium):
    ctx = browser_context(chromium, 1280, "en")
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Masks?lang=ko")
        settle(page, "ko")
        assert page.evaluate("document.documentElement.lang") == "ko"
        page.get_by_text("English", exact=True).click()  # the sidebar's language switch
        settle(page, "en")
        assert page.evaluate("document.documentElement.lang") == "en"
    finally:
        ctx.close()
