"""Multi-head page (C17, C20–C22, C36, C38): heads side by side, one head through the
pipeline, the reshape step by step, the wrong transpose, and the math-paper form."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import core

from . import compute, settings, shared
from .i18n import t
from .playground import pipeline
from .render import dim_labels, heatmap, shape_badge, show_heatmap
from .shared import key
from .text import shorts

D_MODELS = (2, 3, 4, 6, 8, 12, 16)


def _weights(d: int, seed: int) -> dict[str, np.ndarray]:
    return {name: compute.projection(d, d, seed, f"mh.{name}") for name in ("W_q", "W_k", "W_v", "W_o")}


def render() -> None:
    problems: list = []
    shared.start(problems)
    dec = settings.get("precision")
    seed = int(settings.get("seed"))
    st.markdown(t("mh.intro"))
    tokens = shared.numbers_panel(problems, tokens_only=True, help_text=t("mh.numbers.help"))
    c1, c2, c3 = st.columns(3)
    with c1:
        st.session_state.setdefault("mh.d_model", 8)
        st.select_slider(t("mh.d_model"), options=D_MODELS, key="mh.d_model")
    d = int(st.session_state["mh.d_model"])
    divisors = [h for h in range(1, d + 1) if d % h == 0]
    if st.session_state.get("mh.heads") not in divisors:
        st.session_state["mh.heads"] = 2 if 2 in divisors else divisors[-1]
    with c2:
        st.select_slider(t("mh.heads"), options=divisors, key="mh.heads", help=t("mh.heads.help"))
    with c3:
        st.checkbox(t("pg.mask.causal"), key=key("causal"))
    H = int(st.session_state["mh.heads"])
    d_head = d // H
    n = len(tokens)
    labels = shorts(shared.token_labels(tokens))
    X = compute.embedding("random", tuple(tokens), d, seed)[0][None]  # (1, n, d): one batch
    W = _weights(d, seed)
    causal = bool(st.session_state.get(key("causal")))
    try:
        tr = compute.multihead(X, W["W_q"], W["W_k"], W["W_v"], W["W_o"], H, causal, "scaled_dot", settings.get("device"))
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        shared.show_problems(problems)
        return
    shared.show_problems(problems)
    st.latex(r"\mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{d_k}}\right) V_h,\qquad "
             r"\mathrm{MHA}(X) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H)\, W_O")
    shape_badge(f"d_model = {d}, H = {H}, d_k = d_v = d_model / H = {d_head}")

    # -- every head at a glance
    st.subheader(t("mh.grid"))
    per_row = min(H, 4)
    for start in range(0, H, per_row):
        cols = st.columns(per_row)
        for h, col in zip(range(start, min(H, start + per_row)), cols, strict=False):
            with col:
                st.markdown(f"**{t('mh.head', h=h)}**")
                show_heatmap(heatmap(tr.weights[0, h].numpy(), x_labels=labels, y_labels=labels, x_title=t("axis.key"),
                                     y_title=t("axis.query"), decimals=min(dec, 2), sequential=True), key=f"mh.grid.{h}")
    st.caption(t("mh.grid.caption"))

    # -- one head in detail, through the playground's pipeline
    st.subheader(t("mh.detail"))
    h = st.selectbox(t("mh.pick"), list(range(H)), key="mh.pick", format_func=lambda i: t("mh.head", h=i))
    if h >= H:
        h = 0
    head = compute.playground(tr.q[0, h].numpy(), tr.k[0, h].numpy(), "direct", None, None, None,
                              tr.q[0, h].numpy(), tr.k[0, h].numpy(), tr.v[0, h].numpy(), "scaled_dot", {}, None, 1.0,
                              core.masks.causal(n).numpy() if causal else None, "row", settings.get("device"))
    pipeline(head, shared.token_labels(tokens), shared.token_labels(tokens), "row", dec, "scaled_dot", "auto",
             prefix="mh", clicks=None)

    _reshape(X, W, tr, H, d, d_head, n, dec)
    _wrong_transpose(X, W, tr, H, d_head, n, labels, dec)
    _paper(X, W, tr, H, d, labels, dec, causal)


def _reshape(X, W, tr, H, d, d_head, n, dec) -> None:
    st.subheader(t("mh.reshape"))
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
    # the shapes above are checked against the tensors core produced
    assert tuple(tr.q.shape) == (1, H, n, d_head) and tuple(tr.weights.shape) == (1, H, n, n)
    assert tuple(tr.concat.shape) == (1, n, H * d_head) and tuple(tr.output.shape) == (1, n, d)
    st.dataframe(pd.DataFrame(rows, columns=[t("mh.col.step"), t("mh.col.shape"), t("mh.col.op")]), hide_index=True,
                 width="stretch")
    Wqkv = core.fuse_qkv_weights(W["W_q"], W["W_k"], W["W_v"])
    Q, K, V = core.fused_qkv(X, Wqkv)
    gap = max(core.max_abs_diff(a, b) for a, b in ((Q, tr.q_proj), (K, tr.k_proj), (V, tr.v_proj)))
    (st.success if gap < 1e-5 else st.error)(t("mh.fused.check", gap=f"{gap:.2g}"))
    st.success(t("mh.residual", x=str(tuple(X.shape)), y=str(tuple(tr.output.shape))))


def _wrong_transpose(X, W, tr, H, d_head, n, labels, dec) -> None:
    st.subheader(t("mh.wrong"))
    st.markdown(t("mh.wrong.text"))
    st.code("q = x @ W_q                                # (B, N, H·d)\n"
            "right = q.view(B, N, H, d).transpose(1, 2)  # (B, H, N, d)\n"
            "wrong = q.view(B, H, N, d)                  # same shape, scrambled", language="python")
    src = core.pitfalls.scrambled_source(n, H * d_head, H).numpy()  # (H, N, d, 2)
    rows = []
    for row in range(n):
        tok, f0 = src[0, row, 0]
        f1 = src[0, row, -1, 1]
        rows.append((f"{t('mh.head', h=0)}, {labels[row]}", labels[tok], f"{f0}…{f1}",
                     f"{row * d_head}…{(row + 1) * d_head - 1}"))
    st.dataframe(pd.DataFrame(rows, columns=[t("mh.wrong.slot"), t("mh.wrong.token"), t("mh.wrong.features"),
                                             t("mh.wrong.should")]), hide_index=True, width="stretch")
    scrambled = core.attention(*(core.pitfalls.split_heads_without_transpose(p, H)
                                 for p in (tr.q_proj, tr.k_proj, tr.v_proj)))  # weights (1, H, N, N)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('mh.wrong.right_head')}**")
        show_heatmap(heatmap(tr.weights[0, 0].numpy(), x_labels=labels, y_labels=labels, x_title=t("axis.key"),
                             y_title=t("axis.query"), decimals=min(dec, 2), sequential=True), key="mh.wrong.right")
    with c2:
        st.markdown(f"**{t('mh.wrong.wrong_head')}**")
        show_heatmap(heatmap(scrambled.weights[0, 0].numpy(), x_labels=[f"{t('mh.wrong.row')} {i}" for i in range(n)],
                             y_labels=[f"{t('mh.wrong.row')} {i}" for i in range(n)], x_title=t("axis.key"),
                             y_title=t("axis.query"), decimals=min(dec, 2), sequential=True), key="mh.wrong.wrong")
    wrong = core.pitfalls.multi_head_without_transpose(X, n_heads=H, **W)
    gap = core.max_abs_diff(wrong, tr.output)
    (st.warning if gap > 1e-6 else st.info)(t("mh.wrong.gap", gap=f"{gap:.3g}", H=H))


def _paper(X, W, tr, H, d, labels, dec, causal) -> None:
    st.subheader(t("mh.paper"))
    st.latex(r"\mathrm{Attention}(X) = X + \sum_{h=1}^{H} (W_h^V X)\, \mathrm{Softmax}\!\left[(W_h^K X)^\top (W_h^Q X)\right]")
    st.markdown(t("mh.paper.text"))
    W_Q, W_K, W_V = core.lab.paper_weights_from_mha(W["W_q"], W["W_k"], W["W_v"], W["W_o"], H)
    paper = core.paper_attention(X[0].T, W_Q, W_K, W_V)
    unscaled = compute.multihead(X, W["W_q"], W["W_k"], W["W_v"], W["W_o"], H, False, "dot", "cpu")
    mha_cols = unscaled.output[0].numpy().T  # the same matrix in column layout (tokens as columns)
    gap = core.max_abs_diff(paper.attended, mha_cols)
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('mh.paper.out')}**")
        shape_badge(f"Σ_h (W_h^V X) Softmax[…]  ({d}×{len(labels)})")
        show_heatmap(heatmap(paper.attended.numpy(), x_labels=labels, y_labels=dim_labels(d), x_title=t("axis.query"),
                             y_title=t("axis.dim"), decimals=dec), key="mh.paper.out")
    with c2:
        st.markdown(f"**{t('mh.paper.mha')}**")
        shape_badge(f"Concat(heads) W_O, unscaled, as columns  ({d}×{len(labels)})")
        show_heatmap(heatmap(mha_cols, x_labels=labels, y_labels=dim_labels(d), x_title=t("axis.query"),
                             y_title=t("axis.dim"), decimals=dec), key="mh.paper.mha")
    (st.success if gap < 1e-4 else st.error)(t("mh.paper.check", gap=f"{gap:.2g}"))
    st.caption(t("mh.paper.h1"))
    if causal:
        st.caption(t("mh.paper.nomask"))
