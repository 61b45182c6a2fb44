"""Linear attention: softmax replaced by a feature map φ, so the product can be regrouped —
(φ(Q)φ(K)ᵀ)V and φ(Q)(φ(K)ᵀV) give the same output at different costs — and weights that are
not softmax's."""

from __future__ import annotations

import streamlit as st

from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, token_labels

KEYS = state.LINEAR_ATTENTION
D = 8
MAX_DRAWN_TOKENS = 64  # tokens this page draws (both weight maps)
COST_NS = (64, 256, 1024, 4096, 16384, 65536)


def outputs(r: dict, labels: list[str], dec: int) -> None:
    st.subheader(t("la.orders.title"))
    c1, c2 = st.columns(2)
    for col, (name, key, title, formula) in zip((c1, c2), (
            ("quadratic", KEYS.quadratic, "la.quadratic", r"\big(\varphi(Q)\,\varphi(K)^\top\big)\,V"),
            ("associative", KEYS.associative, "la.associative", r"\varphi(Q)\,\big(\varphi(K)^\top V\big)")), strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            st.latex(formula)
            show_heatmap(heatmap(r[name], x_labels=dim_labels(D, "v"), y_labels=labels, x_title=t("axis.dim"),
                                 y_title=t("axis.query"), decimals=dec), key=key)
    page.check_box(within_rounding(r["form_gap"]), t("la.orders.check", gap=gap_text(r["form_gap"])))


def weights(r: dict, labels: list[str], dec: int) -> None:
    """Linear attention's weights beside softmax's on the same Q and K; total variation per query."""
    st.subheader(t("la.weights.title"))
    c1, c2 = st.columns(2)
    for col, (name, key, title) in zip((c1, c2), (("linear_weights", KEYS.linear, "la.weights.linear"),
                                                  ("softmax_weights", KEYS.softmax, "la.weights.softmax")), strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            side = [f"{v:.2f}" for v in r["total_variation"]] if name == "linear_weights" else None
            show_heatmap(heatmap(r[name], x_labels=labels, y_labels=labels, x_title=t("axis.key"), y_title=t("axis.query"),
                                 sequential=True, decimals=dec, side_text=side, side_title="TV" if side else ""), key=key)
    st.warning(t("la.weights.differ", gap=gap_text(r["weight_gap"]), tv=f"{max(r['total_variation']):.3g}"))
    st.caption(t("la.random"))


def cost(c: dict) -> None:
    st.subheader(t("la.cost.title"))
    data = [{"type": "scatter", "mode": "lines+markers", "x": list(c["ns"]), "y": c[k], "name": t(name)}
            for k, name in (("quadratic", "la.quadratic"), ("associative", "la.associative"))]
    show_chart(line_figure(data, {"xaxis": {"type": "log", "title": {"text": "n"}},
                                  "yaxis": {"type": "log", "title": {"text": t("la.cost.y")}}}), key=KEYS.cost,
               title=t("la.cost.title"))
    st.caption(t("la.cost.caption", n=f"{c['ns'][-1]:,}", ratio=f"{c['quadratic'][-1] / c['associative'][-1]:,.0f}",
                 d=D))


KEPT = (link.Kept(KEYS.causal, "la_causal", link.flag, False, link.show_flag),)  # the page's own control


def main() -> None:
    problems: page.Problems = []
    link.keep("linear_attention", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("la.intro"))
    st.latex(r"\alpha_{ij} = \frac{\varphi(q_i)^\top \varphi(k_j)}{\sum_{j'} \varphi(q_i)^\top \varphi(k_{j'})},\qquad "
             r"\varphi(x) = \begin{cases} x + 1 & (x > 0) \\ e^{x} & (x \le 0) \end{cases}")  # elu(x) + 1
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("ps.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    if not isinstance(st.session_state.setdefault(KEYS.causal, False), bool):
        st.session_state[KEYS.causal] = False
    st.toggle(t("la.causal"), key=KEYS.causal, help=t("la.causal.help"))
    r = page.guarded(problems, lambda: compute.linear(tuple(tokens), D, seed, bool(st.session_state[KEYS.causal])))
    page.show_problems(problems)
    if r is None:
        return
    labels = shorts(token_labels(tokens))
    outputs(r, labels, dec)
    weights(r, labels, dec)
    cost(compute.linear_costs(COST_NS, D))


main()
