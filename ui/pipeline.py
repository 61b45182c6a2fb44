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
from .widgets.heatmap import fits_one_element, heatmap, show_heatmap, show_maps
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
             large: bool = False, url: str | None = None, focus: str | None = None) -> bool:
    """The steps of ``trace`` (a core.lab.PlaygroundTrace); ``prefix`` keeps chart keys apart.

    ``shows(step)`` picks the panels drawn (the step-through, a lesson link); ``per_row`` fixes
    how many maps stand side by side (default: three while every column fits, else two).
    Without the header (the Playground beside its controls) the panels are ONE element, which also
    puts ``url`` in the address bar (see :func:`show_maps`); returns whether it did. ``focus`` names the
    step just shown by a step-through (scrolled into view and focused there)."""
    v = View(list(q_labels), list(k_labels), conv, dec, prefix, clicks, large, compact=not header)
    A = trace.attn
    if header:
        st.subheader(t("pg.pipeline"))
        st.latex(formulas.WHOLE[conv])
        st.caption(t("pg.pipeline.values", scale=f"{A.scale:.{dec}f}", T=f"{A.temperature:g}"))
    n_max = max(len(q_labels), len(k_labels))
    # three maps side by side while every column fits at 1280 pixels (a cell is about 7 px per printed character)
    per_row = per_row or (3 if n_max <= 3 or (n_max <= 4 and dec <= 2) else 2 if n_max <= 8 else 1)
    build = {"scores": lambda: _scores(v, trace, score), "scaled": lambda: _scaled(v, A), "masked": lambda: _masked(v, A),
             "weights": lambda: _weights(v, A, query), "output": lambda: _output(v, A, trace.V.shape[1])}
    panels = [build[name]() for name in STEPS if shows is None or shows(name)]
    if v.compact and fits_one_element(p.spec for p in panels):
        show_maps([_as_dict(v, p) for p in panels], key=state.item(prefix, "maps"), per_row=per_row, click_queue=clicks,
                  large=large, url=url, focus=v.key(focus) if focus in STEPS else None)
        return url is not None
    for start in range(0, len(panels), per_row):
        for col, p in zip(st.columns(per_row), panels[start:start + per_row], strict=False):
            with col:
                _draw(v, p)
    return False


@dataclass(frozen=True)
class Panel:
    """One step: its title, formula (LaTeX, and MathML for the one-element pipeline), shape line,
    the heatmap spec, notes above and under the map, and the queries whose every key is masked."""

    step: str
    title: str
    latex: str
    mathml: str
    shape: str
    spec: dict
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    masked_names: tuple[str, ...] = ()


def _draw(v: View, p: Panel) -> None:
    """A panel as Streamlit elements: header, notes, map, warning."""
    panel_header(p.title, p.latex, p.shape, compact=v.compact)
    for note in p.before:
        st.caption(note)
    show_heatmap(p.spec, key=v.key(p.step), click_queue=v.clicks if p.step == "weights" else None)
    for note in p.after:
        st.caption(note)
    if p.masked_names:
        st.warning(t("pg.fully_masked", names=", ".join(md(n) for n in p.masked_names)))


def _as_dict(v: View, p: Panel) -> dict:
    """A panel for :func:`show_maps` (plain text: the component inserts it as text)."""
    warning = t("pg.fully_masked", names=", ".join(p.masked_names)) if p.masked_names else None
    return {"key": v.key(p.step), "title": p.title, "mathml": p.mathml, "shape": p.shape, "map": p.spec,
            "before": list(p.before), "after": list(p.after), "warning": warning}


def _spec(v: View, z, title: str, **kw) -> dict:
    return heatmap(z, decimals=v.dec, title=title, large=v.large, compact=v.compact, **(v.axes | kw))


def _scores(v: View, trace, score: str) -> Panel:
    n_q, n_k, d_k = len(v.q_labels), len(v.k_labels), trace.Q.shape[1]
    shape = (f"Q ({n_q}×{d_k}) · Kᵀ ({d_k}×{n_k}) → ({n_q}×{n_k})" if v.conv == "row"
             else f"Kᵀ ({n_k}×{d_k}) · Q ({d_k}×{n_q}) → ({n_k}×{n_q})")
    title = t("step.scores")
    return Panel("scores", title, formulas.SCORE_MATRIX[v.conv][score], formulas.MATHML_SCORE[v.conv][score], shape,
                 _spec(v, trace.attn.scores.numpy(), title))


def _scaled(v: View, A) -> Panel:
    shape = f"({v.square}) · {A.scale:.{v.dec}g} / {A.temperature:g} → ({v.square})"
    title = t("step.scaled")
    return Panel("scaled", title, formulas.SCALED, formulas.MATHML_SHORT["scaled"], shape, _spec(v, A.scaled.numpy(), title))


def _masked(v: View, A) -> Panel:
    neg = np.isneginf(A.logits.numpy())
    latex = formulas.SHORT["masked"] if v.compact else formulas.MASKED[v.conv]
    title = t("step.masked")
    return Panel("masked", title, latex, formulas.MATHML_SHORT["masked"], f"({v.square}) + M ({v.square}) → ({v.square})",
                 _spec(v, np.where(neg, 0.0, A.logits.numpy()), title, neg_inf=neg))


def _weights(v: View, A, query: int | None) -> Panel:
    sums, fully = A.weight_sums.numpy(), A.fully_masked.numpy()
    notes = [("Σ " + f"{s:.{v.dec}f}") if not f else t("pg.fully_masked_short") for s, f in zip(sums, fully, strict=True)]
    hl = {} if query is None else ({"highlight_row": query} if v.conv == "row" else {"highlight_col": query})
    latex = formulas.SHORT["weights"][v.conv] if v.compact else formulas.SOFTMAX[v.conv]
    title = t("step.weights")
    spec = _spec(v, A.weights.numpy(), title, sequential=True, side_text=notes if v.conv == "row" else None,
                 clickable=bool(v.clicks), **hl)
    click = (t("pg.weights.click"),) if v.clicks else ()
    before = (() if v.compact else click) + ((t("pg.column_sums") + "  " + ",  ".join(notes),) if v.conv == "column" else ())
    return Panel("weights", title, latex, formulas.MATHML_SHORT["weights"][v.conv], f"softmax ({v.square}) → ({v.square})",
                 spec, before=before, after=click if v.compact else (),
                 masked_names=tuple(v.q_labels[i] for i in np.flatnonzero(fully)))


def _output(v: View, A, d_v: int) -> Panel:
    O = A.output.numpy()
    n_q, n_k = len(v.q_labels), len(v.k_labels)
    vl = dim_labels(d_v, "v")
    if v.conv == "row":
        shape = f"α ({n_q}×{n_k}) · V ({n_k}×{d_v}) → ({n_q}×{d_v})"
        kw = {"x_labels": vl, "x_title": t("axis.dim")}
    else:
        shape = f"V ({d_v}×{n_k}) · α ({n_k}×{n_q}) → ({d_v}×{n_q})"
        kw = {"y_labels": vl, "y_title": t("axis.dim"), "x_labels": shorts(v.q_labels), "x_title": t("axis.query")}
    title = t("step.output")
    latex = formulas.SHORT["output"][v.conv] if v.compact else formulas.OUTPUT[v.conv]
    return Panel("output", title, latex, formulas.MATHML_SHORT["output"][v.conv], shape, _spec(v, O, title, **kw),
                 after=(t("pg.output.note"),))
