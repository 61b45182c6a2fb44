"""Compressing the cache: multi-head latent attention (MLA, DeepSeek-V2/V3). Every token is cached as one latent
c_KV and one rotary key k_R shared by all heads; the explicit and the absorbed forms give the same output; what
the cache holds per token, here and in published models."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attention_lab import colours
from core.playground.lab import gap_text, within_rounding
from ui import compute, concept_panels, link, page, settings, state
from ui.concept_panels import mla_latent_maps
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, token_labels

KEYS = state.MLA
# Sources: DeepSeek-AI, "DeepSeek-V2: A Strong, Economical, and Efficient Mixture-of-Experts Language Model" (2024,
# arXiv 2405.04434) §2.1 (MLA, the decoupled RoPE key, the absorbed up-projections; the paper's claim that MLA performs
# better than MHA with a far smaller KV cache); the published shapes in the table: compute.MLA_MODELS' comment.
D_MODELS = (8, 16, 32)
HEADS = (1, 2, 4, 8)
D_C_MAX = 32  # the latent's slider goes this far (past d_model on purpose: the page says why that cannot be)
D_RS = (2, 4, 8)  # rotary dims come in pairs
DEFAULTS = {KEYS.d_model: 8, KEYS.heads: 2, KEYS.d_c: 4, KEYS.d_r: 2}  # 8 output columns fit half a page
MAX_DRAWN_TOKENS = 64  # tokens this page draws (every map has one row per token)

KEPT = (link.Kept(KEYS.d_model, "mla_d", link.one_of(D_MODELS), DEFAULTS[KEYS.d_model]),
        link.Kept(KEYS.heads, "mla_h", link.one_of(HEADS), DEFAULTS[KEYS.heads]),
        link.Kept(KEYS.d_c, "mla_c", link.whole(1, D_C_MAX), DEFAULTS[KEYS.d_c]),
        link.Kept(KEYS.d_r, "mla_r", link.one_of(D_RS), DEFAULTS[KEYS.d_r]),
        link.Kept(state.item(KEYS.table, "v4_n"), "v4_n", link.one_of(compute.V4_CONTEXTS), 65536),
        link.Kept(state.item(KEYS.table, "csa_m"), "csa_m", link.whole(1, 1 << 20), compute.V4.csa_rate),
        link.Kept(state.item(KEYS.table, "hca_m"), "hca_m", link.whole(1, 1 << 20), compute.V4.hca_rate))
V4_N, CSA_M, HCA_M = (state.item(KEYS.table, k) for k in ("v4_n", "csa_m", "hca_m"))  # DeepSeek-V4's strips (issue 55)
STRIP_STYLE = {"window": (colours.OKABE_ITO[0], "circle"), "csa": (colours.OKABE_ITO[3], "diamond"),
               "hca": (colours.OKABE_ITO[6], "square")}


def usable(key: str, options, problems: page.Problems) -> None:
    """A value the widget can draw (a tampered or stale one is named and replaced by the default)."""
    v = st.session_state.setdefault(key, DEFAULTS[key])
    if isinstance(v, bool) or v not in options:
        problems.append(("error", t("mla.bad", value=str(v)[:40], name=t(key_label(key)), default=DEFAULTS[key])))
        st.session_state[key] = DEFAULTS[key]


def key_label(key: str) -> str:
    return {KEYS.d_model: "mla.d_model", KEYS.heads: "mla.heads", KEYS.d_c: "mla.d_c", KEYS.d_r: "mla.d_r"}[key]


def shape_controls(problems: page.Problems) -> tuple[int, int, int, int]:
    """d_model, H, d_c and d_R from their sliders (every value checked before its widget draws)."""
    for key, options in ((KEYS.d_model, D_MODELS), (KEYS.heads, HEADS), (KEYS.d_c, range(1, D_C_MAX + 1)), (KEYS.d_r, D_RS)):
        usable(key, options, problems)
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        st.select_slider(t("mla.d_model"), options=D_MODELS, key=KEYS.d_model)
    with c2:
        st.select_slider(t("mla.heads"), options=HEADS, key=KEYS.heads, help=t("mla.heads.help"))
    with c3:
        st.slider(t("mla.d_c"), 1, D_C_MAX, key=KEYS.d_c, help=t("mla.d_c.help"))
    with c4:
        st.select_slider(t("mla.d_r"), options=D_RS, key=KEYS.d_r, help=t("mla.d_r.help"))
    return tuple(int(st.session_state[k]) for k in (KEYS.d_model, KEYS.heads, KEYS.d_c, KEYS.d_r))


def impossible(d: int, H: int, d_c: int, d_r: int) -> str | None:
    """Why a shape cannot be an MLA layer here (a message in the learner's language), or None."""
    if d_c > d:
        return t("mla.dc.big", dc=d_c, d=d)
    if d % H:
        return t("mla.h.bad", h=H, d=d)
    return None


def latent_maps(r: dict, labels: list[str], dec: int) -> None:
    """What the cache holds: c_KV (n × d_c) and k_R (n × d_R)."""
    st.subheader(t("mla.cache.title"))
    mla_latent_maps(r, labels, dec, keys=(KEYS.latent, KEYS.rope_key))
    st.caption(t("mla.random"))


def forms(r: dict, labels: list[str], dec: int) -> None:
    """The explicit form (keys and values expanded per head) beside the absorbed one (scores read the latent)."""
    st.subheader(t("mla.forms.title"))
    c1, c2 = st.columns(2)
    d = r["explicit"].shape[1]
    for col, (name, key, title, formula) in zip((c1, c2), (
            ("explicit", KEYS.explicit, "mla.explicit",
             r"k_{t,h} = [\,c^{KV}_t W^{UK}_h \,;\, k^R_t\,],\quad v_{t,h} = c^{KV}_t W^{UV}_h"),
            ("absorbed", KEYS.absorbed, "mla.absorbed",
             r"q_{t,h}k_{s,h}^\top = (q^C_{t,h} W^{UK\top}_h)\,c^{KV\top}_s + q^R_{t,h} k^{R\top}_s")), strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            st.latex(formula)
            show_heatmap(heatmap(r[name], x_labels=dim_labels(d, "o"), y_labels=labels, x_title=t("axis.dim"),
                                 y_title=t("axis.query"), decimals=dec), key=key)
    page.check_box(within_rounding(r["form_gap"]), t("mla.forms.check" if within_rounding(r["form_gap"]) else
                                                     "mla.forms.differ", gap=gap_text(r["form_gap"])))


def cache_now(r: dict, H: int) -> None:
    """The cache per token and layer of this small layer: d_c + d_R against multi-head attention's 2·H·d_h."""
    st.subheader(t("mla.size.title"))
    dc, dr, dh = r["c_kv"].shape[1], r["k_rope"].shape[1], r["d_h"]
    st.latex(rf"\begin{{gathered}}d_c + d_R = {dc} + {dr} = {r['mla']}\\"
             rf"2 \cdot H \cdot d_h = 2 \cdot {H} \cdot {dh} = {r['mha']}\end{{gathered}}")
    st.markdown(t("mla.size.now" if r["mla"] < r["mha"] else "mla.size.none", mla=r["mla"], mha=r["mha"],
                  ratio=f"{r['ratio']:.2f}"))


def published() -> None:
    """DeepSeek-V3 and Kimi K2 beside a GQA and an MHA model, from their published configurations."""
    st.subheader(t("mla.models.title"))
    st.latex(r"L\,(d_c + d_R) \qquad\longleftrightarrow\qquad L \cdot 2\,G\,d_h")
    rows = compute.mla_published()
    df = pd.DataFrame([{t("mla.col.model"): r["name"], t("mla.col.kind"): r["kind"], "L": r["layers"], "H": r["heads"],
                        t("mla.col.layer"): f"{r['per_layer']:,}", t("mla.col.token"): f"{r['per_token']:,}",
                        t("mla.col.kib"): f"{r['per_token'] * 2 / 1024:,.1f}", t("mla.col.mha"): f"{r['as_mha']:,}"}
                       for r in rows])
    st.dataframe(df, hide_index=True, width="stretch", key=KEYS.table)
    ds = rows[0]
    st.markdown(t("mla.models.note", model=ds["name"], mla=f"{ds['per_layer']:,}", mha=f"{ds['as_mha']:,}",
                  ratio=f"{ds['as_mha'] / ds['per_layer']:.0f}"))
    st.caption(t("mla.models.caption"))


def main() -> None:
    problems: page.Problems = []
    link.keep("mla", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("mla.intro"))
    st.latex(r"\begin{gathered}c^{KV}_t = \frac{u_t}{\sqrt{\tfrac{1}{d_c}\sum_i u_{t,i}^2}},\quad u_t = x_t W^{DKV} "
             r"\in \mathbb{R}^{d_c}\\ k^R_t = R_t\, x_t W^{KR} \in \mathbb{R}^{d_R}\end{gathered}")
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    d, H, d_c, d_r = shape_controls(problems)
    why = impossible(d, H, d_c, d_r)
    if why:
        problems.append(("error", why))
        kept = st.session_state.get(KEYS.last)
    else:
        kept = page.guarded(problems, lambda: {"r": compute.mla(tuple(tokens), d, H, d_c, d_r, seed), "H": H,
                                               "tokens": list(tokens)}, keep=KEYS.last)
    page.show_problems(problems)
    if kept:
        labels = shorts(token_labels(kept["tokens"]))
        latent_maps(kept["r"], labels, dec)
        forms(kept["r"], labels, dec)
        cache_now(kept["r"], kept["H"])
    published()
    strips()
    concept_panels.kept_link()


# ---------------------------------------------------------------------------- DeepSeek-V4's three strips (issue 55)
def pool(key: str, default: int, problems: page.Problems) -> int:
    """A pool of 1 or more tokens per entry from session state; 0 or anything else is named and the record's used."""
    v = st.session_state.setdefault(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1 << 20:
        problems.append(("error", t("v4.pool.bad", value=str(v)[:40], default=default)))
        st.session_state[key] = v = default
    return v


def strip_controls(problems: page.Problems) -> tuple[int, int, int]:
    v4 = compute.V4
    m, m2 = pool(CSA_M, v4.csa_rate, problems), pool(HCA_M, v4.hca_rate, problems)
    if st.session_state.setdefault(V4_N, 65536) not in compute.V4_CONTEXTS:
        problems.append(("error", t("v4.n.bad", value=str(st.session_state[V4_N])[:40])))
        st.session_state[V4_N] = 65536
    st.select_slider(t("v4.n"), compute.V4_CONTEXTS, key=V4_N, format_func=lambda n: f"{n:,}")
    c1, c2 = st.columns(2)
    with c1:
        st.number_input(t("v4.csa_m"), min_value=1, max_value=1 << 20, step=1, key=CSA_M)
    with c2:
        st.number_input(t("v4.hca_m"), min_value=1, max_value=1 << 20, step=1, key=HCA_M)
    return int(st.session_state[V4_N]), m, m2


def strips() -> None:
    """The window, the CSA entries and the HCA entries a DeepSeek-V4 layer keeps, against the context length."""
    v4 = compute.V4
    st.subheader(t("v4.title"))
    st.markdown(t("v4.intro", model=v4.name, w=v4.window, m=v4.csa_rate, m2=v4.hca_rate, d=v4.d_head,
                  d_i=v4.index_head_dim))
    problems: page.Problems = []
    n, m, m2 = strip_controls(problems)
    r = page.guarded(problems, lambda: compute.v4_strips(n, m, m2))
    page.show_problems(problems)
    if r is None:
        return
    a = r["at"]
    st.markdown(t("v4.now", n=f"{a.tokens:,}", window=f"{a.window:,}", csa=f"{a.csa:,}", hca=f"{a.hca:,}",
                  csa_layer=f"{a.csa_layer:,}", hca_layer=f"{a.hca_layer:,}", m=m, m2=m2))
    data = [{"type": "scatter", "mode": "lines+markers", "name": t("v4.strip." + k), "x": r["contexts"], "y": r[k],
             "line": {"color": STRIP_STYLE[k][0]}, "marker": {"symbol": STRIP_STYLE[k][1]}} for k in ("window", "csa", "hca")]
    fig = line_figure(data, {"xaxis": {"title": {"text": t("kept.x")}, "type": "log", "dtick": 1},
                             "yaxis": {"title": {"text": t("v4.y")}, "type": "log", "dtick": 1}}, height=340)
    show_chart(fig, key=state.item(KEYS.table, "strips"), title=t("v4.title"),
               alt=t("v4.alt", n=f"{a.tokens:,}", window=f"{a.window:,}", csa=f"{a.csa:,}", hca=f"{a.hca:,}"))
    st.caption(t("v4.caption", model=v4.name))


main()
