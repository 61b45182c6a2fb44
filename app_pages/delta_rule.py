"""Memory in a matrix: the gated delta rule (Gated DeltaNet; Qwen3-Next's linear layers). A d_k × d_v state is
written token by token — decayed, corrected where it already predicts the value — and read with the query; the
recurrent and chunked forms agree; the plain delta rule and linear attention are its special cases."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from core.playground.lab import gap_text, within_rounding
from ui import compute, concept_panels, link, page, settings, state
from ui.concept_panels import delta_state
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, token_labels
from ui.widgets.steps import stepper

KEYS = state.DELTA_RULE
# Sources of what the intro (dr.intro) says: the delta rule — Schlag, Irie and Schmidhuber, "Linear Transformers Are
# Secretly Fast Weight Programmers" (2021, DeltaNet); the gated delta rule and the authors' claim that gate and delta
# rule together beat either alone — Yang, Kautz and Hatamizadeh, "Gated Delta Networks: Improving Mamba2 with Delta
# Rule" (2024, arXiv 2412.06464); Qwen3-Next's 3:1 layout and L2-normalised q, k — see compute.HYBRID's comment and
# transformers Qwen3NextGatedDeltaNet.
RULES = compute.DELTA_RULES
D = compute.DELTA_D
MAX_TOKENS = 32  # the page steps through at most this many tokens
G_MIN = -3.0  # the decay slider's lowest log decay (α = e^g ≈ 0.05)
BETA_DEFAULT, G_DEFAULT = 0.5, -0.2
HYBRID_NS = (4096, 32768, 262144)

KEPT = (link.Kept(KEYS.rule, "rule", link.one_of(RULES), "gated"),
        link.Kept(KEYS.beta, "beta", link.number(0.0, 1.0), BETA_DEFAULT),
        link.Kept(KEYS.g, "g", link.number(G_MIN, 0.0), G_DEFAULT),
        link.Kept(KEYS.step, "dr_step", link.whole(1, MAX_TOKENS), 1),
        link.Kept(state.item(KEYS.beta, "max"), "beta_max", link.one_of(compute.LAYER_BETA_MAXES), 1.0))
BETA_MAX = state.item(KEYS.beta, "max")  # the whole layer's β range: (0, 1) or (0, 2)


def number(key: str, lo: float, hi: float, default: float, message: str, problems: page.Problems) -> float:
    """A number lo … hi from session state; anything else (a tampered state) is named and the default used."""
    v = st.session_state.setdefault(key, default)
    if not (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi):
        problems.append(("error", t(message, value=str(v)[:40], default=default)))
        v = default
    st.session_state[key] = float(v)
    return float(v)


def controls(problems: page.Problems) -> tuple[str, float, float]:
    """The rule, β and g (each checked before its widget draws; g and β are fixed by the special cases)."""
    if st.session_state.setdefault(KEYS.rule, "gated") not in RULES:
        problems.append(("error", t("dr.rule.bad")))
        st.session_state[KEYS.rule] = "gated"
    beta = number(KEYS.beta, 0.0, 1.0, BETA_DEFAULT, "dr.beta.bad", problems)
    g = number(KEYS.g, G_MIN, 0.0, G_DEFAULT, "dr.g.bad", problems)
    st.radio(t("dr.rule"), RULES, key=KEYS.rule, format_func=lambda r: t("dr.rule." + r), horizontal=True)
    rule = st.session_state[KEYS.rule]
    c1, c2 = st.columns(2)
    with c1:
        st.slider(t("dr.beta"), 0.0, 1.0, step=0.05, key=KEYS.beta, help=t("dr.beta.help"), disabled=rule == "linear")
    with c2:
        st.slider(t("dr.g", alpha=f"{math.exp(g):.3f}"), G_MIN, 0.0, step=0.05, key=KEYS.g, help=t("dr.g.help"),
                  disabled=rule != "gated")
    return rule, beta, g


def step_controls(n: int, problems: page.Problems) -> int:
    """◀ / ▶ (or the ← → keys) move through the tokens; returns how many are written (1 … n): token t = that − 1."""
    return stepper(n, problems, step_key=KEYS.step, prev_key=KEYS.step_prev, next_key=KEYS.step_next,
                   keys_key=KEYS.arrow_keys, bad=t("kv.step.bad", last=n - 1),
                   now=lambda step: t("dr.step.now", t=step - 1, last=n - 1))


def this_step(r: dict, rule: str, step: int, labels: list[str], dec: int) -> None:
    """Token t's write and read: the state S_t beside the vectors of this step (ui.concept_panels.delta_state)."""
    st.subheader(t("dr.step.title", tok=labels[step - 1]))
    delta_state(r, rule, step, labels, dec, keys=(KEYS.state, KEYS.write))


