"""Real browser at a 1280×720 projector (and a 390×844 phone): the presenter view's steps land in
view with nothing cut, the QR code stays in its column and goes full screen, the localhost note,
a student's link without the teacher's controls, and pictures for slides (PNG scale, the SVG's
own Korean font rendered by a Chromium that has no CJK font)."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from ui import state
from ui.i18n import table
from ui.state import css_class as css

from .conftest import ARTIFACTS
from .helpers import DOWNLOAD_WAIT, PG_WEIGHTS, wait_z

pytestmark = pytest.mark.browser

KEYS = state.PLAYGROUND
W, H = 1280, 720
SENTENCES = {4: "나는 오늘 사과를 먹었다", 6: "the cat sat on the mat",
             16: "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"}
PANEL = ".almaps .panel"
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'  # (presenter view's first markdown is a style)
# the newest step's box: inside the viewport (Streamlit's scrolled main area) after its key press
IN_VIEW = ("(sel) => { const e = document.querySelector(sel) || [...document.querySelectorAll("
           "'[data-testid=stBidiComponentIsolated]')].map((h) => h.shadowRoot && h.shadowRoot.querySelector(sel))"
           ".find(Boolean); if (!e) return false; const r = e.getBoundingClientRect();"
           " return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight + 1; }")
# every map of the pipeline whole in its box: no column (Σ included) cut or scrolled away
CUT = ("() => [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].flatMap((h) =>"
       " h.shadowRoot ? [...h.shadowRoot.querySelectorAll('.almaps .alhm')] : []).map((m) => {"
       " const t = m.querySelector('table');"
       " return t ? [m.closest('.panel').dataset.key, t.offsetWidth, m.clientWidth] : null; })"
       ".filter((x) => x && x[1] > x[2] + 1)")


def _open(chromium, url: str, width: int = W, height: int = H, lang: str = "en"):
    ctx = chromium.new_context(viewport={"width": width, "height": height}, locale="ko-KR" if lang == "ko" else "en-US",
                               accept_downloads=True)
    page = ctx.new_page()
    page.goto(url)
    page.wait_for_selector(IDLE, timeout=60_000)
    return ctx, page


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("n", [4, 6, 16])
def test_presenter_steps_land_in_view_with_no_map_cut(server_url, chromium, n, lang):
    query = urlencode({"present": "1", "lang": lang, "tok": SENTENCES[n], "emb": "random"})
    ctx, page = _open(chromium, f"{server_url}/Playground?{query}", lang=lang)
    try:
        wait_z(page, PG_WEIGHTS, f"z.length === {n}")
        page.locator(css(KEYS.step_start) + " button").first.click()
        for step, name in enumerate(("scores", "scaled", "masked", "weights", "output", "inspector"), start=1):
            if step > 1:
                page.evaluate("() => document.activeElement && document.activeElement.blur && "
                              "document.activeElement.tagName === 'INPUT' && document.activeElement.blur()")
                page.keyboard.press("ArrowRight")
            if name != "inspector":
                expect(page.locator(PANEL)).to_have_count(step, timeout=30_000)
                sel = f".almaps .panel[data-key='{state.item(KEYS.pipeline, name)}']"
            else:
                expect(page.locator(".alinspector")).to_have_count(1, timeout=30_000)
                sel = ".alinspector"
            page.wait_for_function(IN_VIEW, arg=sel, timeout=30_000)  # scrolled to: the whole newest step in view
            assert page.evaluate(CUT) == [], (step, page.evaluate(CUT))
            focused = page.evaluate("() => { let a = document.activeElement; while (a && a.shadowRoot && "
                                    "a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; "
                                    "return a ? (a.dataset.key || a.className) : null; }")
            assert focused and (name in str(focused)), (step, focused)  # keyboard focus follows the newest step
            _shot(page, f"presenter-1280x720-n{n}-{lang}-step{step}")
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("present", ["0", "1"])
def test_the_qr_code_stays_in_its_column_goes_full_screen_and_warns_about_localhost(server_url, chromium, present, lang):
    ctx, page = _open(chromium, f"{server_url}/Playground?{urlencode({'present': present, 'lang': lang})}", lang=lang)
    try:
        page.get_by_role("tab", name=re.compile(table(lang)["class.tab.share"])).click()
        code = page.locator(".alqr img.code")
        expect(code).to_be_visible(timeout=30_000)
        page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=code.element_handle())
        page.wait_for_selector(IDLE)
        box = code.bounding_box()
        column = page.locator("[data-testid=stColumn]", has=page.locator(".alqr")).last.bounding_box()
        right = page.locator("[data-testid=stColumn]", has=page.locator(css(state.SCENARIO.tokens))).last.bounding_box()
        assert column["x"] - 1 <= box["x"] and box["x"] + box["width"] <= column["x"] + column["width"] + 1, (box, column)
        assert box["x"] + box["width"] <= right["x"], (box, right)  # clear of the maps and the inspector
        tabs = page.get_by_role("tab")  # every setup tab in sight, its label whole: the Share tab at a glance
        ends = [tabs.nth(i).bounding_box() for i in range(5)]  # the five setup tabs (the code panel has its own below)
        assert len({b["y"] for b in ends}) == 1, ends  # on one line
        assert all(b["x"] + b["width"] <= column["x"] + column["width"] + 1 for b in ends), (ends, column)
        assert page.evaluate("() => [...document.querySelectorAll('[role=tab]')].slice(0, 5)"
                             ".every((t) => t.scrollWidth <= t.clientWidth + 1)")
        if lang == "ko":  # Streamlit's own uploader texts ("Upload", "1MB per file • JSON"): ours drawn over them
            drawn = page.evaluate("() => [...document.querySelectorAll('[data-testid=stFileUploaderDropzone] button p,"
                                  " [data-testid=stFileUploaderDropzoneInstructions] span')].map((e) =>"
                                  " [getComputedStyle(e).fontSize, getComputedStyle(e, '::after').content])")
            assert drawn == [["0px", f'"{table(lang)["class.upload.browse"]}"'],
                             ["0px", '"' + table(lang)["class.upload.limit"].format(types="JSON", kb=256) + '"']], drawn
        note = page.get_by_text("--server.address 0.0.0.0")  # the server of the tests listens on 127.0.0.1
        expect(note.first).to_be_visible()
        page.locator(".alqr button.full").click()
        full = page.locator(".alqr-full img")
        expect(full).to_be_visible()
        side = full.bounding_box()
        assert min(side["width"], side["height"]) >= 0.6 * min(W, H), side  # scannable from the back of the room
        _shot(page, f"qr-fullscreen-1280x720-{lang}-present{present}")
        page.keyboard.press("Escape")
        expect(full).to_have_count(0)
        host = page.locator(css(KEYS.link_host) + " input")
        host.fill("192.168.0.12:8501")
        host.press("Enter")
        expect(page.locator("[data-testid=stCode]").nth(1)).to_contain_text("http://192.168.0.12:8501/Playground?",
                                                                           timeout=30_000)
        expect(note).to_have_count(0, timeout=30_000)
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_student_link_on_a_phone_has_no_teacher_controls(server_url, chromium, lang):
    query = urlencode({"lang": lang, "hide": "embed,qkv,score,notation", "student": "1", "present": "1"})
    ctx, page = _open(chromium, f"{server_url}/Playground?{query}", 390, 844, lang)
    try:
        wait_z(page, PG_WEIGHTS, "z.length === 4")
        tabs = page.get_by_role("tab")
        expect(tabs.first).to_have_text(re.compile("^① "))
        names = [tabs.nth(i).inner_text() for i in range(tabs.count())]
        assert names == ["① " + table(lang)["class.tab.mask"]], names  # no Share tab; numbered from ①
        for key in (KEYS.present, KEYS.step_start, KEYS.step_next, KEYS.step_all):
            assert page.locator(css(key)).count() == 0, key
        _shot(page, f"student-link-390x844-{lang}")
    finally:
        ctx.close()


# the font size (px) of every kind of text in the query inspector: title, formula, picker, headings,
# notes, the bars' labels and legend
INSPECTOR_FONTS = """() => { for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]')) {
  const r = h.shadowRoot && h.shadowRoot.querySelector('.alinspector'); if (!r) continue;
  const out = {};
  for (const sel of ['.title', 'math', '.pick', '.heading', '.note', '.albars .row', '.albars .legend']) {
    const e = r.querySelector(sel); out[sel] = e ? parseFloat(getComputedStyle(e).fontSize) : null; }
  return out; } return null; }"""


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_presenter_view_enlarges_every_text_of_the_inspector(server_url, chromium, lang):
    sizes = {}
    for present in ("0", "1"):
        query = urlencode({"present": present, "lang": lang, "step": "6"})
        ctx, page = _open(chromium, f"{server_url}/Playground?{query}", lang=lang)
        try:
            wait_z(page, PG_WEIGHTS, "z.length === 4")
            page.wait_for_function(f"() => {{ const f = ({INSPECTOR_FONTS})(); return !!f && "
                                   f"Object.values(f).every((v) => v !== null); }}", timeout=30_000)
            sizes[present] = page.evaluate(INSPECTOR_FONTS)
        finally:
            ctx.close()
    small = {sel: (sizes["0"][sel], sizes["1"][sel]) for sel in sizes["0"] if not sizes["1"][sel] > sizes["0"][sel]}
    assert small == {}, small  # (normal, presenter) px of the texts not enlarged


def test_png_pictures_at_the_chosen_scale_with_labels_as_on_screen(server_url, chromium):
    from PIL import Image

    ctx, page = _open(chromium, f"{server_url}/Playground?lang=ko", 1500, 1400, "ko")
    try:
        wait_z(page, PG_WEIGHTS, "z.length === 4")
        host = page.locator(css(PG_WEIGHTS))
        with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
            host.get_by_role("button", name="SVG").click()
        svg = d.value.path().read_text(encoding="utf-8")
        width, height = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', svg).groups())
        for scale in (2, 3):
            with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
                host.get_by_role("button", name=f"PNG {scale}×").click()
            png = Image.open(d.value.path())
            assert png.format == "PNG" and png.size == (scale * width, scale * height), (scale, png.size, width, height)
        # the short labels stand upright on screen (no vertical writing): upright in the picture too
        assert page.locator(css(PG_WEIGHTS) + " th.col.vertical").count() == 0
        assert "사과를</text>" in svg and not re.search(r'<text[^>]*rotate\([^>]*>\d 사과를<', svg)
    finally:
        ctx.close()


KO_16 = "어제 저녁 나는 친구와 함께 시장에 가서 싱싱한 사과와 배를 사고 집에 돌아와 모두 맛있게 먹었다"
# the base64 font data an SVG may carry: its slices of the shipped font, not the whole font (0.8 MB)
SVG_FONT_BOUND = {"나는 오늘 사과를 먹었다": 120_000, KO_16: 160_000}


def _svg_of_weights(server_url, chromium, tokens: str | None = None) -> str:
    """The weights map's SVG download in Korean (the worked example when no tokens are given)."""
    query = urlencode({"lang": "ko"} | ({"tok": tokens, "emb": "random"} if tokens else {}))
    ctx, page = _open(chromium, f"{server_url}/Playground?{query}", 1500, 1400, "ko")
    try:
        wait_z(page, PG_WEIGHTS, f"z.length === {len(tokens.split()) if tokens else 4}")
        with page.expect_download(timeout=DOWNLOAD_WAIT) as d:
            page.locator(css(PG_WEIGHTS)).get_by_role("button", name="SVG").click()
        return d.value.path().read_text(encoding="utf-8")
    finally:
        ctx.close()


