"""The display spec of a labelled heatmap (colours, printed values, labels), built without Streamlit.

The app draws it with ``assets/components/heatmap_lib.js`` (:mod:`ui.widgets.heatmap`), the notebook
views with the same JS and an SVG fallback (:mod:`attention_lab.notebook`). Display only: values are
rounded, never computed here."""

from __future__ import annotations

import base64
import csv
import io
from collections.abc import Sequence

import numpy as np

from . import colours

CELL_TEXT_LIMIT = 16  # cell values are printed inside cells up to this many rows/columns
TABLE_LIMIT = 64  # up to this many rows/columns a heatmap is an HTML table (or canvas); beyond, a plotly image
SUMMARY_TOP = 3  # beyond TABLE_LIMIT the text alternative is a summary: each row's largest values …
SUMMARY_ALL = CELL_TEXT_LIMIT  # … or every value of the row, when the map is at most this many columns wide
# colour scales (display only) and the contrast rule for the numbers in cells: attention_lab/colours.py


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
    if cells["rgb"] is not None or max(z.shape) > TABLE_LIMIT:
        # a canvas map or a plotly image: its values as float64 bytes, row by row (NaN: a −∞ or undefined
        # cell), base64 — one string instead of up to 512 × 512 numbers as JSON (plotly reads the bytes as
        # a typed array: ui.widgets.heatmap)
        z_out = base64.b64encode(z_shown.astype("<f8").tobytes()).decode("ascii")
    else:
        z_out = [[None if v != v else v for v in row] for row in z_shown.tolist()]  # NaN (−∞ cells) → null
    out = cells | {
        "z": z_out,
        "xs": [str(x) for x in x_labels], "ys": [str(y) for y in y_labels],
        "x_title": x_title, "y_title": y_title, "side": None if side_text is None else list(side_text),
        "side_title": side_title, "clickable": bool(clickable), "decimals": int(decimals),
        "vertical": (z.shape[1] > 6 and longest > 3) or longest > 8,
        "highlight_row": highlight_row, "highlight_col": highlight_col,
        "mark": None if highlight is None else list(highlight),
        "sequential": sequential, "lo": lo, "hi": hi, "title": title, "present": large, "compact": compact,
    }
    if max(z.shape) > TABLE_LIMIT:  # a plotly image: its text alternative, and which null cells are −∞
        out["summary"] = summary(shown, ninf, isnan, decimals)
        out["masked"] = base64.b64encode(ninf.ravel().astype(np.uint8).tobytes()).decode("ascii") if ninf.any() else None
    return out


def summary(shown: np.ndarray, ninf: np.ndarray, isnan: np.ndarray, decimals: int) -> dict:
    """A large map's text alternative (``shown``: the rounded values, (n_rows, n_cols)): per row the
    columns ``cols`` of its SUMMARY_TOP largest values (ties: the first column first; −∞ and NaN
    cells only when nothing else is left) and their ``text`` as the map shows them ("0.412", "−∞",
    "NaN"), and ``masked``, how many of its cells are −∞. A map at most SUMMARY_ALL columns wide lists
    every value in column order (``all``; ``cols`` is then None). The whole map is :func:`map_csv`."""
    n_cols = shown.shape[1]
    every = n_cols <= SUMMARY_ALL
    if every:
        cols = np.broadcast_to(np.arange(n_cols), shown.shape)
    else:
        cols = top_columns(np.where(ninf | isnan, -np.inf, shown), SUMMARY_TOP)
    fmt = f"{{:.{decimals}f}}".format
    vals, neg, nan = (np.take_along_axis(a, cols, axis=1).tolist() for a in (shown, ninf, isnan))
    text = [["−∞" if m else ("NaN" if n else fmt(v)) for v, m, n in zip(*row, strict=True)]
            for row in zip(vals, neg, nan, strict=True)]
    return {"all": bool(every), "cols": None if every else cols.tolist(), "text": text,
            "masked": ninf.sum(axis=1).astype(int).tolist()}


