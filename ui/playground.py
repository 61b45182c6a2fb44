"""The Attention Playground: controls → cached core call → renderers.

Every number shown comes from ``core`` (via ui.compute). This module only wires widgets,
keeps the last valid state, and lays out the panels.
"""

from __future__ import annotations

import io
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

import core

from . import formulas, scenario, settings, shared
from .i18n import labeller, t
from .render import (
    dim_labels,
    heatmap,
    panel_header,
    show_bars,
    show_heatmap,
    stacked_contributions,
    token_labels,
    weight_bars,
)
from .shared import key
from .text import md, shorts

WEIGHTS_CHART = "pg.chart.weights"
MASK_CHART = "pg.chart.mask"
CLICKS = "pg.clicks"  # (chart key, (row, col)) of cell clicks since the last run


# ---------------------------------------------------------------------------- state helpers
def _on_upload() -> None:
    f = st.session_state.get("pg.upload")
    if f is None:
        return
    try:
        values, matrices, _settings, refused = scenario.from_json(f.getvalue())
    except scenario.ScenarioError as err:
        st.session_state["pg.messages"].append(("error", t(err.key, **err.fmt)))
        return
    shared.apply(values, matrices)
    st.session_state.pop(WEIGHTS_CHART, None)
    st.session_state.pop(MASK_CHART, None)
    msg = t("share.loaded") + (" " + t("err.file_values", names=", ".join(refused)) if refused else "")
    st.session_state["pg.messages"].append(("success" if not refused else "warning", msg))


def _drain_clicks() -> None:
    """Apply the cell clicks that arrived since the last run, in order."""
    for chart, cell in st.session_state.pop(CLICKS, []) or []:
        if chart == WEIGHTS_CHART:
            _on_weight_click(cell)
        elif chart == MASK_CHART:
            shared.toggle_mask_cell(cell)


def _on_weight_click(cell: tuple[int, int]) -> None:
    """A click on a weights cell selects its query (the row, or the column in column notation)."""
    conv = st.session_state.get(key("convention"), "row")
    st.session_state[key("query")] = cell[0] if conv == "row" else cell[1]


# ---------------------------------------------------------------------------- page
def render() -> None:
    problems: list[tuple[str, str]] = []
    shared.start(problems)
    _drain_clicks()
    dec = settings.get("precision")

    st.markdown(t("pg.intro"))
    head = st.container()  # the token box, drawn into place once the tabs exist
    st.radio(t("pg.convention"), scenario.CONVENTIONS, key=key("convention"),
             format_func=labeller("conv."), horizontal=True, help=t("pg.convention.help"))
    conv = st.session_state[key("convention")]
    tabs = _setup_tabs()
    opened = [bool(tab.open) for tab in tabs]
    with head:
        inp = shared.inputs(problems, conv=conv, editors=True, embed_box=tabs[0], qkv_box=tabs[1],
                            draw_embed=opened[0], draw_qkv=opened[1])
    tq, tk, q_labels, k_labels = inp.tq, inp.tk, inp.q_labels, inp.k_labels
    n_q, n_k, d_k = len(tq), len(tk), inp.d_k

    # -- score function (a closed tab draws nothing; the kept choices still apply)
    score = st.session_state[key("score")]
    if opened[2]:
        with tabs[2]:
            st.radio(t("pg.score"), core.SCORE_FUNCTIONS, key=key("score"), format_func=labeller("score."),
                     horizontal=True)
            score = st.session_state[key("score")]
            st.latex(formulas.SCORE_PAIR[score])
            s1, s2 = st.columns(2)
            with s1:
                st.radio(t("pg.scale"), scenario.SCALES, key=key("scale"), format_func=labeller("scale."),
                         horizontal=True, help=t("pg.scale.help"))
            with s2:
                st.slider(t("pg.temperature"), 0.1, 5.0, step=0.1, key=key("temperature"),
                          help=t("pg.temperature.help"))
            params = shared.score_params(score, d_k, problems, editors=True)
            st.caption(t("pg.score.note"))
    else:
        params = shared.score_params(score, d_k, problems, editors=False)

    # -- mask
    st.session_state[key("pad")] = [i for i in st.session_state[key("pad")] if 0 <= int(i) < n_k]
    if opened[3]:
        with tabs[3]:
            mask = shared.mask_controls(n_q, n_k, q_labels, k_labels, conv, chart_key=MASK_CHART,
                                        click_queue=CLICKS)
    else:
        mask = shared.current_mask(n_q, n_k)

    # -- compute (cached) with the last valid trace kept on failure
    scale_mode, _ = shared.scale_choice(d_k)
    try:
        trace = shared.run(inp, score, params, mask, conv)
        st.session_state["pg._last_trace"] = (trace, tq, tk)
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        last = st.session_state.get("pg._last_trace")
        if last is None:
            shared.show_problems(problems)
            return
        trace, tq, tk = last
        q_labels, k_labels = token_labels(tq), token_labels(tk)
        n_q, n_k = len(tq), len(tk)

    shared.show_problems(problems)
    pipeline(trace, q_labels, k_labels, conv, dec, score, scale_mode, query=int(st.session_state.get(key("query"), 0)))
    _inspector(trace, tq, tk, conv, dec)
    values, matrices, query = _sync_url()
    if opened[4]:
        with tabs[4]:
            _share(trace, q_labels, k_labels, values, matrices, query)


