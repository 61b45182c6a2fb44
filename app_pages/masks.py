"""Masks: causal, padding, sliding-window and hand-made masks combined; the additive form 0 / −∞;
why scale → mask → softmax; a source's example; a query that can see nothing."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core
from ui import link, page, settings, state
from ui import scenario_state as ss
from ui.i18n import t
from ui.inputs import mask_controls, notation_switch, numbers_panel, qk_view
from ui.text import md, shorts
from ui.widgets import formulas
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import shape_badge

KEYS = state.MASKS


def sums(values, dec) -> list[str]:
    return ["Σ " + f"{s:.{dec}f}" for s in values]


def builder(inp, conv: str):
    """The mask builder (causal, PAD, clicked cells) and the window slider → the combined mask."""
    for chart, cell in st.session_state.pop(KEYS.clicks, []) or []:
        if chart == KEYS.chart:
            ss.toggle_mask_cell(cell)
    n_q, n_k = len(inp.tq), len(inp.tk)
    st.subheader(t("mk.build"))
    c1, c2 = st.columns([2, 1])
    with c1:
        mask_controls(inp, conv, chart_key=KEYS.chart, click_queue=KEYS.clicks, clear_key=KEYS.mask_clear)
    with c2:
        square = n_q == n_k
        if not 0 <= st.session_state.get(KEYS.window, 0) <= max(1, n_k):  # a link's window past these tokens
            st.session_state[KEYS.window] = 0
        st.slider(t("mk.window"), 0, max(1, n_k), key=KEYS.window, disabled=not square, help=t("mk.window.help"))
        size = int(st.session_state.get(KEYS.window, 0)) if square else 0
        if size:
            st.caption(t("mk.window.on", w=size))
        st.markdown(t("mk.combine"))
    return ss.current_mask(n_q, n_k, cross=inp.cross, window=size)


def additive_steps(tr, mask, conv: str, ql, kl, dec: int) -> None:
    """M, the scaled scores, their sum and the softmax, in a 2 × 2 grid."""
    st.subheader(t("mk.steps"))
    st.latex(formulas.MASKED[conv])
    M = core.masks.additive(mask).numpy()
    L = tr.logits.numpy()
    steps = [("M", np.where(np.isneginf(M), 0, M), np.isneginf(M), False, None),
             ("scaled", tr.scaled.numpy(), None, False, None),
             ("logits", np.where(np.isneginf(L), 0, L), np.isneginf(L), False, None),
             ("weights", tr.weights.numpy(), None, True, sums(tr.weight_sums.numpy(), dec))]
    cols = [c for _ in range(2) for c in st.columns(2)]
    for col, (name, z, neg, seq, side) in zip(cols, steps, strict=True):
        with col:
            st.markdown(f"**{t('mk.step.' + name)}**")
            zz, lab = qk_view(z, conv, ql, kl)
            nn = None if neg is None else qk_view(neg, conv, ql, kl)[0]
            show_heatmap(heatmap(zz, decimals=0 if name == "M" else dec, neg_inf=nn, sequential=seq,
                                 side_text=side if conv == "row" else None, **lab), key=state.item(KEYS.step, name))
            if side and conv == "column":
                st.caption(t("pg.column_sums") + " " + ", ".join(s.split()[-1] for s in side))
    shape_badge(f"M ({len(ql)}×{len(kl)}) + S̃ ({len(ql)}×{len(kl)}) → softmax → α ({len(ql)}×{len(kl)})")


def order_matters(tr, mask, conv: str, ql, kl, dec: int) -> None:
    """Mask before softmax (right), after it (rows no longer sum to 1), or with −1e9 instead of −∞."""
    st.subheader(t("mk.order"))
    st.markdown(t("mk.order.text"))
    after = core.pitfalls.mask_after_softmax(tr.scaled, mask)
    big = core.pitfalls.mask_with_value(tr.scaled, mask, value=-1e9)
    grid = st.columns(3) if max(len(ql), len(kl)) <= 3 else [*st.columns(2), st.columns(2)[0]]
    for col, (label, w, s, name) in zip(grid, (
            ("mk.order.right", tr.weights, tr.weight_sums, "right"),
            ("mk.order.after", after.weights, after.sums_per_query, "after"),
            ("mk.order.big", big.weights, big.sums_per_query, "big")), strict=True):
        with col:
            st.markdown(f"**{t(label)}**")
            st.code(t(label + ".code"), language="python", wrap_lines=True)
            z, lab = qk_view(w.numpy(), conv, ql, kl)
            show_heatmap(heatmap(z, decimals=dec, sequential=True, side_text=sums(s.numpy(), dec) if conv == "row"
                                 else None, **lab), key=state.item(KEYS.order, name))
            if conv == "column":
                st.caption(t("pg.column_sums") + " " + ", ".join(f"{v:.{dec}f}" for v in s.numpy()))
    st.caption(t("mk.order.diff", gap=f"{core.max_abs_diff(big.weights, tr.weights):.2g}"))


def source_example() -> None:
    """Input 'attention is very', target 'is very cool' (teacher forcing)."""
    st.subheader(t("mk.c11.title"))
    st.markdown(t("mk.c11.text"))
    inputs_, targets = ["attention", "is", "very"], ["is", "very", "cool"]
    m = core.masks.causal(3).numpy()
    c1, c2 = st.columns([1, 1])
    with c1:
        show_heatmap(heatmap(m.astype(float), x_labels=[f"{i} {s}" for i, s in enumerate(inputs_)],
                             y_labels=[t("mk.c11.row", i=i, tok=tok) for i, tok in enumerate(targets)],
                             x_title=t("mk.c11.input"), y_title=t("mk.c11.target"), decimals=0, sequential=True),
                     key=KEYS.c11)
    with c2:
        for i, tok in enumerate(targets):
            st.markdown(t("mk.c11.line", tok=tok, seen=", ".join(f"“{inputs_[j]}”" for j in np.flatnonzero(m[i]))))


def fully_masked(inp, mask, dec: int, ql, kl) -> None:
    """Query 0 may see nothing: core's weights are 0 (its output 0); a plain softmax gives NaN."""
    st.subheader(t("mk.full.title"))
    st.markdown(t("mk.full.text"))
    m = np.array(mask, dtype=bool).copy()
    m[0, :] = False
    tr = page.guarded([], lambda: ss.run(inp, mask=m).attn)
    if tr is None:
        return
    naive = core.pitfalls.naive_softmax(tr.logits).numpy()
    axes = {"x_labels": kl, "y_labels": ql, "x_title": t("axis.key"), "y_title": t("axis.query"), "decimals": dec,
            "sequential": True}
    f1, f2 = st.columns(2)
    with f1:
        st.markdown(f"**{t('mk.full.core')}**")
        show_heatmap(heatmap(tr.weights.numpy(), side_text=sums(tr.weight_sums.numpy(), dec), **axes), key=KEYS.full_core)
    with f2:
        st.markdown(f"**{t('mk.full.naive')}**")
        show_heatmap(heatmap(np.nan_to_num(naive), nan=np.isnan(naive), **axes), key=KEYS.full_naive)
    st.caption(t("mk.full.caption"))


KEPT = (link.Kept(KEYS.window, "mk_window", link.whole(0, 512), 0),)  # the page's own control (the rest: the scenario)


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    link.keep("masks", KEPT, problems)
    dec = settings.get("precision")
    st.markdown(t("mk.intro"))
    inp = numbers_panel(problems)
    conv = notation_switch()
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)
    mask = builder(inp, conv)
    if mask is None:  # nothing chosen yet: demonstrate with the causal mask
        mask = core.masks.causal(len(inp.tq), len(inp.tk)).numpy()
        problems.append(("info", t("mk.no_mask")))
    tr = page.guarded(problems, lambda: ss.run(inp, mask=mask).attn)
    page.show_problems(problems)
    if tr is None:
        return
    additive_steps(tr, mask, conv, ql, kl, dec)
    if tr.fully_masked.any():
        st.warning(t("pg.fully_masked", names=", ".join(md(inp.q_labels[i]) for i in np.flatnonzero(tr.fully_masked))))
    order_matters(tr, mask, conv, ql, kl, dec)
    source_example()
    fully_masked(inp, mask, dec, ql, kl)


main()
