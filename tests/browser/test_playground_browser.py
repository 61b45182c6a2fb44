"""The playground in a real browser against a real server (issue 3, acceptance 3)."""

from __future__ import annotations

import json
import shutil
import subprocess
from urllib.parse import urlencode

import numpy as np
from playwright.sync_api import expect

import core
from core import masks, tokens
from ui import state
from ui.state import css_class as css

from .conftest import settled, wait_idle
from .helpers import GEOM, PG_WEIGHTS, shot, wait_z


# the heatmap component keeps the values it shows on its root element (inside a shadow root)
def open_tab(page, label: str) -> None:
    """Click a setup tab; its controls are drawn by the rerun that the click starts."""
    tab = page.get_by_role("tab", name=label)
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    # the rerun the click started has drawn the tab's controls into its panel
    page.wait_for_function("(tab) => { const p = document.getElementById(tab.getAttribute('aria-controls'));"
                           " return p && p.querySelector('[data-testid]'); }", arg=tab.element_handle())
    settled(page)


def test_type_tokens_then_causal_mask_turns_upper_triangle_to_zero(server_url, new_page):
    page = new_page(f"{server_url}/Playground")
    W = wait_z(page, PG_WEIGHTS, "z.length === 4")
    np.testing.assert_allclose(W, core.attention(tokens.c18_embedding(), tokens.c18_embedding(),
                                                 tokens.c18_embedding()).weights, atol=6e-4)
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    box.fill("the cat sat on the mat")
    box.press("Enter")
    W = wait_z(page, PG_WEIGHTS, "z.length === 6")
    assert W.shape == (6, 6)
    open_tab(page, "④ Mask")
    page.locator(css(state.SCENARIO.causal) + " label").click()
    W = wait_z(page, PG_WEIGHTS, "z.length === 6 && z[0][5] === 0 && z[0][1] === 0")
    assert np.all(W[np.triu_indices(6, 1)] == 0)
    assert W[0, 0] == 1.0
    toks = "the cat sat on the mat".split()
    X, _ = core.lab.c18_lookup(toks, fallback_seed=0)
    np.testing.assert_allclose(W, core.attention(X, X, X, mask=masks.causal(6)).weights, atol=6e-4)
    shot(page, "playground-causal")


def test_clicking_a_weights_cell_moves_the_inspector(server_url, new_page):
    page = new_page(f"{server_url}/Playground")
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    page.locator(css(PG_WEIGHTS) + ' td[data-i="2"][data-j="1"]').click()
    expect(page.locator(css(state.scenario_picker("query")) + " select")).to_have_value("2", timeout=30_000)
    expect(page.locator(css(state.scenario_picker("query")) + " option:checked")).to_have_text("2 사과를")
    wait_idle(page)
    expect(page.locator(css(PG_WEIGHTS) + " tr.hl th.row")).to_have_text("2 사과를")
    alpha = [float(v) for v in page.locator(css(state.PLAYGROUND.fig_alpha) + " .albars .value").all_text_contents()]
    X = tokens.c18_embedding()
    np.testing.assert_allclose(alpha, core.attention(X, X, X).weights[2], atol=6e-4)
    shot(page, "playground-inspector")


def test_picking_a_query_in_the_inspector_moves_it_and_the_highlighted_row(server_url, new_page):
    page = new_page(f"{server_url}/Playground")
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    page.locator(css(state.scenario_picker("query")) + " select").select_option("3")
    expect(page.locator(css(PG_WEIGHTS) + " tr.hl th.row")).to_have_text("3 먹었다", timeout=30_000)
    expect(page.locator(css(state.PLAYGROUND.fig_alpha) + " .heading")).to_contain_text("3 먹었다")
    wait_idle(page)
    alpha = [float(v) for v in page.locator(css(state.PLAYGROUND.fig_alpha) + " .albars .value").all_text_contents()]
    X = tokens.c18_embedding()
    np.testing.assert_allclose(alpha, core.attention(X, X, X).weights[3], atol=6e-4)
    # the chosen query is part of the link (put in place by history.replaceState, which page.url misses)
    page.wait_for_function("() => new URLSearchParams(location.search).get('q') === '3'", timeout=30_000)


