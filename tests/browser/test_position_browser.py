"""Real browser: the position page on a real server."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

from core import lab, tokens
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z

C18 = list(tokens.C18_TOKENS)


def test_position_page_permutation(server_url, new_page):
    page = new_page(f"{server_url}/Position")
    box = page.locator(css(state.POSITION.perm) + " input")
    box.fill("1 0 3 2")
    box.press("Enter")
    X = tokens.embed(C18, 8, seed=0)
    Ws = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    ref = lab.permutation_check(X, [1, 0, 3, 2], **Ws).sa_px.numpy()
    W = wait_z(page, state.item(state.POSITION.sa_px, False), f"z.length === 4 && Math.abs(z[0][0] - ({ref[0, 0]:.6f})) < 6e-4")
    np.testing.assert_allclose(W, ref, atol=6e-4)
    expect(page.get_by_text("equal. Shuffling the input")).to_be_visible()
    shot(page, "position")