def forms_check(r: dict) -> None:
    """The recurrence and the chunked form (DELTA_CHUNK tokens at a time) give the same outputs."""
    ok = within_rounding(r["chunk_gap"])
    page.check_box(ok, t("dr.chunk.check" if ok else "dr.chunk.differ", c=compute.DELTA_CHUNK, gap=gap_text(r["chunk_gap"])))


def special_cases(rs: dict, labels: list[str], dec: int) -> None:
    """Every token's output under the three rules side by side (the current β and g where a rule uses them)."""
    st.subheader(t("dr.cases.title"))
    cols = st.columns(len(RULES))
    for col, rule in zip(cols, RULES, strict=True):
        with col:
            st.markdown(f"**{t('dr.rule.' + rule)}**")
            st.latex({"gated": r"S_t = e^{g}(I - \beta k_t k_t^\top) S_{t-1} + \beta k_t v_t^\top",
                      "delta": r"S_t = (I - \beta k_t k_t^\top) S_{t-1} + \beta k_t v_t^\top",
                      "linear": r"S_t = S_{t-1} + k_t v_t^\top"}[rule])
            show_heatmap(heatmap(rs[rule]["output"], x_labels=dim_labels(D, "o"), y_labels=labels, x_title=t("axis.dim"),
                                 y_title=t("axis.query"), decimals=dec), key=state.item(KEYS.outputs, rule))
    st.caption(t("dr.cases.caption"))


# ---------------------------------------------------------------------------- the whole layers of 2026 (issue 55)
def beta_max_control(problems: page.Problems) -> float:
    """β's range for the whole GDN layer: (0, 1), or (0, 2) with negative eigenvalues; anything else is named."""
    options = compute.LAYER_BETA_MAXES
    if st.session_state.setdefault(BETA_MAX, options[0]) not in options:
        problems.append(("error", t("dr2.beta_max.bad", value=str(st.session_state[BETA_MAX])[:40])))
        st.session_state[BETA_MAX] = options[0]
    st.radio(t("dr2.beta_max"), options, key=BETA_MAX, horizontal=True, help=t("dr2.beta_max.help"),
             format_func=lambda b: t("dr2.beta_max." + str(int(b))))
    return float(st.session_state[BETA_MAX])


def small_map(z, x: list[str], y: list[str], titles: tuple[str, str], key: str, dec: int, *, seq: bool = False) -> None:
    show_heatmap(heatmap(z, x_labels=x, y_labels=y, x_title=titles[0], y_title=titles[1], sequential=seq,
                         decimals=dec, compact=True), key=key)


def gdn_layer(r: dict, labels: list[str], dec: int) -> None:
    """The conv's taps, β and α per value head, and the cache the layer keeps (numbers from core)."""
    s = r["sizes"]
    st.markdown(t("dr2.gdn", hk=s.key_heads, hv=s.value_heads, d=s.d, kappa=s.kappa))
    st.latex(r"\begin{gathered}[q|k|v]_t = \mathrm{SiLU}\big(\textstyle\sum_{j<\kappa} w_j \odot (xW)_{t-j}\big)\\"
             r"\beta_t = \beta_{\max}\,\sigma(x_t W_b)\\ \alpha_t = e^{-e^{A}\,\mathrm{softplus}(x_t W_a + b)}\\"
             r"y_t = \mathrm{RMSNorm}(o_t) \odot \mathrm{SiLU}(x_t W_z)\end{gathered}")
    channels = [f"{n}{i}" for n, w in (("q", s.key_heads * s.d), ("k", s.key_heads * s.d), ("v", s.value_heads * s.d))
                for i in range(w)]
    heads = [t("dr2.head", h=h) for h in range(s.value_heads)]
    c1, c2, c3 = st.columns([2, 3, 3])
    with c1:
        st.markdown(f"**{t('dr2.taps')}**")
        small_map(r["taps"], dim_labels(s.kappa, "w"), channels,
                  (t("dr2.axis.tap"), t("dr2.axis.channel")), state.item(KEYS.outputs, "taps"), dec)
    with c2:
        st.markdown("**" + t("dr2.beta", max=f"{r['beta_max']:g}") + "**")
        small_map(r["beta"], labels, heads, (t("axis.key"), t("dr2.axis.head")), state.item(KEYS.outputs, "beta"), dec,
                  seq=True)
    with c3:
        st.markdown(f"**{t('dr2.alpha')}**")
        small_map(r["alpha"], labels, heads, (t("axis.key"), t("dr2.axis.head")), state.item(KEYS.outputs, "alpha"), dec,
                  seq=True)
    state_n, conv_n = r["cache"]["gdn"]
    st.markdown(t("dr2.cache", state=state_n, conv=conv_n, hv=s.value_heads, d=s.d, kappa=s.kappa))


