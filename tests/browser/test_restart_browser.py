"""Work survives a server restart (issue 27): the tokens typed after the page loaded (a rerun of the
Playground's results alone, whose link the page writes in place) are back after the server is killed
and started again, and while it is away the learner reads the app's message, not Streamlit's."""

from __future__ import annotations

import re
import signal

import pytest
from playwright.sync_api import expect

from bench import serve
from ui.i18n import table

from .conftest import wait_idle
from .helpers import PG_WEIGHTS, wait_z

pytestmark = pytest.mark.browser
TOKENS = "work typed after the link was opened"


def token_box(page):
    return page.get_by_role("textbox", name=re.compile(r"^(Tokens|토큰)"))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_restart_brings_back_the_typed_scenario_and_says_so_in_the_learners_language(new_page, tmp_path, lang):
    log = tmp_path / "server.log"
    server = serve.start(log=log)
    url = server.url
    try:
        server.wait(90)
        page = new_page(f"{url}/Playground?lang={lang}&causal=1")
        box = token_box(page)
        box.fill(TOKENS)
        box.press("Enter")
        wait_z(page, PG_WEIGHTS, "z.length === 7 && z[0][1] === 0", timeout=60_000)  # 7 tokens, causal
        page.wait_for_function("() => decodeURIComponent(location.search.replace(/\\+/g, ' ')).includes('opened')",
                               timeout=60_000)  # the link in the address bar is current
        wait_idle(page)
        old_sid = page.evaluate("() => window.__attnlabGuard.sid")

        server.stop(signal.SIGKILL)  # no goodbye to the browser
        overlay = page.locator("#attnlab-connection")
        expect(overlay).to_be_visible(timeout=30_000)
        expect(overlay).to_contain_text(table(lang)["conn.title"])
        # Streamlit's own "Connection error" dialog comes up while the server is away: it stays hidden
        page.wait_for_function("() => !!document.querySelector('[data-testid=stDialog]')", timeout=60_000)
        expect(page.locator("[data-testid=stDialog]:visible")).to_have_count(0)
        expect(page.get_by_text(re.compile("restart it in your terminal|not responding")).locator("visible=true")
               ).to_have_count(0)
        expect(overlay).to_be_visible()
        on_top = page.evaluate("() => { const e = document.elementFromPoint(innerWidth / 2, innerHeight / 2);"
                               " return e && e.closest('#attnlab-connection') ? 'yes'"
                               " : (e ? e.outerHTML.slice(0, 200) : 'none'); }")
        assert on_top == "yes", f"the app's message is not on top of the page: {on_top}"

        server = serve.start(port=server.port, log=log, append=True)  # the same address: the page reconnects
        server.wait(90)
        # a new session has drawn the page (until then the old page's elements are still on screen)
        page.wait_for_function("(old) => window.__attnlabGuard && window.__attnlabGuard.sid !== old", arg=old_sid,
                               timeout=90_000)
        wait_idle(page)
        expect(token_box(page)).to_have_value(TOKENS, timeout=60_000)  # it started from the current link
        expect(overlay).to_have_count(0, timeout=30_000)
        assert "causal=1" in page.url and "opened" in page.url.replace("+", " ")
        wait_z(page, PG_WEIGHTS, "z.length === 7 && z[0][1] === 0", timeout=60_000)
    finally:
        server.stop()