def test_language_and_settings_survive_page_switches(server_url, new_page):
    page = new_page(f"{server_url}/")
    page.locator(css(state.setting_widget("lang"))).get_by_text("한국어").click()
    expect(page.locator("h1")).to_contain_text("홈", timeout=30_000)
    seed = page.locator(css(state.setting_widget("seed")) + " input")
    seed.fill("42")
    seed.press("Enter")
    wait_idle(page)
    page.wait_for_function("() => location.search.includes('seed=42')", timeout=30_000)
    page.get_by_role("link", name="어텐션 놀이터").first.click()
    expect(page.locator("h1")).to_contain_text("어텐션 놀이터", timeout=30_000)
    wait_idle(page)
    assert page.locator(css(state.setting_widget("seed")) + " input").input_value() == "42"
    assert page.locator(css(state.setting_widget("lang")) + " input[type=radio]:checked").count() == 1
    checked = page.locator(css(state.setting_widget("lang")) + " label:has(input:checked)").inner_text()
    assert "한국어" in checked
    # a rerun on the new page keeps them too
    open_tab(page, "③ 점수")
    page.locator(css(state.SCENARIO.score)).get_by_text("코사인").click()
    wait_idle(page)
    expect(page.locator("h1")).to_contain_text("어텐션 놀이터")
    assert page.locator(css(state.setting_widget("seed")) + " input").input_value() == "42"
    page.get_by_role("link", name="홈").first.click()
    expect(page.locator("h1")).to_contain_text("홈", timeout=30_000)
    assert page.locator(css(state.setting_widget("seed")) + " input").input_value() == "42"
    shot(page, "home-korean")


def test_a_shared_url_gives_the_same_view(server_url, new_page):
    params = {"tok": "we see the sky", "emb": "random", "score": "cosine", "causal": "1", "T": "0.5", "seed": "3",
              "m_X": json.dumps(np.round(tokens.embed("we see the sky".split(), 3, seed=3).numpy(), 6).tolist())}
    page = new_page(f"{server_url}/Playground?{urlencode(params)}")
    W = wait_z(page, PG_WEIGHTS, "z.length === 4")
    X = tokens.embed("we see the sky".split(), 3, seed=3)
    ref = core.attention(X, X, X, score="cosine", temperature=0.5, mask=masks.causal(4))
    np.testing.assert_allclose(W, ref.weights, atol=6e-4)
    # waits for the box's value (on a loaded machine the maps can arrive before the box is redrawn)
    expect(page.locator(css(state.SCENARIO.tokens) + " input")).to_have_value("we see the sky")
    # the app writes its own state back into the address bar: opening that URL again gives the same view
    again = new_page(page.url)
    np.testing.assert_allclose(wait_z(again, PG_WEIGHTS, "z.length === 4"), W, atol=0)
    shot(again, "playground-shared-url")


def test_html_token_is_shown_as_text_and_never_runs(server_url, new_page):
    page = new_page(f"{server_url}/Playground")
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    box.fill("<img src=x onerror=alert(1)> <script>alert(2)</script> ok")
    box.press("Enter")
    wait_z(page, PG_WEIGHTS, "z.length === 5")  # '<img', 'src=x', 'onerror=alert(1)>', '<script>…', 'ok'
    settled(page)
    # no such element exists anywhere (shadow roots included), so nothing can run later either
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:has-text('alert(2)')").count() == 0
    assert page.dialogs == []
    ticks = page.locator(css(PG_WEIGHTS) + " th.col").all_text_contents()
    assert ticks[0] == "0 <img" and ticks[3].startswith("3 <script>"), ticks
    shot(page, "playground-html-token")


def test_malformed_scenario_upload_shows_a_message(server_url, new_page, tmp_path):
    page = new_page(f"{server_url}/Playground")
    open_tab(page, "⑤ Share")
    bad = tmp_path / "bad.json"
    bad.write_text("{ this is not json")
    page.locator(css(state.PLAYGROUND.upload) + " input[type=file]").set_input_files(str(bad))
    expect(page.get_by_text("not valid JSON")).to_be_visible(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"app": "attention-lab", "playground": {"tokens": "a b c", "causal": True}}))
    page.locator(css(state.PLAYGROUND.upload) + " input[type=file]").set_input_files(str(good))
    W = wait_z(page, PG_WEIGHTS, "z.length === 3")
    assert np.all(W[np.triu_indices(3, 1)] == 0)


