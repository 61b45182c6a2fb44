"""Transformer block page (C28–C31): post-norm and pre-norm side by side, the FFN, residual
shapes, and the cost of attention measured live."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

import core
from core import block

from . import compute, settings, shared
from .i18n import labeller, t
from .render import PrebuiltFigure, dim_labels, heatmap, shape_badge, show_heatmap
from .text import shorts

D, H, D_FF = 8, 2, 32


@st.cache_data(max_entries=32, show_spinner=False)
def _block(X: np.ndarray, seed: int, activation: str, norm: str) -> dict:
    W = {n: compute.projection(D, D, seed, f"tb.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    W |= {"W_1": compute.projection(D, D_FF, seed, "tb.W_1"), "W_2": compute.projection(D_FF, D, seed, "tb.W_2"),
          "b_1": np.zeros(D_FF, np.float32), "b_2": np.zeros(D, np.float32)}
    tr = block.transformer_block(X, n_heads=H, activation=activation, norm=norm, **W)
    out = {f: getattr(tr, f) for f in ("x", "norm1", "attn", "res1", "z", "norm2", "ffn", "res2", "y")}
    out = {k: None if v is None else v.numpy() for k, v in out.items()}
    # FFN treats tokens independently: permuting the tokens commutes with it
    perm = list(range(X.shape[0]))[::-1]
    zin = out["norm2"] if norm == "pre" else out["z"]
    out["ffn_gap"] = core.max_abs_diff(block.ffn(zin[perm], W["W_1"], W["b_1"], W["W_2"], W["b_2"], activation),
                                       block.ffn(zin, W["W_1"], W["b_1"], W["W_2"], W["b_2"], activation)[perm])
    return out


def render() -> None:
    problems: list = []
    shared.start(problems)
    dec = min(settings.get("precision"), 2)
    seed = int(settings.get("seed"))
    st.markdown(t("tb.intro"))
    tokens = shared.numbers_panel(problems, tokens_only=True, help_text=t("tb.numbers.help", d=D, H=H, f=D_FF))
    shared.show_problems(problems)
    st.radio(t("tb.activation"), block.ACTIVATIONS, key="tb.act", horizontal=True, format_func=labeller("tb.act."))
    act = st.session_state["tb.act"]
    X = compute.embedding("random", tuple(tokens), D, seed)[0]
    n = X.shape[0]
    labels = shorts(shared.token_labels(tokens))
    cols = st.columns(2)
    for col, norm in zip(cols, ("post", "pre"), strict=True):
        tr = _block(X, seed, act, norm)
        with col:
            st.subheader(t(f"tb.{norm}"))
            if norm == "post":
                st.latex(r"Z = \mathrm{LN}(X + \mathrm{MHA}(X)),\quad Y = \mathrm{LN}(Z + \mathrm{FFN}(Z))")
                steps = [("attn", "MHA(X)"), ("res1", "X + MHA(X)"), ("z", "Z = LN(·)"), ("ffn", "FFN(Z)"),
                         ("res2", "Z + FFN(Z)"), ("y", "Y = LN(·)")]
            else:
                st.latex(r"Z = X + \mathrm{MHA}(\mathrm{LN}(X)),\quad Y = Z + \mathrm{FFN}(\mathrm{LN}(Z))")
                steps = [("norm1", "LN(X)"), ("attn", "MHA(LN(X))"), ("z", "Z = X + MHA(·)"), ("norm2", "LN(Z)"),
                         ("ffn", "FFN(LN(Z))"), ("y", "Y = Z + FFN(·)")]
            for name, title in steps:
                st.markdown(f"**{title}**")
                shape_badge(f"({n}×{D})" + (f" + ({n}×{D}) → ({n}×{D})" if name in ("res1", "res2")
                                            or title.startswith(("Z = X", "Y = Z")) else ""))
                show_heatmap(heatmap(tr[name], x_labels=dim_labels(D), y_labels=labels, x_title=t("axis.dim"),
                                     y_title=t("tb.token"), decimals=dec), key=f"tb.{norm}.{name}")
            st.caption(t("tb.ffn_check", gap=f"{tr['ffn_gap']:.2g}"))
    st.success(t("tb.shapes", n=n, d=D))
    st.caption(t("tb.typo"))
    _complexity()


def _complexity() -> None:
    st.subheader(t("tb.cost"))
    st.markdown(t("tb.cost.text"))
    res = st.session_state.get("tb.complexity")
    if st.button(t("tb.measure"), key="tb.measure"):
        with st.spinner(t("tb.measuring")):
            c = block.complexity()
        res = {"ns": c.ns, "tf": c.time_full, "tc": c.time_chunked, "bf": c.bytes_full, "bc": c.bytes_chunked}
        st.session_state["tb.complexity"] = res
    if res:
        a, b = st.columns(2)
        ns = list(res["ns"])
        with a:
            st.plotly_chart(PrebuiltFigure({"data": [
                {"type": "scatter", "mode": "lines+markers", "x": ns, "y": [1e3 * v for v in res["tf"]],
                 "name": t("tb.full")},
                {"type": "scatter", "mode": "lines+markers", "x": ns, "y": [1e3 * v for v in res["tc"]],
                 "name": t("tb.chunked")}],
                "layout": {"height": 280, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                           "xaxis": {"type": "log", "title": {"text": "N"}},
                           "yaxis": {"type": "log", "title": {"text": "ms"}}}}), key="tb.time",
                config={"displayModeBar": False})
        with b:
            st.plotly_chart(PrebuiltFigure({"data": [
                {"type": "scatter", "mode": "lines+markers", "x": ns, "y": [v / 2**20 for v in res["bf"]],
                 "name": t("tb.full")},
                {"type": "scatter", "mode": "lines+markers", "x": ns, "y": [v / 2**20 for v in res["bc"]],
                 "name": t("tb.chunked")}],
                "layout": {"height": 280, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                           "xaxis": {"type": "log", "title": {"text": "N"}},
                           "yaxis": {"type": "log", "title": {"text": "MiB"}}}}), key="tb.mem",
                config={"displayModeBar": False})
        st.caption(t("tb.cost.caption"))
    st.dataframe(pd.DataFrame([
        (t("tb.layer.sa"), "O(N² · d)", "O(1)", "O(1)"),
        (t("tb.layer.rnn"), "O(N · d²)", "O(N)", "O(N)"),
        (t("tb.layer.conv"), "O(k · N · d²)", "O(1)", "O(log_k N)"),
    ], columns=[t("tb.col.layer"), t("tb.col.compute"), t("tb.col.sequential"), t("tb.col.path")]),
        hide_index=True, width="stretch")
