"""Masks page (C11, C12, C35, C39): building masks, the additive form, the order of operations,
source 004's example and what happens to a query that can see nothing."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core

from . import formulas, settings, shared
from .i18n import t
from .render import heatmap, shape_badge, show_heatmap
from .shared import key
from .text import md, shorts

CLICKS = "mk.clicks"
MASK_CHART = "mk.chart.mask"


def _sums(values, dec) -> list[str]:
    return ["Σ " + f"{s:.{dec}f}" for s in values]


def render() -> None:
    problems: list = []
    shared.start(problems)
    for chart, cell in st.session_state.pop(CLICKS, []) or []:
        if chart == MASK_CHART:
            shared.toggle_mask_cell(cell)
    dec = settings.get("precision")
    st.markdown(t("mk.intro"))
    inp = shared.numbers_panel(problems)
    conv = shared.notation_switch()
    n_q, n_k = len(inp.tq), len(inp.tk)
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)

    st.subheader(t("mk.build"))
    c1, c2 = st.columns([2, 1])
    with c1:
        mask = shared.mask_controls(n_q, n_k, inp.q_labels, inp.k_labels, conv, chart_key=MASK_CHART,
                                    click_queue=CLICKS)
    with c2:
        square = n_q == n_k
        st.slider(t("mk.window"), 0, max(1, n_k), key="mk.window", disabled=not square, help=t("mk.window.help"))
        size = int(st.session_state.get("mk.window", 0)) if square else 0
        if size:
            win = core.masks.window(n_q, size).numpy()
            mask = win if mask is None else (mask & win)
            st.caption(t("mk.window.on", w=size))
        st.markdown(t("mk.combine"))
    score = st.session_state.get(key("score"), "scaled_dot")
    params = shared.score_params(score, inp.d_k, problems, editors=False)
    if mask is None:  # nothing chosen yet: demonstrate with the causal mask
        mask = core.masks.causal(n_q, n_k).numpy()
        problems.append(("info", t("mk.no_mask")))
    try:
        tr = shared.run(inp, score, params, mask, "row").attn
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        shared.show_problems(problems)
        return
    shared.show_problems(problems)

    # -- the additive form and what it does
    st.subheader(t("mk.steps"))
    st.latex(formulas.MASKED[conv])
    M = core.masks.additive(mask)
    steps = [("mk.step.M", np.where(np.isneginf(M.numpy()), 0, M.numpy()), np.isneginf(M.numpy()), False, None),
             ("mk.step.scaled", tr.scaled.numpy(), None, False, None),
             ("mk.step.logits", np.where(np.isneginf(tr.logits.numpy()), 0, tr.logits.numpy()),
              np.isneginf(tr.logits.numpy()), False, None),
             ("mk.step.weights", tr.weights.numpy(), None, True, _sums(tr.weight_sums.numpy(), dec))]
    cols = [c for _ in range(2) for c in st.columns(2)]
    for col, (label, z, neg, seq, side) in zip(cols, steps, strict=True):
        with col:
            st.markdown(f"**{t(label)}**")
            zz, lab = shared.qk_view(z, conv, ql, kl)
            nn = None if neg is None else shared.qk_view(neg, conv, ql, kl)[0]
            show_heatmap(heatmap(zz, decimals=0 if label == "mk.step.M" else dec, neg_inf=nn, sequential=seq,
                                 side_text=side if conv == "row" else None, **lab), key=f"mk.{label}")
            if side and conv == "column":
                st.caption(t("pg.column_sums") + " " + ", ".join(s.split()[-1] for s in side))
    shape_badge(f"M ({n_q}×{n_k}) + S̃ ({n_q}×{n_k}) → softmax → α ({n_q}×{n_k})")
    if tr.fully_masked.any():
        st.warning(t("pg.fully_masked", names=", ".join(md(inp.q_labels[i]) for i in np.flatnonzero(tr.fully_masked))))

    # -- order matters (C12, C35)
    st.subheader(t("mk.order"))
    st.markdown(t("mk.order.text"))
    after = core.pitfalls.mask_after_softmax(tr.scaled, mask)
    big = core.pitfalls.mask_with_value(tr.scaled, mask, value=-1e9)
    grid = st.columns(3) if max(n_q, n_k) <= 3 else [*st.columns(2), st.columns(2)[0]]
    for col, (label, w, sums, k) in zip(grid, (
            ("mk.order.right", tr.weights, tr.weight_sums, "right"),
            ("mk.order.after", after.weights, after.sums_per_query, "after"),
            ("mk.order.big", big.weights, big.sums_per_query, "big")), strict=True):
        with col:
            st.markdown(f"**{t(label)}**")
            st.code(t(label + ".code"), language="python")
            z, lab = shared.qk_view(w.numpy(), conv, ql, kl)
            show_heatmap(heatmap(z, decimals=dec, sequential=True, side_text=_sums(sums.numpy(), dec) if conv == "row"
                                 else None, **lab), key=f"mk.order.{k}")
            if conv == "column":
                st.caption(t("pg.column_sums") + " " + ", ".join(f"{s:.{dec}f}" for s in sums.numpy()))
    st.caption(t("mk.order.diff", gap=f"{core.max_abs_diff(big.weights, tr.weights):.2g}"))

    _source_example(dec)
    _fully_masked(inp, score, params, mask, dec, ql, kl)


def _source_example(dec: int) -> None:
    """Source 004: input 'attention is very', target 'is very cool' (teacher forcing)."""
    st.subheader(t("mk.c11.title"))
    st.markdown(t("mk.c11.text"))
    inputs, targets = ["attention", "is", "very"], ["is", "very", "cool"]
    m = core.masks.causal(3).numpy()
    rows = [t("mk.c11.row", i=i, tok=tok) for i, tok in enumerate(targets)]
    c1, c2 = st.columns([1, 1])
    with c1:
        show_heatmap(heatmap(m.astype(float), x_labels=[f"{i} {s}" for i, s in enumerate(inputs)], y_labels=rows,
                             x_title=t("mk.c11.input"), y_title=t("mk.c11.target"), decimals=0, sequential=True),
                     key="mk.c11")
    with c2:
        for i, tok in enumerate(targets):
            seen = ", ".join(f"“{inputs[j]}”" for j in np.flatnonzero(m[i]))
            st.markdown(t("mk.c11.line", tok=tok, seen=seen))


def _fully_masked(inp, score, params, mask, dec, ql, kl) -> None:
    st.subheader(t("mk.full.title"))
    st.markdown(t("mk.full.text"))
    m = np.array(mask, dtype=bool).copy()
    m[0, :] = False  # query 0 may see nothing
    try:
        tr = shared.run(inp, score, params, m, "row").attn
    except ValueError:
        return
    naive = core.pitfalls.naive_softmax(tr.logits).numpy()
    f1, f2 = st.columns(2)
    with f1:
        st.markdown(f"**{t('mk.full.core')}**")
        show_heatmap(heatmap(tr.weights.numpy(), x_labels=kl, y_labels=ql, x_title=t("axis.key"),
                             y_title=t("axis.query"), decimals=dec, sequential=True,
                             side_text=_sums(tr.weight_sums.numpy(), dec)), key="mk.full.core")
    with f2:
        st.markdown(f"**{t('mk.full.naive')}**")
        show_heatmap(heatmap(np.nan_to_num(naive), x_labels=kl, y_labels=ql, x_title=t("axis.key"),
                             y_title=t("axis.query"), decimals=dec, sequential=True, nan=np.isnan(naive)),
                     key="mk.full.naive")
    st.caption(t("mk.full.caption"))
