"""Labelled heatmaps: HTML tables (values in the cells) up to 16 tokens, one canvas up to 64,
a plotly image beyond. Display only: values are rounded, never computed here."""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import streamlit as st

from .. import settings, state
from ..i18n import t
from . import colours
from .figures import PrebuiltFigure, show_chart

CELL_TEXT_LIMIT = 16  # cell values are printed inside cells up to this many rows/columns
ASSETS = Path(__file__).resolve().parents[2] / "assets" / "components"
DOM_LIB = (ASSETS / "dom_lib.js").read_text(encoding="utf-8")  # helpers every component of the app puts first
_LIB = DOM_LIB + (ASSETS / "heatmap_lib.js").read_text(encoding="utf-8")  # the drawing both map components share
_CSS = (ASSETS / "heatmap.css").read_text(encoding="utf-8")
_HEATMAP_COMPONENT = st.components.v2.component(
    "attention_lab_heatmap", js=_LIB + (ASSETS / "heatmap.js").read_text(encoding="utf-8"), css=_CSS)
# several panels (title, formula, shape line, map) as one element: the Playground's pipeline
_MAPS_COMPONENT = st.components.v2.component(
    "attention_lab_maps", js=_LIB + (ASSETS / "maps.js").read_text(encoding="utf-8"),
    css=_CSS + (ASSETS / "maps.css").read_text(encoding="utf-8"))
TABLE_LIMIT = 64  # up to this many rows/columns a heatmap is an HTML table; beyond, a plotly image

# colour scales (display only) and the contrast rule for the numbers in cells: ui/widgets/colours.py
_SEQ, _DIV = colours.SEQ, colours.DIV
_rgb = colours.rgb_at


def heatmap(
    z: np.ndarray,
    *,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    x_title: str,
    y_title: str,
    decimals: int = 3,
    neg_inf: np.ndarray | None = None,
    nan: np.ndarray | None = None,
    sequential: bool = False,
    side_text: Sequence[str] | None = None,
    side_title: str = "",
    clickable: bool = False,
    highlight: tuple[int, int] | None = None,
    highlight_row: int | None = None,
    highlight_col: int | None = None,
    title: str = "",
    large: bool = False,
    compact: bool = False,
) -> dict:
    """The display spec of a labelled heatmap of ``z`` (rows = y, columns = x).

    Values are rounded to ``decimals`` for display; neg_inf marks cells shown as −∞ (masked
    logits); side_text adds a note right of each row (e.g. row sums); clickable cells report
    (row, column) clicks. Render it with :func:`show_heatmap`.
    """
    z = np.asarray(z, dtype=float)
    shown = np.round(z, decimals)
    ninf = np.zeros(z.shape, dtype=bool) if neg_inf is None else np.asarray(neg_inf, dtype=bool)
    isnan = np.zeros(z.shape, dtype=bool) if nan is None else np.asarray(nan, dtype=bool)
    lo, hi, stops = _range(shown[~ninf & np.isfinite(shown)], sequential)
    cells = _cells(shown, ninf, isnan, lo, hi, stops, decimals)
    z_shown = np.where(ninf | isnan, np.nan, shown)  # −∞ and NaN cells hold no number (null); their text says which
    longest = max((len(str(x)) for x in x_labels), default=0)
    if cells["rgb"] is not None:  # a canvas map: its values as float64 bytes (NaN: a −∞ cell), base64
        z_out = base64.b64encode(z_shown.astype("<f8").tobytes()).decode("ascii")
    else:
        z_out = [[None if v != v else v for v in row] for row in z_shown.tolist()]  # NaN (−∞ cells) → null
    return cells | {
        "z": z_out,
        "xs": [str(x) for x in x_labels], "ys": [str(y) for y in y_labels],
        "x_title": x_title, "y_title": y_title, "side": None if side_text is None else list(side_text),
        "side_title": side_title, "clickable": bool(clickable), "decimals": int(decimals),
        "vertical": (z.shape[1] > 6 and longest > 3) or longest > 8,
        "highlight_row": highlight_row, "highlight_col": highlight_col,
        "mark": None if highlight is None else list(highlight),
        "sequential": sequential, "lo": lo, "hi": hi, "title": title, "present": large, "compact": compact,
    }


