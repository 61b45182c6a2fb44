"""Real browser: the seq2seq page on a real server."""

from __future__ import annotations

from playwright.sync_api import expect

from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z


def test_seq2seq_training_in_the_browser(server_url, new_page):
    page = new_page(f"{server_url}/Seq2seq")
    page.locator(css(state.SEQ2SEQ.task)).get_by_text("copy").click()
    page.get_by_role("button", name="Train the model").click()
    expect(page.get_by_text("Trained:")).to_be_visible(timeout=120_000)
    W = wait_z(page, state.SEQ2SEQ.map, "z.length >= 2", timeout=60_000)
    assert abs(W.sum(axis=1) - 1).max() < 0.03  # each output step's weights over the input sum to 1 (2 decimals shown)
    shot(page, "seq2seq")
