"""Two maps, one difference: differential attention (DIFF Transformer). Each head computes two softmax maps and
subtracts the second, scaled by a learned λ, from the first; the page shows both maps, λ from its
re-parameterisation, the difference (rows summing to 1 − λ, entries that may be negative) and, measured on the
example, whether the difference is more concentrated than the first map."""

from __future__ import annotations

import math

import streamlit as st

from ui import compute, link, page, settings, state
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import token_labels

KEYS = state.DIFF
# Source: Ye et al., "Differential Transformer" (ICLR 2025, arXiv 2410.05258), §2.1: DiffAttn = (softmax(Q1K1ᵀ/√d) −
# λ·softmax(Q2K2ᵀ/√d))V, λ = exp(λq1·λk1) − exp(λq2·λk2) + λ_init with λ_init = 0.8 − 0.6·exp(−0.3·(l − 1)), each head
# normalised (GroupNorm/RMSNorm) and scaled by 1 − λ_init; the paper's claims (quoted as claims on the page): the
# difference cancels common-mode attention noise, as noise-cancelling headphones do, and the model puts less
# attention on irrelevant context. Layout as transformers' DiffLlamaAttention (core.differential_attention).
LAYERS = 32
DOT_RANGE = (-1.0, 1.0)  # a = λ_q1·λ_k1 and b = λ_q2·λ_k2
DEFAULTS = {KEYS.layer: 1, KEYS.a: 0.0, KEYS.b: 0.0, KEYS.head: 0}
PAIRS = compute.DIFF_HEADS // 2
MAX_DRAWN_TOKENS = 64

KEPT = (link.Kept(KEYS.layer, "df_l", link.whole(1, LAYERS), DEFAULTS[KEYS.layer]),
        link.Kept(KEYS.a, "df_a", link.number(*DOT_RANGE), DEFAULTS[KEYS.a]),
        link.Kept(KEYS.b, "df_b", link.number(*DOT_RANGE), DEFAULTS[KEYS.b]),
        link.Kept(KEYS.head, "df_h", link.whole(0, PAIRS - 1), DEFAULTS[KEYS.head]))


def checked(key: str, ok, name: str, problems: page.Problems) -> None:
    """A value its widget can draw; a tampered one is named and the default used."""
    v = st.session_state.setdefault(key, DEFAULTS[key])
    if isinstance(v, bool) or not ok(v):
        problems.append(("error", t("df.bad", value=str(v)[:40], name=name, default=DEFAULTS[key])))
        st.session_state[key] = DEFAULTS[key]


def controls(problems: page.Problems) -> tuple[int, float, float, int]:
    """The layer l (1 … LAYERS: λ_init), the dot products a and b, and the differential head drawn."""
    number = lambda v: isinstance(v, (int, float)) and math.isfinite(v) and DOT_RANGE[0] <= v <= DOT_RANGE[1]  # noqa: E731
    checked(KEYS.layer, lambda v: isinstance(v, int) and 1 <= v <= LAYERS, "l", problems)
    checked(KEYS.a, number, "λ_q1·λ_k1", problems)
    checked(KEYS.b, number, "λ_q2·λ_k2", problems)
    checked(KEYS.head, lambda v: v in range(PAIRS), t("df.head"), problems)
    c1, c2, c3, c4 = st.columns([3, 3, 3, 1])
    with c1:
        st.slider(t("df.layer"), 1, LAYERS, key=KEYS.layer, help=t("df.layer.help"))
    with c2:
        st.slider("λ_q1 · λ_k1", *DOT_RANGE, step=0.05, key=KEYS.a, help=t("df.dot.help"))
    with c3:
        st.slider("λ_q2 · λ_k2", *DOT_RANGE, step=0.05, key=KEYS.b, help=t("df.dot.help"))
    with c4:
        st.selectbox(t("df.head"), list(range(PAIRS)), key=KEYS.head)
    return (int(st.session_state[KEYS.layer]), float(st.session_state[KEYS.a]), float(st.session_state[KEYS.b]),
            int(st.session_state[KEYS.head]))


def lam_line(r: dict, layer: int, a: float, b: float, dec: int, problems: page.Problems) -> None:
    """λ from its re-parameterisation, with this page's numbers; a λ outside (0, 1) is said."""
    lam, init = r["lam"], r["lambda_init"]
    st.latex(rf"\begin{{gathered}}\lambda_{{\mathrm{{init}}}} = 0.8 - 0.6\,e^{{-0.3\,({layer} - 1)}} = {init:.{dec}f}\\"
             rf"\lambda = e^{{{a:g}}} - e^{{{b:g}}} + {init:.{dec}f} = {lam:.{dec}f}\end{{gathered}}")
    if lam <= 0:
        problems.append(("warning", t("df.lam.negative", lam=f"{lam:.{dec}f}")))
    elif lam >= 1:
        problems.append(("warning", t("df.lam.big", lam=f"{lam:.{dec}f}", sum=f"{1 - lam:.{dec}f}")))


def maps(r: dict, labels: list[str], h: int, dec: int) -> None:
    """The two softmax maps of head pair h and their difference, each row's sum beside it (1 − λ)."""
    st.subheader(t("df.maps.title"))
    axes = {"x_labels": labels, "y_labels": labels, "x_title": t("axis.key"), "y_title": t("axis.query"), "decimals": dec}
    c1, c2 = st.columns(2)
    for col, (name, key, title) in zip((c1, c2), (("w1", KEYS.w1, "df.map.1"), ("w2", KEYS.w2, "df.map.2")), strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            show_heatmap(heatmap(r[name][h], sequential=True, **axes), key=key)
    lam = f"{r['lam']:.{dec}f}"
    st.markdown(f"**{t('df.map.diff', lam=lam)}**")
    show_heatmap(heatmap(r["diff"][h], side_text=[f"{s:.{dec}f}" for s in r["sums"][h]], side_title="Σ", **axes),
                 key=KEYS.diff)
    st.caption(t("df.random"))


def measured(r: dict, h: int) -> None:
    """The largest entry's share of its row's absolute weight, mean over the queries: map 1 against the difference."""
    st.subheader(t("df.peak.title"))
    st.latex(r"\frac{\max_j |\alpha_{ij}|}{\sum_j |\alpha_{ij}|}")
    one, diff = float(r["peak1"][h].mean()), float(r["peak_diff"][h].mean())
    key = "df.peak.more" if diff > one else "df.peak.less"
    st.markdown(t(key, one=f"{100 * one:.1f}", diff=f"{100 * diff:.1f}", h=h))
    st.caption(t("df.norm"))


def main() -> None:
    problems: page.Problems = []
    link.keep("diff", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("df.intro"))
    st.latex(r"\begin{gathered}\mathrm{DiffAttn}(X) = \left(A_1 - \lambda\, A_2\right) V\\"
             r"A_i = \mathrm{softmax}\!\left(\frac{Q_iK_i^\top}{\sqrt d}\right)\end{gathered}")
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    layer, a, b, h = controls(problems)
    r = page.guarded(problems, lambda: compute.differential(tuple(tokens), layer - 1, a, b, seed))
    if r is not None:
        lam_line(r, layer, a, b, dec, problems)
    page.show_problems(problems)
    if r is None:
        return
    labels = shorts(token_labels(tokens))
    maps(r, labels, h, dec)
    measured(r, h)


main()
