"""Real browser: the KV-cache page's step-through (buttons and ← → keys) shows core's rows."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

import core
from core import tokens
from ui import state
from ui.state import css_class as css

from .conftest import ARTIFACTS, wait_idle
from .helpers import wait_z

pytestmark = pytest.mark.browser
KEYS = state.KV_CACHE
C18 = list(tokens.C18_TOKENS)


def full_rows() -> np.ndarray:
    """Head 0 … H−1 of full causal attention with the page's default shapes (d 8, H 2, G 2, no RoPE)."""
    X = tokens.embed(C18, 8, seed=0)
    shapes = {"W_q": (8, 8), "W_k": (8, 8), "W_v": (8, 8), "W_o": (8, 8)}
    W = {n: tokens.projection(*s, seed=0, name=f"kv.{n}") for n, s in shapes.items()}
    return core.multi_head_attention(X[None], n_heads=2, n_kv_heads=2, mask=core.masks.causal(4), **W).weights[0].numpy()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_step_buttons_and_arrow_keys_move_the_decoding_step(server_url, new_page, lang):
    page = new_page(f"{server_url}/KV_cache?lang={lang}", locale="ko-KR" if lang == "ko" else "en-US", height=1400)
    ref = full_rows()
    wait_z(page, KEYS.new_row, "z.length === 2 && z[0].length === 1")
    page.locator(css(KEYS.step_next) + " button").first.click()
    W = wait_z(page, KEYS.new_row, "z[0].length === 2")
    np.testing.assert_allclose(W, ref[:, 1, :2], atol=6e-4)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")  # not in a text box
    wait_idle(page)  # the rerun has ended: the key listener is mounted again
    page.keyboard.press("ArrowRight")
    wait_z(page, KEYS.new_row, "z[0].length === 3")
    wait_idle(page)  # the rerun has ended: the key listener is mounted again
    page.keyboard.press("ArrowRight")
    W = wait_z(page, KEYS.new_row, "z[0].length === 4")
    np.testing.assert_allclose(W, ref[:, 3, :], atol=6e-4)
    wait_idle(page)  # the rerun has ended: the key listener is mounted again
    page.keyboard.press("ArrowLeft")
    wait_z(page, KEYS.new_row, "z[0].length === 3")
    expect(page.locator("strong", has_text="t = 2")).to_be_visible()  # three tokens fed in: step 2, counted from 0
    wait_idle(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"kv-cache-step3-{lang}.png"))
