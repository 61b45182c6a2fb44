"""Real browser: the score functions page on a real server."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

import core
from core import tokens
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z

C18_X = tokens.c18_embedding()


def test_score_functions_page(server_url, new_page):
    page = new_page(f"{server_url}/Score_functions")
    W = wait_z(page, state.item(state.SCORE_FUNCTIONS.weights, "cosine"), "z.length === 4")
    ref = core.attention(C18_X, C18_X, C18_X, score="cosine").weights
    np.testing.assert_allclose(W, ref, atol=6e-4)
    expect(page.get_by_text("Why divide by √d_k")).to_be_visible()
    plots = css(state.SCORE_FUNCTIONS.exp_var) + " .js-plotly-plot"
    page.wait_for_function(f"() => document.querySelectorAll('{plots}').length >= 1",
                           timeout=30_000)
    shot(page, "score-functions")