def test_korean_locale_defaults_to_korean(server_url, new_page):
    page = new_page(f"{server_url}/Playground", locale="ko-KR")
    expect(page.locator("h1")).to_contain_text("어텐션 놀이터", timeout=30_000)
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    expect(page.get_by_text("4 · 소프트맥스 가중치 α", exact=True)).to_be_visible()
    shot(page, "playground-korean")


def test_korean_is_drawn_with_the_shipped_web_font(server_url, new_page, tmp_path):
    """The test browser sees no Korean system font (conftest), so the Korean on these
    screenshots comes from static/attention-lab-kr-*.woff2, served by the app."""
    from .conftest import without_cjk_fonts

    if shutil.which("fc-list"):  # the premise: no Korean font visible to this browser's fontconfig
        listed = subprocess.run(["fc-list", ":lang=ko"], env=without_cjk_fonts(tmp_path), capture_output=True,
                                text=True, check=True).stdout
        assert listed.strip() == ""
    toks = "나는 오늘 사과를 먹었다 그리고 저녁에 친구와 함께 영화를 보러 극장에 갔다 영화는 길었지만 아주 재미있었다 정말 좋았다"
    page = new_page(f"{server_url}/Playground?tok=" + "+".join(toks.split()), locale="ko-KR")
    wait_z(page, PG_WEIGHTS, "z.length === 18")  # a canvas map with Korean labels
    page.wait_for_function("() => [...document.fonts].some(f => f.family.replace(/[\"']/g, '') === 'attention-lab-kr'"
                           " && f.status === 'loaded')", timeout=30_000)
    shot(page, "playground-korean-canvas")


def test_a_long_sentence_draws_canvas_maps_that_hover_and_click(server_url, new_page):
    """Past 16 tokens values no longer fit in cells: the maps are canvases, hovering names the
    cell and its value, and a click still selects the query."""
    toks = [f"t{i}" for i in range(24)]
    page = new_page(f"{server_url}/Playground?emb=random&tok=" + "+".join(toks))
    W = wait_z(page, PG_WEIGHTS, "z.length === 24")
    X = tokens.embed(toks, 3, seed=0)
    ref = core.attention(X, X, X).weights.numpy()
    np.testing.assert_allclose(W, ref, atol=6e-4)
    canvas = page.locator(css(PG_WEIGHTS) + " canvas")

    def cell_7_2() -> dict:  # row 7, column 2, from the map's geometry as it is now (read after the page settled)
        settled(page)
        geom = json.loads(page.evaluate(GEOM))
        return {"x": geom["left"] + 2.5 * geom["cell"], "y": geom["top"] + 7.5 * geom["cell"]}

    at = cell_7_2()
    canvas.hover(position=at)
    hover = page.locator(css(PG_WEIGHTS) + " .hover")
    expect(hover).to_contain_text("7 t7")
    expect(hover).to_contain_text("2 t2")
    expect(hover).to_contain_text(f"{ref[7, 2]:.3f}")
    canvas.click(position=cell_7_2())  # under load a late rerun can move the map between the hover and the click
    expect(page.locator(css(state.scenario_picker("query")) + " select")).to_have_value("7", timeout=30_000)
    expect(page.locator(css(state.scenario_picker("query")) + " option:checked")).to_have_text("7 t7")
    shot(page, "playground-24-tokens")


def test_the_app_makes_no_request_beyond_its_own_server(server_url, chromium):
    """An offline classroom: fonts, icons and components all come from the app's server."""
    from urllib.parse import urlparse

    ctx = chromium.new_context(viewport={"width": 1500, "height": 2600}, locale="ko-KR")
    page = ctx.new_page()
    hosts = []
    page.on("request", lambda r: hosts.append(urlparse(r.url).netloc) if r.url.startswith("http") else None)
    page.goto(f"{server_url}/Playground")
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    page.goto(server_url)
    settled(page)
    page.wait_for_load_state("networkidle")  # no request in flight for 500 ms (the websocket aside)
    ctx.close()
    assert hosts and set(hosts) == {urlparse(server_url).netloc}, set(hosts)


