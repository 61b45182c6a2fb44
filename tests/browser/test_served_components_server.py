"""The map components' code served as a file (ui/widgets/assets.py): each map element the real server sends carries
its data and a loader, not the 37 KB of drawing code; the server answers the loader's address with exactly that code;
in Chromium the maps draw from it, and a load that fails says so in the learner's language."""

from __future__ import annotations

import asyncio
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
import websockets
from playwright.sync_api import expect
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from attention_lab.strings import translate
from ui.widgets.assets import SERVED, SERVED_DIR, joined

from .conftest import settled
from .helpers import PG_WEIGHTS, wait_z

pytestmark = pytest.mark.browser


def test_each_served_file_is_its_component_files_joined():
    for name in SERVED:
        assert (SERVED_DIR / f"{name}.js").read_text(encoding="utf-8") == joined(name), (
            f"static/components/{name}.js is out of date: python scripts/make_components.py")


async def playground_components(url: str) -> list:
    """The component elements of one finished run of the Playground, as the server sent them."""
    async with websockets.connect(url.replace("http", "ws") + "/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=60) as ws:
        back = BackMsg()
        back.rerun_script.page_name = "Playground"
        await ws.send(back.SerializeToString())
        found = []
        async with asyncio.timeout(120):
            async for raw in ws:
                msg = ForwardMsg()
                msg.ParseFromString(raw)
                if msg.WhichOneof("type") == "delta" and msg.delta.new_element.WhichOneof("type") == "bidi_component":
                    found.append(msg.delta.new_element.bidi_component)
                elif msg.WhichOneof("type") == "script_finished":
                    return found
    raise AssertionError("no run finished")


def test_a_map_element_carries_a_loader_and_the_server_answers_its_address_with_the_code(server_url):
    with ThreadPoolExecutor(1) as pool:  # its event loop in a thread of its own (a Playwright test may hold one here)
        found = pool.submit(lambda: asyncio.run(playground_components(server_url))).result(timeout=300)
    maps = [c for c in found if c.component_name.endswith(("attention_lab_maps", "attention_lab_heatmap"))]
    assert maps, "the Playground drew no map"
    for c in maps:
        name = "maps" if c.component_name.endswith("maps") else "heatmap"
        assert len(c.js_content) < 2048, len(c.js_content)  # the drawing code is 35-37 KB
        assert "function drawMap" not in c.js_content
        address = c.js_content.split('new URL("', 1)[1].split('"', 1)[0]
        assert address.startswith(f"app/static/components/{name}.js?v=")
        with urllib.request.urlopen(f"{server_url}/{address}", timeout=30) as r:
            assert r.status == 200
            assert "javascript" in r.headers["Content-Type"]
            assert r.read().decode("utf-8") == joined(name)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_maps_draw_from_the_served_code_and_a_failed_load_says_so(server_url, chromium, lang):
    ctx = chromium.new_context(viewport={"width": 1500, "height": 2600})
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang={lang}")
        wait_z(page, PG_WEIGHTS, "z.length === 4")  # drawn by the served code
        settled(page)
        assert page.locator("[data-al-loading]").count() == 0
        assert page.locator("p.al-load-failed").count() == 0
        blocked = chromium.new_context(viewport={"width": 1500, "height": 2600})
        try:
            blocked.route("**/app/static/components/**", lambda route: route.abort())
            page = blocked.new_page()
            page.goto(f"{server_url}/Playground?lang={lang}")
            note = page.locator("p.al-load-failed").first
            expect(note).to_have_text(translate("a11y.map.load_failed", lang), timeout=60_000)
            expect(note).to_have_attribute("role", "alert")
            # The frame sets <html lang> with a component of its own, which may run after the load has failed (it
            # did in a CI run: the Korean page said it in English). The note follows the attribute.
            other = "en" if lang == "ko" else "ko"
            page.evaluate(f"document.documentElement.lang = '{other}'")
            expect(note).to_have_text(translate("a11y.map.load_failed", other))
            page.evaluate(f"document.documentElement.lang = '{lang}'")
            expect(note).to_have_text(translate("a11y.map.load_failed", lang))
        finally:
            blocked.close()
    finally:
        ctx.close()
