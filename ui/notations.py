"""Notations page (C1, C2, C11, C34): the row-vector and column-vector forms side by side.

One set of numbers (the shared scenario) is computed twice by core — once per notation — and
every matrix is shown next to its transpose twin. Selecting a cell marks its twin.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

import core

from . import formulas, settings, shared
from .i18n import labeller, t
from .render import dim_labels, heatmap, shape_badge, show_heatmap
from .shared import key
from .text import md, shorts

CLICKS = "nt.clicks"
SELECTED = "nt.selected"  # (matrix name, i, j) in row-notation coordinates

ROW_CODE = """scores  = Q @ K.T / math.sqrt(d_k)     # (n_q, n_k)
weights = torch.softmax(scores, dim=-1)  # rows sum to 1
out     = weights @ V                    # (n_q, d_v)"""
COL_CODE = """scores  = K.T @ Q / math.sqrt(d_k)     # (n_k, n_q)
weights = torch.softmax(scores, dim=0)   # columns sum to 1
out     = V @ weights                    # (d_v, n_q)"""
WRONG_CODE = """weights = torch.softmax(scores, dim=0)  # wrong axis"""


def _drain_clicks() -> None:
    for chart, (i, j) in st.session_state.pop(CLICKS, []) or []:
        side, name = chart.split(".")[1:3]
        st.session_state[SELECTED] = (name, i, j) if side == "row" else (name, j, i)


