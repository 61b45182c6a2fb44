"""The specs of the horizontal bars (``assets/components/bars_lib.js``): one query's weights, and the
stacked pieces α_i·v_i of its output. Built without Streamlit: the app (:mod:`ui.widgets.bars`) and
the notebook views share them. Display only: values are rounded, never computed here."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .heatmap_spec import CELL_TEXT_LIMIT
from .labels import short
from .strings import translate

TABLE_KEYS = CELL_TEXT_LIMIT  # the output's text table lists the terms of at most this many keys (the rest summed)
TOP_WEIGHTS = 3  # the weights table's caption names this many largest weights

_PALETTE = ("#2563eb", "#f97316", "#16a34a", "#dc2626", "#9333ea", "#0891b2", "#ca8a04", "#db2777",
            "#4b5563", "#65a30d", "#7c3aed", "#0d9488")


def weight_bars(labels: Sequence[str], alpha: np.ndarray, decimals: int, *, heading: str | None = None,
                lang: str = "en") -> dict:
    """Bars of one query's weights over the keys (0 … 1). With a ``heading`` (the query inspector's), the
    spec carries its text alternative in ``lang``: ``table``, a table of key → α whose caption names the
    largest weights (drawn visually hidden, for a screen reader, in place of the bars)."""
    vals = np.round(np.asarray(alpha, dtype=float), decimals).tolist()
    fmt = f"{{:.{decimals}f}}"
    rows = [{"label": short(lab), "segments": [{"value": v, "color": "#2563eb", "name": "", "text": fmt.format(v)}],
             "total": None, "value_text": fmt.format(v)} for lab, v in zip(labels, vals, strict=True)]
    spec = {"rows": rows, "lo": 0.0, "hi": 1.0, "legend": []}
    if heading is not None:
        order = sorted(range(len(vals)), key=lambda i: -vals[i])[:TOP_WEIGHTS]  # stable: ties keep the key order
        top = ", ".join(f"{rows[i]['label']} {rows[i]['value_text']}" for i in order)
        spec["table"] = {"caption": translate("a11y.bars.alpha", lang, heading=heading, top=top),
                         "head": [translate("a11y.bars.key", lang), translate("a11y.bars.weight", lang)],
                         "rows": [[r["label"], r["value_text"]] for r in rows]}
    return spec


def stacked_contributions(labels: Sequence[str], contrib: np.ndarray, total: np.ndarray, decimals: int,
                          *, total_label: str, heading: str | None = None, lang: str = "en") -> dict:
    """One bar per output dimension: the pieces α_i·v_i (one colour per key) stacked from 0, and
    the black mark of their sum (the output value). With a ``heading``, its text alternative in
    ``lang`` (``table``): one row per dimension, the output value and each key's term — up to
    TABLE_KEYS keys (those with the largest terms, in key order) and the sum of the other keys' terms."""
    raw = np.asarray(contrib, dtype=float)
    contrib = np.round(raw, decimals)  # (n_k, d_v)
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
    spec = {"rows": rows, "lo": float(min(0.0, neg.min(initial=0.0))), "hi": float(max(1e-12, pos.max(initial=0.0))),
            "legend": legend}
    if heading is not None:
        spec["table"] = _terms_table(labels, raw, rows, decimals, heading=heading, total_label=total_label, lang=lang)
    return spec


def _terms_table(labels, raw: np.ndarray, bars: list[dict], decimals: int, *, heading: str, total_label: str,
                 lang: str) -> dict:
    """The output's terms as a table (``raw``: the terms α_i·v_i, (n_k, d_v); ``bars``: the bars' rows, whose
    texts the table repeats)."""
    n_k = raw.shape[0]
    size = np.abs(raw).sum(axis=1)
    keys = sorted(np.argsort(-size, kind="stable")[:TABLE_KEYS].tolist()) if n_k > TABLE_KEYS else list(range(n_k))
    chosen = set(keys)
    rest = [i for i in range(n_k) if i not in chosen]
    fmt = f"{{:.{decimals}f}}".format
    others = np.round(raw[rest].sum(axis=0), decimals) if rest else None
    head = [translate("a11y.bars.dim", lang), total_label, *(short(labels[i]) for i in keys)]
    if rest:
        head.append(translate("a11y.bars.others", lang, rest=len(rest)))
        caption = translate("a11y.bars.output.some", lang, heading=heading, shown=len(keys), rest=len(rest))
    else:
        caption = translate("a11y.bars.output", lang, heading=heading)
    rows = [[b["label"], b["value_text"], *(b["segments"][i]["text"] for i in keys), *([fmt(others[d])] if rest else [])]
            for d, b in enumerate(bars)]
    return {"caption": caption, "head": head, "rows": rows}