TABS = ("embed", "qkv", "score", "mask", "share")
TAB_KEY, TAB_ID = "pg.tab", "pg.tab_id"


def _setup_tabs():
    """The setup tabs. Only the open tab's controls are drawn (``on_change="rerun"``), so a
    change redraws the few controls in sight; the open tab survives language and page switches."""
    labels = [t(f"pg.tab.{name}") for name in TABS]
    chosen = st.session_state.get(TAB_ID)
    st.session_state[TAB_KEY] = labels[TABS.index(chosen) if chosen in TABS else 0]
    return st.tabs(labels, key=TAB_KEY, on_change=_on_tab, args=(tuple(labels),))


def _on_tab(labels: tuple[str, ...]) -> None:
    label = st.session_state.get(TAB_KEY)
    if label in labels:
        st.session_state[TAB_ID] = TABS[labels.index(label)]


# ---------------------------------------------------------------------------- the pipeline
def pipeline(trace, q_labels, k_labels, conv, dec, score, scale_mode, *, prefix: str = "pg",
             query: int | None = None, clicks: str | None = CLICKS) -> None:
    """scores → scaled → masked → softmax weights → output, each with formula and shape.

    Also used by other pages for one attention computation (``prefix`` keeps the keys apart)."""
    A = trace.attn
    n_q, n_k = len(q_labels), len(k_labels)
    ax = shared.qk_axes(conv, shorts(q_labels), shorts(k_labels))
    xl, yl, xt, yt = ax["x_labels"], ax["y_labels"], ax["x_title"], ax["y_title"]
    sq = f"{n_q}×{n_k}" if conv == "row" else f"{n_k}×{n_q}"
    d_k, d_v = trace.Q.shape[1], trace.V.shape[1]
    st.subheader(t("pg.pipeline"))
    st.latex(formulas.WHOLE[conv])
    st.caption(t("pg.pipeline.values", scale=f"{A.scale:.{dec}f}", T=f"{A.temperature:g}"))

    def panel(title, latex, shape, z, **kw):
        panel_header(title, latex, shape)
        return heatmap(z, x_labels=kw.pop("x", xl), y_labels=kw.pop("y", yl), x_title=kw.pop("xt", xt),
                       y_title=kw.pop("yt", yt), decimals=dec, **kw)

    qk = f"Q ({n_q}×{d_k}) · Kᵀ ({d_k}×{n_k}) → ({n_q}×{n_k})" if conv == "row" else \
        f"Kᵀ ({n_k}×{d_k}) · Q ({d_k}×{n_q}) → ({n_k}×{n_q})"
    n_max = max(n_q, n_k)
    # three maps side by side while every column fits (a cell is about 7 px per printed character)
    if n_max <= 4 or (n_max <= 6 and dec <= 2):
        c1, c2, c3 = st.columns(3)
    else:
        (c1, c2), (c3, _) = st.columns(2), st.columns(2)
    with c1:
        show_heatmap(panel(t("step.scores"), formulas.SCORE_MATRIX[conv][score], qk, A.scores.numpy()),
                     key=f"{prefix}.fig.scores")
    with c2:
        show_heatmap(panel(t("step.scaled"), formulas.SCALED, f"({sq}) · {A.scale:.{dec}g} / {A.temperature:g} → ({sq})",
                           A.scaled.numpy()), key=f"{prefix}.fig.scaled")
    with c3:
        neg = np.isneginf(A.logits.numpy())
        show_heatmap(panel(t("step.masked"), formulas.MASKED[conv], f"({sq}) + M ({sq}) → ({sq})",
                           np.where(neg, 0.0, A.logits.numpy()), neg_inf=neg), key=f"{prefix}.fig.masked")
    if n_max <= 12:
        c4, c5 = st.columns([3, 2])
    else:
        c4, c5 = st.container(), st.container()
    with c4:
        W = A.weights.numpy()
        sums, fully = A.weight_sums.numpy(), A.fully_masked.numpy()
        notes = [("Σ " + f"{s:.{dec}f}") if not f else t("pg.fully_masked_short") for s, f in zip(sums, fully, strict=True)]
        kw = {} if query is None else ({"highlight_row": query} if conv == "row" else {"highlight_col": query})
        panel_header(t("step.weights"), formulas.SOFTMAX[conv], f"softmax ({sq}) → ({sq})")
        if clicks:
            st.caption(t("pg.weights.click"))
        spec = heatmap(W, x_labels=xl, y_labels=yl, x_title=xt, y_title=yt, decimals=dec, sequential=True,
                       side_text=notes if conv == "row" else None, clickable=bool(clicks), **kw)
        if conv == "column":
            st.caption(t("pg.column_sums") + "  " + ",  ".join(notes))
        show_heatmap(spec, key=f"{prefix}.chart.weights", click_queue=clicks)
        if fully.any():
            names = ", ".join(md(q_labels[i]) for i in np.flatnonzero(fully))
            st.warning(t("pg.fully_masked", names=names))
    with c5:
        O = A.output.numpy()
        out_shape = (f"α ({n_q}×{n_k}) · V ({n_k}×{d_v}) → ({n_q}×{d_v})" if conv == "row"
                     else f"V ({d_v}×{n_k}) · α ({n_k}×{n_q}) → ({d_v}×{n_q})")
        vl = dim_labels(d_v, "v")
        if conv == "row":
            fig = panel(t("step.output"), formulas.OUTPUT[conv], out_shape, O, x=vl, xt=t("axis.dim"))
        else:
            fig = panel(t("step.output"), formulas.OUTPUT[conv], out_shape, O, y=vl, yt=t("axis.dim"),
                        x=shorts(q_labels), xt=t("axis.query"))
        show_heatmap(fig, key=f"{prefix}.fig.output")
        st.caption(t("pg.output.note"))


