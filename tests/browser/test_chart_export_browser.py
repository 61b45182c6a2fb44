"""Real browser: a chart's "SVG" and "PNG" buttons save plotly.js's own picture of the chart on
screen (#20): its title, its Korean labels as text, the shipped Korean font inside the SVG — this
browser has no CJK font, so the same label drawn without the font inside looks different — and the
PNG at 2× the chart's size, drawn from that SVG."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from ui import state
from ui.i18n import table
from ui.state import css_class as css

from .conftest import ARTIFACTS, wait_idle
from .helpers import DOWNLOAD_WAIT

pytestmark = pytest.mark.browser
KEYS = state.KV_CACHE


def test_a_chart_saves_as_plotlys_svg_and_png_with_the_korean_font_inside(server_url, chromium):
    from PIL import Image

    ctx = chromium.new_context(viewport={"width": 1500, "height": 1800}, locale="ko-KR", accept_downloads=True)
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/KV_cache?lang=ko")
        wait_idle(page)
        bar = page.locator(css(state.item(KEYS.cost, "export")))
        expect(bar.get_by_role("button", name="SVG")).to_be_visible(timeout=60_000)
        chart = page.locator(css(KEYS.cost) + " .js-plotly-plot svg.main-svg").first
        expect(chart).to_be_visible()
        width = round(chart.bounding_box()["width"])
        with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
            bar.get_by_role("button", name="SVG").click()
        svg = d.value.path().read_text(encoding="utf-8")
        with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
            bar.get_by_role("button", name="PNG").click()
        png = Image.open(d.value.path())
        png.load()
    finally:
        ctx.close()
    ko = table("ko")
    assert 'class="main-svg"' in svg  # plotly's own drawing, not one written on the server
    for key in ("kv.cost.title", "kv.cost.x", "kv.cost.cached"):  # title, axis title, legend: text in the picture
        assert ko[key] in svg, key
    assert "@font-face" in svg and "data:font/woff2;base64," in svg  # the shipped font is inside
    w, h = (int(float(v)) for v in re.search(r'<svg[^>]*\bwidth="([\d.]+)"[^>]*\bheight="([\d.]+)"', svg).groups())
    assert w == width  # the chart's size on screen
    assert png.format == "PNG" and png.size == (2 * w, 2 * h)
    bare = re.sub(r"<style>@font-face.*?</style>", "", svg, flags=re.S)
    view = chromium.new_page(viewport={"width": w + 20, "height": h + 20})
    try:
        shots = []
        for name, text in (("with-font", svg), ("without-font", bare)):
            view.set_content(f"<!doctype html><html><body style='margin:0'>{text}</body></html>")
            view.wait_for_function("() => document.fonts.status === 'loaded'")
            label = view.locator("svg text", has_text=ko["kv.cost.x"]).first
            shots.append(label.screenshot())
            ARTIFACTS.mkdir(exist_ok=True)
            view.screenshot(path=str(ARTIFACTS / f"chart-svg-ko-{name}.png"))
        assert shots[0] != shots[1]  # with the font the label is drawn differently from the fallback boxes
    finally:
        view.close()
    ARTIFACTS.mkdir(exist_ok=True)
    png.save(ARTIFACTS / "chart-png-ko.png")
