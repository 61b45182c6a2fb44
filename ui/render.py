"""Rendering: heatmaps, matrix editors, formula and shape panels. No math beyond display rounding."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from .i18n import t
from .text import indexed_labels, short

FONT_FAMILY = "Source Sans, attention-lab-kr, Noto Sans CJK KR, sans-serif"  # see .streamlit/config.toml
CELL_TEXT_LIMIT = 16  # cell values are printed inside cells up to this many rows/columns
EDIT_LIMIT = 64  # matrices are editable up to this many tokens



class PrebuiltFigure(go.Figure):
    """A plotly figure handed over as a finished dict.

    st.plotly_chart converts any figure with ``to_dict()``; plotly's own objects validate
    and deep-copy every cell on the way, which costs far more than the attention itself
    (0.3 s for a 64 × 64 map). The dicts built here use only documented plotly attributes.
    """

    def __init__(self, spec: dict):
        super().__init__()
        layout = spec.setdefault("layout", {})
        layout.setdefault("font", {"family": FONT_FAMILY})  # Korean labels use the shipped web font
        self._spec = spec

    def to_dict(self) -> dict:  # what Streamlit serialises
        return self._spec


# ----------------------------------------------------------------------------- heatmaps
_ASSETS = Path(__file__).resolve().parent.parent / "assets" / "components"
_HEATMAP_COMPONENT = st.components.v2.component(
    "attention_lab_heatmap",
    js=(_ASSETS / "heatmap.js").read_text(encoding="utf-8"),
    css=(_ASSETS / "heatmap.css").read_text(encoding="utf-8"),
)
TABLE_LIMIT = 64  # up to this many rows/columns a heatmap is an HTML table; beyond, a plotly image

# colour stops (display only): sequential for weights and masks, diverging for signed values
_SEQ = ((0.0, (247, 251, 255)), (0.5, (107, 174, 214)), (1.0, (8, 48, 107)))
_DIV = ((0.0, (33, 102, 172)), (0.5, (247, 247, 247)), (1.0, (178, 24, 43)))
_MASKED_BG = "#e2e8f0"
_MASKED_RGB = (226, 232, 240)  # the same grey


def _rgb(t: np.ndarray, stops) -> np.ndarray:
    """Colour of each value t ∈ [0, 1] by linear interpolation between the stops: (..., 3) ints."""
    xs = [p for p, _ in stops]
    return np.stack([np.interp(np.clip(t, 0, 1), xs, [c[ch] for _, c in stops]) for ch in range(3)], axis=-1).round()


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
) -> dict:
    """The display spec of a labelled heatmap of ``z`` (rows = y, columns = x).

    Values are rounded to ``decimals`` for display; neg_inf marks cells shown as −∞ (masked
    logits); side_text adds a note right of each row (e.g. row sums); clickable cells report
    (row, column) clicks. Render it with :func:`show_heatmap`.
    """
    z = np.asarray(z, dtype=float)
    n_rows, n_cols = z.shape
    shown = np.round(z, decimals)
    ninf = np.zeros(z.shape, dtype=bool) if neg_inf is None else np.asarray(neg_inf, dtype=bool)
    finite = shown[~ninf & np.isfinite(shown)]
    if sequential:
        lo, hi, stops = 0.0, max(1e-12, float(finite.max()) if finite.size else 1.0), _SEQ
    else:
        lim = max(float(np.abs(finite).max()) if finite.size else 1.0, 1e-12)
        lo, hi, stops = -lim, lim, _DIV
    table = max(n_rows, n_cols) <= TABLE_LIMIT
    show_text = n_rows <= CELL_TEXT_LIMIT and n_cols <= CELL_TEXT_LIMIT
    text = bg = fg = rgb_flat = masked = None
    if table:
        rgb = _rgb((np.nan_to_num(shown) - lo) / (hi - lo), stops).astype(int)
    if table and show_text:  # an HTML table with the value printed in every cell
        fmt = f"{{:.{decimals}f}}".format
        dark = rgb @ np.array([0.299, 0.587, 0.114]) < 140
        isnan = np.zeros(z.shape, dtype=bool) if nan is None else np.asarray(nan, dtype=bool)
        flat_t = ["−∞" if m else ("NaN" if n else fmt(v))
                  for v, m, n in zip(shown.ravel().tolist(), ninf.ravel().tolist(), isnan.ravel().tolist(), strict=True)]
        flat_b = [_MASKED_BG if m else f"rgb({r},{g},{b_})"
                  for (r, g, b_), m in zip(rgb.reshape(-1, 3).tolist(), ninf.ravel().tolist(), strict=True)]
        flat_f = ["#475569" if m else ("#ffffff" if d else "#0f172a")
                  for d, m in zip(dark.ravel().tolist(), ninf.ravel().tolist(), strict=True)]
        text = [flat_t[i * n_cols:(i + 1) * n_cols] for i in range(n_rows)]
        bg = [flat_b[i * n_cols:(i + 1) * n_cols] for i in range(n_rows)]
        fg = [flat_f[i * n_cols:(i + 1) * n_cols] for i in range(n_rows)]
    elif table:  # too many cells to print: a canvas paints the colours, the values show on hover
        rgb[ninf] = _MASKED_RGB
        rgb_flat = rgb.reshape(-1).tolist()
        masked = ninf.ravel().astype(int).tolist() if ninf.any() else None
    z_shown = np.where(ninf, np.nan, shown)
    return {
        "z": [[None if v != v else v for v in row] for row in z_shown.tolist()],  # NaN (−∞ cells) → null
        "text": text, "bg": bg, "fg": fg, "xs": [str(x) for x in x_labels], "ys": [str(y) for y in y_labels],
        "x_title": x_title, "y_title": y_title, "side": None if side_text is None else list(side_text),
        "side_title": side_title, "clickable": bool(clickable),
        "show_text": show_text, "rgb": rgb_flat, "masked": masked, "decimals": int(decimals),
        "vertical": (n_cols > 6 and max((len(str(x)) for x in x_labels), default=0) > 3)
        or max((len(str(x)) for x in x_labels), default=0) > 8,
        "highlight_row": highlight_row, "highlight_col": highlight_col,
        "mark": None if highlight is None else list(highlight),
        "sequential": sequential, "lo": lo, "hi": hi,
    }


def show_heatmap(spec: dict, *, key: str, click_queue: str | None = None) -> None:
    """Mount a heatmap spec: an HTML table for up to TABLE_LIMIT rows/columns, a plotly image
    with hover values beyond. A click on a cell appends ``(key, (row, col))`` to the list
    ``st.session_state[click_queue]``, which the page drains at the start of the next run."""
    n_rows, n_cols = len(spec["ys"]), len(spec["xs"])
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
    st.plotly_chart(PrebuiltFigure({"data": [trace], "layout": layout}), key=key, config={"displayModeBar": False})


_BARS_COMPONENT = st.components.v2.component(
    "attention_lab_bars",
    js=(_ASSETS / "bars.js").read_text(encoding="utf-8"),
    css=(_ASSETS / "bars.css").read_text(encoding="utf-8"),
)
_PALETTE = ("#2563eb", "#f97316", "#16a34a", "#dc2626", "#9333ea", "#0891b2", "#ca8a04", "#db2777",
            "#4b5563", "#65a30d", "#7c3aed", "#0d9488")


def weight_bars(labels: Sequence[str], alpha: np.ndarray, decimals: int) -> dict:
    """Bars of one query's weights over the keys (0 … 1)."""
    vals = np.round(np.asarray(alpha, dtype=float), decimals).tolist()
    fmt = f"{{:.{decimals}f}}"
    rows = [{"label": short(lab), "segments": [{"value": v, "color": "#2563eb", "name": "", "text": fmt.format(v)}],
             "total": None, "value_text": fmt.format(v)} for lab, v in zip(labels, vals, strict=True)]
    return {"rows": rows, "lo": 0.0, "hi": 1.0, "legend": []}


