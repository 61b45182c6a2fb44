"""axe-core in the real browser (axe-playwright-python bundles it): the app's own serious and critical
WCAG 2.2 A/AA violations, and Streamlit's own that the app cannot fix, counted apart (README,
"Accessibility")."""

from __future__ import annotations

from collections import Counter

from ui import nav

from .conftest import wait_idle

OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22a", "wcag22aa"]},
           "resultTypes": ["violations"]}
SERIOUS = {"serious", "critical"}
# rule → (where it stays, the most nodes one page view may have). Streamlit 1.67's sidebar navigation
# puts its section wrappers (div) inside the <ul>: one `list` node, and one `listitem` per page link.
STREAMLIT_OWN = {"list": ("[data-testid=stSidebarNav]", 1), "listitem": ("[data-testid=stSidebarNav]", len(nav.PAGES))}

_INSIDE = "([sel, scope]) => { const e = document.querySelector(sel); return !!(e && e.closest(scope)); }"
# settled: this page's run has ended and drawn — the frame set the language in this document (index.html
# starts with lang="en"), the title is there, no element is still a loading skeleton, every component
# has drawn (its shadow root holds one of the app's elements), nothing is faded as stale (a rerun
# under way), and every display formula that scrolls
# sideways has been made focusable (the frame checks after the page changes)
_SETTLED = """(lang) => document.documentElement.dataset.alFrame === lang
  && document.documentElement.lang === lang
  && !!document.querySelector('[data-testid=stApp][data-test-script-state=notRunning]')
  && !!document.querySelector('[data-testid=stMain] h1')
  && !document.querySelector('[data-testid=stMain] [data-testid=stSkeleton]')
  && !document.querySelector('[data-stale=true]')
  && [...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')].every((h) => !h.shadowRoot
       || !!h.shadowRoot.querySelector('[class^=al], [class*=" al"]'))
  && [...document.querySelectorAll('.katex-display')].every((b) => b.scrollWidth <= b.clientWidth + 1 || b.tabIndex === 0)"""

_AXE = None


def axe():
    global _AXE
    if _AXE is None:
        from axe_playwright_python.sync_playwright import Axe

        _AXE = Axe()
    return _AXE


def settle(page, lang: str, timeout: int = 60_000) -> None:
    wait_idle(page, timeout)
    page.wait_for_function(_SETTLED, arg=lang, timeout=timeout)


def audit(page) -> tuple[list[str], Counter]:
    """(the app's own serious/critical violations, one line per node; Streamlit's own, per rule)."""
    own, streamlit = [], Counter()
    for v in axe().run(page, options=OPTIONS).response["violations"]:
        if v["impact"] not in SERIOUS:
            continue
        for node in v["nodes"]:
            target = node["target"]
            scope = STREAMLIT_OWN.get(v["id"], (None,))[0]
            if scope and len(target) == 1 and isinstance(target[0], str) and page.evaluate(_INSIDE, [target[0], scope]):
                streamlit[v["id"]] += 1
                continue
            summary = (node.get("failureSummary") or "").replace("\n", " ")[:200]
            own.append(f"{v['id']} ({v['impact']}): {target} {node.get('html', '')[:120]} — {summary}")
    return own, streamlit


def grown(streamlit: Counter) -> dict:
    """Streamlit's own violations beyond what the README lists."""
    return {rule: n for rule, n in streamlit.items() if n > STREAMLIT_OWN[rule][1]}


# Every map's text alternative as a screen reader gets it: its caption (the accessible name), the
# column and row headers (th scope), the cells, and the values the map was given (dataset.z, core's
# numbers rounded for display). A canvas map's table exists once its "Table" button was pressed.
MAP_TABLES = """() => {
  const out = [];
  const roots = [document, ...[...document.querySelectorAll('[data-testid=stBidiComponentIsolated]')]
    .map((h) => h.shadowRoot).filter(Boolean)];
  for (const r of roots) {
    for (const m of r.querySelectorAll('.alhm')) {
      let e = m, key = null;
      for (; e && !key; e = e.parentElement || (e.getRootNode() && e.getRootNode().host)) {
        key = [...(e.classList || [])].find((c) => c.startsWith('st-key-')) || null;
      }
      const table = m.querySelector('table.values') || m.querySelector('table');
      const canvas = m.querySelector('canvas');
      const row = {key, canvas: !!canvas, z: m.dataset.z ? JSON.parse(m.dataset.z) : null, table: !!table,
                   name: canvas && !table ? canvas.getAttribute('aria-label') : ''};
      if (table) {
        row.name = table.querySelector('caption') ? table.querySelector('caption').textContent : '';
        row.cols = [...table.querySelectorAll('th[scope=col]')].map((th) => th.textContent);
        row.rows = [...table.querySelectorAll('th[scope=row]')].map((th) => th.textContent);
        row.cells = [...table.querySelectorAll('tr')].filter((tr) => tr.querySelector('th[scope=row]'))
          .map((tr) => [...tr.querySelectorAll('td')].filter((td) => !td.classList.contains('side')).map((td) => td.textContent));
      }
      out.push(row);
    }
  }
  return out;
}"""

SHOW_TABLES = """() => { let n = 0;
  for (const h of document.querySelectorAll('[data-testid=stBidiComponentIsolated]')) {
    const buttons = h.shadowRoot ? h.shadowRoot.querySelectorAll('button.table-toggle[aria-pressed=false]') : [];
    for (const b of buttons) { b.click(); n++; }
  } return n; }"""


def table_mismatches(maps: list[dict]) -> list[str]:
    """Where a map's table is missing, unnamed, or differs from the values the map holds."""
    bad = []
    for m in maps:
        where = m["key"]
        if m["z"] is None:
            continue
        if not m["table"]:
            bad.append(f"{where}: no table of values")
            continue
        z = m["z"]
        if not m["name"] or f"{len(z)} × {len(z[0])}" not in m["name"]:
            bad.append(f"{where}: accessible name without its shape: {m['name']!r}")
        if len(m["rows"]) != len(z) or len(m["cols"]) != len(z[0]) or not all(m["rows"]) or not all(m["cols"]):
            bad.append(f"{where}: headers {len(m['rows'])}×{len(m['cols'])} for values {len(z)}×{len(z[0])}")
            continue
        for i, (texts, values) in enumerate(zip(m["cells"], z, strict=True)):
            for j, (text, v) in enumerate(zip(texts, values, strict=True)):
                if not _same(text, v):
                    bad.append(f"{where}[{i}][{j}]: table {text!r}, map {v!r}")
    return bad


def _same(text: str, v) -> bool:
    if v is None:
        return text in ("−∞", "NaN")
    try:
        shown = float(text.replace("−", "-"))
    except ValueError:
        return False
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(shown - v) <= 0.5 * 10 ** -decimals + 1e-9
