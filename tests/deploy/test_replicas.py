"""Two replicas behind nginx (deploy/nginx.conf): affinity, websockets through the proxy, state kept.

A Streamlit session lives in one replica's memory: its websocket, its reconnects, its media files and
uploads must reach that replica. The proxy pins each browser to a replica with a cookie it issues
itself (deploy/nginx.conf); these tests check that on a real server pair with Debian's nginx and
the system Chromium.
"""

from __future__ import annotations

import re
import time
import urllib.request
from collections import Counter

import pytest
from playwright.sync_api import expect, sync_playwright

from bench.serve import healthy
from tests.browser.conftest import CHROMIUM_ARGS, chromium_path, wait_idle
from tests.browser.helpers import PG_WEIGHTS, wait_z

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROUTE = "attnlab_route"
TOKENS = "the students share one server"


def metrics(url: str) -> dict:
    """Streamlit's own session counters (/_stcore/metrics): connect / reconnect / disconnect, active."""
    text = urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'^session_events_total\{type="(\w+)"\}\s+(\S+)', line)
        if m:
            out[m.group(1)] = int(float(m.group(2)))
        elif line.startswith("active_sessions "):
            out["active"] = int(float(line.split()[1]))
    return out


def route_cookie(resp) -> str:
    """The proxy's Set-Cookie in a response ("" without one; Streamlit sets its own XSRF cookie too)."""
    return next((c for c in resp.headers.get_all("Set-Cookie") or [] if c.startswith(ROUTE + "=")), "")


def token_box(page):
    """The token text box, by its label (its widget key is being renamed)."""
    return page.get_by_role("textbox", name=re.compile(r"^Tokens"))


def expect_tokens(page, text: str) -> None:
    """The token box shows text; on the concept pages it sits in a collapsed expander: open them."""
    if token_box(page).count() == 0:
        for summary in page.locator("[data-testid='stExpander'] details:not([open]) > summary").all():
            summary.click()
    expect(token_box(page)).to_have_value(text)


def test_both_replicas_answer_and_the_proxy_spreads_new_visitors_but_pins_a_cookie(replicas, proxy):
    for r in replicas:
        assert healthy(r.url), f"replica {r.addr} is not healthy"
    # 24 visitors without a cookie: each is given a route cookie, and between them both replicas serve
    cookies = []
    for i in range(24):
        with urllib.request.urlopen(f"{proxy.url}/_stcore/health?visitor={i}", timeout=10) as resp:
            assert resp.read().strip() == b"ok"
            cookies.append(route_cookie(resp))
    assert all(c.startswith(ROUTE + "=") and "HttpOnly" in c for c in cookies), cookies[:3]
    served = {x["upstream"] for x in proxy.lines_with("visitor=", 24)}
    assert served == {r.addr for r in replicas}, f"new visitors reached {served}"
    # one visitor with a cookie: always the same replica, and no new cookie
    route = cookies[0].split(";")[0]
    for i in range(8):
        req = urllib.request.Request(f"{proxy.url}/_stcore/health?pinned={i}", headers={"Cookie": route})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.read().strip() == b"ok"
            assert route_cookie(resp) == "", "a visitor with a route was given another"
    pinned = [x["upstream"] for x in proxy.lines_with("pinned=", 8)]
    assert len(pinned) == 8 and len(set(pinned)) == 1, pinned


def test_a_browser_keeps_its_replica_and_its_tokens_across_pages_and_a_proxy_reload(replicas, proxy):
    before = {r.addr: metrics(r.url) for r in replicas}
    failed = []
    # the page's own probes for a base path (/Playground/_stcore/health, …/host-config) answer 404 on a
    # direct server too: not a failure of the proxy
    probe = re.compile(r"/[^/]+/_stcore/(health|host-config)$")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1600}, locale="en-US")
            page = ctx.new_page()
            page.on("response", lambda resp: failed.append(f"{resp.status} {resp.url}")
                    if resp.status >= 400 and not (resp.status == 404 and probe.search(resp.url.split("?")[0])) else None)
            page.goto(f"{proxy.url}/Playground")
            wait_idle(page, timeout=90_000)
            box = token_box(page)
            box.fill(TOKENS)
            box.press("Enter")
            wait_z(page, PG_WEIGHTS, f"z.length === {len(TOKENS.split())}")  # the rerun has drawn the new tokens
            wait_idle(page)
            expect(box).to_have_value(TOKENS)

            # to another page and back with the sidebar links: the server redraws the token box from the session
            sidebar = page.get_by_test_id("stSidebar")
            sidebar.get_by_role("link", name=re.compile(r"Masks")).first.click()
            expect(page.locator("h1").first).to_contain_text("Masks", timeout=60_000)
            wait_idle(page)
            expect_tokens(page, TOKENS)
            sidebar.get_by_role("link", name=re.compile(r"Playground")).first.click()
            expect(page.locator("h1").first).to_contain_text("Playground", timeout=60_000)
            wait_idle(page)
            expect_tokens(page, TOKENS)

            route = next(c["value"] for c in ctx.cookies() if c["name"] == ROUTE)
            mine = [x for x in proxy.log_lines() if x["route"] == route]
            upstreams = Counter(x["upstream"] for x in mine)
            assert len(upstreams) == 1, f"one browser session reached several replicas: {upstreams}"
            home = next(iter(upstreams))
            other = next(r for r in replicas if r.addr != home)

            # a proxy reload during the lesson: the old worker drops the websocket, the page reconnects
            # with its session id, and the cookie brings it back to the replica that holds the session
            ours = next(r for r in replicas if r.addr == home)
            proxy.reload()
            deadline = time.monotonic() + 30
            while metrics(ours.url).get("reconnect", 0) <= before[home].get("reconnect", 0):
                assert time.monotonic() < deadline, "the page did not reconnect within 30 s of the proxy reload"
                time.sleep(0.5)
            wait_idle(page)
            sidebar.get_by_role("link", name=re.compile(r"Masks")).first.click()
            expect(page.locator("h1").first).to_contain_text("Masks", timeout=60_000)
            wait_idle(page)
            expect_tokens(page, TOKENS)
            ctx.close()
        finally:
            browser.close()

    # nginx logs a websocket when it closes: the first at the reload, the second when the browser closed
    deadline = time.monotonic() + 10
    while True:
        mine = [x for x in proxy.log_lines() if x["route"] == route]
        sockets = [x for x in mine if x["status"] == "101" and x["request"].startswith("GET /_stcore/stream")]
        if len(sockets) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert {x["upstream"] for x in mine} == {home}, Counter(x["upstream"] for x in mine)
    assert len(sockets) >= 2, f"expected the websocket before and after the reload through the proxy: {sockets}"
    assert metrics(other.url).get("connect", 0) == before[other.addr].get("connect", 0), \
        "a session was opened on the other replica"
    assert not failed, f"failed responses through the proxy: {failed[:5]}"
