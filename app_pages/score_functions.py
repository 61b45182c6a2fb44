"""Score functions side by side on the same Q and K; cosine vs dot; why √d_k, as a live
experiment; and two slips of the sources (√ of the sequence length, a one-term softmax)."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core
from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui import scenario_state as ss
from ui.i18n import t
from ui.inputs import notation_switch, numbers_panel, qk_view, score_params
from ui.text import shorts
from ui.widgets import formulas
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import shape_badge

KEYS = state.SCORE_FUNCTIONS
# one source's softmax, character for character (its indices are the slip)
PRINTED_SOFTMAX = r"\alpha_i=softmax(score(q_i,k_i))=\frac{exp(score(q_I,k_i))}{\sum_jexp(score(q,k_j))}"


def all_scores(inp, params: dict, problems: list) -> dict:
    """Row-convention traces of every score function on the scenario's Q and K."""
    traces = {}
    for score in core.SCORE_FUNCTIONS:
        tr = page.guarded(problems, lambda s=score: ss.run(inp, score=s, params=params.get(s, {}), mask=None).attn)
        if tr is not None:
            traces[score] = tr
    return traces


def side_by_side(traces: dict, conv: str, ql, kl, dec: int) -> None:
    """Per function: its formula, f(Q, K) before any scaling, and the softmax weights."""
    st.info(t("pg.score.note"))
    per_row = 3 if max(len(ql), len(kl)) <= 6 else 2
    scores = list(core.SCORE_FUNCTIONS)
    for start in range(0, len(scores), per_row):
        for col, score in zip(st.columns(per_row), scores[start:start + per_row], strict=False):
            tr = traces[score]
            with col:
                st.markdown(f"**{t('score.' + score)}**")
                st.latex(formulas.SCORE_PAIR[score].split(r",\quad")[0])
                st.latex(formulas.SCORE_MATRIX[conv][score])
                st.caption(t("sc.scores_scale", s=f"{tr.scale:.{dec}g}"))
                z, lab = qk_view(tr.scores.numpy(), conv, ql, kl)
                show_heatmap(heatmap(z, decimals=dec, **lab), key=state.item(KEYS.scores, score))
                z, lab = qk_view(tr.weights.numpy(), conv, ql, kl)
                show_heatmap(heatmap(z, decimals=dec, sequential=True, **lab), key=state.item(KEYS.weights, score))


def cosine_vs_dot(traces: dict, conv: str, ql, kl, dec: int) -> None:
    st.subheader(t("sc.cos.title"))
    st.markdown(t("sc.cos.text"))
    dot_n = compute.normalized_dot(traces["dot"].q.numpy(), traces["dot"].k.numpy())
    maps = ((KEYS.cos_dot, t("sc.cos.dot"), traces["dot"].scores.numpy()), (KEYS.cos_normed, t("sc.cos.normed"), dot_n),
            (KEYS.cos_cos, t("score.cosine"), traces["cosine"].scores.numpy()))
    for col, (key, title, z) in zip(st.columns(3), maps, strict=True):
        with col:
            st.markdown(f"**{title}**")
            zz, lab = qk_view(z, conv, ql, kl)
            show_heatmap(heatmap(zz, decimals=dec, **lab), key=key)
    gap = core.max_abs_diff(dot_n, traces["cosine"].scores)
    page.check_box(within_rounding(gap), t("sc.cos.check", gap=gap_text(gap)))
    st.caption(t("sc.cos.why"))


