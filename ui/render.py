"""Rendering: heatmaps, matrix editors, formula and shape panels. No math beyond display rounding."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from .i18n import t
from .text import indexed_labels, plotly_label

CELL_TEXT_LIMIT = 16  # cell values are printed inside cells up to this many rows/columns
EDIT_LIMIT = 64  # matrices are editable up to this many tokens

DIVERGING = "RdBu_r"
SEQUENTIAL = "Blues"


def heatmap(
    z: np.ndarray,
    *,
    x_labels: Sequence[str],
    y_labels: Sequence[str],
    x_title: str,
    y_title: str,
    decimals: int = 3,
    neg_inf: np.ndarray | None = None,
    sequential: bool = False,
    side_text: Sequence[str] | None = None,
    clickable: bool = False,
    highlight: tuple[int, int] | None = None,
    highlight_row: int | None = None,
    highlight_col: int | None = None,
    height: int | None = None,
) -> go.Figure:
    """A labelled heatmap of ``z`` (rows = y, columns = x).

    neg_inf marks cells shown as −∞ (masked logits). side_text adds one note right of each
    row (e.g. row sums). clickable overlays nearly transparent markers so a click on a cell
    comes back to Python as a selected point (Streamlit forwards scatter selections only).
    """
    z = np.asarray(z, dtype=float)
    n_rows, n_cols = z.shape
    shown = np.round(z, decimals)
    if neg_inf is not None:
        shown = np.where(neg_inf, np.nan, shown)
    finite = shown[np.isfinite(shown)]
    if sequential:
        zmin, zmax, scale = 0.0, max(1e-12, float(finite.max()) if finite.size else 1.0), SEQUENTIAL
    else:
        lim = float(np.abs(finite).max()) if finite.size else 1.0
        zmin, zmax, scale = -max(lim, 1e-12), max(lim, 1e-12), DIVERGING
    fmt = f"{{:.{decimals}f}}"
    text = [["−∞" if (neg_inf is not None and neg_inf[i, j]) else fmt.format(shown[i, j]) for j in range(n_cols)]
            for i in range(n_rows)]
    xs = [plotly_label(s) for s in x_labels]
    ys = [plotly_label(s) for s in y_labels]
    show_text = n_rows <= CELL_TEXT_LIMIT and n_cols <= CELL_TEXT_LIMIT
    labelled = max(n_rows, n_cols) <= 64  # per-cell hover labels cost payload; large maps hover by index
    if labelled:
        custom = [[[ys[i], xs[j], text[i][j]] for j in range(n_cols)] for i in range(n_rows)]
        hover = f"{y_title}: %{{customdata[0]}}<br>{x_title}: %{{customdata[1]}}<br>%{{customdata[2]}}<extra></extra>"
    else:
        custom = None
        hover = f"{y_title} %{{y}}<br>{x_title} %{{x}}<br>%{{z}}<extra></extra>"
    fig = go.Figure(
        go.Heatmap(
            z=shown.tolist(), x=list(range(n_cols)), y=list(range(n_rows)),
            text=text if show_text else None, texttemplate="%{text}" if show_text else None, textfont={"size": 13},
            colorscale=scale, zmin=zmin, zmax=zmax, showscale=False, xgap=1, ygap=1,
            customdata=None if clickable else custom, hovertemplate=hover,
            hoverinfo="skip" if clickable else None,
        )
    )
    if clickable:
        # Streamlit forwards scatter selections, not heatmap clicks: one invisible marker per cell
        # carries the click (and the hover label, since it sits on top)
        ii, jj = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
        fig.add_trace(go.Scatter(
            x=jj.ravel().tolist(), y=ii.ravel().tolist(), mode="markers",
            marker={"symbol": "square", "size": 28 if max(n_rows, n_cols) <= 16 else 8, "opacity": 0.01,
                    "color": "black"},
            customdata=None if custom is None else [c for row in custom for c in row],
            hovertemplate=hover if labelled else f"{y_title} %{{y}}<br>{x_title} %{{x}}<extra></extra>",
            showlegend=False,
        ))
    shapes = []
    if highlight_row is not None:
        shapes.append(dict(type="rect", x0=-0.5, x1=n_cols - 0.5, y0=highlight_row - 0.5, y1=highlight_row + 0.5,
                           line={"color": "#f59e0b", "width": 3}))
    if highlight_col is not None:
        shapes.append(dict(type="rect", y0=-0.5, y1=n_rows - 0.5, x0=highlight_col - 0.5, x1=highlight_col + 0.5,
                           line={"color": "#f59e0b", "width": 3}))
    if highlight is not None:
        i, j = highlight
        shapes.append(dict(type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5,
                           line={"color": "#dc2626", "width": 4}))
    annotations = []
    if side_text is not None:
        for i, s in enumerate(side_text):
            annotations.append(dict(x=n_cols - 0.5, y=i, xref="x", yref="y", text=s, showarrow=False,
                                    xanchor="left", xshift=6, font={"size": 12, "color": "#475569"}))
    dense = max(n_rows, n_cols) > 40
    fig.update_layout(
        shapes=shapes, annotations=annotations,
        margin={"l": 10, "r": 70 if side_text is not None else 10, "t": 10, "b": 10},
        height=height or int(min(720, max(220, 34 * n_rows + 90))),
        xaxis={"tickmode": "array", "tickvals": list(range(n_cols)), "ticktext": xs, "side": "top",
               "title": {"text": x_title}, "showticklabels": not dense, "fixedrange": True},
        yaxis={"tickmode": "array", "tickvals": list(range(n_rows)), "ticktext": ys, "autorange": "reversed",
               "title": {"text": y_title}, "showticklabels": not dense, "fixedrange": True},
        dragmode=False, clickmode="event+select",
    )
    return fig


def show_figure(fig: go.Figure, *, key: str | None = None, clickable: bool = False):
    """Render a figure; with ``clickable`` return the selection event (a dict) or None."""
    config = {"displayModeBar": False}
    if clickable:
        return st.plotly_chart(fig, key=key, on_select="rerun", selection_mode="points", config=config)
    st.plotly_chart(fig, key=key, config=config)
    return None


def clicked_cell(event) -> tuple[int, int] | None:
    """(row, col) of the first clicked point of a selection event, or None."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for p in points or []:
        try:
            return int(round(float(p["y"]))), int(round(float(p["x"])))
        except (KeyError, TypeError, ValueError):
            continue
    return None


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


def editor_edits(key: str) -> dict:
    """The edits held by a data editor, as {row: {col: value}} (for sharing in a URL)."""
    state = st.session_state.get(key)
    if isinstance(state, dict):
        return {str(r): dict(c) for r, c in (state.get("edited_rows") or {}).items()}
    return {}


def token_labels(tokens: Sequence[str]) -> list[str]:
    return indexed_labels(list(tokens))


def dim_labels(d: int, prefix: str = "d") -> list[str]:
    return [f"{prefix}{i}" for i in range(d)]


def shape_badge(text: str) -> None:
    """A one-line shape statement such as ``Q (4×3) · Kᵀ (3×4) → (4×4)``."""
    st.markdown(f"<span class='shape-badge'>{_escape_html(text)}</span>", unsafe_allow_html=True)


def _escape_html(s: str) -> str:
    import html

    return html.escape(s, quote=True)


CSS = """
<style>
.shape-badge {font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 0.92rem;
  background: #eef2ff; color: #1e3a8a; border-radius: 6px; padding: 2px 8px; display: inline-block;}
div[data-testid="stMetricValue"] {font-size: 1.4rem;}
</style>
"""


def inject_css() -> None:
    st.markdown(CSS, unsafe_allow_html=True)