def _range(finite: np.ndarray, sequential: bool):
    """(lo, hi, colour stops): 0 … max for weights and masks, ±max|z| around white otherwise."""
    if sequential:
        return 0.0, max(1e-12, float(finite.max()) if finite.size else 1.0), _SEQ
    lim = max(float(np.abs(finite).max()) if finite.size else 1.0, 1e-12)
    return -lim, lim, _DIV


def _cells(shown, ninf, isnan, lo, hi, stops, decimals) -> dict:
    """Per-cell text and colours for an HTML table (≤ 16 rows/columns), or flat colours for a
    canvas (≤ 64: ``rgb`` r, g, b bytes per cell and ``masked`` one byte per cell, both base64);
    nothing per cell beyond that (plotly draws it)."""
    n_rows, n_cols = shown.shape
    out = {"text": None, "bg": None, "fg": None, "rgb": None, "masked": None,
           "show_text": n_rows <= CELL_TEXT_LIMIT and n_cols <= CELL_TEXT_LIMIT}
    if max(n_rows, n_cols) > TABLE_LIMIT:
        return out
    rgb = _rgb((np.nan_to_num(shown) - lo) / (hi - lo), stops).astype(int)
    if not out["show_text"]:  # too many cells to print: a canvas paints the colours, values show on hover
        rgb[ninf] = colours.MASKED_RGB
        # flat bytes as base64 text: one short string instead of up to 3 × 4096 numbers per map
        # (a 64-token pipeline sent ~440 kB of JSON per change, parsed and hashed three times)
        masked = base64.b64encode(ninf.ravel().astype(np.uint8).tobytes()).decode("ascii") if ninf.any() else None
        return out | {"rgb": base64.b64encode(rgb.astype(np.uint8).tobytes()).decode("ascii"), "masked": masked}
    fmt = f"{{:.{decimals}f}}".format
    black = colours.text_on(rgb).ravel().tolist()  # the number's colour by computed contrast: ≥ 4.5 : 1 on every cell
    masked = ninf.ravel().tolist()
    flat_t = ["−∞" if m else ("NaN" if n else fmt(v))
              for v, m, n in zip(shown.ravel().tolist(), masked, isnan.ravel().tolist(), strict=True)]
    flat_b = [colours.MASKED_BG if m else f"rgb({r},{g},{b})"
              for (r, g, b), m in zip(rgb.reshape(-1, 3).tolist(), masked, strict=True)]
    flat_f = [colours.MASKED_FG if m else (colours.DARK if b else colours.LIGHT) for b, m in zip(black, masked, strict=True)]
    rows = lambda flat: [flat[i * n_cols:(i + 1) * n_cols] for i in range(n_rows)]  # noqa: E731
    return out | {"text": rows(flat_t), "bg": rows(flat_b), "fg": rows(flat_f)}


def accessible(spec: dict, key: str) -> dict:
    """The spec with what a keyboard and a screen reader need, in the current language: the map's
    accessible name (what it is, its shape, its axes), the key help of a clickable map, the values
    table's button, and the high-contrast setting."""
    n_rows, n_cols = len(spec["ys"]), len(spec["xs"])
    axes = {"rows": n_rows, "cols": n_cols, "y": spec["y_title"], "x": spec["x_title"]}
    name = t("a11y.map.name", title=spec["title"], **axes) if spec["title"] else t("a11y.map.name.untitled", **axes)
    spec["a11y"] = {"id": key, "name": name, "keys": t("a11y.map.keys"), "table": t("a11y.map.table"),
                    "table_help": t("a11y.map.table.help"), "masked": t("a11y.map.masked")}
    spec["hc"] = bool(settings.get("contrast"))
    return spec