def stacked_contributions(labels: Sequence[str], contrib: np.ndarray, total: np.ndarray, decimals: int,
                          *, total_label: str) -> dict:
    """One bar per output dimension: the pieces α_i·v_i (one colour per key) stacked from 0, and
    the black mark of their sum (the output value)."""
    contrib = np.round(np.asarray(contrib, dtype=float), decimals)  # (n_k, d_v)
    tot = np.round(np.asarray(total, dtype=float), decimals)
    fmt = f"{{:.{decimals}f}}"
    colours = [_PALETTE[i % len(_PALETTE)] for i in range(contrib.shape[0])]
    rows = []
    for d in range(contrib.shape[1]):
        segs = [{"value": float(contrib[i, d]), "color": colours[i], "name": short(labels[i]),
                 "text": fmt.format(contrib[i, d])} for i in range(contrib.shape[0])]
        rows.append({"label": f"v{d}", "segments": segs, "total": float(tot[d]), "value_text": fmt.format(tot[d])})
    pos = np.clip(contrib, 0, None).sum(axis=0)
    neg = np.clip(contrib, None, 0).sum(axis=0)
    legend = [{"name": short(labels[i]), "color": colours[i]} for i in range(min(contrib.shape[0], CELL_TEXT_LIMIT))]
    legend.append({"name": total_label, "color": "#0f172a"})
    return {"rows": rows, "lo": float(min(0.0, neg.min(initial=0.0))), "hi": float(max(1e-12, pos.max(initial=0.0))),
            "legend": legend}


