"""Score functions page (C3, C5–C10, C19): the same Q and K through every score function,
cosine vs dot, the √d_k experiment, and source 003's √(sequence length) slip."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core

from . import compute, formulas, settings, shared
from .i18n import t
from .render import PrebuiltFigure, heatmap, shape_badge, show_heatmap
from .text import shorts


def _fig(data: list[dict], layout: dict) -> PrebuiltFigure:
    base = {"height": 300, "margin": {"l": 10, "r": 10, "t": 30, "b": 10}, "legend": {"orientation": "h", "y": -0.25}}
    return PrebuiltFigure({"data": data, "layout": base | layout})


def render() -> None:
    problems: list = []
    shared.start(problems)
    dec = settings.get("precision")
    st.markdown(t("sc.intro"))
    inp = shared.numbers_panel(problems)
    conv = shared.notation_switch()
    n_q, n_k = len(inp.tq), len(inp.tk)
    ql, kl = shorts(inp.q_labels), shorts(inp.k_labels)
    with st.expander(t("sc.params"), expanded=False):
        st.caption(t("sc.params.help"))
        params = {"general": shared.score_params("general", inp.d_k, problems, editors=True),
                  "additive": shared.score_params("additive", inp.d_k, problems, editors=True)}
    traces = {}
    for score in core.SCORE_FUNCTIONS:
        try:
            traces[score] = shared.run(inp, score, params.get(score, {}), None, "row").attn
        except ValueError as err:
            problems.append(("error", t("err.compute", detail=str(err))))
    shared.show_problems(problems)
    if len(traces) < len(core.SCORE_FUNCTIONS):
        return

    st.info(t("pg.score.note"))
    per_row = 3 if max(n_q, n_k) <= 6 else 2
    scores = list(core.SCORE_FUNCTIONS)
    for start in range(0, len(scores), per_row):
        cols = st.columns(per_row)
        for col, score in zip(cols, scores[start:start + per_row], strict=False):
            tr = traces[score]
            with col:
                st.markdown(f"**{t('score.' + score)}**")
                st.latex(formulas.SCORE_PAIR[score].split(r",\quad")[0])
                st.latex(formulas.SCORE_MATRIX[conv][score])
                st.caption(t("sc.scores_scale", s=f"{tr.scale:.{dec}g}"))
                z, lab = shared.qk_view(tr.scores.numpy(), conv, ql, kl)
                show_heatmap(heatmap(z, decimals=dec, **lab), key=f"sc.scores.{score}")
                z, lab = shared.qk_view(tr.weights.numpy(), conv, ql, kl)
                show_heatmap(heatmap(z, decimals=dec, sequential=True, **lab), key=f"sc.weights.{score}")

    # -- cosine vs dot
    st.subheader(t("sc.cos.title"))
    st.markdown(t("sc.cos.text"))
    Qn, Kn = core.l2_normalize(traces["dot"].q), core.l2_normalize(traces["dot"].k)
    dot_n = compute_cached_dot(Qn.numpy(), Kn.numpy())
    c1, c2, c3 = st.columns(3)
    with c1:
        st.markdown(f"**{t('sc.cos.dot')}**")
        z, lab = shared.qk_view(traces["dot"].scores.numpy(), conv, ql, kl)
        show_heatmap(heatmap(z, decimals=dec, **lab), key="sc.cos.dot")
    with c2:
        st.markdown(f"**{t('sc.cos.normed')}**")
        z, lab = shared.qk_view(dot_n, conv, ql, kl)
        show_heatmap(heatmap(z, decimals=dec, **lab), key="sc.cos.normed")
    with c3:
        st.markdown(f"**{t('score.cosine')}**")
        z, lab = shared.qk_view(traces["cosine"].scores.numpy(), conv, ql, kl)
        show_heatmap(heatmap(z, decimals=dec, **lab), key="sc.cos.cos")
    gap = core.max_abs_diff(dot_n, traces["cosine"].scores)
    (st.success if gap < 1e-5 else st.error)(t("sc.cos.check", gap=f"{gap:.2g}"))
    st.caption(t("sc.cos.why"))

    _sqrt_dk_experiment(dec)
    _c19_slip(dec, conv)
    _softmax_slip()


@st.cache_data(max_entries=64, show_spinner=False)
def compute_cached_dot(Qn: np.ndarray, Kn: np.ndarray) -> np.ndarray:
    """q̂ᵀk̂ for every pair, by core's dot score on the normalised vectors."""
    return core.attention(Qn, Kn, Kn, score="dot").scores.numpy()


@st.cache_data(max_entries=8, show_spinner=False)
def _experiment(seed: int):
    e = core.experiments.scaling_experiment(seed=seed)
    return {f: getattr(e, f) if f in ("dims", "n_keys") else getattr(e, f).numpy()
            for f in ("dims", "n_keys", "var_dot", "dots", "max_weight", "max_weight_scaled", "entropy",
                      "entropy_scaled", "grad_norm", "grad_norm_scaled", "dots_scaled")}


