"""A closed tab resumes (issue 35): the tutorial's last lesson with its progress and the last page with its link are
kept in this browser (localStorage); a visit without parameters offers to go back there, a link that carries its
own state is never redirected, and "Forget my progress" clears the record. Nothing leaves the browser: the record
is read here from localStorage itself."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from attention_lab import tutorial as tut
from ui.i18n import table

from .conftest import settled

pytestmark = pytest.mark.browser
KEY = "attention-lab.memory"
LESSON = tut.LESSONS[6]  # lesson 7


def _record(page) -> dict | None:
    raw = page.evaluate(f"() => window.localStorage.getItem({KEY!r})")
    return json.loads(raw) if raw else None


def _wait_saved(page, needle: str) -> dict:
    """Until the record holds ``needle`` (saved 0.4 s after a run, and when the tab is hidden)."""
    page.wait_for_function(f"() => (window.localStorage.getItem({KEY!r}) || '').includes({needle!r})", timeout=60_000)
    return _record(page)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_closed_tab_resumes_lesson_7_with_its_progress(chromium, server_url, lang):
    words = table(lang)
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        done = tut.encode_progress({tut.LESSONS[0].id, LESSON.exercises[0].id})
        first = ctx.new_page()
        first.goto(f"{server_url}/Tutorial?lesson={LESSON.id}&done={done}&lang={lang}")
        settled(first)
        saved = _wait_saved(first, f"lesson={LESSON.id}")
        assert saved["v"] == 1 and f"done={done}" in saved["tutorial"]["search"]
        first.close()  # the tab is closed: only the browser's storage remembers

        again = ctx.new_page()
        again.goto(f"{server_url}/")  # a visit without parameters
        settled(again)
        offer = again.get_by_role("region", name=words["mem.title"])
        expect(offer).to_be_visible(timeout=30_000)
        title = tut.lesson_title(LESSON.id, lang)
        link = offer.get_by_role("link", name=re.compile(re.escape(title)))
        expect(link).to_be_visible()
        link.click()
        again.wait_for_url(re.compile(rf"/Tutorial\?.*lesson={re.escape(LESSON.id)}"), timeout=60_000)
        settled(again)
        assert f"done={done}" in again.url
        expect(again.get_by_text(title).first).to_be_visible()  # the lesson itself is on screen
        expect(again.get_by_role("region", name=words["mem.title"])).to_have_count(0)  # no second offer

        # a link that carries its own state is never redirected, nor offered anything
        own = ctx.new_page()
        own.goto(f"{server_url}/Masks?causal=1&lang={lang}")
        settled(own)
        expect(own.get_by_role("region", name=words["mem.title"])).to_have_count(0)
        assert "/Masks" in own.url and "causal=1" in own.url
        own.close()

        # "Forget my progress" (the sidebar) clears the record: the next bare visit offers nothing
        again.get_by_role("button", name=words["mem.forget"]).click()
        again.wait_for_function(f"() => window.localStorage.getItem({KEY!r}) === null", timeout=30_000)
        again.close()
        fresh = ctx.new_page()
        fresh.goto(f"{server_url}/")
        settled(fresh)
        expect(fresh.get_by_role("region", name=words["mem.title"])).to_have_count(0)
    finally:
        ctx.close()


def test_a_broken_record_is_ignored(chromium, server_url):
    """A record that is not ours (another version, a foreign path, bad JSON) offers nothing and breaks nothing."""
    ctx = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/")
        settled(page)
        for bad in ('{"v": 1, "page": {"path": "//evil.example/x", "search": ""}}',
                    '{"v": 2, "page": {"path": "/Masks", "search": "?causal=1"}}', "not json"):
            page.evaluate("([k, v]) => window.localStorage.setItem(k, v)", [KEY, bad])
            page.goto(f"{server_url}/")
            settled(page)
            expect(page.get_by_role("region", name=table("en")["mem.title"])).to_have_count(0)
            assert not page.locator("[data-testid=stException]").count()
    finally:
        ctx.close()
