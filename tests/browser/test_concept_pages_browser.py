"""The concept pages of issue 4 in a real browser, each with a screenshot artifact."""

from __future__ import annotations

import numpy as np
from playwright.sync_api import expect

import core
from core import masks, tokens

from .test_playground_browser import shot, wait_z

C18_X = tokens.c18_embedding()


def test_notations_selecting_a_cell_highlights_its_twin(server_url, new_page):
    page = new_page(f"{server_url}/Notations")
    wait_z(page, "nt-col-weights", "z.length === 4")
    page.locator('.st-key-nt-row-weights td[data-i="3"][data-j="1"]').click()
    twin = page.locator('.st-key-nt-col-weights td[data-i="1"][data-j="3"]')
    expect(twin).to_have_class("mark", timeout=30_000)
    expect(page.locator('.st-key-nt-row-weights td[data-i="3"][data-j="1"]')).to_have_class("mark")
    assert page.locator(".st-key-nt-col-weights td.mark").count() == 1
    expect(page.get_by_text("weights[3, 1] in row notation")).to_be_visible()
    # the twin holds the same number
    assert twin.text_content() == page.locator('.st-key-nt-row-weights td[data-i="3"][data-j="1"]').text_content()
    ref = core.attention(C18_X, C18_X, C18_X).weights
    assert abs(float(twin.text_content()) - float(ref[3, 1])) < 6e-4
    shot(page, "notations")


def test_score_functions_page(server_url, new_page):
    page = new_page(f"{server_url}/Score_functions")
    W = wait_z(page, "sc-weights-cosine", "z.length === 4")
    ref = core.attention(C18_X, C18_X, C18_X, score="cosine").weights
    np.testing.assert_allclose(W, ref, atol=6e-4)
    expect(page.get_by_text("Why divide by √d_k")).to_be_visible()
    page.wait_for_function("() => document.querySelectorAll('.st-key-sc-exp-var .js-plotly-plot').length === 1",
                           timeout=30_000)
    shot(page, "score-functions")


def test_masks_page(server_url, new_page):
    page = new_page(f"{server_url}/Masks")
    W = wait_z(page, "mk-mk-step-weights", "z.length === 4")
    ref = core.attention(C18_X, C18_X, C18_X, mask=masks.causal(4)).weights
    np.testing.assert_allclose(W, ref, atol=6e-4)
    # click a cell of the mask map: it blocks that (query, key) pair everywhere below
    page.locator('.st-key-mk-chart-mask td[data-i="2"][data-j="0"]').click()
    W = wait_z(page, "mk-mk-step-weights", "z[2][0] === 0 && z[3][3] > 0")
    m = masks.none(4)
    m[2, 0] = False
    np.testing.assert_allclose(W, core.attention(C18_X, C18_X, C18_X, mask=m).weights, atol=6e-4)
    expect(page.locator('.st-key-mk-full-naive td[data-i="0"]').first).to_have_text("NaN")
    shot(page, "masks")