def _font_faces(svg: str) -> list[tuple[str, str]]:
    """(unicode-range, base64 data) of each @font-face in the SVG."""
    return re.findall(r"@font-face \{[^}]*?unicode-range: ([^;]+);[^}]*?base64,([A-Za-z0-9+/=]+)\)", svg)


def _check_embedded_slices(svg: str, bound: int) -> int:
    """The SVG carries, as @font-face rules with their unicode-range, slices of the shipped font that
    cover every Hangul syllable of its labels, and no more than ``bound`` characters of base64."""
    faces = _font_faces(svg)
    assert faces and len(faces) == svg.count("@font-face"), svg[:2000]
    size = sum(len(data) for _, data in faces)
    assert size <= bound, (len(faces), size)  # only the slices it uses (the whole font is 830 KB as base64)
    covered = set()
    for rng, _ in faces:
        for part in rng.split(","):
            lo, _, hi = part.strip()[2:].partition("-")
            covered.update(range(int(lo, 16), int(hi or lo, 16) + 1))
    hangul = {ord(c) for c in re.sub(r"<style>.*?</style>", "", svg, flags=re.S) if 0xAC00 <= ord(c) <= 0xD7A3}
    assert hangul and hangul <= covered, sorted(chr(c) for c in hangul - covered)  # each syllable's glyph is inside
    return size


