"""Real browser: the Playground in a classroom — one screen at 1280×720, a phone at 390 px, the
step-through (clicks and arrow keys), focused lesson links, the QR code, pictures for slides."""

from __future__ import annotations

import io
import re
from urllib.parse import urlencode

import numpy as np
import pytest
from playwright.sync_api import expect

import core
from core import tokens
from ui import state
from ui.state import css_class as css

from .conftest import ARTIFACTS, settled, wait_idle
from .helpers import DOWNLOAD_WAIT, PG_WEIGHTS, wait_z

KEYS = state.PLAYGROUND
C18_X = tokens.c18_embedding()
# the pipeline's maps: components of their own, or panels of one component (Playwright's CSS pierces shadow roots)
MAPS = "[class*='st-key-playground-pipeline-'] .alhm"


def open_at(chromium, url: str, width: int, height: int, lang: str = "en"):
    ctx = chromium.new_context(viewport={"width": width, "height": height}, locale="ko-KR" if lang == "ko" else "en-US",
                               accept_downloads=True)
    page = ctx.new_page()
    page.goto(url)
    wait_idle(page)
    wait_z(page, PG_WEIGHTS, "z.length >= 1")
    settled(page)
    return ctx, page


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080), (390, 844)])
def test_one_screen_and_a_phone(server_url, chromium, width, height, lang):
    ctx, page = open_at(chromium, f"{server_url}/Playground?lang={lang}", width, height, lang)
    try:
        page.screenshot(path=str(ARTIFACTS / f"classroom-{width}x{height}-{lang}.png"))
        if width == 1280:  # the token box and every cell of the weights map, labels included, without scrolling
            box = page.locator(css(state.SCENARIO.tokens) + " input").bounding_box()
            cells = page.locator(css(PG_WEIGHTS) + " .alhm").bounding_box()
            assert box["y"] + box["height"] <= height and cells["y"] + cells["height"] <= height, (box, cells)
        if width == 390:  # nothing wider than the phone: maps scroll inside their own box
            overflow = page.evaluate("() => document.documentElement.scrollWidth")
            assert overflow <= width + 1, overflow
    finally:
        ctx.close()


def test_step_through_by_click_and_by_arrow_key(server_url, chromium):
    ctx, page = open_at(chromium, f"{server_url}/Playground", 1500, 1400)
    try:
        maps = page.locator(MAPS)
        expect(maps).to_have_count(5)
        page.locator(css(KEYS.step_start) + " button").first.click()
        expect(maps).to_have_count(1, timeout=30_000)
        page.locator(css(KEYS.step_next) + " button").first.click()
        expect(maps).to_have_count(2, timeout=30_000)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # not in a text box
        page.keyboard.press("ArrowRight")
        expect(maps).to_have_count(3, timeout=30_000)
        page.keyboard.press("ArrowRight")
        expect(maps).to_have_count(4, timeout=30_000)
        page.keyboard.press("ArrowLeft")
        expect(maps).to_have_count(3, timeout=30_000)
        expect(page.get_by_text("Step 3 of 6")).to_be_visible()
        page.wait_for_function("() => location.search.includes('step=3')", timeout=30_000)
    finally:
        ctx.close()


def test_a_lesson_link_opens_focused_with_the_same_numbers_and_its_qr_code_decodes(server_url, chromium):
    import zxingcpp
    from PIL import Image

    query = {"causal": "1", "hide": "embed,qkv,score,notation", "panels": "weights,inspector"}
    ctx, page = open_at(chromium, f"{server_url}/Playground?{urlencode(query)}", 1500, 1400)
    try:
        expect(page.locator(MAPS)).to_have_count(1)
        assert page.locator(css(state.SCENARIO.convention)).count() == 0
        assert page.get_by_role("tab", name=re.compile("Q, K, V")).count() == 0
        W = wait_z(page, PG_WEIGHTS, "z.length === 4")
        np.testing.assert_allclose(W, core.attention(C18_X, C18_X, C18_X, mask=core.masks.causal(4)).weights, atol=6e-4)
        page.get_by_role("tab", name=re.compile("Share")).click()
        image = page.locator(".alqr img.code").first
        expect(image).to_be_visible(timeout=30_000)
        page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=image.element_handle())
        settled(page)  # the tab's rerun has finished and the picture no longer moves
        decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(image.screenshot())))
        link = page.locator("[data-testid=stCode]").nth(1).inner_text().strip()
        assert decoded and decoded[0].text == link and "hide=" in link
    finally:
        ctx.close()


def test_the_weights_map_saves_as_png_and_svg_with_its_labels_as_text(server_url, chromium, tmp_path):
    from PIL import Image

    evil = "<b>x</b> 나는 y"
    ctx, page = open_at(chromium, f"{server_url}/Playground?{urlencode({'tok': evil, 'emb': 'random'})}", 1500, 1400)
    try:
        host = page.locator(css(PG_WEIGHTS))  # the weights panel: its picture buttons sit on its title line
        with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
            host.get_by_role("button", name="SVG").click()
        svg = d.value.path().read_text(encoding="utf-8")
        assert "&lt;b&gt;x&lt;/b&gt;" in svg and "<b>" not in svg and "나는" in svg  # labels are text, HTML stays text
        assert re.search(r"<text[^>]*>4 · ", svg) or "weights" in svg.lower()  # the map's title
        with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
            host.get_by_role("button", name="PNG 2×").click()
        png = Image.open(d.value.path())
        width, height = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
        assert png.format == "PNG" and png.size == (2 * width, 2 * height)
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_eight_tokens_all_five_steps_on_one_1920_screen(server_url, chromium, lang):
    """For n ≤ 8 the five pipeline steps fit on one 1920×1080 screen (the issue's item 1)."""
    query = urlencode({"lang": lang, "emb": "random", "tok": "a b c d e f g h"})
    ctx, page = open_at(chromium, f"{server_url}/Playground?{query}", 1920, 1080, lang)
    try:
        wait_z(page, PG_WEIGHTS, "z.length === 8")
        page.screenshot(path=str(ARTIFACTS / f"classroom-1920x1080-n8-{lang}.png"))
        for step in ("scores", "scaled", "masked", "weights", "output"):
            box = page.locator(css(state.item(KEYS.pipeline, step)) + " .alhm").bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= 1080, (step, box)
    finally:
        ctx.close()
