"""Real browser: the transformer block page on a real server."""

from __future__ import annotations

from playwright.sync_api import expect

from ui import state

from .helpers import shot, wait_z


def test_transformer_block_page(server_url, new_page):
    page = new_page(f"{server_url}/Transformer_block")
    wait_z(page, state.item(state.TRANSFORMER_BLOCK.map, "post", "y"), "z.length === 4 && z[0].length === 8")
    wait_z(page, state.item(state.TRANSFORMER_BLOCK.map, "pre", "y"), "z.length === 4 && z[0].length === 8")
    expect(page.get_by_text("Residual shapes")).to_be_visible()
    shot(page, "transformer-block")
