"""The Playground's notebook, downloaded from the page in Chromium, exported to HTML with nbconvert and
opened in Chromium: the weights map is there (the static SVG the notebook was saved with), with the
page's values in its cells — and no kernel, no widget library and no network were needed to see it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect

from ui import state
from ui.state import css_class as css

from .conftest import ARTIFACTS, wait_idle
from .helpers import DOWNLOAD_WAIT, PG_WEIGHTS, wait_z
from .test_playground_browser import open_tab

pytestmark = pytest.mark.browser


def test_the_downloaded_notebook_as_html_shows_the_pages_weights(server_url, new_page, chromium, tmp_path):
    page = new_page(f"{server_url}/Playground")
    open_tab(page, "④ Mask")
    page.locator(css(state.SCENARIO.causal) + " label").click()
    W = wait_z(page, PG_WEIGHTS, "z.length === 4 && z[0][1] === 0 && z[0][0] === 1")
    open_tab(page, "⑤ Share")
    wait_idle(page)  # the tab's run has ended: its download button is the one that stays
    with page.expect_download(timeout=DOWNLOAD_WAIT) as download:
        page.locator(css(state.item(state.CODE_EXPORT.download, state.PLAYGROUND.code)) + " button").click()
    saved = tmp_path / "playground.ipynb"
    saved.write_bytes(Path(download.value.path()).read_bytes())
    nb = nbformat.read(saved, as_version=4)
    assert "widgets" in nb.metadata  # saved with its outputs: the widgets' state and, in each map's cell, the SVG
    done = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", str(saved)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    html = tmp_path / "playground.html"
    ctx = chromium.new_context(viewport={"width": 1400, "height": 2400}, offline=True)
    try:
        view = ctx.new_page()
        view.goto(html.as_uri(), wait_until="domcontentloaded")
        cells = view.locator('svg.attention-lab-maps g.al-map[data-step="weights"] g.cell')
        expect(cells).to_have_count(16)
        expect(cells.first).to_be_visible()
        shown = view.evaluate("""() => Array.from(document.querySelectorAll(
            'svg.attention-lab-maps g.al-map[data-step="weights"] g.cell'), (g) => [+g.dataset.i, +g.dataset.j,
            g.dataset.v, g.querySelector('text') ? g.querySelector('text').textContent : null])""")
        for i, j, value, text in shown:
            assert value == text == f"{W[i][j]:.3f}", (i, j, value, text, W[i][j])
        masked = view.locator('svg.attention-lab-maps g.al-map[data-step="masked"] g.cell[data-v="−∞"]')
        expect(masked).to_have_count(6)  # the causal mask as the page draws it: −∞ above the diagonal
        ARTIFACTS.mkdir(exist_ok=True)
        view.locator('svg.attention-lab-maps').nth(3).screenshot(path=str(ARTIFACTS / "notebook-html-weights.png"))
    finally:
        ctx.close()
