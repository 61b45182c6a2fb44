"""Real browser: the presenter view (``?present=1``, from the frame: ui/presenter.py) on every page and every lesson
of the tutorial, in both languages, at 1280×720 and at 1920×1080 (a projector's full HD): no sidebar, larger type,
nothing cut off (no sideways overflow of the page), the page's main map (its first map, where it has one) on the
first screen, and axe finds nothing serious or critical (in Korean: AUDITED). One browser context per language, the
pages one after the other, in two tabs: each view is opened at 1280×720 (measured and audited) and, beside it, in a
tab of 1920×1080 (measured: axe audits once, its rules read the DOM and the computed styles, which the window's size
does not change; what the size changes, the layout, is measured at both)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attention_lab import tutorial
from ui import nav, presenter

from .a11y_audit import audit, grown
from .conftest import ARTIFACTS

SIZES = {1280: 720}  # the window each page opens in; then LARGE
LARGE = {"width": 1920, "height": 1080}
# axe audits the presenter view in one language: what the view changes for axe (larger type, no sidebar) does not
# depend on the language, and the normal view of every page is audited in both (test_a11y_browser.py)
AUDITED = "ko"
MAPS = ".alhm, .almaps, .alhv, .almv, .alinspector, .albars"  # assets/components/present.js
# the page as the room sees it: the sidebar, the root type size, the page's width against the window's, and the
# first map's box (None: the page has no map)
MEASURE = """(maps) => {
  const sb = document.querySelector('section[data-testid=stSidebar]');
  const main = document.querySelector('[data-testid=stMain]');
  const doc = document.scrollingElement;
  let map = null;
  for (const el of document.querySelectorAll(
    '[data-testid=stMain] [data-testid=stBidiComponentIsolated], [data-testid=stMain] .js-plotly-plot')) {
    const m = el.classList.contains('js-plotly-plot') ? el : el.shadowRoot && el.shadowRoot.querySelector(maps);
    if (m && m.getBoundingClientRect().height > 40) { const r = el.getBoundingClientRect(); map = [r.top, r.bottom]; break; }
  }
  return {sidebar: !!(sb && sb.offsetWidth), font: parseFloat(getComputedStyle(document.documentElement).fontSize),
          wide: [doc.scrollWidth - doc.clientWidth, main.scrollWidth - main.clientWidth], map};
}"""


# the page has drawn in presenter view: its language set by the frame, its run ended, its title there, nothing loading
# or stale, every component drawn, and present.js done with the first screen (conftest's wait_idle waits for the
# first markdown to be visible: in presenter view that is the hidden sidebar's)
DRAWN = """(lang) => document.documentElement.dataset.alFrame === lang && document.documentElement.lang === lang
  && !!document.querySelector('[data-testid=stApp][data-test-script-state=notRunning]')
  && !!document.querySelector('[data-testid=stMain] h1')
  && !document.querySelector('[data-testid=stMain] [data-testid=stSkeleton]') && !document.querySelector('[data-stale=true]')
  && [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].every((h) => !h.shadowRoot
       || !!h.shadowRoot.querySelector('[class^=al], [class*=" al"]'))
  && !!document.documentElement.dataset.alPresentedAt"""


def views(base: str, lang: str) -> list[tuple[str, str]]:
    pages = [(p.name, f"{base}/{p.url}?present=1&lang={lang}") for p in nav.PAGES]
    return pages + [(f"lesson {x.id}", f"{base}/Tutorial?lesson={x.id}&present=1&lang={lang}") for x in tutorial.LESSONS]


@pytest.mark.parametrize("width", list(SIZES))
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_presenter_view_on_every_page_and_lesson(server_url, chromium, lang, width):
    height = SIZES[width]
    ctx = chromium.new_context(viewport={"width": width, "height": height}, locale="ko-KR" if lang == "ko" else "en-US")
    shots = Path(os.environ.get("ATTN_LAB_SHOTS") or ARTIFACTS)
    shots.mkdir(parents=True, exist_ok=True)
    bad: dict[str, list] = {}

    def measured(page, name: str, h: int) -> list[str]:
        m = page.evaluate(MEASURE, MAPS)
        wrong = []
        if m["sidebar"]:
            wrong.append("sidebar shown")
        if m["font"] < presenter.ROOT_PX and name != "playground":  # the Playground keeps its own presenter sizes
            wrong.append(f"type {m['font']} px")
        if max(m["wide"]) > 1:
            wrong.append(f"cut off: wider than the window by {m['wide']} px")
        if m["map"] is not None and not (0 <= m["map"][0] < h / 2):
            wrong.append(f"main map at {m['map']} px, not on the first screen")
        return wrong

    try:
        # two tabs, one per window size, each opening every view anew: a laptop's window and a projector's full HD
        # (they draw side by side, on the two cores, as two browsers of a room would)
        page, large = ctx.new_page(), ctx.new_page()
        large.set_viewport_size(LARGE)
        for name, url in views(server_url, lang):
            page.goto(url)
            large.goto(url)
            page.wait_for_function(DRAWN, arg=lang, timeout=120_000)
            wrong = measured(page, name, height)
            if lang == AUDITED:
                own, streamlit = audit(page)
                wrong += own + [f"Streamlit's own: {grown(streamlit)}"] * bool(grown(streamlit))
            large.wait_for_function(DRAWN, arg=lang, timeout=120_000)
            wrong += [f"at {LARGE['width']}×{LARGE['height']}: {w}" for w in measured(large, name, LARGE["height"])]
            if name in ("masks", "kv_cache", "lesson weighted-average"):
                for tab, w in ((page, width), (large, LARGE["width"])):
                    tab.screenshot(path=str(shots / f"presenter-{lang}-{name.replace(' ', '-')}-{w}.png"))
            if wrong:
                bad[name] = wrong
    finally:
        ctx.close()
    assert not bad, "\n".join(f"[{k}] {v}" for k, v in bad.items())