# ---------------------------------------------------------------------------- query inspector
def _inspector(trace, tq, tk, conv, dec) -> None:
    n_q = len(tq)
    if not 0 <= int(st.session_state.get(key("query"), 0)) < n_q:
        st.session_state[key("query")] = 0
    q_labels, k_labels = token_labels(tq), token_labels(tk)
    st.subheader(t("pg.inspector"))
    shared.by_label(st.selectbox, "query", q_labels, t("pg.inspector.query"))
    j = int(st.session_state[key("query")])
    A = trace.attn
    row = A if conv == "row" else A.transposed()
    alpha = row.weights[j].numpy()
    contrib = A.contributions(j).numpy()  # (n_k, d_v)
    out = row.output[j].numpy()
    st.latex(formulas.CONTRIB)
    i1, i2 = st.columns(2)
    with i1:
        st.markdown(f"**{t('pg.inspector.alpha', q=md(q_labels[j]))}**")
        show_bars(weight_bars(k_labels, alpha, dec), key="pg.fig.alpha")
        top = int(A.top_keys[j])
        if top >= 0:
            st.caption(t("pg.inspector.top", q=md(q_labels[j]), k=md(k_labels[top]), a=f"{alpha[top]:.{dec}f}"))
        else:
            st.caption(t("pg.fully_masked_short"))
    with i2:
        st.markdown(f"**{t('pg.inspector.output', q=md(q_labels[j]))}**")
        show_bars(stacked_contributions(k_labels, contrib, out, dec, total_label=t("pg.inspector.sum")),
                  key="pg.fig.contrib")


