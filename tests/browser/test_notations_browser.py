"""Real browser: the notations page on a real server."""

from __future__ import annotations

from playwright.sync_api import expect

import core
from core import tokens
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z

C18_X = tokens.c18_embedding()


def test_notations_selecting_a_cell_highlights_its_twin(server_url, new_page):
    page = new_page(f"{server_url}/Notations")
    wait_z(page, state.item(state.NOTATIONS.col, "weights"), "z.length === 4")
    page.locator(css(state.item(state.NOTATIONS.row, "weights")) + ' td[data-i="3"][data-j="1"]').click()
    twin = page.locator(css(state.item(state.NOTATIONS.col, "weights")) + ' td[data-i="1"][data-j="3"]')
    expect(twin).to_have_class("mark", timeout=30_000)
    expect(page.locator(css(state.item(state.NOTATIONS.row, "weights")) + ' td[data-i="3"][data-j="1"]')).to_have_class("mark")
    assert page.locator(css(state.item(state.NOTATIONS.col, "weights")) + " td.mark").count() == 1
    expect(page.get_by_text("weights[3, 1] in row notation")).to_be_visible()
    # the twin holds the same number
    cell = page.locator(css(state.item(state.NOTATIONS.row, "weights")) + ' td[data-i="3"][data-j="1"]')
    assert twin.text_content() == cell.text_content()
    ref = core.attention(C18_X, C18_X, C18_X).weights
    assert abs(float(twin.text_content()) - float(ref[3, 1])) < 6e-4
    shot(page, "notations")
