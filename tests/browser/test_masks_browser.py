"""Real browser: the masks page on a real server."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

import core
from core import masks, tokens
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z

C18_X = tokens.c18_embedding()


def test_masks_page(server_url, new_page):
    page = new_page(f"{server_url}/Masks")
    W = wait_z(page, state.item(state.MASKS.step, "weights"), "z.length === 4")
    ref = core.attention(C18_X, C18_X, C18_X, mask=masks.causal(4)).weights
    np.testing.assert_allclose(W, ref, atol=6e-4)
    # click a cell of the mask map: it blocks that (query, key) pair everywhere below
    page.locator(css(state.MASKS.chart) + ' td[data-i="2"][data-j="0"]').click()
    W = wait_z(page, state.item(state.MASKS.step, "weights"), "z[2][0] === 0 && z[3][3] > 0")
    m = masks.none(4)
    m[2, 0] = False
    np.testing.assert_allclose(W, core.attention(C18_X, C18_X, C18_X, mask=m).weights, atol=6e-4)
    expect(page.locator(css(state.MASKS.full_naive) + ' td[data-i="0"]').first).to_have_text("NaN")
    shot(page, "masks")
