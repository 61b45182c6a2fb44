"""Self vs cross attention: where Q, K and V come from; the projection as a linear layer; and
attention as a soft lookup."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import core
from ui import compute, page, settings, state
from ui import scenario_state as ss
from ui.i18n import current_lang, t
from ui.inputs import inputs
from ui.text import shorts
from ui.widgets import formulas
from ui.widgets.figures import PrebuiltFigure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import shape_badge

KEYS = state.SELF_VS_CROSS


def where_from(inp, A, dec: int) -> None:
    """One sequence or two: the formulas, the shapes and the weights."""
    n_q, n_k = len(inp.tq), len(inp.tk)
    st.info(t("sx.cross" if inp.cross else "sx.self", n_q=n_q, n_k=n_k))
    c1, c2 = st.columns([1, 1])
    with c1:
        st.latex(formulas.localize(formulas.qkv_formula(inp.qkv, inp.cross), current_lang()))
        shape_badge(f"Q ({n_q}×{inp.d_k}) · Kᵀ ({inp.d_k}×{n_k}) → ({n_q}×{n_k})")
        shape_badge(f"α ({n_q}×{n_k}) · V ({n_k}×{inp.d_v}) → ({n_q}×{inp.d_v})")
        st.success(t("sx.count", n=n_q, m=A.output.shape[0]))
    with c2:
        show_heatmap(heatmap(A.weights.numpy(), x_labels=shorts(inp.k_labels), y_labels=shorts(inp.q_labels),
                             x_title=t("axis.key"), y_title=t("axis.query"), decimals=dec, sequential=True), key=KEYS.weights)


def layer_figure(W: np.ndarray, x: np.ndarray, q: np.ndarray, dec: int) -> PrebuiltFigure:
    """Input nodes x_i on the left, output nodes q_j on the right, one line per weight W[i, j]
    (red positive, blue negative, thicker = larger)."""
    d_in, d_out = W.shape
    lim = float(np.abs(W).max()) or 1.0
    data = [{"type": "scatter", "mode": "lines", "x": [0, 1], "y": [(d_in - 1) / 2 - i, (d_out - 1) / 2 - j],
             "line": {"color": "#dc2626" if W[i, j] > 0 else "#2563eb", "width": 0.5 + 5 * abs(float(W[i, j])) / lim},
             "hovertemplate": f"W[{i}, {j}] = {float(W[i, j]):.{dec}f}<extra></extra>", "showlegend": False}
            for i in range(d_in) for j in range(d_out)]
    for side, vals, name, colour, pos in ((0, x, "x", "#e2e8f0", "middle left"), (1, q, "q", "#fde68a", "middle right")):
        data.append({"type": "scatter", "mode": "markers+text", "x": [side] * len(vals),
                     "y": [(len(vals) - 1) / 2 - i for i in range(len(vals))],
                     "text": [f"{name}{i} = {v:.{dec}f}" for i, v in enumerate(vals)], "textposition": pos,
                     "marker": {"size": 22, "color": colour, "line": {"color": "#334155"}}, "showlegend": False,
                     "hoverinfo": "skip"})
    return PrebuiltFigure({"data": data, "layout": {
        "height": 60 * max(d_in, d_out) + 80, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "xaxis": {"visible": False, "range": [-0.8, 1.8]}, "yaxis": {"visible": False}}})


def linear_layer(inp, tr, dec: int) -> None:
    """An embedding through a linear layer of d_k nodes (weights d_model × d_k)."""
    st.subheader(t("sx.layer"))
    seed = int(settings.get("seed"))
    if inp.qkv == "projection":
        W, x, q = inp.W_q, inp.X_q[0], tr.Q[0].numpy()
        st.caption(t("sx.layer.yours"))
    else:  # no projection in the scenario: a 5-dim embedding through 3 nodes
        W = compute.projection(5, 3, seed, "sx.W")
        x = compute.embedding("random", (inp.tq[0],), 5, seed)[0][0]
        q = compute.one_token_projection(x, W)  # (3,)
        st.caption(t("sx.layer.example"))
    shape_badge(f"x (1×{W.shape[0]}) · W_Q ({W.shape[0]}×{W.shape[1]}) → q (1×{W.shape[1]})")
    show_chart(layer_figure(W, x, q, dec), key=KEYS.layer, title=t("sx.layer"))
    st.caption(t("sx.layer.caption"))


def lookup(inp, A, dec: int) -> None:
    """Attention as a soft lookup: the keys ranked by score, their weights, values and α·v."""
    st.subheader(t("sx.lookup"))
    st.markdown(t("sx.lookup.text"))
    labels = inp.q_labels
    j = st.selectbox(t("pg.inspector.query"), list(range(len(labels))), key=KEYS.query,
                     format_func=lambda i: labels[i] if i < len(labels) else str(i))
    j = j if j < len(labels) else 0
    contrib = A.contributions(j).numpy()
    fmt = f"{{:.{dec}f}}"
    vec = lambda v: "[" + ", ".join(fmt.format(x) for x in v) + "]"  # noqa: E731
    rows = [(str(r + 1), inp.k_labels[i], fmt.format(A.scores[j, i]), fmt.format(A.weights[j, i]), vec(A.v[i].numpy()),
             vec(contrib[i])) for r, i in enumerate(core.lab.rank_keys(A, j).tolist())]
    rows.append(("", t("sx.lookup.sum"), "", fmt.format(float(A.weight_sums[j])), "", vec(A.output[j].numpy())))
    st.dataframe(pd.DataFrame(rows, columns=[t("sx.col.rank"), t("sx.col.key"), t("sx.col.score"), "α",
                                             t("sx.col.value"), "α·v"]), hide_index=True, width="stretch")


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    dec = settings.get("precision")
    st.markdown(t("sx.intro"))
    inp = inputs(problems)  # token boxes, embedding, Q/K/V: the shared scenario
    tr = page.guarded(problems, lambda: ss.run(inp))
    page.show_problems(problems)
    if tr is None:
        return
    where_from(inp, tr.attn, dec)
    linear_layer(inp, tr, dec)
    lookup(inp, tr.attn, dec)


main()