def fades_and_mamba(r: dict, labels: list[str], dec: int) -> None:
    """KDA's fade per key channel beside GDN's one per head; Mamba-2's q = C, k = B, v = x for head 0."""
    d = r["sizes"].d
    st.markdown(t("dr2.fades"))
    c1, c2 = st.columns([1, 3])
    with c1:
        small_map(r["gdn_fade"][:, None], [t("dr2.all_channels")], labels, (t("dr2.gdn_fade"), t("axis.key")),
                  state.item(KEYS.outputs, "gdn_fade"), dec, seq=True)
    with c2:
        small_map(r["kda_fade"], dim_labels(d, "k"), labels, (t("dr2.kda_fade"), t("axis.key")),
                  state.item(KEYS.outputs, "kda_fade"), dec, seq=True)
    st.markdown(t("dr2.mamba"))
    st.latex(r"\begin{gathered}h_t = e^{\Delta_t A}\, h_{t-1} + \Delta_t\, B_t\, x_t^\top,\quad y_t = h_t^\top C_t + D\,x_t\\"
             r"q = C,\; k = B,\; v = x,\; \alpha = e^{\Delta A},\; \beta = \Delta\end{gathered}")
    cols = st.columns(3)
    for col, (name, role) in zip(cols, (("C", "q"), ("B", "k"), ("x", "v")), strict=True):
        with col:
            st.markdown(f"**{name} = {role}**")
            small_map(r[name], dim_labels(d, role), labels, (t("axis.dim"), t("axis.key")),
                      state.item(KEYS.outputs, "m2", name), dec)


def whole_layers(tokens: list[str], labels: list[str], dec: int, seed: int) -> None:
    st.subheader(t("dr2.title"))
    problems: page.Problems = []
    beta_max = beta_max_control(problems)
    r = page.guarded(problems, lambda: compute.layers_2026(tuple(tokens), beta_max, seed))
    page.show_problems(problems)
    if r is None:
        return
    st.caption(t("dr2.untrained"))
    gdn_layer(r, labels, dec)
    fades_and_mamba(r, labels, dec)


def hybrid() -> None:
    """A 3:1 hybrid's memory per sequence beside the same model with attention in every layer."""
    h = compute.HYBRID
    st.subheader(t("dr.hybrid.title"))
    st.markdown(t("dr.hybrid.intro", model=h.name, layers=h.layers, attn=h.count("global"), lin=h.count("linear"),
                  g=h.n_kv_heads, dh=h.d_head, heads=h.linear_value_heads, dk=h.linear_key_dim, dv=h.linear_value_dim))
    million = lambda x: f"{x / 1e6:,.1f} M"  # noqa: E731
    df = pd.DataFrame([{t("dr.hybrid.n"): f"{r['n']:,}", t("dr.hybrid.full"): million(r["full"]),
                        t("dr.hybrid.kv"): million(r["kv"]), t("dr.hybrid.state"): million(r["state"]),
                        t("dr.hybrid.total"): million(r["hybrid"])} for r in compute.hybrid_cache(HYBRID_NS)])
    st.dataframe(df, hide_index=True, width="stretch", key=KEYS.hybrid)
    st.caption(t("dr.hybrid.caption"))


def main() -> None:
    problems: page.Problems = []
    link.keep("delta_rule", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("dr.intro"))
    st.latex(r"\begin{gathered}S_t = \alpha_t\,(I - \beta_t k_t k_t^\top)\,S_{t-1} + \beta_t\,k_t v_t^\top\\ "
             r"\alpha_t = e^{g_t},\qquad o_t^\top = \frac{q_t^\top S_t}{\sqrt{d_k}}\end{gathered}")
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_TOKENS)
    rule, beta, g = controls(problems)
    rs = page.guarded(problems, lambda: compute.delta_rule(tuple(tokens), beta, g, seed))
    step = step_controls(len(tokens), problems) if rs else 1
    page.show_problems(problems)
    if rs is None:
        return
    labels = shorts(token_labels(tokens))
    st.caption(t("dr.random"))
    this_step(rs[rule], rule, step, labels, dec)
    forms_check(rs[rule])
    special_cases(rs, labels, dec)
    whole_layers(tokens, labels, dec, seed)
    hybrid()
    concept_panels.kept_link()


main()
