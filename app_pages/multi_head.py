"""Multi-head attention: every head at a glance, one head through the pipeline, the reshape
shape by shape, the wrong transpose, and the math-paper form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import core
from attention_lab import scenario
from core import tolerances
from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui import scenario_state as ss
from ui.concept_panels import MH_D_MODELS, head_maps, head_sizes, seeded_inputs
from ui.i18n import current_lang, labeller, t
from ui.inputs import causal_checkbox, numbers_panel
from ui.pipeline import pipeline
from ui.text import md, shorts
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, shape_badge, token_labels
from ui.widgets.model_views import jamo_and_unk, load_trace

KEYS = state.MULTI_HEAD
SOURCES = ("random", "model")  # the heads' weights: seeded random, or the trained all-MiniLM-L6-v2
MODEL = "all-MiniLM-L6-v2"
ENGLISH = "c19"  # the scenario preset offered when the tokens are not English


def sizes() -> tuple[int, int]:
    """d_model and the number of heads (a divisor of d_model)."""
    cols = st.columns(3)
    d, H = head_sizes(KEYS.d_model, KEYS.heads, cols)
    with cols[2]:
        causal_checkbox(False)
    return d, H


def heads_grid(tr, H: int, labels, dec: int) -> None:
    st.subheader(t("mh.grid"))
    st.caption(t("mh.random"))
    head_maps(tr, labels, dec, key=KEYS.grid, per_row=min(H, 3))  # three maps fit side by side at 1280 pixels
    st.caption(t("mh.grid.caption"))


def one_head(tr, H: int, tokens, causal: bool, dec: int) -> None:
    """The chosen head's own Q, K, V through the Playground's pipeline."""
    st.subheader(t("mh.detail"))
    lang = current_lang()  # bound now: the options' labels never depend on when they are formatted
    if st.session_state.get(KEYS.pick) not in range(H):  # first visit, or a link's head these sizes do not have
        st.session_state[KEYS.pick] = 0
    h = st.selectbox(t("mh.pick"), list(range(H)), key=KEYS.pick, format_func=lambda i: t("mh.head", lang, h=i))
    h = h if h < H else 0
    n = len(tokens)
    q, k, v = (x[0, h].numpy() for x in (tr.q, tr.k, tr.v))
    mask = core.masks.causal(n).numpy() if causal else None
    head = compute.playground(q, k, "direct", None, None, None, q, k, v, "scaled_dot", {}, None, 1.0, mask, "row",
                              settings.get("device"))
    labels = token_labels(tokens)
    pipeline(head, labels, labels, "row", dec, "scaled_dot", prefix=KEYS.pipeline)


# ------------------------------------------------------------------ the trained model's heads for the same sentence
def heads_source() -> str:
    """Random weights (the page's mechanics) or a trained model's heads for the same tokens."""
    st.session_state.setdefault(KEYS.source, SOURCES[0])
    st.radio(t("mh.model.source"), SOURCES, key=KEYS.source, horizontal=True, format_func=labeller("mh.model.source."))
    return str(st.session_state[KEYS.source])


def _use_english() -> None:
    ss.put("tokens", scenario.PRESETS[ENGLISH]["tokens"])


def model_caption(patterns: dict, layer: int) -> str:
    """What this layer's heads look at, measured on this sentence (core.pretrained.head_patterns)."""
    vals = {"l": layer}
    for name in ("previous", "sep", "cls"):
        row = np.nan_to_num(patterns[name][layer], nan=-1.0)  # (H,)
        vals |= {f"h_{name}": int(np.argmax(row)), name: f"{max(float(row.max()), 0.0):.0%}"}
    return t("mh.model.measured", **vals) + " " + t("mh.model.caption")


def _maps_per_row(n: int) -> int:
    """How many n × n maps fit side by side: tables with printed values up to 16 tokens, canvases beyond."""
    return 4 if n <= 5 else 3 if n <= 7 else 2 if n <= 11 else 1 if n <= 16 else 3


def model_heads(tokens: list[str], dec: int) -> None:
    """Every head of one layer of the trained model, then one of them through the pipeline."""
    st.subheader(t("mh.grid"))
    sentence = " ".join(tokens)
    tr = load_trace(sentence)
    if tr is None:
        return
    A = tr["attentions"]  # (L, H, n, n)
    L, H = A.shape[:2]
    d_k = tr["q"].shape[-1]  # (L, H, n, d_k)
    shape_badge(f"{MODEL}: d_model = {H * d_k}, H = {H}, d_k = d_v = d_model / H = {d_k}, {t('class.mh.layers', L=L)}")
    if st.session_state.get(KEYS.model_layer) not in range(L):
        st.session_state[KEYS.model_layer] = 0
    layer = st.select_slider(t("mh.model.layer"), options=list(range(L)), key=KEYS.model_layer)
    st.info(t("mh.model.label", model=MODEL, l=layer, sentence=md(sentence), n=len(tr["tokens"])))
    if any(jamo_and_unk(tr["tokens"])):
        st.warning(t("mh.model.korean"))
        st.button(t("mh.model.english", example=scenario.PRESETS[ENGLISH]["tokens"]), key=KEYS.english,
                  on_click=_use_english)
    labels = shorts(token_labels(tr["tokens"]))
    per_row = _maps_per_row(len(labels))
    for start in range(0, H, per_row):
        for h, col in zip(range(start, min(H, start + per_row)), st.columns(per_row), strict=False):
            with col:
                st.markdown(f"**{t('mh.head', h=h)}**")
                show_heatmap(heatmap(A[layer, h], x_labels=labels, y_labels=labels, x_title=t("axis.key"),
                                     y_title=t("axis.query"), decimals=min(dec, 2), sequential=True),
                             key=state.item(KEYS.model_grid, h))
    st.caption(model_caption(tr["patterns"], layer))
    st.subheader(t("mh.detail"))
    lang = current_lang()  # bound now: AppTest formats the options after the run
    if st.session_state.get(KEYS.model_pick) not in range(H):
        st.session_state[KEYS.model_pick] = 0
    h = st.selectbox(t("mh.pick"), list(range(H)), key=KEYS.model_pick, format_func=lambda i: t("mh.head", lang, h=i))
    q, k, v = (tr[name][layer, h] for name in ("q", "k", "v"))
    shape_badge(t("mh.model.shape", l=layer, h=h, n=q.shape[0], d=q.shape[1]))
    head = compute.playground(q, k, "direct", None, None, None, q, k, v, "scaled_dot", {}, None, 1.0, None, "row",
                              settings.get("device"))
    full = token_labels(tr["tokens"])
    pipeline(head, full, full, "row", dec, "scaled_dot", prefix=KEYS.pipeline)
    st.caption(t("mh.model.below"))


def reshape_table(tr, H: int, d: int, n: int, checks: dict) -> None:
    """Every step's shape, checked against the tensors core produced."""
    st.subheader(t("mh.reshape"))
    d_head = d // H
    rows = [
        ("X", f"(B, N, d_model) = (1, {n}, {d})", ""),
        (t("mh.step.fused"), f"(1, {n}, {d}) · ({d}, {3 * d}) → (1, {n}, {3 * d})", "① X · W_QKV"),
        (t("mh.step.split"), f"(1, {n}, {3 * d}) → 3 × (1, {n}, {H}, {d_head}) → 3 × (1, {H}, {n}, {d_head})",
         "reshape + transpose(1, 2)"),
        (t("mh.step.scores"), f"(1, {H}, {n}, {d_head}) · (1, {H}, {d_head}, {n}) → (1, {H}, {n}, {n})", "② Q Kᵀ"),
        (t("mh.step.values"), f"(1, {H}, {n}, {n}) · (1, {H}, {n}, {d_head}) → (1, {H}, {n}, {d_head})", "③ A V"),
        (t("mh.step.concat"), f"(1, {H}, {n}, {d_head}) → (1, {n}, {H}, {d_head}) → (1, {n}, {H * d_head})",
         "transpose(1, 2) + reshape"),
        (t("mh.step.out"), f"(1, {n}, {H * d_head}) · ({H * d_head}, {d}) → (1, {n}, {d})", "④ · W_O"),
    ]
    shapes_hold = (tuple(tr.q.shape) == (1, H, n, d_head) and tuple(tr.weights.shape) == (1, H, n, n)
                   and tuple(tr.concat.shape) == (1, n, H * d_head) and tuple(tr.output.shape) == (1, n, d))
    st.dataframe(pd.DataFrame(rows, columns=[t("mh.col.step"), t("mh.col.shape"), t("mh.col.op")]), hide_index=True,
                 width="stretch")
    page.check_box(shapes_hold, t("mh.shapes.check"))
    page.check_box(within_rounding(checks["fused_gap"]), t("mh.fused.check", gap=gap_text(checks["fused_gap"])))
    st.success(t("mh.residual", x=str((1, n, d)), y=str(tuple(tr.output.shape))))


def wrong_transpose(tr, H: int, labels, checks: dict, dec: int) -> None:
    st.subheader(t("mh.wrong"))
    st.markdown(t("mh.wrong.text"))
    st.code("q = x @ W_q                                # (B, N, H·d)\n"
            "right = q.view(B, N, H, d).transpose(1, 2)  # (B, H, N, d)\n"
            "wrong = q.view(B, H, N, d)                  # same shape, scrambled", language="python", wrap_lines=True)
    rows = [(f"{t('mh.head', h=r.head)}, {t('mh.wrong.row')} {r.row}", ", ".join(labels[i] for i in r.got_tokens),
             f"{r.got_features[0]}…{r.got_features[1]}", labels[r.want_token],
             f"{r.want_features[0]}…{r.want_features[1]}") for r in checks["table"]]
    st.dataframe(pd.DataFrame(rows, columns=[t("mh.wrong.slot"), t("mh.wrong.token"), t("mh.wrong.features"),
                                             t("mh.wrong.should_token"), t("mh.wrong.should")]),
                 hide_index=True, width="stretch")
    n = len(labels)
    rows_l = [f"{t('mh.wrong.row')} {i}" for i in range(n)]
    axes = {"x_title": t("axis.key"), "y_title": t("axis.query"), "decimals": min(dec, 2), "sequential": True}
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('mh.wrong.right_head')}**")
        show_heatmap(heatmap(tr.weights[0, 0].numpy(), x_labels=labels, y_labels=labels, **axes), key=KEYS.wrong_right)
    with c2:
        st.markdown(f"**{t('mh.wrong.wrong_head')}**")
        show_heatmap(heatmap(checks["scrambled"].weights[0, 0].numpy(), x_labels=rows_l, y_labels=rows_l, **axes),
                     key=KEYS.wrong_wrong)
    gap = checks["wrong_output_gap"]
    (st.info if within_rounding(gap) else st.warning)(t("mh.wrong.gap", gap=gap_text(gap), H=H))