def show_heatmap(spec: dict, *, key: str, click_queue: str | None = None) -> None:
    """Mount a heatmap spec: an HTML table for up to TABLE_LIMIT rows/columns, a plotly image
    with hover values beyond. A click on a cell appends ``(key, (row, col))`` to the list
    ``st.session_state[click_queue]``, which the page drains at the start of the next run."""
    n_rows, n_cols = len(spec["ys"]), len(spec["xs"])
    # PNG / SVG buttons under the map: a picture for slides with its title, labels and values
    spec["export"] = {"file": key.replace(".", "-"), "help": t("export.help")}
    accessible(spec, key)
    if max(n_rows, n_cols) <= TABLE_LIMIT:
        def clicked() -> None:
            state = st.session_state.get(key) or {}
            cell = state.get("cell") if hasattr(state, "get") else None
            if click_queue and isinstance(cell, (list, tuple)) and len(cell) == 2:
                st.session_state.setdefault(click_queue, []).append((key, (int(cell[0]), int(cell[1]))))

        _HEATMAP_COMPONENT(data=spec, key=key, on_cell_change=clicked)
        return
    layout = {
        "height": int(min(720, max(260, 4 * n_rows + 120))), "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "xaxis": {"title": {"text": spec["x_title"]}, "side": "top", "showticklabels": False},
        "yaxis": {"title": {"text": spec["y_title"]}, "autorange": "reversed", "showticklabels": False},
    }
    trace = {"type": "heatmap", "z": spec["z"], "zmin": spec["lo"], "zmax": spec["hi"], "showscale": False,
             "colorscale": [[t, f"rgb{c}"] for t, c in (_SEQ if spec["sequential"] else _DIV)],
             "hovertemplate": f"{spec['y_title']} %{{y}}<br>{spec['x_title']} %{{x}}<br>%{{z}}<extra></extra>"}
    show_chart(PrebuiltFigure({"data": [trace], "layout": layout}), key=key, title=spec["title"] or None)


def fits_one_element(specs) -> bool:
    """Whether maps can be drawn by :func:`show_maps` (tables or canvases; not plotly images)."""
    return all(max(len(s["ys"]), len(s["xs"])) <= TABLE_LIMIT for s in specs)


def show_maps(panels: list[dict], *, key: str, per_row: int, click_queue: str | None = None, large: bool = False,
              url: str | None = None) -> None:
    """Several heatmap panels as ONE element, ``per_row`` side by side.

    A panel is ``{"key", "title", "mathml", "shape", "map", "before", "after", "warning"}``: ``map``
    is a :func:`heatmap` spec, ``key`` the map's own registry key (a class on the panel, and the
    name its clicks report), the notes plain text. A click on a cell appends ``(panel key, (row,
    col))`` to ``st.session_state[click_queue]``, as :func:`show_heatmap` does. ``url`` (a query
    string, "?a=1&…") is put in the browser's address bar in place (``history.replaceState``) — how a
    fragment rerun keeps the link current without Streamlit's own URL update, which re-renders the
    whole app (BENCHMARKS.md)."""
    keys = [p["key"] for p in panels]
    for p in panels:
        p["map"]["export"] = {"file": p["key"].replace(".", "-"), "help": t("export.help")}
        accessible(p["map"], p["key"])
        p["css"] = state.css_class(p["key"])[1:]

    def clicked() -> None:
        got = st.session_state.get(key) or {}
        cell = got.get("cell") if hasattr(got, "get") else None
        if click_queue and isinstance(cell, (list, tuple)) and len(cell) == 3 and 0 <= int(cell[0]) < len(keys):
            st.session_state.setdefault(click_queue, []).append((keys[int(cell[0])], (int(cell[1]), int(cell[2]))))

    high_contrast = bool(settings.get("contrast"))
    _MAPS_COMPONENT(data={"panels": panels, "per_row": per_row, "present": large, "url": url, "hc": high_contrast}, key=key,
                    on_cell_change=clicked)