def render() -> None:
    problems: list = []
    shared.start(problems)
    _drain_clicks()
    dec = settings.get("precision")
    st.markdown(t("nt.intro"))
    with st.expander(t("shared.numbers"), expanded=False):
        st.caption(t("shared.numbers.help"))
        inp = shared.inputs(problems, editors=False)
        c1, c2 = st.columns(2)
        with c1:
            st.radio(t("pg.score"), core.SCORE_FUNCTIONS, key=key("score"), format_func=labeller("score."),
                     horizontal=True)
        with c2:
            st.checkbox(t("pg.mask.causal"), key=key("causal"), help=t("nt.causal.help"))
    score = st.session_state[key("score")]
    params = shared.score_params(score, inp.d_k, problems, editors=False)
    n_q, n_k = len(inp.tq), len(inp.tk)
    mask = shared.current_mask(n_q, n_k)
    try:
        row = shared.run(inp, score, params, mask, "row")
        col = shared.run(inp, score, params, mask, "column")
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        shared.show_problems(problems)
        return
    shared.show_problems(problems)
    gaps = core.transpose_gap(row.attn, col.attn)
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)
    d_k, d_v = row.Q.shape[1], row.V.shape[1]

    left, right = st.columns(2)
    with left:
        st.subheader(t("nt.row.title"))
        st.latex(formulas.WHOLE["row"])
        st.code(ROW_CODE, language="python")
    with right:
        st.subheader(t("nt.col.title"))
        st.latex(formulas.WHOLE["column"])
        st.code(COL_CODE, language="python")

    worst = max(gaps.values())
    (st.success if worst == 0 else st.error)(t("nt.check", gap=f"{worst:.3g}"))

    sel = st.session_state.get(SELECTED)
    A, C = row.attn, col.attn
    mats = [("Q", A.q.numpy(), C.q.numpy(), (ql, dim_labels(d_k, "k")), f"{n_q}×{d_k}", f"{d_k}×{n_q}", "nt.axes.tokens"),
            ("scores", A.scores.numpy(), C.scores.numpy(), (ql, kl), f"{n_q}×{n_k}", f"{n_k}×{n_q}", "nt.axes.qk")]
    if mask is not None:
        mats.append(("logits", A.logits.numpy(), C.logits.numpy(), (ql, kl), f"{n_q}×{n_k}", f"{n_k}×{n_q}", "nt.axes.qk"))
    mats += [("weights", A.weights.numpy(), C.weights.numpy(), (ql, kl), f"{n_q}×{n_k}", f"{n_k}×{n_q}", "nt.axes.qk"),
             ("output", A.output.numpy(), C.output.numpy(), (ql, dim_labels(d_v, "v")), f"{n_q}×{d_v}",
              f"{d_v}×{n_q}", "nt.axes.tokens")]
    st.caption(t("nt.click"))
    for name, R, Cm, (rows, cols), rshape, cshape, axes in mats:
        mark = (sel[1], sel[2]) if sel and sel[0] == name else None
        l, r = st.columns(2)
        row_titles = (t("axis.key") if axes == "nt.axes.qk" else t("axis.dim"), t("axis.query"))
        twin = dict(dec=dec, sequential=name == "weights")
        with l:
            _twin_panel(f"**{t('nt.m.' + name)}**", f"{name} ({rshape}) — " + t(f"{axes}.row"), R,
                        ys=rows, xs=cols, y_title=row_titles[1], x_title=row_titles[0], mark=mark,
                        key=f"nt.row.{name}", **twin)
        with r:
            _twin_panel(f"**{t('nt.m.' + name)}ᵀ**", f"{name}ᵀ ({cshape}) — " + t(f"{axes}.col"), Cm,
                        ys=cols, xs=rows, y_title=row_titles[0], x_title=row_titles[1],
                        mark=None if mark is None else (mark[1], mark[0]), key=f"nt.col.{name}", **twin)
        if mark is not None and mark[0] < R.shape[0] and mark[1] < R.shape[1]:
            i, j = mark
            what = "qk" if axes == "nt.axes.qk" else "tok"
            st.info(t(f"nt.selected.{what}", name=name, i=i, j=j, a=md(rows[i]), b=md(cols[j]),
                      v=("−∞" if np.isneginf(R[i, j]) else f"{R[i, j]:.{dec}f}")))
    if mask is not None:
        st.markdown(t("nt.causal.both"))

    st.subheader(t("nt.wrong.title"))
    st.markdown(t("nt.wrong.text"))
    wrong = core.pitfalls.wrong_axis_softmax(A.logits)
    w1, w2 = st.columns(2)
    fmt = f"{{:.{dec}f}}"
    with w1:
        st.markdown(f"**{t('nt.wrong.right')}**")
        st.code("weights = torch.softmax(scores, dim=-1)", language="python")
        show_heatmap(heatmap(A.weights.numpy(), x_labels=kl, y_labels=ql, x_title=t("axis.key"),
                             y_title=t("axis.query"), decimals=dec, sequential=True,
                             side_text=["Σ " + fmt.format(s) for s in A.weight_sums.numpy()]), key="nt.right")
    with w2:
        st.markdown(f"**{t('nt.wrong.wrong')}**")
        st.code(WRONG_CODE, language="python")
        show_heatmap(heatmap(wrong.weights.numpy(), x_labels=kl, y_labels=ql, x_title=t("axis.key"),
                             y_title=t("axis.query"), decimals=dec, sequential=True,
                             side_text=["Σ " + fmt.format(s) for s in wrong.sums_per_query.numpy()]), key="nt.wrong")
        st.caption(t("nt.wrong.keysums", sums=", ".join(fmt.format(s) for s in wrong.sums_per_key.numpy())))


def _twin_panel(title: str, shape: str, M, *, ys, xs, y_title: str, x_title: str, mark, key: str, dec: int,
                sequential: bool) -> None:
    """One side of a twin pair: title, shape line and the clickable map (−∞ cells marked)."""
    st.markdown(title)
    shape_badge(shape)
    neg = np.isneginf(M)
    show_heatmap(heatmap(np.where(neg, 0, M), x_labels=xs, y_labels=ys, x_title=x_title, y_title=y_title,
                         decimals=dec, neg_inf=neg, sequential=sequential, clickable=True, highlight=mark),
                 key=key, click_queue=CLICKS)
