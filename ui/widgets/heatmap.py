"""Labelled heatmaps: HTML tables (values in the cells) up to 16 tokens, one canvas up to 64,
a plotly image beyond (with a summary table, a cell picker and a CSV of every value: :func:`large_map`).
Display only: values are rounded, never computed here."""

from __future__ import annotations

import base64

import numpy as np
import streamlit as st

from attention_lab import colours

# the display spec of a map is built without Streamlit (shared with the notebook views)
from attention_lab.heatmap_spec import CELL_TEXT_LIMIT, SUMMARY_TOP, TABLE_LIMIT, heatmap, map_csv  # noqa: F401

from .. import settings, state
from ..i18n import t
from .assets import ASSETS, served_js
from .figures import PrebuiltFigure, show_chart

A11Y_CSS = (ASSETS / "a11y.css").read_text(encoding="utf-8")  # the .sr-only rule every component puts first
_CSS = A11Y_CSS + (ASSETS / "heatmap.css").read_text(encoding="utf-8")
# both draw with heatmap_lib.js, their code served as a file (assets.served_js): each map carries its data only
_HEATMAP_COMPONENT = st.components.v2.component("attention_lab_heatmap", js=served_js("heatmap"), css=_CSS)
# several panels (title, formula, shape line, map) as one element: the Playground's pipeline
_MAPS_COMPONENT = st.components.v2.component(
    "attention_lab_maps", js=served_js("maps"), css=_CSS + (ASSETS / "maps.css").read_text(encoding="utf-8"))


def accessible(spec: dict, key: str) -> dict:
    """The spec with what a keyboard and a screen reader need, in the current language: the map's
    accessible name (what it is, its shape, its axes), the key help of a clickable map, the values
    table's button, and the high-contrast setting (with it, the text of masked cells is black too: every
    number in a cell is then pure black or pure white, picked by computed contrast)."""
    n_rows, n_cols = len(spec["ys"]), len(spec["xs"])
    axes = {"rows": n_rows, "cols": n_cols, "y": spec["y_title"], "x": spec["x_title"]}
    name = t("a11y.map.name", title=spec["title"], **axes) if spec["title"] else t("a11y.map.name.untitled", **axes)
    spec["a11y"] = {"id": key, "name": name, "keys": t("a11y.map.keys"), "table": t("a11y.map.table"),
                    "table_help": t("a11y.map.table.help"), "masked": t("a11y.map.masked")}
    spec["hc"] = bool(settings.get("contrast"))
    if spec["hc"] and spec.get("fg"):
        spec["fg"] = [[colours.DARK if fg == colours.MASKED_FG else fg for fg in row] for row in spec["fg"]]
    return spec


PNG_SCALES = (2, 3)  # the PNG's pixels per screen pixel: one button each (heatmap_lib.js PNG_SCALES)


def export_spec(key: str) -> dict:
    """The picture buttons' file name and help texts (SVG; PNG at each scale)."""
    return {"file": key.replace(".", "-"), "help": t("export.help"),
            "png_help": {str(s): t("class.export.png", scale=s) for s in PNG_SCALES}}


def _queue_cell(component_key: str, chart_key: str, click_queue: str | None, shape: tuple[int, int]):
    """The callback of a map's element: the cell it reported (a click, Enter, or the cell picker of a
    large map) goes to ``st.session_state[click_queue]`` as ``(chart_key, (row, col))`` when it is a
    cell of the map (``shape``; the browser side is not trusted)."""
    def clicked() -> None:
        got = st.session_state.get(component_key) or {}
        cell = got.get("cell") if hasattr(got, "get") else None
        if click_queue and isinstance(cell, (list, tuple)) and len(cell) == 2 and all(
                isinstance(c, int) and not isinstance(c, bool) and 0 <= c < n for c, n in zip(cell, shape, strict=True)):
            st.session_state.setdefault(click_queue, []).append((chart_key, (int(cell[0]), int(cell[1]))))
    return clicked


def show_heatmap(spec: dict, *, key: str, click_queue: str | None = None) -> None:
    """Mount a heatmap spec: an HTML table for up to TABLE_LIMIT rows/columns, a plotly image
    with hover values beyond (see :func:`large_map`). A click on a cell appends ``(key, (row, col))``
    to the list ``st.session_state[click_queue]``, which the page drains at the start of the next run."""
    n_rows, n_cols = len(spec["ys"]), len(spec["xs"])
    # PNG / SVG buttons under the map: a picture for slides with its title, labels and values
    spec["export"] = export_spec(key)
    accessible(spec, key)
    spec["present"] = bool(spec.get("present")) or settings.presenting()  # presenter view: the map fills the screen
    if max(n_rows, n_cols) <= TABLE_LIMIT:
        _HEATMAP_COMPONENT(data=spec, key=key, on_cell_change=_queue_cell(key, key, click_queue, (n_rows, n_cols)))
        return
    layout = {
        "height": int(min(720, max(260, 4 * n_rows + 120))), "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "xaxis": {"title": {"text": spec["x_title"]}, "side": "top", "showticklabels": False},
        "yaxis": {"title": {"text": spec["y_title"]}, "autorange": "reversed", "showticklabels": False},
    }
    # the values as plotly.js's typed array, float32 (half the bytes of the spec's float64; the hover prints
    # them rounded as shown; NaN draws no cell)
    z = {"dtype": "f4", "shape": f"{n_rows},{n_cols}", "bdata": base64.b64encode(
        np.frombuffer(base64.b64decode(spec["z"]), dtype="<f8").astype("<f4").tobytes()).decode("ascii")}
    trace = {"type": "heatmap", "z": z, "zmin": spec["lo"], "zmax": spec["hi"], "showscale": False,
             "colorscale": [[pos, f"rgb{c}"] for pos, c in colours.scale(spec["sequential"])],
             "hovertemplate": (f"{spec['y_title']} %{{y}}<br>{spec['x_title']} %{{x}}<br>"
                               f"%{{z:.{spec['decimals']}f}}<extra></extra>")}
    show_chart(PrebuiltFigure({"data": [trace], "layout": layout}), key=key, title=spec["title"] or None,
               alt=spec["a11y"]["name"])
    large_map(spec, key=key, click_queue=click_queue)


