"""Work survives behind the project's nginx with two replicas (issue 27): the largest scenario's link
opens through the proxy, a longer link gets a clear page instead of a bare 414, and when the replica that
holds a student's session is killed mid-lesson, the page reconnects to the other one and shows the
scenario the student had typed (the link in the address bar, reopened by the connection guard).
The failover test runs last: it kills one of this module's replicas."""

from __future__ import annotations

import re
import signal
import urllib.error
import urllib.request
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect, sync_playwright

from attention_lab import scenario
from tests.app.test_links import largest
from tests.browser.conftest import CHROMIUM_ARGS, chromium_path, wait_idle
from tests.browser.helpers import PG_WEIGHTS, wait_z

from .test_replicas import metrics, token_box

pytestmark = pytest.mark.browser
TOKENS = "every student keeps the work after a failover"  # 8 tokens


def test_the_largest_scenarios_link_opens_through_nginx(replicas, proxy):
    values, mats = largest()
    link = f"{proxy.url}/Playground?" + urlencode(scenario.to_query(values, mats) | {"lang": "en"})
    assert len(link) < 8000
    with urllib.request.urlopen(link, timeout=30) as resp:
        assert resp.status == 200
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 1600}, locale="en-US").new_page()
            page.goto(link)
            wait_idle(page, timeout=120_000)
            expect(token_box(page)).to_have_value(values["tokens"], timeout=120_000)
            wait_idle(page, timeout=120_000)
            assert not page.get_by_text("could not be used").count(), "the link's values were refused"
        finally:
            browser.close()


@pytest.mark.parametrize("lang, title", [("en", "This link is too long"), ("ko", "링크가 너무 깁니다")])
def test_a_link_longer_than_nginx_accepts_gets_a_clear_page_in_both_languages(replicas, proxy, lang, title):
    link = f"{proxy.url}/Playground?tok=" + "a+" * 5_000
    with pytest.raises(urllib.error.HTTPError, match="^HTTP Error 414") as err:
        urllib.request.urlopen(link, timeout=30)
    assert err.value.code == 414
    body = err.value.read().decode("utf-8")
    assert title in body and "JSON" in body


def test_killing_the_students_replica_keeps_the_typed_scenario(replicas, proxy):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1600}, locale="en-US")
            page = ctx.new_page()
            page.goto(f"{proxy.url}/Playground?T=2.0")
            wait_idle(page, timeout=90_000)
            box = token_box(page)
            box.fill(TOKENS)
            box.press("Enter")
            wait_z(page, PG_WEIGHTS, "z.length === 8", timeout=60_000)
            page.wait_for_function("() => location.search.includes('failover')", timeout=60_000)
            wait_idle(page)

            # the session's home: the one replica holding an open session (the earlier tests' pages are closed). Not
            # the access log: nginx writes a websocket's line when it closes, and it may serve the page's static files
            # from the other replica while it holds the home down after failed keep-alive reuses (the files are equal)
            homes = [r for r in replicas if metrics(r.url).get("active", 0) > 0]
            assert len(homes) == 1, [metrics(r.url) for r in replicas]
            home = homes[0]
            other = next(r for r in replicas if r is not home)
            before = metrics(other.url).get("connect", 0)
            old_sid = page.evaluate("() => window.__attnlabGuard.sid")

            home.proc.send_signal(signal.SIGKILL)  # the replica is lost, with the session in its memory
            home.proc.wait(timeout=10)
            page.wait_for_function("(old) => window.__attnlabGuard && window.__attnlabGuard.sid !== old", arg=old_sid,
                                   timeout=90_000)  # a session of the other replica has drawn the page
            wait_idle(page)
            expect(token_box(page)).to_have_value(TOKENS, timeout=60_000)
            wait_z(page, PG_WEIGHTS, "z.length === 8", timeout=60_000)
            assert "T=2.0" in page.url
            assert metrics(other.url).get("connect", 0) > before, "the page did not open a session on the other replica"
            assert re.search(r"failover", page.url)
            ctx.close()
        finally:
            browser.close()