def paper_form(checks: dict, d: int, labels, dec: int, causal: bool) -> None:
    st.subheader(t("mh.paper"))
    st.latex(r"\mathrm{Attention}(X) = X + \sum_{h=1}^{H} (W_h^V X)\, \mathrm{Softmax}\!\left[(W_h^K X)^\top (W_h^Q X)\right]")
    st.markdown(t("mh.paper.text"))
    paper = checks["paper"]
    axes = {"x_labels": labels, "y_labels": dim_labels(d), "x_title": t("axis.query"), "y_title": t("axis.dim"),
            "decimals": dec}
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('mh.paper.out')}**")
        shape_badge(f"Σ_h (W_h^V X) Softmax[…]  ({d}×{len(labels)})")
        show_heatmap(heatmap(paper.attended.numpy(), **axes), key=KEYS.paper_out)
    with c2:
        st.markdown(f"**{t('mh.paper.mha')}**")
        shape_badge(t("mh.paper.mha.shape", d=d, n=len(labels)))
        show_heatmap(heatmap(paper.mha_columns.numpy(), **axes), key=KEYS.paper_mha)
    page.check_box(paper.gap < tolerances.LOOSE_EQUAL, t("mh.paper.check", gap=f"{paper.gap:.2g}"))
    st.caption(t("mh.paper.h1"))
    if causal:
        st.caption(t("mh.paper.nomask"))