def sqrt_dk_experiment() -> None:
    st.subheader(t("sc.exp.title"))
    st.markdown(t("sc.exp.text"))
    e = compute.scaling_experiment(int(settings.get("seed")))
    dims = list(e["dims"])
    log_d = {"xaxis": {"type": "log", "title": {"text": "d"}}}
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('sc.exp.var')}**")
        show_chart(line_figure([
            {"type": "scatter", "mode": "lines", "x": dims, "y": dims, "name": "y = d", "line": {"dash": "dot"}},
            {"type": "scatter", "mode": "markers", "x": dims, "y": np.round(e["var_dot"], 3).tolist(),
             "name": t("sc.exp.measured"), "marker": {"size": 9}},
        ], log_d | {"yaxis": {"type": "log", "title": {"text": "Var(qᵀk)"}}}), key=KEYS.exp_var,
                   title=t("sc.exp.var"))
    with c2:
        if st.session_state.get(KEYS.exp_d) not in dims:  # first visit, or a link's d the experiment does not have
            st.session_state[KEYS.exp_d] = 64 if 64 in dims else dims[-1]
        i = dims.index(st.select_slider(t("sc.exp.pick_d"), options=dims, key=KEYS.exp_d))
        show_chart(line_figure([
            {"type": "histogram", "x": np.round(e["dots"][i], 3).tolist(), "name": "qᵀk", "opacity": 0.6, "nbinsx": 40},
            {"type": "histogram", "x": np.round(e["dots_scaled"][i], 3).tolist(), "name": "qᵀk / √d", "opacity": 0.6,
             "nbinsx": 40},
        ], {"barmode": "overlay", "xaxis": {"title": {"text": t("sc.exp.value")}}}), key=KEYS.exp_hist,
                   title=f"qᵀk, qᵀk / √d · d = {dims[i]}")
    for col, (name, a, b, label) in zip(st.columns(3), (
            ("max", e["max_weight"], e["max_weight_scaled"], "sc.exp.max"),
            ("ent", e["entropy"], e["entropy_scaled"], "sc.exp.entropy"),
            ("grad", e["grad_norm"], e["grad_norm_scaled"], "sc.exp.grad")), strict=True):
        with col:
            st.markdown(f"**{t(label)}**")
            show_chart(line_figure([
                {"type": "scatter", "mode": "lines+markers", "x": dims, "y": np.round(a, 4).tolist(),
                 "name": t("sc.exp.unscaled")},
                {"type": "scatter", "mode": "lines+markers", "x": dims, "y": np.round(b, 4).tolist(),
                 "name": t("sc.exp.scaled")}], log_d), key=state.item(KEYS.exp_plot, name), title=t(label))
    st.caption(t("sc.exp.caption", n=e["n_keys"]))


def sqrt_length_slip(dec: int, conv: str) -> None:
    """A source divides by √7, the sentence's length, instead of √d_k."""
    st.subheader(t("sc.c19.title"))
    st.markdown(t("sc.c19.text"))
    toks = core.tokens.C19_TOKENS
    X = compute.embedding("random", toks, 3, int(settings.get("seed")))[0]
    n, d_k = len(toks), X.shape[1]
    labels = [f"{i} {s}" for i, s in enumerate(toks)]
    sides = ((KEYS.c19_right, t("sc.c19.right", d=d_k), d_k, compute.self_attention_weights(X, None)),
             (KEYS.c19_wrong, t("sc.c19.wrong", n=n), n,
              compute.self_attention_weights(X, core.default_scale("scaled_dot", n))))  # the slip: 1/√n
    for col, (key, title, root, w) in zip(st.columns(2), sides, strict=True):
        with col:
            st.markdown(f"**{title}**")
            shape_badge(f"Q K ᵀ / √{root}:  ({n}×{d_k})({d_k}×{n}) → ({n}×{n})")
            z, lab = qk_view(w, conv, labels, labels)
            show_heatmap(heatmap(z, decimals=dec, sequential=True, **lab), key=key)
    st.caption(t("sc.c19.caption"))


def softmax_slip() -> None:
    """A source writes the weight with q_i in the numerator; the weight of key i is exp(score(q, k_i))
    over the sum for the *same* query q."""
    st.subheader(t("sc.c40.title"))
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('sc.c40.wrong')}**")
        st.latex(PRINTED_SOFTMAX)  # exactly as printed: q_i, then q_I in the numerator, q in the sum
        st.code(PRINTED_SOFTMAX, language="latex", wrap_lines=True)
    with c2:
        st.markdown(f"**{t('sc.c40.right')}**")
        st.latex(r"\alpha_i = \frac{\exp(\mathrm{score}(q, k_i))}{\sum_j \exp(\mathrm{score}(q, k_j))}")
    st.caption(t("sc.c40.caption"))


KEPT = (link.Kept(KEYS.exp_d, "exp_d", link.whole(1, 4096), 64),)  # the page's own control (the rest: the scenario)


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    link.keep("score_functions", KEPT, problems)
    dec = settings.get("precision")
    st.markdown(t("sc.intro"))
    inp = numbers_panel(problems)
    conv = notation_switch()
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)
    with st.expander(t("sc.params"), expanded=False):
        st.caption(t("sc.params.help"))
        params = {s: score_params(s, inp, problems) for s in ("general", "additive")}
    traces = all_scores(inp, params, problems)
    page.show_problems(problems)
    if len(traces) < len(core.SCORE_FUNCTIONS):
        return
    side_by_side(traces, conv, ql, kl, dec)
    cosine_vs_dot(traces, conv, ql, kl, dec)
    sqrt_dk_experiment()
    sqrt_length_slip(dec, conv)
    softmax_slip()


main()
