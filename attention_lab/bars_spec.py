"""The specs of the horizontal bars (``assets/components/bars_lib.js``): one query's weights, and the
stacked pieces α_i·v_i of its output. Built without Streamlit: the app (:mod:`ui.widgets.bars`) and
the notebook views share them. Display only: values are rounded, never computed here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .heatmap_spec import CELL_TEXT_LIMIT
from .labels import short

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