def large_map_data(spec: dict, *, pick: bool) -> dict:
    """What the browser gets for a large map's text alternative (not its values: those are the plotly
    image's and the CSV's): labels, the summary (:func:`attention_lab.heatmap_spec.summary`), the strings,
    and whether it offers the cell picker (a clickable map with a page that takes its clicks)."""
    n_rows, n_cols = len(spec["ys"]), len(spec["xs"])
    axes = {"y": spec["y_title"], "x": spec["x_title"], "k": SUMMARY_TOP}
    a11y = spec["a11y"] | {
        "table": t("a11y.big.table"), "table_help": t("a11y.big.table.help"),
        "caption": t("a11y.big.caption.all" if spec["summary"]["all"] else "a11y.big.caption", **axes),
        "rank": [t("a11y.big.rank", r=r + 1) for r in range(SUMMARY_TOP)], "masked_head": t("a11y.big.masked"),
        "pick": t("a11y.big.pick"), "go": t("a11y.big.go"),
        "row": t("a11y.big.row", y=spec["y_title"], last=n_rows - 1),
        "col": t("a11y.big.col", x=spec["x_title"], last=n_cols - 1)}
    return {"large": True, "a11y": a11y, "xs": spec["xs"], "ys": spec["ys"], "x_title": spec["x_title"],
            "y_title": spec["y_title"], "decimals": spec["decimals"], "summary": spec["summary"],
            "clickable": bool(pick), "mark": spec["mark"], "highlight_row": spec["highlight_row"],
            "highlight_col": spec["highlight_col"], "hc": spec["hc"]}


def large_map(spec: dict, *, key: str, click_queue: str | None) -> None:
    """Under a large map's plotly image (named by its ``alt``): one element with the map's summary as a
    table behind a button, and — on a clickable map — a cell picker (row and column numbers, Enter),
    the keyboard's (and the mouse's) way to do what a click on a small map does; then the whole map as
    a CSV download, written only when clicked."""
    own = state.item(key, "a11y")
    _HEATMAP_COMPONENT(data=large_map_data(spec, pick=spec["clickable"] and bool(click_queue)), key=own,
                       on_cell_change=_queue_cell(own, key, click_queue, (len(spec["ys"]), len(spec["xs"]))))
    st.download_button(t("a11y.big.csv"), data=lambda: map_csv(spec), file_name=f"{key.replace('.', '-')}.csv",
                       mime="text/csv", key=state.item(key, "csv"), help=t("a11y.big.csv.help"), type="tertiary",
                       width="content", on_click="ignore")


def fits_one_element(specs) -> bool:
    """Whether maps can be drawn by :func:`show_maps` (tables or canvases; not plotly images)."""
    return all(max(len(s["ys"]), len(s["xs"])) <= TABLE_LIMIT for s in specs)


def show_maps(panels: list[dict], *, key: str, per_row: int, click_queue: str | None = None, large: bool = False,
              focus: str | None = None) -> None:
    """Several heatmap panels as ONE element, ``per_row`` side by side.

    A panel is ``{"key", "title", "mathml", "shape", "map", "before", "after", "warning"}``: ``map``
    is a :func:`heatmap` spec, ``key`` the map's own registry key (a class on the panel, and the
    name its clicks report), the notes plain text. A click on a cell appends ``(panel key, (row,
    col))`` to ``st.session_state[click_queue]``, as :func:`show_heatmap` does.
    ``focus``: the key of a panel just shown (a step-through), scrolled into view and focused in the
    browser."""
    keys = [p["key"] for p in panels]
    for p in panels:
        p["map"]["export"] = export_spec(p["key"])
        accessible(p["map"], p["key"])
        p["css"] = state.css_class(p["key"])[1:]

    def clicked() -> None:
        got = st.session_state.get(key) or {}
        cell = got.get("cell") if hasattr(got, "get") else None
        if click_queue and isinstance(cell, (list, tuple)) and len(cell) == 3 and 0 <= int(cell[0]) < len(keys):
            st.session_state.setdefault(click_queue, []).append((keys[int(cell[0])], (int(cell[1]), int(cell[2]))))

    high_contrast = bool(settings.get("contrast"))
    _MAPS_COMPONENT(data={"panels": panels, "per_row": per_row, "present": large or settings.presenting(), "hc": high_contrast,
                          "focus": focus}, key=key,
                    on_cell_change=clicked)
