"""Horizontal bars: one query's weights, and the stacked pieces α_i·v_i of its output."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import streamlit as st

from ..text import short
from .heatmap import ASSETS, CELL_TEXT_LIMIT, DOM_LIB

_read = lambda name: (ASSETS / name).read_text(encoding="utf-8")  # noqa: E731
_BARS_COMPONENT = st.components.v2.component(
    "attention_lab_bars", js=DOM_LIB + _read("bars_lib.js") + _read("bars.js"), css=_read("bars.css"))
# the query inspector: title, formula, query picker and two bar charts as one element
_INSPECTOR_COMPONENT = st.components.v2.component(
    "attention_lab_inspector", js=DOM_LIB + _read("bars_lib.js") + _read("inspector.js"),
    css=_read("bars.css") + _read("inspector.css"))
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
