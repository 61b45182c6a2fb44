"""Real browser: the seq2seq page opens on a model trained ahead of time — nothing to wait for."""

from __future__ import annotations

import numpy as np
import torch
from playwright.sync_api import expect

from core import seq2seq, seq2seq_store
from ui import state
from ui.state import css_class as css

from .helpers import shot, wait_z


def test_seq2seq_shows_a_shipped_model_at_once(server_url, new_page):
    page = new_page(f"{server_url}/Seq2seq")
    page.locator(css(state.SEQ2SEQ.task)).get_by_text("copy").click()
    expect(page.get_by_text("Trained ahead of time (seed 0")).to_be_visible(timeout=60_000)
    box = page.locator(css(state.SEQ2SEQ.input) + " input")
    box.fill("a b c d e")
    box.press("Enter")
    W = wait_z(page, state.SEQ2SEQ.map, "z.length === 5", timeout=60_000)
    model = seq2seq_store.shipped("copy", "additive")  # the same file the page loaded
    task = seq2seq.get_task("copy")
    ref = seq2seq.greedy_decode(model.params, model.cfg, torch.tensor([task.src_ids("a b c d e".split())]), 5)
    np.testing.assert_allclose(W, np.round(ref.attention_map[0].numpy(), 2), atol=0.006)
    shot(page, "seq2seq")