def _sqrt_dk_experiment(dec: int) -> None:
    st.subheader(t("sc.exp.title"))
    st.markdown(t("sc.exp.text"))
    e = _experiment(int(settings.get("seed")))
    dims = list(e["dims"])
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('sc.exp.var')}**")
        st.plotly_chart(_fig([
            {"type": "scatter", "mode": "lines", "x": dims, "y": dims, "name": "y = d", "line": {"dash": "dot"}},
            {"type": "scatter", "mode": "markers", "x": dims, "y": np.round(e["var_dot"], 3).tolist(),
             "name": t("sc.exp.measured"), "marker": {"size": 9}},
        ], {"xaxis": {"type": "log", "title": {"text": "d"}}, "yaxis": {"type": "log", "title": {"text": "Var(qᵀk)"}}}),
            key="sc.exp.var", config={"displayModeBar": False})
    with c2:
        i = dims.index(st.select_slider(t("sc.exp.pick_d"), options=dims, value=64, key="sc.exp.d"))
        raw = e["dots"][i]
        st.plotly_chart(_fig([
            {"type": "histogram", "x": np.round(raw, 3).tolist(), "name": "qᵀk", "opacity": 0.6, "nbinsx": 40},
            {"type": "histogram", "x": np.round(e["dots_scaled"][i], 3).tolist(), "name": "qᵀk / √d", "opacity": 0.6,
             "nbinsx": 40},
        ], {"barmode": "overlay", "xaxis": {"title": {"text": t("sc.exp.value")}}}), key="sc.exp.hist",
            config={"displayModeBar": False})
    c3, c4, c5 = st.columns(3)
    for col, (name, a, b, label) in zip((c3, c4, c5), (
            ("max", e["max_weight"], e["max_weight_scaled"], "sc.exp.max"),
            ("ent", e["entropy"], e["entropy_scaled"], "sc.exp.entropy"),
            ("grad", e["grad_norm"], e["grad_norm_scaled"], "sc.exp.grad")), strict=True):
        with col:
            st.markdown(f"**{t(label)}**")
            st.plotly_chart(_fig([
                {"type": "scatter", "mode": "lines+markers", "x": dims, "y": np.round(a, 4).tolist(),
                 "name": t("sc.exp.unscaled")},
                {"type": "scatter", "mode": "lines+markers", "x": dims, "y": np.round(b, 4).tolist(),
                 "name": t("sc.exp.scaled")},
            ], {"xaxis": {"type": "log", "title": {"text": "d"}}}), key=f"sc.exp.{name}", config={"displayModeBar": False})
    st.caption(t("sc.exp.caption", n=e["n_keys"]))


def _c19_slip(dec: int, conv: str) -> None:
    st.subheader(t("sc.c19.title"))
    st.markdown(t("sc.c19.text"))
    toks = core.tokens.C19_TOKENS
    X = compute.embedding("random", toks, 3, int(settings.get("seed")))[0]
    n, d_k = len(toks), X.shape[1]
    right = _c19(X, None)
    wrong = _c19(X, core.default_scale("scaled_dot", n))  # the slip: 1/√n with n = 7 tokens
    labels = [f"{i} {s}" for i, s in enumerate(toks)]
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('sc.c19.right', d=d_k)}**")
        shape_badge(f"Q K ᵀ / √{d_k}:  (7×3)(3×7) → (7×7)")
        z, lab = shared.qk_view(right, conv, labels, labels)
        show_heatmap(heatmap(z, decimals=dec, sequential=True, **lab), key="sc.c19.right")
    with c2:
        st.markdown(f"**{t('sc.c19.wrong', n=n)}**")
        shape_badge(f"Q K ᵀ / √{n}:  (7×3)(3×7) → (7×7)")
        z, lab = shared.qk_view(wrong, conv, labels, labels)
        show_heatmap(heatmap(z, decimals=dec, sequential=True, **lab), key="sc.c19.wrong")
    st.caption(t("sc.c19.caption"))


@st.cache_data(max_entries=16, show_spinner=False)
def _c19(X: np.ndarray, scale: float | None) -> np.ndarray:
    """Weights of the C19 sentence with Q = K = V = X, at the default 1/√d_k or a given scale."""
    return core.attention(X, X, X, scale=scale).weights.numpy()


def _softmax_slip() -> None:
    """C40: source 002 writes the weight with q_i in the numerator; the weight of key i is
    exp(score(q, k_i)) over the sum for the *same* query q."""
    st.subheader(t("sc.c40.title"))
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('sc.c40.wrong')}**")
        st.latex(r"\alpha_i = \mathrm{softmax}\big(\mathrm{score}(q_i, k_i)\big) \;=\; "
                 r"\frac{\exp(\mathrm{score}(q_i, k_i))}{\sum_j \exp(\mathrm{score}(q, k_j))}")
    with c2:
        st.markdown(f"**{t('sc.c40.right')}**")
        st.latex(r"\alpha_i = \frac{\exp(\mathrm{score}(q, k_i))}{\sum_j \exp(\mathrm{score}(q, k_j))}")
    st.caption(t("sc.c40.caption"))
