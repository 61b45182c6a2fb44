"""Real browser: the language-model page (SmolLM2-135M) on a real server — both languages at 1280×720 and
on a 390×844 phone with nothing wider than the screen, writing by button and by the → key, HTML typed as text."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from core.models import decoder
from ui import state
from ui.i18n import table
from ui.state import css_class as css

from .conftest import ARTIFACTS, wait_idle

pytestmark = pytest.mark.browser

try:
    decoder.gguf_path()
except decoder.ModelNotInstalled:
    pytest.skip(f"the model package is not installed ({decoder.INSTALL_HINT})", allow_module_level=True)

KEYS = state.LANGUAGE_MODEL


def open_at(chromium, url: str, width: int, height: int, lang: str = "en"):
    ctx = chromium.new_context(viewport={"width": width, "height": height}, locale="ko-KR" if lang == "ko" else "en-US")
    page = ctx.new_page()
    page.dialogs = []
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(url)
    wait_idle(page, timeout=300_000)  # the first visit loads the model (seconds; minutes on a loaded 2-core machine)
    expect(page.locator(css(KEYS.bars_model)).get_by_text("␣Paris")).to_be_visible(timeout=120_000)
    return ctx, page


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("width, height", [(1280, 720), (390, 844)])
def test_both_languages_on_a_laptop_and_a_phone(server_url, chromium, width, height, lang):
    ctx, page = open_at(chromium, f"{server_url}/Language_model?lang={lang}&model=smollm2&prompt=The+capital+of+France+is",
                        width, height, lang)  # the Korean page opens on Gemma 3: SmolLM2's page asked for by its link
    try:
        tr = table(lang)
        expect(page.get_by_role("heading", name=tr["page.language_model.title"])).to_be_visible()
        expect(page.get_by_role("tab", name=tr["lm.tab.heads"])).to_be_visible()
        page.screenshot(path=str(ARTIFACTS.joinpath(f"language-model-{width}x{height}-{lang}.png")))
        overflow = page.evaluate("() => document.documentElement.scrollWidth")
        assert overflow <= width + 1, overflow  # nothing cut off sideways: wide maps scroll in their own box
        button = page.get_by_role("button", name=tr["lm.one"])  # the visible one (Streamlit may keep a hidden copy)
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, box
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        ctx.close()


def test_writing_by_button_and_arrow_key_and_html_as_text(server_url, chromium):
    ARTIFACTS.mkdir(exist_ok=True)
    ctx, page = open_at(chromium, f"{server_url}/Language_model", 1500, 1600)
    try:
        page.get_by_role("slider", name="Temperature T").focus()
        page.keyboard.press("Home")  # temperature 0: greedy
        # the run that applies it has drawn its sentence (a click before that run could be lost in it on a busy machine)
        expect(page.get_by_text(table("en")["lm.greedy"])).to_be_visible(timeout=120_000)
        wait_idle(page)
        page.get_by_role("button", name=table("en")["lm.one"]).click()
        code = page.locator("[data-testid=stCode]").first
        expect(code).to_contain_text("The capital of France is Paris", timeout=120_000)
        page.evaluate("() => document.activeElement && document.activeElement.blur()")  # not in a text box
        page.keyboard.press("ArrowRight")
        expect(page.get_by_text(table("en")["lm.written"].replace("**", "").format(n=2))).to_be_visible(timeout=120_000)
        page.wait_for_url("**written=2**", timeout=120_000)  # the writing part reran alone, and wrote the link
        page.screenshot(path=str(ARTIFACTS / "language-model-writing.png"))
        box = page.locator(css(KEYS.text) + " textarea")
        box.fill("<b>bold</b> and <img src=x onerror=alert(1)>")
        box.press("Control+Enter")
        wait_idle(page, timeout=120_000)
        expect(page.get_by_text("<img", exact=False).first).to_be_visible(timeout=120_000)
        assert page.locator("[data-testid=stMain] b", has_text="bold").count() == 0
        assert page.locator("[data-testid=stMain] img[src=x]").count() == 0
        assert not page.dialogs
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        ctx.close()


SHOTS = Path("/tmp/shots54")


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("model", ["smollm2", "gemma3"])
def test_each_model_in_both_languages_on_a_laptop_and_a_phone(server_url, chromium, model, lang):
    """Issue 54: each model's page (Gemma 3 on its mechanism tab with a narrowed local window: its blocks, its
    window's maps) at 1280×720 and 390×844 — nothing wider than the screen, no exception, axe 0 serious/critical."""
    from .a11y_audit import audit, settle

    extra = "&tab=mechanism&local=4" if model == "gemma3" else ""
    ctx = chromium.new_context(viewport={"width": 1280, "height": 720}, locale="ko-KR" if lang == "ko" else "en-US")
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Language_model?lang={lang}&model={model}{extra}")
        wait_idle(page, timeout=300_000)
        if model == "gemma3":  # its own part of the mechanism tab, the narrowed window's maps drawn
            expect(page.get_by_text(table(lang)["lm.layers"]).first).to_be_visible(timeout=180_000)
            expect(page.locator(css(KEYS.local_maps))).to_be_visible(timeout=180_000)
        else:
            expect(page.locator(css(KEYS.bars_model))).to_be_visible(timeout=120_000)
        for width, height in ((1280, 720), (390, 844)):
            page.set_viewport_size({"width": width, "height": height})
            settle(page, lang, timeout=180_000)
            SHOTS.mkdir(exist_ok=True)
            page.screenshot(path=str(SHOTS / f"lm-{model}-{lang}-{width}x{height}.png"))
            if model == "gemma3":  # the narrowed window's maps, scrolled into view
                page.locator(css(KEYS.local_maps)).scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"lm-{model}-{lang}-{width}x{height}-window.png"))
            assert page.evaluate("() => document.documentElement.scrollWidth") <= width + 1
            assert page.locator('[data-testid="stException"]').count() == 0
            own, _ = audit(page)
            assert not own, "\n".join(own)
        if model == "gemma3":  # the heads tab: QK-norm's q and k of the open head, drawn
            page.get_by_role("tab", name=table(lang)["lm.tab.heads"]).click()
            qk = page.locator(css(state.item(KEYS.qk_maps, "k_normed")))
            expect(qk.locator("[data-testid=stPlotlyChart]")).to_be_visible(timeout=180_000)
            settle(page, lang, timeout=180_000)  # the tab's run has ended: the map is not redrawn under the scroll
            qk.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / f"lm-{model}-{lang}-390x844-qk.png"))
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 390 + 1
    finally:
        ctx.close()
