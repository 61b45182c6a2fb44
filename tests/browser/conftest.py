"""Real-browser tests: a real `streamlit run` server (bench/serve.py) and the system Chromium driven by Playwright."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import serve
from bench.serve import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def chromium_path() -> str:
    path = serve.chromium()
    if not path:
        if os.environ.get("ATTN_LAB_SKIP_BROWSER") == "1":
            pytest.skip("ATTN_LAB_SKIP_BROWSER=1 and no Chromium: browser tests NOT run")
        pytest.fail("Chromium is missing: install it (apt-get install chromium) — scripts/test.sh does this as root")
    return path


def pytest_configure(config):
    """An `expect(...)` without a timeout of its own waits up to 60 s, not Playwright's 5 s: a bound for a hung page,
    never a pace (a rerun on a busy 2-core machine can take seconds)."""
    from playwright.sync_api import expect

    expect.set_options(timeout=60_000)


@pytest.fixture(scope="session")
def server_url():
    ARTIFACTS.mkdir(exist_ok=True)
    with serve.serve(log=ARTIFACTS / "streamlit-server.log", seconds=90) as server:
        yield server.url


LATIN_FONT_DIRS = ("dejavu", "liberation", "liberation2", "freefont", "noto-latin")


def without_cjk_fonts(tmp: Path) -> dict:
    """Environment for a browser that sees only the machine's Latin fonts (fontconfig), like a
    projector PC or a minimal Linux box without a Korean font: any Korean the tests see was
    drawn with the app's own web font (static/attention-lab-kr-*.woff2)."""
    dirs = [d for d in (Path("/usr/share/fonts/truetype") / n for n in LATIN_FONT_DIRS) if d.is_dir()]
    conf = tmp / "fonts.conf"
    conf.write_text("<?xml version='1.0'?>\n<!DOCTYPE fontconfig SYSTEM 'fonts.dtd'>\n<fontconfig>"
                    + "".join(f"<dir>{d}</dir>" for d in dirs) + f"<cachedir>{tmp / 'cache'}</cachedir></fontconfig>\n",
                    encoding="utf-8")
    return {**os.environ, "FONTCONFIG_FILE": str(conf)}


@pytest.fixture(scope="package")  # closed when the browser tests end: tests/deploy starts its own Playwright
def chromium(tmp_path_factory):
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    env = without_cjk_fonts(tmp_path_factory.mktemp("fontconfig"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, env=env)
        yield browser
        browser.close()


@pytest.fixture
def new_page(chromium, request):
    """A fresh browser context per test (its own Streamlit session); screenshot on the way out."""
    contexts = []

    def make(url: str, *, locale: str = "en-US", height: int = 2600):
        ctx = chromium.new_context(viewport={"width": 1500, "height": height}, locale=locale)
        contexts.append(ctx)
        page = ctx.new_page()
        page.dialogs = []
        page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
        page.goto(url)
        wait_idle(page)
        return page

    yield make
    ARTIFACTS.mkdir(exist_ok=True)
    for i, ctx in enumerate(contexts):
        for j, pg in enumerate(ctx.pages):
            try:
                pg.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{i}{j}-final.png"))
            except Exception:
                pass
        ctx.close()


def wait_idle(page, timeout: int = 60_000) -> None:
    page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=timeout)
    page.wait_for_selector(".js-plotly-plot, [data-testid='stMarkdown']", timeout=timeout)


# The page has settled when the script is idle, the fonts are loaded, every component host has drawn into its
# shadow root (a map whose code is still loading has its host marked data-al-loading), every image has loaded, and
# nothing on the page moved between two consecutive animation frames (the layout of components and formulas after
# the script ends).
SETTLED = """() => {
  if (!document.querySelector('[data-testid="stApp"][data-test-script-state="notRunning"]')) return false;
  if (document.fonts.status !== 'loaded') return false;
  for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]'))
    if (!h.shadowRoot || !h.shadowRoot.childElementCount || h.dataset.alLoading) return false;
  for (const img of document.images) if (!img.complete) return false;
  const els = document.querySelectorAll('[data-testid=stBidiComponentIsolated], [data-testid=stImage], .js-plotly-plot,'
                                        + ' .katex-display, [data-testid=stMarkdownContainer]');
  const box = e => { const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height].join(); };
  const sig = Array.from(els, box).join('|');
  const same = window.__alSettled === sig;
  window.__alSettled = sig;
  return same && els.length > 0;
}"""


def settled(page, timeout: int = 60_000) -> None:
    """Wait for the page to stop changing (a fact checked on every animation frame, not a delay)."""
    wait_idle(page, timeout)
    page.evaluate("() => { window.__alSettled = null; }")
    page.wait_for_function(SETTLED, timeout=timeout, polling="raf")
