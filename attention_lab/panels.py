"""The attention pipeline as panels — scores → scaled → masked → softmax weights → output — each with
its title, formula (LaTeX; MathML generated from it), shape line, notes and heatmap spec. Built without Streamlit,
in an explicit language: the app's pipeline (:mod:`ui.pipeline`) and the notebook views
(:mod:`attention_lab.notebook`) draw the same panels. Text and layout only: the numbers come from
the trace (a ``core.lab.PlaygroundTrace``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import formulas
from .bars_spec import stacked_contributions, weight_bars
from .heatmap_spec import heatmap
from .labels import dim_labels, indexed_labels, short, shorts  # noqa: F401  (shared: ui/text.py)
from .strings import translate

STEPS = ("scores", "scaled", "masked", "weights", "output")


def qk_axes(conv: str, q_labels, k_labels, lang: str) -> dict:
    """Heatmap labels of an (n_q × n_k) matrix in the chosen notation (column: rows = keys)."""
    query, key = translate("axis.query", lang), translate("axis.key", lang)
    if conv == "column":
        return {"x_labels": q_labels, "y_labels": k_labels, "x_title": query, "y_title": key}
    return {"x_labels": k_labels, "y_labels": q_labels, "x_title": key, "y_title": query}


@dataclass(frozen=True)
class Layout:
    """What every panel shares: labels in the chosen notation, precision, language and looks."""

    q_labels: list[str]
    k_labels: list[str]
    conv: str
    dec: int
    lang: str
    clickable: bool = False  # clicks on the weights map pick a query (and a note says so)
    large: bool = False  # presenter view: larger type and cells
    compact: bool = False  # the formula on the title's line

    def t(self, key: str, **fmt) -> str:
        return translate(key, self.lang, **fmt)

    @property
    def axes(self) -> dict:
        return qk_axes(self.conv, shorts(self.q_labels), shorts(self.k_labels), self.lang)

    @property
    def square(self) -> str:
        n_q, n_k = len(self.q_labels), len(self.k_labels)
        return f"{n_q}×{n_k}" if self.conv == "row" else f"{n_k}×{n_q}"


@dataclass(frozen=True)
class Panel:
    """One step: its title, formula (LaTeX; ``short``: its one-line form, which the one-element
    pipeline draws as MathML), shape line, the heatmap spec, notes above and under the map, and
    the queries whose every key is masked."""

    step: str
    title: str
    latex: str
    short: str
    shape: str
    spec: dict
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    masked_names: tuple[str, ...] = ()


def pipeline_panels(trace, v: Layout, score: str, *, query: int | None = None, shows=None) -> list[Panel]:
    """The panels of ``trace`` (a ``core.lab.PlaygroundTrace``) in order; ``shows(step)`` picks them."""
    A = trace.attn
    build = {"scores": lambda: _scores(v, trace, score), "scaled": lambda: _scaled(v, A), "masked": lambda: _masked(v, A),
             "weights": lambda: _weights(v, A, query), "output": lambda: _output(v, A, trace.V.shape[1])}
    return [build[name]() for name in STEPS if shows is None or shows(name)]


def panel_dict(p: Panel, key: str, lang: str) -> dict:
    """A panel for the one-element pipeline (``assets/components/maps.js``; plain text, inserted as text)."""
    warning = translate("pg.fully_masked", lang, names=", ".join(p.masked_names)) if p.masked_names else None
    return {"key": key, "title": p.title, "mathml": formulas.mathml(formulas.localize(p.short, lang)), "shape": p.shape,
            "map": p.spec, "before": list(p.before), "after": list(p.after), "warning": warning}


def _spec(v: Layout, z, title: str, **kw) -> dict:
    return heatmap(z, decimals=v.dec, title=title, large=v.large, compact=v.compact, **(v.axes | kw))


def _scores(v: Layout, trace, score: str) -> Panel:
    n_q, n_k, d_k = len(v.q_labels), len(v.k_labels), trace.Q.shape[1]
    shape = (f"Q ({n_q}×{d_k}) · Kᵀ ({d_k}×{n_k}) → ({n_q}×{n_k})" if v.conv == "row"
             else f"Kᵀ ({n_k}×{d_k}) · Q ({d_k}×{n_q}) → ({n_k}×{n_q})")
    title = v.t("step.scores")
    return Panel("scores", title, formulas.SCORE_MATRIX[v.conv][score], formulas.SCORE_MATRIX[v.conv][score], shape,
                 _spec(v, trace.attn.scores.numpy(), title))


def _scaled(v: Layout, A) -> Panel:
    shape = f"({v.square}) · {A.scale:.{v.dec}g} / {A.temperature:g} → ({v.square})"
    title = v.t("step.scaled")
    return Panel("scaled", title, formulas.SCALED, formulas.SCALED, shape, _spec(v, A.scaled.numpy(), title))


def _masked(v: Layout, A) -> Panel:
    neg = np.isneginf(A.logits.numpy())
    latex = formulas.SHORT["masked"] if v.compact else formulas.MASKED[v.conv]
    title = v.t("step.masked")
    return Panel("masked", title, latex, formulas.SHORT["masked"], f"({v.square}) + M ({v.square}) → ({v.square})",
                 _spec(v, np.where(neg, 0.0, A.logits.numpy()), title, neg_inf=neg))


def _weights(v: Layout, A, query: int | None) -> Panel:
    sums, fully = A.weight_sums.numpy(), A.fully_masked.numpy()
    notes = [("Σ " + f"{s:.{v.dec}f}") if not f else v.t("pg.fully_masked_short") for s, f in zip(sums, fully, strict=True)]
    hl = {} if query is None else ({"highlight_row": query} if v.conv == "row" else {"highlight_col": query})
    latex = formulas.SHORT["weights"][v.conv] if v.compact else formulas.SOFTMAX[v.conv]
    title = v.t("step.weights")
    spec = _spec(v, A.weights.numpy(), title, sequential=True, side_text=notes if v.conv == "row" else None,
                 clickable=v.clickable, **hl)
    click = (v.t("pg.weights.click"),) if v.clickable else ()
    before = (() if v.compact else click) + ((v.t("pg.column_sums") + "  " + ",  ".join(notes),) if v.conv == "column" else ())
    return Panel("weights", title, latex, formulas.SHORT["weights"][v.conv], f"softmax ({v.square}) → ({v.square})",
                 spec, before=before, after=click if v.compact else (),
                 masked_names=tuple(v.q_labels[i] for i in np.flatnonzero(fully)))


def _output(v: Layout, A, d_v: int) -> Panel:
    O = A.output.numpy()
    n_q, n_k = len(v.q_labels), len(v.k_labels)
    vl = dim_labels(d_v, "v")
    if v.conv == "row":
        shape = f"α ({n_q}×{n_k}) · V ({n_k}×{d_v}) → ({n_q}×{d_v})"
        kw = {"x_labels": vl, "x_title": v.t("axis.dim")}
    else:
        shape = f"V ({d_v}×{n_k}) · α ({n_k}×{n_q}) → ({d_v}×{n_q})"
        kw = {"y_labels": vl, "y_title": v.t("axis.dim"), "x_labels": shorts(v.q_labels), "x_title": v.t("axis.query")}
    title = v.t("step.output")
    latex = formulas.SHORT["output"][v.conv] if v.compact else formulas.OUTPUT[v.conv]
    return Panel("output", title, latex, formulas.SHORT["output"][v.conv], shape, _spec(v, O, title, **kw),
                 after=(v.t("pg.output.note"),))


# ---------------------------------------------------------------------------- the query inspector
def top_keys_text(A, j: int, q_labels, k_labels, alpha, dec: int, lang: str) -> str:
    """Which key query ``j`` attends to most — every key that ties for the largest weight (plain text)."""
    from core.playground.lab import top_keys

    tops = top_keys(A, j)
    if not tops:
        return translate("pg.fully_masked_short", lang)
    names = ", ".join(k_labels[i] for i in tops)
    return translate("pg.inspector.top" if len(tops) == 1 else "pg.inspector.tie", lang, q=q_labels[j], k=names,
                     a=f"{alpha[tops[0]]:.{dec}f}")


def inspector_spec(A, j: int, q_labels, k_labels, dec: int, lang: str) -> dict:
    """The query inspector of query ``j`` (``assets/components/inspector.js``): its title, formula, the
    query picker and two sections — the weights α_j as bars ("alpha") and the output as the stacked
    pieces α_i·v_i ("contrib"). ``A`` is an AttentionTrace; the caller adds keys and CSS classes."""
    row = A if A.convention == "row" else A.transposed()
    alpha = row.weights[j].numpy()
    heads = {name: translate(f"pg.inspector.{name}", lang, q=q_labels[j]) for name in ("alpha", "output")}
    sections = [
        {"step": "alpha", "heading": heads["alpha"], "bars": weight_bars(k_labels, alpha, dec, heading=heads["alpha"], lang=lang),
         "note": top_keys_text(A, j, q_labels, k_labels, alpha, dec, lang)},
        {"step": "contrib", "heading": heads["output"], "note": None,
         "bars": stacked_contributions(k_labels, A.contributions(j).numpy(), row.output[j].numpy(), dec,
                                       total_label=translate("pg.inspector.sum", lang), heading=heads["output"], lang=lang)}]
    return {"title": translate("pg.inspector", lang), "mathml": formulas.mathml(formulas.CONTRIB),
            "pick": translate("pg.inspector.query", lang), "options": list(q_labels), "chosen": j, "sections": sections}
