"""A restart keeps the scenario typed on any page that uses it, not only on the Playground (issue 27):
the page writes the scenario into its link, the guard reopens that link on the new session."""

from __future__ import annotations

import signal
import subprocess

import pytest
from playwright.sync_api import expect

from ui.i18n import table

from .conftest import _free_port, wait_idle
from .test_restart_browser import start, token_box, wait_healthy

pytestmark = pytest.mark.browser
TOKENS = "typed on the masks page"


def test_a_restart_on_the_masks_page_brings_back_its_scenario(new_page, tmp_path):
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start(port, tmp_path / "server.log")
    try:
        wait_healthy(url, proc)
        page = new_page(f"{url}/Masks?lang=en")
        page.get_by_text(table("en")["shared.numbers"]).click()  # the shared numbers are folded on this page
        box = token_box(page).first
        box.fill(TOKENS)
        box.press("Enter")
        page.wait_for_function("() => decodeURIComponent(location.search.replace(/\\+/g, ' ')).includes('masks page')",
                               timeout=60_000)  # the link in the address bar holds the typed tokens
        wait_idle(page)
        old_sid = page.evaluate("() => window.__attnlabGuard.sid")

        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        expect(page.locator("#attnlab-connection")).to_be_visible(timeout=30_000)

        proc = start(port, tmp_path / "server.log")
        wait_healthy(url, proc)
        page.wait_for_function("(old) => window.__attnlabGuard && window.__attnlabGuard.sid !== old", arg=old_sid,
                               timeout=90_000)
        wait_idle(page)
        page.get_by_text(table("en")["shared.numbers"]).click()
        expect(token_box(page).first).to_have_value(TOKENS, timeout=60_000)
        assert "/Masks" in page.url
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