def show_bars(spec: dict, *, key: str) -> None:
    _BARS_COMPONENT(data=spec, key=key)


def matrix_frame(m: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str]) -> pd.DataFrame:
    return pd.DataFrame(np.asarray(m, dtype=float), index=list(row_labels), columns=list(col_labels))


def matrix_editor(
    label: str,
    base: np.ndarray,
    *,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    key: str,
    decimals: int = 3,
) -> tuple[np.ndarray, str | None]:
    """An editable table on top of ``base``; returns (matrix, problem).

    Edits are Streamlit's own widget state under ``key`` (so they survive reruns and can be
    put in a URL). A cell left empty or holding NaN/±inf is refused: the problem names the
    cell and the last valid matrix is returned instead.
    """
    base = np.asarray(base, dtype=float)
    if base.ndim == 1:
        base = base[:, None]
    df = matrix_frame(base, row_labels, col_labels)
    step = 10 ** (-decimals)
    cfg = {c: st.column_config.NumberColumn(c, format=f"%.{decimals}f", step=step) for c in df.columns}
    st.caption(label)
    edited = st.data_editor(df, key=key, column_config=cfg, num_rows="fixed", width="stretch")
    values = edited.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    last_key = f"_last_valid.{key}"
    if values.shape != base.shape:
        return base, t("err.cell_shape")
    bad = ~np.isfinite(values)
    if bad.any():
        i, j = map(int, np.argwhere(bad)[0])
        last = st.session_state.get(last_key)
        fallback = last if isinstance(last, np.ndarray) and last.shape == base.shape else base
        return fallback, t("err.cell_invalid", row=row_labels[i], col=col_labels[j])
    too_big = np.abs(values) > 1e6
    if too_big.any():
        i, j = map(int, np.argwhere(too_big)[0])
        last = st.session_state.get(last_key)
        fallback = last if isinstance(last, np.ndarray) and last.shape == base.shape else base
        return fallback, t("err.cell_huge", row=row_labels[i], col=col_labels[j])
    st.session_state[last_key] = values
    return values, None


def token_labels(tokens: Sequence[str]) -> list[str]:
    return indexed_labels(list(tokens))


def dim_labels(d: int, prefix: str = "d") -> list[str]:
    return [f"{prefix}{i}" for i in range(d)]


def panel_header(title: str, latex: str, shape: str) -> None:
    """A panel's bold title, its formula and its shape line as one element.

    One element instead of three: every element is a message the browser renders on each
    rerun, and the pipeline has five panels. ``title`` is UI text (no learner input)."""
    badge = f"<span class='shape-badge'>{html.escape(shape, quote=True)}</span>"
    st.markdown(f"**{title}**\n\n$$\n{latex}\n$$\n\n{badge}", unsafe_allow_html=True)


def shape_badge(text: str) -> None:
    """A one-line shape statement such as ``Q (4×3) · Kᵀ (3×4) → (4×4)``."""
    st.markdown(f"<span class='shape-badge'>{html.escape(text, quote=True)}</span>", unsafe_allow_html=True)


CSS = """
<style>
.shape-badge {font-family: "Source Code Pro", ui-monospace, SFMono-Regular, Menlo, "attention-lab-kr", monospace;
  font-size: 0.92rem;
  background: #eef2ff; color: #1e3a8a; border-radius: 6px; padding: 2px 8px; display: inline-block;}
div[data-testid="stMetricValue"] {font-size: 1.4rem;}
</style>
"""


def inject_css() -> None:
    st.markdown(CSS, unsafe_allow_html=True)