# ---------------------------------------------------------------------------- share & export
def _sync_url() -> tuple[dict, dict, dict]:
    """Mirror the whole scenario into the URL (every run, whichever tab is open);
    returns (values, matrices, query)."""
    values = shared.values()
    matrices = dict(st.session_state.get("pg._changed", {}))  # edits and loaded matrices
    query = scenario.to_query(values, matrices) | settings.settings_query()
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if current != query:
        st.query_params.from_dict(query)
    return values, matrices, query


def _share(trace, q_labels, k_labels, values: dict, matrices: dict, query: dict) -> None:
    try:
        base = (st.context.url or "").split("?")[0]
    except Exception:
        base = ""
    st.markdown(t("share.link"))
    st.code(f"{base}?{urlencode(query)}", language=None)
    d1, d2 = st.columns(2)
    with d1:
        st.download_button(t("share.csv"), data=lambda: _csv(trace, q_labels, k_labels), file_name="attention-matrices.csv",
                           mime="text/csv", key="pg.dl.csv")
    with d2:
        st.download_button(t("share.json"), data=scenario.to_json(values, matrices, settings.settings_query()),
                           file_name="attention-scenario.json", mime="application/json", key="pg.dl.json")
    st.file_uploader(t("share.upload"), type=["json"], key="pg.upload", on_change=_on_upload,
                     help=t("share.upload.help", limit=scenario.MAX_JSON_BYTES // 1024))


def _csv(trace, q_labels, k_labels) -> str:
    """Tidy CSV: one row per matrix cell (matrix, row, column, value)."""
    A = trace.attn
    rows = []

    def add(name, m, rl, cl):
        m = np.asarray(m)
        for i in range(m.shape[0]):
            for j in range(m.shape[1]):
                v = m[i, j]
                rows.append((name, rl[i], cl[j], "-inf" if np.isneginf(v) else repr(float(v))))

    d = lambda n, p: dim_labels(n, p)  # noqa: E731
    add("X_q", trace.X_q.numpy(), q_labels, d(trace.X_q.shape[1], "d"))
    add("Q", trace.Q.numpy(), q_labels, d(trace.Q.shape[1], "k"))
    add("K", trace.K.numpy(), k_labels, d(trace.K.shape[1], "k"))
    add("V", trace.V.numpy(), k_labels, d(trace.V.shape[1], "v"))
    row = A if A.convention == "row" else A.transposed()
    for name in ("scores", "scaled", "logits", "weights"):
        add(name, getattr(row, name).numpy(), q_labels, k_labels)
    add("output", row.output.numpy(), q_labels, d(row.output.shape[1], "v"))
    buf = io.StringIO()
    pd.DataFrame(rows, columns=["matrix", "row", "column", "value"]).to_csv(buf, index=False)
    return buf.getvalue()

