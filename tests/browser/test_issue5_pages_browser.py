"""The multi-head, self-vs-cross and position pages in a real browser, with screenshots."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

import core
from core import lab, tokens

from .test_playground_browser import shot, wait_z

C18 = list(tokens.C18_TOKENS)


def test_multihead_page(server_url, new_page):
    page = new_page(f"{server_url}/Multi-head")
    W = wait_z(page, "mh-grid-1", "z.length === 4")
    X = tokens.embed(C18, 8, seed=0)[None]
    Ws = {n: tokens.projection(8, 8, seed=0, name=f"mh.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    ref = core.multi_head_attention(X, n_heads=2, **Ws).weights[0, 1]
    np.testing.assert_allclose(W, ref, atol=6e-3)
    expect(page.get_by_text("the two forms agree")).to_be_visible()
    shot(page, "multi-head")


def test_self_vs_cross_page_switches_shapes(server_url, new_page):
    page = new_page(f"{server_url}/Self_vs_cross")
    wait_z(page, "sx-weights", "z.length === 4 && z[0].length === 4")
    page.locator(".st-key-pg-mode").get_by_text("Cross").click()
    src = page.locator(".st-key-pg-source input")
    src.fill("We see the sky today")
    src.press("Enter")
    W = wait_z(page, "sx-weights", "z.length === 4 && z[0].length === 5")
    assert W.shape == (4, 5)
    expect(page.get_by_text("Output: 4 vectors")).to_be_visible()
    shot(page, "self-vs-cross")


def test_position_page_permutation(server_url, new_page):
    page = new_page(f"{server_url}/Position")
    box = page.locator(".st-key-ps-perm input")
    box.fill("1 0 3 2")
    box.press("Enter")
    X = tokens.embed(C18, 8, seed=0)
    Ws = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    ref = lab.permutation_check(X, [1, 0, 3, 2], **Ws).sa_px.numpy()
    W = wait_z(page, "ps-sa_px-False", f"z.length === 4 && Math.abs(z[0][0] - ({ref[0, 0]:.6f})) < 6e-4")
    np.testing.assert_allclose(W, ref, atol=6e-4)
    expect(page.get_by_text("equal. Shuffling the input")).to_be_visible()
    shot(page, "position")
