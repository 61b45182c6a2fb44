"""Text alternatives in a real browser, both languages: the query inspector's bars as visually hidden
tables (equal to core's numbers), and a 70-token Playground, whose maps are plotly images named as
figures with a summary table under each: axe finds nothing serious with the tables open."""

from __future__ import annotations

import numpy as np
import pytest

import core
from ui.i18n import table
from ui.state import css_class

from .a11y_audit import MAP_TABLES, SHOW_TABLES, audit, settle
from .helpers import PG_WEIGHTS, PLOTLY_VALUES
from .test_a11y_browser import browser_context, check_views

pytestmark = pytest.mark.browser

# the query inspector's two bar charts: their visually hidden tables, and whether the drawn bars are
# hidden from a screen reader (the table replaces them)
INSPECTOR_TABLES = """() => { for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]')) {
  const r = h.shadowRoot && h.shadowRoot.querySelector('.alinspector'); if (!r) continue;
  return [...r.querySelectorAll('.albars')].map((b) => { const t = b.querySelector(':scope > .sr-only > table');
    return {drawn_hidden: [...b.children].filter((c) => !c.contains(t)).every((c) => c.getAttribute('aria-hidden') === 'true'),
            caption: t ? t.querySelector('caption').textContent : null,
            width: t ? t.parentElement.getBoundingClientRect().width : null,
            clipped: t ? getComputedStyle(t.parentElement).overflow === 'hidden' : false,
            head: t ? [...t.querySelectorAll('th[scope=col]')].map((th) => th.textContent) : [],
            rows: t ? [...t.querySelectorAll('tr')].slice(1).map((tr) => [...tr.children].map((c) => c.textContent)) : []}; });
  } return null; }"""
# the z of the plotly image inside the element with this key class, as plotly.js holds it after reading it
PLOTLY_Z = "(cls) => " + PLOTLY_VALUES + "(document.querySelector(cls + ' .js-plotly-plot'))"
OPEN_SUMMARIES = SHOW_TABLES  # a large map's summary button is a table-toggle too


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_inspectors_bars_and_a_large_maps_summary_are_tables(server_url, chromium, lang):
    """The query inspector's bars read as tables (key → α; per output dimension its value and terms),
    the drawn bars hidden from a screen reader; a 70-token Playground's maps (plotly images) are named
    figures with a summary table and a cell picker: axe finds nothing serious there, tables open."""
    strings = table(lang)
    ctx = browser_context(chromium, 1280, lang)
    try:
        page = ctx.new_page()
        page.goto(f"{server_url}/Playground?lang={lang}")
        settle(page, lang)
        alpha, terms = page.evaluate(INSPECTOR_TABLES)
        X = core.tokens.c18_embedding()
        A = core.attention(X, X, X)
        assert alpha["drawn_hidden"] and terms["drawn_hidden"]
        assert alpha["width"] <= 1 and terms["width"] <= 1 and alpha["clipped"] and terms["clipped"]  # visually hidden
        assert alpha["head"] == [strings["a11y.bars.key"], strings["a11y.bars.weight"]]
        np.testing.assert_allclose([float(r[1]) for r in alpha["rows"]], A.weights[0].numpy(), atol=5e-4 + 1e-9)
        assert terms["head"][:2] == [strings["a11y.bars.dim"], strings["pg.inspector.sum"]] and len(terms["head"]) == 2 + 4
        out, contrib = A.output[0].numpy(), A.contributions(0).numpy()
        for d, row in enumerate(terms["rows"]):
            np.testing.assert_allclose([float(v.replace("−", "-")) for v in row[1:]], [out[d], *contrib[:, d]],
                                       atol=5e-4 + 1e-9)
        # the weights map's table is core's weights (not only the values the map was sent), its row and
        # column headers the tokens
        page.evaluate(SHOW_TABLES)
        weights = next(m for m in page.evaluate(MAP_TABLES) if m["key"] == css_class(PG_WEIGHTS)[1:] and m["table"])
        n = len(core.tokens.C18_TOKENS)
        assert len(weights["rows"]) == len(weights["cols"]) == n
        for i, tok in enumerate(core.tokens.C18_TOKENS):
            assert weights["rows"][i].split()[-1] == tok, (i, weights["rows"])
            assert weights["cols"][i].split()[-1] == tok, (i, weights["cols"])
        shown = np.array([[float(v.replace("−", "-")) for v in row] for row in weights["cells"]])
        np.testing.assert_allclose(shown, A.weights.numpy(), atol=5e-4 + 1e-9)
        page.goto(f"{server_url}/Playground?lang={lang}&tok=" + "+".join(f"w{i}" for i in range(70)))
        settle(page, lang)
        assert page.get_by_role("figure").count() >= 5  # the five steps' images, each named
        # the weights image holds core's weights: plotly.js decoded the typed array (float32 bytes) it was sent
        drawn = page.evaluate(PLOTLY_Z, css_class(PG_WEIGHTS))
        X70, _ = core.lab.c18_lookup([f"w{i}" for i in range(70)], fallback_seed=0)
        np.testing.assert_allclose(np.array(drawn, dtype=float), core.attention(X70, X70, X70).weights.numpy(), atol=5e-4 + 1e-6)
        assert page.evaluate(OPEN_SUMMARIES) >= 5
        page.locator("table.summary").first.wait_for(timeout=10_000)
        check_views({"large": audit(page)})
    finally:
        ctx.close()