def top_columns(key: np.ndarray, k: int) -> np.ndarray:
    """(n_rows, k): each row's columns of its k largest values, largest first, ties by the first column
    first — ``np.argsort(-key, kind="stable")[:, :k]``, without sorting whole rows: a partition finds each
    row's k-th largest value; a row with exactly k columns at or above it orders just those, a row with
    ties at that value (more than k) is sorted whole."""
    n_rows, n_cols = key.shape
    if n_cols <= k:
        return np.argsort(-key, axis=1, kind="stable")
    kth = np.partition(key, n_cols - k, axis=1)[:, n_cols - k]  # (n_rows,) each row's k-th largest
    above = key >= kth[:, None]
    simple = above.sum(axis=1) == k
    cols = np.empty((n_rows, k), dtype=np.intp)
    if simple.any():
        idx = np.nonzero(above[simple])[1].reshape(-1, k)  # their k columns, in column order
        order = np.argsort(-np.take_along_axis(key[simple], idx, axis=1), axis=1, kind="stable")
        cols[simple] = np.take_along_axis(idx, order, axis=1)
    if not simple.all():
        cols[~simple] = np.argsort(-key[~simple], axis=1, kind="stable")[:, :k]
    return cols


def map_csv(spec: dict) -> str:
    """Every value of a map as CSV, laid out as shown (a header of column labels, then one line per row,
    its label first), rounded as shown; −∞ cells are ``-inf``, undefined ones ``nan``. A large map's
    full table (its download), where the page shows a summary."""
    n, m = len(spec["ys"]), len(spec["xs"])
    z = spec["z"]
    if isinstance(z, str):
        vals = np.frombuffer(base64.b64decode(z), dtype="<f8").reshape(n, m)
        z = [[None if v != v else v for v in row] for row in vals.tolist()]
    ninf = (np.frombuffer(base64.b64decode(spec["masked"]), dtype=np.uint8).reshape(n, m).astype(bool)
            if isinstance(spec.get("masked"), str) else np.zeros((n, m), dtype=bool))
    fmt = f"{{:.{int(spec['decimals'])}f}}".format
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow([f"{spec['y_title']} \\ {spec['x_title']}", *spec["xs"]])
    for i, (label, row) in enumerate(zip(spec["ys"], z, strict=True)):
        out.writerow([label, *(("-inf" if ninf[i, j] else "nan") if v is None else fmt(v) for j, v in enumerate(row))])
    return buf.getvalue()


def _range(finite: np.ndarray, sequential: bool):
    """(lo, hi, colour stops): 0 … max for weights and masks, ±max|z| around white otherwise."""
    if sequential:
        return 0.0, max(1e-12, float(finite.max()) if finite.size else 1.0), colours.SEQ
    lim = max(float(np.abs(finite).max()) if finite.size else 1.0, 1e-12)
    return -lim, lim, colours.DIV


def _cells(shown, ninf, isnan, lo, hi, stops, decimals) -> dict:
    """Per-cell text and colours for an HTML table (≤ 16 rows/columns), or flat colours for a
    canvas (≤ 64: ``rgb`` r, g, b bytes per cell and ``masked`` one byte per cell, both base64);
    nothing per cell beyond that (plotly draws it)."""
    n_rows, n_cols = shown.shape
    out = {"text": None, "bg": None, "fg": None, "rgb": None, "masked": None,
           "show_text": n_rows <= CELL_TEXT_LIMIT and n_cols <= CELL_TEXT_LIMIT}
    if max(n_rows, n_cols) > TABLE_LIMIT:
        return out
    rgb = colours.rgb_at((np.nan_to_num(shown) - lo) / (hi - lo), stops).astype(int)
    if not out["show_text"]:  # too many cells to print: a canvas paints the colours, values show on hover
        rgb[ninf] = colours.MASKED_RGB
        # flat bytes as base64 text: one short string instead of up to 3 × 4096 numbers per map
        # (a 64-token pipeline sent ~440 kB of JSON per change, parsed and hashed three times)
        masked = base64.b64encode(ninf.ravel().astype(np.uint8).tobytes()).decode("ascii") if ninf.any() else None
        return out | {"rgb": base64.b64encode(rgb.astype(np.uint8).tobytes()).decode("ascii"), "masked": masked}
    fmt = f"{{:.{decimals}f}}".format
    masked = ninf.ravel().tolist()
    flat_t = ["−∞" if m else ("NaN" if n else fmt(v))
              for v, m, n in zip(shown.ravel().tolist(), masked, isnan.ravel().tolist(), strict=True)]
    flat_b = [colours.MASKED_BG if m else f"rgb({r},{g},{b})"
              for (r, g, b), m in zip(rgb.reshape(-1, 3).tolist(), masked, strict=True)]
    flat_f = colours.text_colour(rgb, ninf).ravel().tolist()  # the number's colour by computed contrast: ≥ 4.5 : 1
    rows = lambda flat: [flat[i * n_cols:(i + 1) * n_cols] for i in range(n_rows)]  # noqa: E731
    return out | {"text": rows(flat_t), "bg": rows(flat_b), "fg": rows(flat_f)}