def test_a_16_token_korean_svg_carries_only_the_slices_it_uses(server_url, chromium):
    svg = _svg_of_weights(server_url, chromium, KO_16)
    assert all(re.search(rf">(\d+ )?{w}</text>", svg) for w in KO_16.split()), svg[-3000:]  # every token a label
    _check_embedded_slices(svg, SVG_FONT_BOUND[KO_16])


def test_the_svg_carries_the_korean_font_and_renders_korean_without_cjk_fonts(server_url, chromium):
    svg = _svg_of_weights(server_url, chromium)
    assert "@font-face" in svg and "data:font/woff2;base64," in svg  # the shipped font is inside
    _check_embedded_slices(svg, SVG_FONT_BOUND["나는 오늘 사과를 먹었다"])
    bare = re.sub(r"<style>.*?</style>", "", svg, flags=re.S)
    view = chromium.new_page(viewport={"width": 900, "height": 700})
    try:
        shots = []
        for name, text in (("with-font", svg), ("without-font", bare)):
            view.set_content(f"<!doctype html><html><body style='margin:0'>{text}</body></html>")
            view.wait_for_function("() => document.fonts.status === 'loaded'")
            if name == "with-font":  # the embedded face loaded and covers Hangul
                assert view.evaluate("() => document.fonts.check('13px attention-lab-kr', '사과를')")
                assert view.evaluate("() => [...document.fonts].some((f) => f.family.includes('attention-lab-kr')"
                                     " && f.status === 'loaded')")
            label = view.locator("svg text", has_text="사과를").first
            shots.append(label.screenshot())
            ARTIFACTS.mkdir(exist_ok=True)
            view.screenshot(path=str(ARTIFACTS / f"svg-weights-ko-{name}.png"))
        assert shots[0] != shots[1]  # with the font the label is drawn differently from the machine's fallback boxes
    finally:
        view.close()
