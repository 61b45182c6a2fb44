"""Two notations side by side: row vectors (ML code) and column vectors (the math texts) on the
same numbers — every matrix next to its transpose twin — and softmax over the wrong axis."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core
from ui import page, settings, state
from ui import scenario_state as ss
from ui.i18n import current_lang, labeller, t
from ui.inputs import causal_checkbox, inputs
from ui.text import md, shorts
from ui.widgets import formulas
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, shape_badge

KEYS = state.NOTATIONS
ROW_CODE = """scores  = Q @ K.T / math.sqrt(d_k)     # (n_q, n_k)
weights = torch.softmax(scores, dim=-1)  # rows sum to 1
out     = weights @ V                    # (n_q, d_v)"""
COL_CODE = """scores  = K.T @ Q / math.sqrt(d_k)     # (n_k, n_q)
weights = torch.softmax(scores, dim=0)   # columns sum to 1
out     = V @ weights                    # (d_v, n_q)"""
WRONG_CODE = """weights = torch.softmax(scores, dim=0)  # wrong axis"""


def drain_clicks() -> None:
    """A click on either twin selects the cell (kept in row-notation coordinates) on both."""
    for chart, (i, j) in st.session_state.pop(KEYS.clicks, []) or []:
        name = chart.rsplit(".", 1)[-1]
        st.session_state[KEYS.selected] = (name, i, j) if chart == state.item(KEYS.row, name) else (name, j, i)


def numbers(problems: list):
    """The shared scenario, folded away, with the score function and the causal mask."""
    with st.expander(t("shared.numbers"), expanded=False):
        st.caption(t("shared.numbers.help"))
        inp = inputs(problems)
        c1, c2 = st.columns(2)
        with c1:
            st.radio(t("pg.score"), core.SCORE_FUNCTIONS, **ss.bind("score"), format_func=labeller("score."),
                     horizontal=True)
        with c2:
            causal_checkbox(inp.cross, help_key="nt.causal.help")
    return inp


def formulas_side_by_side() -> None:
    left, right = st.columns(2)
    for col, conv, code in ((left, "row", ROW_CODE), (right, "column", COL_CODE)):
        with col:
            st.subheader(t("nt.row.title" if conv == "row" else "nt.col.title"))
            st.latex(formulas.localize(formulas.WHOLE[conv], current_lang()))
            st.code(code, language="python", wrap_lines=True)


def twins(row, col, inp, mask, dec: int) -> None:
    """Every matrix in row notation next to its transpose in column notation; click to compare."""
    sel = st.session_state.get(KEYS.selected)
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)
    n_q, n_k, d_k, d_v = len(ql), len(kl), row.Q.shape[1], row.V.shape[1]
    A, C = row.attn, col.attn
    mats = [("Q", A.q, C.q, (ql, dim_labels(d_k, "k")), (n_q, d_k), "nt.axes.tokens"),
            ("scores", A.scores, C.scores, (ql, kl), (n_q, n_k), "nt.axes.qk")]
    if mask is not None:
        mats.append(("logits", A.logits, C.logits, (ql, kl), (n_q, n_k), "nt.axes.qk"))
    mats += [("weights", A.weights, C.weights, (ql, kl), (n_q, n_k), "nt.axes.qk"),
             ("output", A.output, C.output, (ql, dim_labels(d_v, "v")), (n_q, d_v), "nt.axes.tokens")]
    st.caption(t("nt.click"))
    for name, R, Cm, (rows, cols), (r, c), axes in mats:
        mark = (sel[1], sel[2]) if sel and sel[0] == name else None
        titles = (t("axis.key") if axes == "nt.axes.qk" else t("axis.dim"), t("axis.query"))
        R = R.numpy()
        left, right = st.columns(2)
        with left:
            twin_panel(f"**{t('nt.m.' + name)}**", f"{name} ({r}×{c}) — " + t(f"{axes}.row"), R, ys=rows, xs=cols,
                       titles=titles, mark=mark, key=state.item(KEYS.row, name), dec=dec, sequential=name == "weights")
        with right:
            twin_panel(f"**{t('nt.m.' + name)}ᵀ**", f"{name}ᵀ ({c}×{r}) — " + t(f"{axes}.col"), Cm.numpy(), ys=cols,
                       xs=rows, titles=titles[::-1], mark=None if mark is None else mark[::-1],
                       key=state.item(KEYS.col, name), dec=dec, sequential=name == "weights")
        if mark is not None and mark[0] < R.shape[0] and mark[1] < R.shape[1]:
            i, j = mark
            st.info(t("nt.selected.qk" if axes == "nt.axes.qk" else "nt.selected.tok", name=name, i=i, j=j,
                      a=md(rows[i]), b=md(cols[j]), v="−∞" if np.isneginf(R[i, j]) else f"{R[i, j]:.{dec}f}"))


def twin_panel(title: str, shape: str, M, *, ys, xs, titles, mark, key: str, dec: int, sequential: bool) -> None:
    """One side of a twin pair: title, shape line and the clickable map (−∞ cells marked)."""
    st.markdown(title)
    shape_badge(shape)
    neg = np.isneginf(M)
    show_heatmap(heatmap(np.where(neg, 0, M), x_labels=xs, y_labels=ys, x_title=titles[0], y_title=titles[1],
                         decimals=dec, neg_inf=neg, sequential=sequential, clickable=True, highlight=mark),
                 key=key, click_queue=KEYS.clicks)


def wrong_axis(A, ql, kl, dec: int) -> None:
    """Softmax over the wrong axis: the query's weights no longer sum to 1."""
    st.subheader(t("nt.wrong.title"))
    st.markdown(t("nt.wrong.text"))
    wrong = core.pitfalls.wrong_axis_softmax(A.logits)
    fmt = f"{{:.{dec}f}}"
    axes = {"x_labels": kl, "y_labels": ql, "x_title": t("axis.key"), "y_title": t("axis.query"), "decimals": dec,
            "sequential": True}
    w1, w2 = st.columns(2)
    with w1:
        st.markdown(f"**{t('nt.wrong.right')}**")
        st.code("weights = torch.softmax(scores, dim=-1)", language="python", wrap_lines=True)
        show_heatmap(heatmap(A.weights.numpy(), side_text=["Σ " + fmt.format(s) for s in A.weight_sums.numpy()], **axes),
                     key=KEYS.right)
    with w2:
        st.markdown(f"**{t('nt.wrong.wrong')}**")
        st.code(WRONG_CODE, language="python", wrap_lines=True)
        show_heatmap(heatmap(wrong.weights.numpy(), side_text=["Σ " + fmt.format(s) for s in wrong.sums_per_query.numpy()],
                             **axes), key=KEYS.wrong)
        st.caption(t("nt.wrong.keysums", sums=", ".join(fmt.format(s) for s in wrong.sums_per_key.numpy())))


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    drain_clicks()
    dec = settings.get("precision")
    st.markdown(t("nt.intro"))
    inp = numbers(problems)
    both = page.guarded(problems, lambda: (ss.run(inp, "row"), ss.run(inp, "column")))
    page.show_problems(problems)
    if both is None:
        return
    row, col = both
    formulas_side_by_side()
    worst = max(core.transpose_gap(row.attn, col.attn).values())
    page.check_box(worst == 0, t("nt.check", gap=f"{worst:.3g}"))
    twins(row, col, inp, inp.mask, dec)
    if inp.mask is not None:
        st.markdown(t("nt.causal.both"))
    wrong_axis(row.attn, shorts(inp.q_labels), shorts(inp.k_labels), dec)


main()
