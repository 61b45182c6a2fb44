"""Real browser: the self vs cross page on a real server."""

from __future__ import annotations

from playwright.sync_api import expect

from core import tokens
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z

C18 = list(tokens.C18_TOKENS)


def test_self_vs_cross_page_switches_shapes(server_url, new_page):
    page = new_page(f"{server_url}/Self_vs_cross")
    wait_z(page, state.SELF_VS_CROSS.weights, "z.length === 4 && z[0].length === 4")
    page.locator(css(state.SCENARIO.mode)).get_by_text("Cross").click()
    src = page.locator(css(state.SCENARIO.source) + " input")
    src.fill("We see the sky today")
    src.press("Enter")
    W = wait_z(page, state.SELF_VS_CROSS.weights, "z.length === 4 && z[0].length === 5")
    assert W.shape == (4, 5)
    expect(page.get_by_text("Output: 4 vectors")).to_be_visible()
    shot(page, "self-vs-cross")
