"""Self vs cross attention page (C13–C16): where Q, K and V come from, the projection as a
linear layer, and attention as a soft lookup (C14)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import core

from . import compute, settings, shared
from .i18n import t
from .render import PrebuiltFigure, heatmap, shape_badge, show_heatmap
from .shared import key
from .text import shorts


def render() -> None:
    problems: list = []
    shared.start(problems)
    dec = settings.get("precision")
    st.markdown(t("sx.intro"))
    inp = shared.inputs(problems, editors=False)  # token boxes, embedding, Q/K/V: the shared scenario
    n_q, n_k = len(inp.tq), len(inp.tk)
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)
    score = st.session_state.get(key("score"), "scaled_dot")
    params = shared.score_params(score, inp.d_k, problems, editors=False)
    try:
        tr = shared.run(inp, score, params, shared.current_mask(n_q, n_k), "row")
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        shared.show_problems(problems)
        return
    shared.show_problems(problems)
    A = tr.attn
    kind = "cross" if inp.cross else "self"
    st.info(t(f"sx.{kind}", n_q=n_q, n_k=n_k))
    c1, c2 = st.columns([1, 1])
    with c1:
        st.latex(r"Q = X_{\text{target}} W_Q,\quad K = X_{\text{source}} W_K,\quad V = X_{\text{source}} W_V"
                 if inp.cross else r"Q = X W_Q,\quad K = X W_K,\quad V = X W_V")
        shape_badge(f"Q ({n_q}×{inp.d_k}) · Kᵀ ({inp.d_k}×{n_k}) → ({n_q}×{n_k})")
        shape_badge(f"α ({n_q}×{n_k}) · V ({n_k}×{inp.d_v}) → ({n_q}×{inp.d_v})")
        st.success(t("sx.count", n=n_q, m=A.output.shape[0]))
    with c2:
        show_heatmap(heatmap(A.weights.numpy(), x_labels=kl, y_labels=ql, x_title=t("axis.key"), y_title=t("axis.query"),
                             decimals=dec, sequential=True), key="sx.weights")
    _linear_layer(inp, tr, dec)
    _retrieval(inp, A, dec)


def _linear_layer(inp, tr, dec) -> None:
    """Source 003: an embedding through a linear layer of d_k nodes (weights d_model × d_k)."""
    st.subheader(t("sx.layer"))
    seed = int(settings.get("seed"))
    if inp.qkv == "projection":
        W, x, q = inp.W_q, inp.X_q[0], tr.Q[0].numpy()
        st.caption(t("sx.layer.yours"))
    else:  # no projection in the scenario: 003's own shapes, a 5-dim embedding through 3 nodes
        W = compute.projection(5, 3, seed, "sx.W")
        x = compute.embedding("random", (inp.tq[0],), 5, seed)[0][0]
        q = core.lab.playground(x[None], qkv="projection", W_q=W, W_k=W, W_v=W).Q[0].numpy()
        st.caption(t("sx.layer.example"))
    d_in, d_out = W.shape
    shape_badge(f"x (1×{d_in}) · W_Q ({d_in}×{d_out}) → q (1×{d_out})")
    data, lim = [], float(np.abs(W).max()) or 1.0
    for i in range(d_in):
        for j in range(d_out):
            w = float(W[i, j])
            data.append({"type": "scatter", "mode": "lines", "x": [0, 1], "y": [(d_in - 1) / 2 - i, (d_out - 1) / 2 - j],
                         "line": {"color": "#dc2626" if w > 0 else "#2563eb", "width": 0.5 + 5 * abs(w) / lim},
                         "hovertemplate": f"W[{i}, {j}] = {w:.{dec}f}<extra></extra>", "showlegend": False})
    data.append({"type": "scatter", "mode": "markers+text", "x": [0] * d_in,
                 "y": [(d_in - 1) / 2 - i for i in range(d_in)], "text": [f"x{i} = {v:.{dec}f}" for i, v in enumerate(x)],
                 "textposition": "middle left", "marker": {"size": 22, "color": "#e2e8f0", "line": {"color": "#334155"}},
                 "showlegend": False, "hoverinfo": "skip"})
    data.append({"type": "scatter", "mode": "markers+text", "x": [1] * d_out,
                 "y": [(d_out - 1) / 2 - j for j in range(d_out)], "text": [f"q{j} = {v:.{dec}f}" for j, v in enumerate(q)],
                 "textposition": "middle right", "marker": {"size": 22, "color": "#fde68a", "line": {"color": "#334155"}},
                 "showlegend": False, "hoverinfo": "skip"})
    fig = PrebuiltFigure({"data": data, "layout": {
        "height": 60 * max(d_in, d_out) + 80, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "xaxis": {"visible": False, "range": [-0.8, 1.8]}, "yaxis": {"visible": False}}})
    st.plotly_chart(fig, key="sx.layer", config={"displayModeBar": False})
    st.caption(t("sx.layer.caption"))


def _retrieval(inp, A, dec) -> None:
    st.subheader(t("sx.lookup"))
    st.markdown(t("sx.lookup.text"))
    labels = inp.q_labels
    j = st.selectbox(t("pg.inspector.query"), list(range(len(labels))), key="sx.query",
                     format_func=lambda i: labels[i] if i < len(labels) else str(i))
    j = j if j < len(labels) else 0
    order = core.lab.rank_keys(A, j).tolist()
    contrib = A.contributions(j).numpy()
    fmt = f"{{:.{dec}f}}"
    rows = [(str(r + 1), inp.k_labels[i], fmt.format(A.scores[j, i]), fmt.format(A.weights[j, i]),
             "[" + ", ".join(fmt.format(v) for v in A.v[i].numpy()) + "]",
             "[" + ", ".join(fmt.format(v) for v in contrib[i]) + "]") for r, i in enumerate(order)]
    rows.append(("", t("sx.lookup.sum"), "", fmt.format(float(A.weight_sums[j])), "",
                 "[" + ", ".join(fmt.format(v) for v in A.output[j].numpy()) + "]"))
    st.dataframe(pd.DataFrame(rows, columns=[t("sx.col.rank"), t("sx.col.key"), t("sx.col.score"), "α",
                                             t("sx.col.value"), "α·v"]), hide_index=True, width="stretch")
