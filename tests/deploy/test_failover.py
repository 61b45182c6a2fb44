"""A lost replica loses no work (issue 27): behind the project's nginx with two replicas, the replica
that holds a student's session is killed mid-lesson; the page reconnects to the other one and shows the
scenario the student had typed (the link in the address bar, reopened by the connection guard)."""

from __future__ import annotations

import re
import signal
from collections import Counter

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS, _chromium, wait_idle
from tests.browser.helpers import PG_WEIGHTS, wait_z

from .test_replicas import ROUTE, metrics, token_box

pytestmark = pytest.mark.browser
TOKENS = "every student keeps the work after a failover"  # 8 tokens


def test_killing_the_students_replica_keeps_the_typed_scenario(replicas, proxy):
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
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

            route = next(c["value"] for c in ctx.cookies() if c["name"] == ROUTE)
            served = Counter(x["upstream"] for x in proxy.log_lines() if x["route"] == route)
            assert len(served) == 1, served
            home = next(r for r in replicas if r.addr in served)
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
