"""The attention pipeline as panels: scores → scaled → masked → softmax weights → output, each
with its formula and shape line. Used by the Playground and for one head on the multi-head page."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import streamlit as st

from . import state
from .i18n import t
from .inputs import qk_axes
from .text import md, shorts
from .widgets import formulas
from .widgets.heatmap import heatmap, show_heatmap
from .widgets.layout import dim_labels, panel_header

STEPS = ("scores", "scaled", "masked", "weights", "output")


def weights_key(prefix: str) -> str:
    """The weights map's key under a pipeline's key prefix (clicks on it select a query)."""
    return state.item(prefix, "weights")


@dataclass(frozen=True)
class View:
    """What every panel shares: labels in the chosen notation, precision and the click queue."""

    q_labels: list[str]
    k_labels: list[str]
    conv: str
    dec: int
    prefix: str
    clicks: str | None
    large: bool = False  # presenter view: larger type and cells
    compact: bool = False  # the formula on the title's line

    @property
    def axes(self) -> dict:
        return qk_axes(self.conv, shorts(self.q_labels), shorts(self.k_labels))

    @property
    def square(self) -> str:
        n_q, n_k = len(self.q_labels), len(self.k_labels)
        return f"{n_q}×{n_k}" if self.conv == "row" else f"{n_k}×{n_q}"

    def key(self, step: str) -> str:
        return state.item(self.prefix, step)


def pipeline(trace, q_labels, k_labels, conv: str, dec: int, score: str, *, prefix: str, query: int | None = None,
             clicks: str | None = None, shows=None, per_row: int | None = None, header: bool = True,
             large: bool = False) -> None:
    """The steps of ``trace`` (a core.lab.PlaygroundTrace); ``prefix`` keeps chart keys apart.

    ``shows(step)`` picks the panels drawn (the step-through, a lesson link); ``per_row`` fixes
    how many maps stand side by side (default: three while every column fits, else two)."""
    v = View(list(q_labels), list(k_labels), conv, dec, prefix, clicks, large, compact=not header)
    A = trace.attn
    if header:
        st.subheader(t("pg.pipeline"))
        st.latex(formulas.WHOLE[conv])
        st.caption(t("pg.pipeline.values", scale=f"{A.scale:.{dec}f}", T=f"{A.temperature:g}"))
    n_max = max(len(q_labels), len(k_labels))
    # three maps side by side while every column fits at 1280 pixels (a cell is about 7 px per printed character)
    per_row = per_row or (3 if n_max <= 3 or (n_max <= 4 and dec <= 2) else 2 if n_max <= 8 else 1)
    draw = {"scores": lambda: _scores(v, trace, score), "scaled": lambda: _scaled(v, A), "masked": lambda: _masked(v, A),
            "weights": lambda: _weights(v, A, query), "output": lambda: _output(v, A, trace.V.shape[1])}
    chosen = [name for name in STEPS if shows is None or shows(name)]
    for start in range(0, len(chosen), per_row):
        for col, name in zip(st.columns(per_row), chosen[start:start + per_row], strict=False):
            with col:
                draw[name]()


def _map(v: View, step: str, title: str, latex: str, shape: str, z, **kw) -> None:
    panel_header(title, latex, shape, compact=v.compact)
    show_heatmap(heatmap(z, decimals=v.dec, title=title, large=v.large, compact=v.compact, **(v.axes | kw)),
                 key=v.key(step))


def _scores(v: View, trace, score: str) -> None:
    n_q, n_k, d_k = len(v.q_labels), len(v.k_labels), trace.Q.shape[1]
    shape = (f"Q ({n_q}×{d_k}) · Kᵀ ({d_k}×{n_k}) → ({n_q}×{n_k})" if v.conv == "row"
             else f"Kᵀ ({n_k}×{d_k}) · Q ({d_k}×{n_q}) → ({n_k}×{n_q})")
    _map(v, "scores", t("step.scores"), formulas.SCORE_MATRIX[v.conv][score], shape, trace.attn.scores.numpy())


def _scaled(v: View, A) -> None:
    shape = f"({v.square}) · {A.scale:.{v.dec}g} / {A.temperature:g} → ({v.square})"
    _map(v, "scaled", t("step.scaled"), formulas.SCALED, shape, A.scaled.numpy())


def _masked(v: View, A) -> None:
    neg = np.isneginf(A.logits.numpy())
    latex = formulas.SHORT["masked"] if v.compact else formulas.MASKED[v.conv]
    _map(v, "masked", t("step.masked"), latex, f"({v.square}) + M ({v.square}) → ({v.square})",
         np.where(neg, 0.0, A.logits.numpy()), neg_inf=neg)


def _weights(v: View, A, query: int | None) -> None:
    sums, fully = A.weight_sums.numpy(), A.fully_masked.numpy()
    notes = [("Σ " + f"{s:.{v.dec}f}") if not f else t("pg.fully_masked_short") for s, f in zip(sums, fully, strict=True)]
    hl = {} if query is None else ({"highlight_row": query} if v.conv == "row" else {"highlight_col": query})
    latex = formulas.SHORT["weights"][v.conv] if v.compact else formulas.SOFTMAX[v.conv]
    panel_header(t("step.weights"), latex, f"softmax ({v.square}) → ({v.square})", compact=v.compact)
    if v.clicks and not v.compact:
        st.caption(t("pg.weights.click"))
    spec = heatmap(A.weights.numpy(), decimals=v.dec, sequential=True, side_text=notes if v.conv == "row" else None,
                   clickable=bool(v.clicks), title=t("step.weights"), large=v.large, compact=v.compact, **(v.axes | hl))
    if v.conv == "column":
        st.caption(t("pg.column_sums") + "  " + ",  ".join(notes))
    show_heatmap(spec, key=v.key("weights"), click_queue=v.clicks)
    if v.clicks and v.compact:
        st.caption(t("pg.weights.click"))
    if fully.any():
        st.warning(t("pg.fully_masked", names=", ".join(md(v.q_labels[i]) for i in np.flatnonzero(fully))))


def _output(v: View, A, d_v: int) -> None:
    O = A.output.numpy()
    n_q, n_k = len(v.q_labels), len(v.k_labels)
    vl = dim_labels(d_v, "v")
    if v.conv == "row":
        shape = f"α ({n_q}×{n_k}) · V ({n_k}×{d_v}) → ({n_q}×{d_v})"
        kw = {"x_labels": vl, "x_title": t("axis.dim")}
    else:
        shape = f"V ({d_v}×{n_k}) · α ({n_k}×{n_q}) → ({d_v}×{n_q})"
        kw = {"y_labels": vl, "y_title": t("axis.dim"), "x_labels": shorts(v.q_labels), "x_title": t("axis.query")}
    _map(v, "output", t("step.output"), formulas.SHORT["output"][v.conv] if v.compact else formulas.OUTPUT[v.conv], shape, O,
         **kw)
    st.caption(t("pg.output.note"))