# the page's own controls (the rest: the scenario); each is checked again where it is drawn
KEPT = (link.Kept(KEYS.source, "heads_from", link.one_of(SOURCES), SOURCES[0]),
        link.Kept(KEYS.d_model, "mh_d", link.one_of(MH_D_MODELS), 8),
        link.Kept(KEYS.heads, "mh_h", link.whole(1, max(MH_D_MODELS)), 2),
        link.Kept(KEYS.pick, "mh_head", link.whole(0, max(MH_D_MODELS)), 0),
        link.Kept(KEYS.model_layer, "mh_layer", link.whole(0, 64), 0),
        link.Kept(KEYS.model_pick, "mh_model_head", link.whole(0, 64), 0))


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    link.keep("multi_head", KEPT, problems)
    dec = settings.get("precision")
    st.markdown(t("mh.intro"))
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("mh.numbers.help"))
    source = heads_source()
    st.latex(r"\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right) V_h")
    st.latex(r"\mathrm{MHA}(X) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H)\, W_O")
    if source == "model":  # the labels follow the heads drawn: the model's shape for its heads, the sliders' below
        model_heads(tokens, dec)
        st.subheader(t("class.mh.random"))
        st.caption(t("class.mh.random_below"))
    d, H = sizes()
    labels = shorts(token_labels(tokens))
    X, W = seeded_inputs(tokens, d)
    causal = bool(ss.get("causal"))
    tr = page.guarded(problems, lambda: compute.multihead(X, W["W_q"], W["W_k"], W["W_v"], W["W_o"], H, causal,
                                                          "scaled_dot", settings.get("device")))
    page.show_problems(problems)
    if tr is None:
        return
    shape_badge(f"d_model = {d}, H = {H}, d_k = d_v = d_model / H = {d // H}")
    checks = compute.multihead_checks(X, W["W_q"], W["W_k"], W["W_v"], W["W_o"], H)
    if source != "model":
        heads_grid(tr, H, labels, dec)
        one_head(tr, H, tokens, causal, dec)
    reshape_table(tr, H, d, len(tokens), checks)
    wrong_transpose(tr, H, labels, checks, dec)
    paper_form(checks, d, labels, dec, causal)


main()
