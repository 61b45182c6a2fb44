"""The attention pipeline as panels: scores → scaled → masked → softmax weights → output, each
with its formula and shape line. Used by the Playground and for one head on the multi-head page."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from attention_lab.panels import STEPS, Layout, Panel, inspector_spec, panel_dict, pipeline_panels

from . import scenario_state as ss
from . import state
from .i18n import current_lang, t
from .text import md
from .widgets import formulas
from .widgets.bars import show_inspector
from .widgets.heatmap import fits_one_element, show_heatmap, show_maps
from .widgets.layout import panel_header, token_labels

__all__ = ["STEPS", "pipeline", "query_inspector", "weights_key"]


def weights_key(prefix: str) -> str:
    """The weights map's key under a pipeline's key prefix (clicks on it select a query)."""
    return state.item(prefix, "weights")


@dataclass(frozen=True)
class Placement:
    """Where the panels go: the key prefix and the click queue (the panels themselves: attention_lab.panels)."""

    prefix: str
    clicks: str | None
    compact: bool = False  # the formula on the title's line

    def key(self, step: str) -> str:
        return state.item(self.prefix, step)


def pipeline(trace, q_labels, k_labels, conv: str, dec: int, score: str, *, prefix: str, query: int | None = None,
             clicks: str | None = None, shows=None, per_row: int | None = None, header: bool = True,
             large: bool = False, focus: str | None = None) -> None:
    """The steps of ``trace`` (a core.lab.PlaygroundTrace); ``prefix`` keeps chart keys apart.

    ``shows(step)`` picks the panels drawn (the step-through, a lesson link); ``per_row`` fixes
    how many maps stand side by side (default: three while every column fits, else two).
    Without the header (the Playground beside its controls) the panels are ONE element (see
    :func:`show_maps`). ``focus`` names the step just shown by a step-through (scrolled into view and
    focused there)."""
    v = Placement(prefix, clicks, compact=not header)
    layout = Layout(list(q_labels), list(k_labels), conv, dec, current_lang(), clickable=bool(clicks), large=large,
                    compact=not header)
    A = trace.attn
    if header:
        st.subheader(t("pg.pipeline"))
        st.latex(formulas.localize(formulas.WHOLE[conv], current_lang()))
        st.caption(t("pg.pipeline.values", scale=f"{A.scale:.{dec}f}", T=f"{A.temperature:g}"))
    n_max = max(len(q_labels), len(k_labels))
    # three maps side by side while every column fits at 1280 pixels (a cell is about 7 px per printed character)
    per_row = per_row or (3 if n_max <= 3 or (n_max <= 4 and dec <= 2) else 2 if n_max <= 8 else 1)
    panels = pipeline_panels(trace, layout, score, query=query, shows=shows)
    if v.compact and fits_one_element(p.spec for p in panels):
        show_maps([panel_dict(p, v.key(p.step), layout.lang) for p in panels], key=state.item(prefix, "maps"),
                  per_row=per_row, click_queue=clicks, large=large, focus=v.key(focus) if focus in STEPS else None)
        return
    for start in range(0, len(panels), per_row):
        for col, p in zip(st.columns(per_row), panels[start:start + per_row], strict=False):
            with col:
                _draw(v, p)


def _draw(v: Placement, p: Panel) -> None:
    """A panel as Streamlit elements: header, notes, map, warning."""
    panel_header(p.title, formulas.localize(p.latex, current_lang()), p.shape, compact=v.compact)
    for note in p.before:
        st.caption(note)
    show_heatmap(p.spec, key=v.key(p.step), click_queue=v.clicks if p.step == "weights" else None)
    for note in p.after:
        st.caption(note)
    if p.masked_names:
        st.warning(t("pg.fully_masked", names=", ".join(md(n) for n in p.masked_names)))


def query_inspector(attn, tq, tk, dec: int, *, key: str, fig_keys: tuple[str, str], present: bool = False,
                    focus: bool = False) -> None:
    """The query inspector, one element (``assets/components/inspector.js``: title, formula, query picker,
    the scenario's query's weights as bars and its output as the stacked pieces α_i·v_i); picking a query
    moves the scenario's query. The Playground and the tutorial draw this one. ``fig_keys``: the keys of
    the two charts (α, contributions); ``present`` enlarges it, ``focus`` scrolls it into view."""
    if not 0 <= int(ss.get("query")) < len(tq):
        ss.put("query", 0)
    q_labels, k_labels = token_labels(tq), token_labels(tk)
    spec = inspector_spec(attn, int(ss.get("query")), q_labels, k_labels, dec, current_lang())
    keys = dict(zip(("alpha", "contrib"), fig_keys, strict=True))
    sections = [s | {"key": keys[s["step"]], "css": state.css_class(keys[s["step"]])[1:]} for s in spec["sections"]]
    show_inspector(spec | {"sections": sections, "picker_css": state.css_class(state.scenario_picker("query"))[1:],
                           "present": present, "focus": focus}, key=key, on_pick=lambda i: ss.put("query", i))
