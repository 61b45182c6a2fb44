"""Real browser: the multi head page on a real server."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

import core
from core import tokens
from ui import state

from .helpers import shot, wait_z

C18 = list(tokens.C18_TOKENS)


def test_multihead_page(server_url, new_page):
    page = new_page(f"{server_url}/Multi-head")
    W = wait_z(page, state.item(state.MULTI_HEAD.grid, 1), "z.length === 4")
    X = tokens.embed(C18, 8, seed=0)[None]
    Ws = {n: tokens.projection(8, 8, seed=0, name=f"mh.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    ref = core.multi_head_attention(X, n_heads=2, **Ws).weights[0, 1]
    np.testing.assert_allclose(W, ref, atol=6e-3)
    expect(page.get_by_text("the two forms agree")).to_be_visible()
    shot(page, "multi-head")
