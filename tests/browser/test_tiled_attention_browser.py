"""Real browser: the tiled-attention page replays its tiles with the ← → keys."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from ui import state
from ui.state import css_class as css

from .conftest import ARTIFACTS, wait_idle
from .helpers import wait_z

pytestmark = pytest.mark.browser
KEYS = state.TILED_ATTENTION


def test_arrow_keys_walk_the_tiles(server_url, new_page):
    page = new_page(f"{server_url}/Tiled_attention", height=1600)
    wait_z(page, KEYS.tile, "z.flat().reduce((a, b) => a + b, 0) === 1")
    page.locator(css(KEYS.step_next) + " button").first.click()
    wait_z(page, KEYS.tile, "z.flat().reduce((a, b) => a + b, 0) === 2")
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    wait_idle(page)  # the rerun has ended: the key listener is mounted again
    page.keyboard.press("ArrowRight")
    wait_z(page, KEYS.tile, "z.flat().reduce((a, b) => a + b, 0) === 3")
    wait_idle(page)  # the rerun has ended: the key listener is mounted again
    page.keyboard.press("ArrowLeft")
    wait_z(page, KEYS.tile, "z.flat().reduce((a, b) => a + b, 0) === 2")
    expect(page.get_by_text("Tile 2 of 6")).to_be_visible()
    wait_idle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "tiled-attention-tile2.png"))
