"""A restart keeps the scenario typed on any page that uses it, not only on the Playground (issue 27):
the page writes the scenario into its link, the guard reopens that link on the new session."""

from __future__ import annotations

import signal

import pytest
from playwright.sync_api import expect

from bench import serve
from ui.i18n import table

from .conftest import wait_idle
from .test_restart_browser import token_box

pytestmark = pytest.mark.browser
TOKENS = "typed on the masks page"


def test_a_restart_on_the_masks_page_brings_back_its_scenario(new_page, tmp_path):
    log = tmp_path / "server.log"
    server = serve.start(log=log)
    try:
        server.wait(90)
        page = new_page(f"{server.url}/Masks?lang=en")
        page.get_by_text(table("en")["shared.numbers"]).click()  # the shared numbers are folded on this page
        box = token_box(page).first
        box.fill(TOKENS)
        box.press("Enter")
        page.wait_for_function("() => decodeURIComponent(location.search.replace(/\\+/g, ' ')).includes('masks page')",
                               timeout=60_000)  # the link in the address bar holds the typed tokens
        wait_idle(page)
        old_sid = page.evaluate("() => window.__attnlabGuard.sid")

        server.stop(signal.SIGKILL)
        expect(page.locator("#attnlab-connection")).to_be_visible(timeout=30_000)

        server = serve.start(port=server.port, log=log, append=True)  # the same address: the page reconnects
        server.wait(90)
        # the reconnected page asks for a run at once: the guard meets the new session and reopens the link
        page.wait_for_function("(old) => window.__attnlabGuard && window.__attnlabGuard.sid !== old", arg=old_sid,
                               timeout=90_000)
        wait_idle(page)
        page.get_by_text(table("en")["shared.numbers"]).click()
        expect(token_box(page).first).to_have_value(TOKENS, timeout=60_000)
        assert "/Masks" in page.url
    finally:
        server.stop()
