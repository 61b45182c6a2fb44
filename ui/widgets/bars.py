"""Horizontal bars: one query's weights, and the stacked pieces α_i·v_i of its output."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

# the bars' specs are built without Streamlit (shared with the notebook views)
from attention_lab.bars_spec import stacked_contributions, weight_bars  # noqa: F401

from .assets import ASSETS, DOM_LIB
from .heatmap import A11Y_CSS

_read = lambda name: (ASSETS / name).read_text(encoding="utf-8")  # noqa: E731
_BARS_COMPONENT = st.components.v2.component(
    "attention_lab_bars", js=DOM_LIB + _read("bars_lib.js") + _read("bars.js"), css=A11Y_CSS + _read("bars.css"))
# the query inspector: title, formula, query picker and two bar charts as one element
_INSPECTOR_COMPONENT = st.components.v2.component(
    "attention_lab_inspector", js=DOM_LIB + _read("bars_lib.js") + _read("inspector.js"),
    css=A11Y_CSS + _read("bars.css") + _read("inspector.css"))


def show_bars(spec: dict, *, key: str) -> None:
    _BARS_COMPONENT(data=spec, key=key)


def show_inspector(spec: dict, *, key: str, on_pick: Callable[[int], None]) -> None:
    """The query inspector as one element. ``spec``: ``title``, ``mathml``, ``pick`` (the picker's
    label), ``options`` (query labels), ``chosen``, ``picker_css`` and ``sections`` (each ``key``,
    ``css``, ``heading``, ``bars`` — a spec of :func:`weight_bars` or :func:`stacked_contributions`
    — and ``note``). Picking a query calls ``on_pick(index)`` before the rerun."""
    def picked() -> None:
        got = st.session_state.get(key) or {}
        j = picked_index(got.get("query") if hasattr(got, "get") else None, len(spec["options"]))
        if j is not None:
            on_pick(j)

    _INSPECTOR_COMPONENT(data=spec, key=key, on_query_change=picked)


def picked_index(value, n: int) -> int | None:
    """The query a picker reported, when it is one of the ``n`` on offer (anything else — text, a
    boolean, a fraction, out of range — is ignored: the browser side is not trusted)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < n:
        return value
    return None
