"""Exports of a computed trace: every matrix as a tidy CSV (formatting only; the numbers are core's)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from .widgets.layout import dim_labels


def tidy_csv(trace, q_labels, k_labels) -> str:
    """One row per matrix cell (matrix, row, column, value); −∞ written as -inf."""
    rows = []

    def add(name, m, rl, cl):
        m = np.asarray(m)
        rows.extend((name, rl[i], cl[j], "-inf" if np.isneginf(m[i, j]) else repr(float(m[i, j])))
                    for i in range(m.shape[0]) for j in range(m.shape[1]))

    add("X_q", trace.X_q.numpy(), q_labels, dim_labels(trace.X_q.shape[1], "d"))
    add("Q", trace.Q.numpy(), q_labels, dim_labels(trace.Q.shape[1], "k"))
    add("K", trace.K.numpy(), k_labels, dim_labels(trace.K.shape[1], "k"))
    add("V", trace.V.numpy(), k_labels, dim_labels(trace.V.shape[1], "v"))
    row = trace.attn if trace.attn.convention == "row" else trace.attn.transposed()
    for name in ("scores", "scaled", "logits", "weights"):
        add(name, getattr(row, name).numpy(), q_labels, k_labels)
    add("output", row.output.numpy(), q_labels, dim_labels(row.output.shape[1], "v"))
    buf = io.StringIO()
    pd.DataFrame(rows, columns=["matrix", "row", "column", "value"]).to_csv(buf, index=False)
    return buf.getvalue()