def test_a_closed_tab_keeps_its_settings_through_reruns_of_the_page_body(server_url, new_page):
    """Closing the mask tab stops drawing its checkbox; the causal mask must still apply on the
    reruns that follow (only the page body reruns, not the whole page)."""
    page = new_page(f"{server_url}/Playground")
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    open_tab(page, "④ Mask")
    page.locator(css(state.SCENARIO.causal) + " label").click()
    wait_z(page, PG_WEIGHTS, "z[0][1] === 0")
    open_tab(page, "③ Score")
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    box.fill("a b c d e")
    box.press("Enter")
    W = wait_z(page, PG_WEIGHTS, "z.length === 5")
    assert np.all(W[np.triu_indices(5, 1)] == 0)
    open_tab(page, "④ Mask")
    expect(page.locator(css(state.SCENARIO.causal) + " input")).to_be_checked()


def test_html_tokens_on_a_canvas_map_stay_text(server_url, new_page):
    """Past 16 tokens the labels are drawn on a canvas and named in the hover line: still text."""
    toks = ["<img/src=x/onerror=alert(1)>", "<script>alert(2)</script>"] + [f"t{i}" for i in range(18)]
    page = new_page(f"{server_url}/Playground")
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    box.fill(" ".join(toks))
    box.press("Enter")
    wait_z(page, PG_WEIGHTS, "z.length === 20")
    geom = json.loads(page.evaluate(GEOM))
    page.locator(css(PG_WEIGHTS) + " canvas").hover(
        position={"x": geom["left"] + 1.5 * geom["cell"], "y": geom["top"] + 0.5 * geom["cell"]})
    hover = page.locator(css(PG_WEIGHTS) + " .hover")
    expect(hover).to_contain_text("0 <img/src=x/…")  # axis labels are shortened to 14 characters
    expect(hover).to_contain_text("1 <script>ale…")
    settled(page)
    assert page.locator("img[src=x]").count() == 0 and page.locator("script:has-text('alert(2)')").count() == 0
    assert page.dialogs == []


def test_the_x_editor_is_folded_until_opened_and_stays_open_across_changes(server_url, new_page):
    """Folded by default (the first screen shows the pipeline, and the data grid is not re-sent on
    every change); once opened it stays open across a token change and a tab switch."""
    page = new_page(f"{server_url}/Playground")
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    grids = page.locator("[data-testid=stDataFrame]")
    expect(grids).to_have_count(0)
    page.get_by_text("Edit the embeddings X", exact=True).click()
    expect(grids).to_have_count(1, timeout=30_000)
    expect(page.get_by_text("X 4×3", exact=True)).to_be_visible()
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    box.fill("나는 오늘 사과를")
    box.press("Enter")
    wait_z(page, PG_WEIGHTS, "z.length === 3")
    expect(grids).to_have_count(1)
    # the open editor shows the tokens: a token change redraws it too (nothing on screen is stale)
    expect(page.get_by_text("X 3×3", exact=True)).to_be_visible(timeout=30_000)
    open_tab(page, "② Q, K, V")
    open_tab(page, "① X")
    expect(grids).to_have_count(1, timeout=30_000)
    expect(page.get_by_text("X 3×3", exact=True)).to_be_visible()


def test_a_token_change_redraws_an_open_tab_that_shows_the_tokens(server_url, new_page):
    """Typing tokens reruns only the results column while nothing on the left shows the tokens;
    with the mask tab open (its map is n × n), the tab follows the new tokens too."""
    page = new_page(f"{server_url}/Playground")
    wait_z(page, PG_WEIGHTS, "z.length === 4")
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    box.fill("a b c d e")
    box.press("Enter")
    wait_z(page, PG_WEIGHTS, "z.length === 5")
    # the results column reran alone and put the link in the address bar; the link reproduces the view
    page.wait_for_function("() => new URLSearchParams(location.search).get('tok') === 'a b c d e'", timeout=30_000)
    page.goto(page.evaluate("location.href"))
    wait_z(page, PG_WEIGHTS, "z.length === 5")
    box = page.locator(css(state.SCENARIO.tokens) + " input")
    expect(box).to_have_value("a b c d e", timeout=30_000)
    open_tab(page, "④ Mask")
    wait_z(page, state.PLAYGROUND.chart_mask, "z.length === 5")
    box.fill("a b c d e f g")
    box.press("Enter")
    wait_z(page, PG_WEIGHTS, "z.length === 7")
    wait_z(page, state.PLAYGROUND.chart_mask, "z.length === 7")
