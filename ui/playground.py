"""The Attention Playground: controls → cached core call → renderers.

Every number shown comes from ``core`` (via ui.compute). This module only wires widgets,
keeps the last valid state, and lays out the panels.
"""

from __future__ import annotations

import io
import zlib
from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

import core
from core.tokens import tokenize

from . import compute, formulas, scenario, settings
from .i18n import labeller, t
from .render import (
    EDIT_LIMIT,
    dim_labels,
    heatmap,
    matrix_editor,
    shape_badge,
    show_bars,
    show_heatmap,
    stacked_contributions,
    token_labels,
    weight_bars,
)
from .text import md, short

K = "pg."  # widget-key prefix
WEIGHTS_CHART = "pg.chart.weights"
MASK_CHART = "pg.chart.mask"
CLICKS = "pg.clicks"  # (chart key, (row, col)) of cell clicks since the last run


# ---------------------------------------------------------------------------- state helpers
def _key(name: str) -> str:
    return K + name


def _init_state() -> None:
    """Defaults once per session; then, once, the shared URL's scenario on top."""
    for name, default in scenario.DEFAULTS.items():
        st.session_state.setdefault(_key(name), list(default) if isinstance(default, list) else default)
    st.session_state.setdefault("pg.overrides", {})
    st.session_state.setdefault("pg.editor_version", 0)
    st.session_state.setdefault("pg.messages", [])
    if not st.session_state.get("pg._url_loaded"):
        st.session_state["pg._url_loaded"] = True
        params = {k: st.query_params.get(k) for k in st.query_params.keys()}
        if any(k in scenario.url_keys() or k.startswith("m_") for k in params):
            values, matrices, refused = scenario.from_query(params)
            _apply(values, matrices)
            if refused:
                st.session_state["pg.messages"].append(("warning", t("err.url_values", names=", ".join(refused))))


def _apply(values: dict, matrices: dict) -> None:
    """Put a scenario into the widgets' state (only valid before they render, or in a callback)."""
    for name, v in values.items():
        st.session_state[_key(name)] = v
    st.session_state["pg.overrides"] = {k: np.asarray(v, dtype=float) for k, v in matrices.items()}
    st.session_state["pg.editor_version"] = st.session_state.get("pg.editor_version", 0) + 1
    st.session_state.pop(WEIGHTS_CHART, None)
    st.session_state.pop(MASK_CHART, None)


def _values() -> dict:
    vals = {name: st.session_state.get(_key(name), d) for name, d in scenario.DEFAULTS.items()}
    vals["pad"] = sorted(int(i) for i in vals["pad"])
    vals["blocked"] = sorted([int(i), int(j)] for i, j in vals["blocked"])
    return vals


def _on_preset(widget_key: str) -> None:
    """Load an example, then reset the menu so it reads “choose an example” again."""
    choice = st.session_state.get(widget_key)
    st.session_state[widget_key] = ""
    if choice in scenario.PRESETS:
        st.session_state[_key("tokens")] = scenario.PRESETS[choice]
        st.session_state[_key("embedding")] = "c18" if choice == "c18" else "random"
        st.session_state[_key("causal")] = choice == "c11"
        st.session_state[_key("query")] = 0
        st.session_state[_key("blocked")] = []
        st.session_state[_key("pad")] = []


def _on_upload() -> None:
    f = st.session_state.get("pg.upload")
    if f is None:
        return
    try:
        values, matrices, _settings, refused = scenario.from_json(f.getvalue())
    except scenario.ScenarioError as err:
        st.session_state["pg.messages"].append(("error", t(err.key, **err.fmt)))
        return
    _apply(values, matrices)
    msg = t("share.loaded") + (" " + t("err.file_values", names=", ".join(refused)) if refused else "")
    st.session_state["pg.messages"].append(("success" if not refused else "warning", msg))


def _drain_clicks() -> None:
    """Apply the cell clicks that arrived since the last run, in order."""
    for key, cell in st.session_state.pop(CLICKS, []) or []:
        if key == WEIGHTS_CHART:
            _on_weight_click(cell)
        elif key == MASK_CHART:
            _on_mask_click(cell)


def _on_weight_click(cell: tuple[int, int]) -> None:
    """A click on a weights cell selects its query (the row, or the column in column notation)."""
    conv = st.session_state.get(_key("convention"), "row")
    st.session_state[_key("query")] = cell[0] if conv == "row" else cell[1]


def _on_mask_click(cell: tuple[int, int]) -> None:
    """A click on a mask cell blocks or unblocks that (query, key) pair."""
    if st.session_state.get(_key("convention"), "row") == "column":
        cell = (cell[1], cell[0])  # column notation: rows are keys, columns are queries
    blocked = {tuple(c) for c in st.session_state.get(_key("blocked"), [])}
    blocked ^= {cell}
    st.session_state[_key("blocked")] = sorted(list(c) for c in blocked)


def _by_label(factory, name: str, labels: list[str], label: str, **kw):
    """A select/multiselect over token labels whose state is kept as indices under pg.<name>.

    The options change whenever the tokens do, so the widget holds labels and a callback
    copies the chosen indices back (the index is what the URL and the click handler use)."""
    wkey = f"pg.w.{name}"
    cur = st.session_state[_key(name)]
    if name == "query":
        st.session_state[wkey] = labels[int(cur)]
    else:
        st.session_state[wkey] = [labels[int(i)] for i in cur]
    return factory(label, labels, key=wkey, on_change=_from_labels, args=(name, tuple(labels)), **kw)


def _from_labels(name: str, labels: tuple[str, ...]) -> None:
    chosen = st.session_state.get(f"pg.w.{name}")
    if name == "query":
        st.session_state[_key(name)] = labels.index(chosen) if chosen in labels else 0
    else:
        st.session_state[_key(name)] = sorted(labels.index(c) for c in chosen or [] if c in labels)


# ---------------------------------------------------------------------------- tokens
def _tokens(text_key: str, last_key: str, problems: list) -> list[str]:
    text = st.session_state.get(text_key, "")
    last = st.session_state.get(last_key) or tokenize(scenario.DEFAULTS["tokens"])
    if not isinstance(text, str) or len(text) > scenario.MAX_TOKEN_TEXT:
        problems.append(("error", t("err.tokens_text_long", limit=scenario.MAX_TOKEN_TEXT)))
        return last
    toks = tokenize(text)
    if not toks:
        problems.append(("error", t("err.tokens_empty")))
        return last
    if len(toks) > scenario.MAX_TOKENS:
        problems.append(("error", t("err.tokens_too_many", n=len(toks), limit=scenario.MAX_TOKENS)))
        return last
    if len(toks) == 1:
        problems.append(("info", t("info.single_token")))
    st.session_state[last_key] = toks
    return toks


# ---------------------------------------------------------------------------- matrices
def _editable(name: str, generated: np.ndarray, rows: list[str], cols: list[str], label: str,
              problems: list, decimals: int, editable: bool) -> np.ndarray:
    """generated ⊕ URL/file override ⊕ the learner's cell edits → the matrix core receives."""
    base = generated
    ov = st.session_state["pg.overrides"].get(name)
    if ov is not None:
        ov = ov if ov.ndim == 2 else ov.reshape(-1, 1)
        if ov.shape == generated.reshape(generated.shape[0], -1).shape:
            base = ov.reshape(generated.shape)
        else:
            problems.append(("warning", t("err.override_shape", name=name, got="×".join(map(str, ov.shape)),
                                          want="×".join(map(str, generated.reshape(generated.shape[0], -1).shape)))))
            del st.session_state["pg.overrides"][name]
    value = base
    if editable:
        value, problem = matrix_editor(label, base, row_labels=rows, col_labels=cols, key=editor_key(name, rows, cols),
                                       decimals=decimals)
        if problem:
            problems.append(("error", problem))
    value = np.asarray(value, dtype=float).reshape(generated.shape)
    if value.shape != generated.shape or not np.array_equal(value, np.asarray(generated, dtype=float)):
        st.session_state["pg._changed"][name] = np.round(value, 6).tolist()
    return value


def editor_key(name: str, rows, cols) -> str:
    """Widget key of a matrix editor: changes (so edits reset) when its labels or a loaded scenario change."""
    sig = zlib.crc32("\x1f".join(list(rows) + ["|"] + list(cols)).encode("utf-8"))
    return f"pg.ed.{name}.{sig:08x}.{st.session_state.get('pg.editor_version', 0)}"


# ---------------------------------------------------------------------------- page
def render() -> None:
    _init_state()
    _drain_clicks()
    dec = settings.get("precision")
    st.session_state["pg._changed"] = {}
    problems: list[tuple[str, str]] = list(st.session_state["pg.messages"])
    st.session_state["pg.messages"] = []

    st.markdown(t("pg.intro"))

    # -- tokens, mode, convention
    c1, c2, c3 = st.columns([3, 1.3, 1.3])
    with c1:
        st.text_input(t("pg.tokens"), key=_key("tokens"), help=t("pg.tokens.help"))
    with c2:
        preset_key = f"pg.preset_choice.{settings.get('lang')}"  # one menu per language
        st.selectbox(t("pg.preset"), options=[""] + list(scenario.PRESETS), key=preset_key,
                     format_func=labeller("preset.", empty_key="pg.preset.none"),
                     on_change=_on_preset, args=(preset_key,))
    with c3:
        st.radio(t("pg.mode"), scenario.MODES, key=_key("mode"), format_func=labeller("pg.mode."),
                 horizontal=True)
    v = _values()
    cross = v["mode"] == "cross"
    if cross:
        st.text_input(t("pg.source"), key=_key("source"), help=t("pg.source.help"))
    tq = _tokens(_key("tokens"), "pg._last_tokens", problems)
    tk = _tokens(_key("source"), "pg._last_source", problems) if cross else tq
    n_q, n_k = len(tq), len(tk)
    interactive = max(n_q, n_k) <= scenario.INTERACTIVE_TOKENS
    if not interactive:
        problems.append(("info", t("info.large_n", n=max(n_q, n_k), limit=EDIT_LIMIT)))
    q_labels, k_labels = token_labels(tq), token_labels(tk)

    st.radio(t("pg.convention"), scenario.CONVENTIONS, key=_key("convention"),
             format_func=labeller("conv."), horizontal=True, help=t("pg.convention.help"))
    v = _values()
    conv = v["convention"]

    tabs = st.tabs([t("pg.tab.embed"), t("pg.tab.qkv"), t("pg.tab.score"), t("pg.tab.mask"), t("pg.tab.share")])
    seed = int(settings.get("seed"))

    # -- embeddings
    with tabs[0]:
        e1, e2 = st.columns([2, 2])
        with e1:
            st.radio(t("pg.embedding"), scenario.EMBEDDINGS, key=_key("embedding"),
                     format_func=labeller("pg.embedding."), horizontal=True)
        emb = st.session_state[_key("embedding")]
        with e2:
            st.slider(t("pg.d_model"), 1, scenario.MAX_DIM, key=_key("d_model"), disabled=emb != "random",
                      help=t("pg.d_model.help"))
        all_tokens = tuple(tq) + (tuple(tk) if cross else ())
        X_all, unknown = compute.embedding(emb, all_tokens, int(st.session_state[_key("d_model")]), seed)
        if unknown:
            problems.append(("info", t("info.c18_unknown", tokens=", ".join(md(u) for u in unknown[:8]))))
        d_model = X_all.shape[1]
        dcols = dim_labels(d_model)
        X_q = _editable("X", X_all[:n_q], q_labels, dcols, t("pg.edit_x"), problems, dec, interactive)
        X_kv = X_q
        if cross:
            X_kv = _editable("X_src", X_all[n_q:], k_labels, dcols, t("pg.edit_x_src"), problems, dec, interactive)
        if conv == "row":
            shape_badge(f"X {n_q}×{d_model}" + (f",  X_src {n_k}×{d_model}" if cross else ""))
        else:
            shape_badge(f"X {d_model}×{n_q}" + (f",  X_src {d_model}×{n_k}" if cross else ""))
            st.caption(t("pg.editors_rows"))

    # -- Q, K, V
    with tabs[1]:
        st.radio(t("pg.qkv"), core.lab.QKV_MODES, key=_key("qkv"), format_func=labeller("pg.qkv."),
                 horizontal=True)
        qkv = st.session_state[_key("qkv")]
        Wq = Wk = Wv = Qd = Kd = Vd = None
        if qkv == "projection":
            s1, s2 = st.columns(2)
            with s1:
                st.slider(t("pg.d_k"), 1, scenario.MAX_DIM, key=_key("d_k"))
            with s2:
                st.slider(t("pg.d_v"), 1, scenario.MAX_DIM, key=_key("d_v"))
            d_k, d_v = int(st.session_state[_key("d_k")]), int(st.session_state[_key("d_v")])
            st.latex(formulas.PROJECTION[conv])
            w1, w2, w3 = st.columns(3)
            with w1:
                Wq = _editable("W_q", compute.projection(d_model, d_k, seed, "W_q"), dcols, dim_labels(d_k, "k"),
                               "W_Q", problems, dec, True)
            with w2:
                Wk = _editable("W_k", compute.projection(d_model, d_k, seed, "W_k"), dcols, dim_labels(d_k, "k"),
                               "W_K", problems, dec, True)
            with w3:
                Wv = _editable("W_v", compute.projection(d_model, d_v, seed, "W_v"), dcols, dim_labels(d_v, "v"),
                               "W_V", problems, dec, True)
            if conv == "row":
                shape_badge(f"Q = X·W_Q: ({n_q}×{d_model})·({d_model}×{d_k}) → ({n_q}×{d_k})")
                shape_badge(f"K = X·W_K: ({n_k}×{d_model})·({d_model}×{d_k}) → ({n_k}×{d_k})")
                shape_badge(f"V = X·W_V: ({n_k}×{d_model})·({d_model}×{d_v}) → ({n_k}×{d_v})")
            else:  # W^Q = W_Qᵀ acts on columns
                shape_badge(f"Q = W^Q·X: ({d_k}×{d_model})·({d_model}×{n_q}) → ({d_k}×{n_q})")
                shape_badge(f"K = W^K·X: ({d_k}×{d_model})·({d_model}×{n_k}) → ({d_k}×{n_k})")
                shape_badge(f"V = W^V·X: ({d_v}×{d_model})·({d_model}×{n_k}) → ({d_v}×{n_k})")
        elif qkv == "direct":
            d_k = d_v = d_model
            st.caption(t("pg.qkv.direct.help"))
            Qd = _editable("Q", X_q, q_labels, dcols, "Q", problems, dec, interactive)
            Kd = _editable("K", X_kv, k_labels, dcols, "K", problems, dec, interactive)
            Vd = _editable("V", X_kv, k_labels, dcols, "V", problems, dec, interactive)
        else:
            d_k = d_v = d_model
            st.markdown(t("pg.qkv.identity.help"))
        shape_badge(f"Q {n_q}×{d_k},  K {n_k}×{d_k},  V {n_k}×{d_v}" if conv == "row"
                    else f"Q {d_k}×{n_q},  K {d_k}×{n_k},  V {d_v}×{n_k}")

    # -- score function
    with tabs[2]:
        st.radio(t("pg.score"), core.SCORE_FUNCTIONS, key=_key("score"), format_func=labeller("score."),
                 horizontal=True)
        score = st.session_state[_key("score")]
        st.latex(formulas.SCORE_PAIR[score])
        s1, s2 = st.columns(2)
        with s1:
            st.radio(t("pg.scale"), scenario.SCALES, key=_key("scale"), format_func=labeller("scale."),
                     horizontal=True, help=t("pg.scale.help"))
        with s2:
            st.slider(t("pg.temperature"), 0.1, 5.0, step=0.1, key=_key("temperature"), help=t("pg.temperature.help"))
        params = {}
        kcols = dim_labels(d_k, "k")
        if score == "general":
            params["W"] = _editable("W", compute.projection(d_k, d_k, seed, "W").T, kcols, kcols, "W (d_k×d_k)",
                                    problems, dec, True)
        elif score == "additive":
            st.slider(t("pg.d_a"), 1, scenario.MAX_DIM, key=_key("d_a"), help=t("pg.d_a.help"))
            d_a = int(st.session_state[_key("d_a")])
            acols = dim_labels(d_a, "a")
            a1, a2, a3 = st.columns([2, 2, 1])
            with a1:
                params["W_a"] = _editable("W_a", compute.projection(d_k, d_a, seed, "W_a").T, acols, kcols,
                                          "W_a (d_a×d_k)", problems, dec, True)
            with a2:
                params["U_a"] = _editable("U_a", compute.projection(d_k, d_a, seed, "U_a").T, acols, kcols,
                                          "U_a (d_a×d_k)", problems, dec, True)
            with a3:
                params["w_a"] = _editable("w_a", compute.projection(d_a, 1, seed, "w_a")[:, 0], acols, ["w_a"],
                                          "w_a (d_a)", problems, dec, True)
        st.caption(t("pg.score.note"))

    # -- mask
    with tabs[3]:
        m1, m2 = st.columns([1, 2])
        with m1:
            st.checkbox(t("pg.mask.causal"), key=_key("causal"), help=t("pg.mask.causal.help"))
        with m2:
            st.session_state[_key("pad")] = [i for i in st.session_state[_key("pad")] if 0 <= int(i) < n_k]
            _by_label(st.multiselect, "pad", k_labels, t("pg.mask.pad"),
                           help=t("pg.mask.pad.help"))
        blocked = [c for c in st.session_state[_key("blocked")] if c[0] < n_q and c[1] < n_k]
        mask = compute.mask(n_q, n_k, bool(st.session_state[_key("causal")]),
                            tuple(int(i) for i in st.session_state[_key("pad")]),
                            tuple((int(i), int(j)) for i, j in blocked))
        st.caption(t("pg.mask.custom.help"))
        mshow = np.ones((n_q, n_k)) if mask is None else mask.astype(float)
        if conv == "column":
            st.caption(t("pg.mask.column_note"))
            mspec = heatmap(mshow.T, x_labels=_short(q_labels), y_labels=_short(k_labels), x_title=t("axis.query"),
                            y_title=t("axis.key"), decimals=0, sequential=True, clickable=True)
        else:
            mspec = heatmap(mshow, x_labels=_short(k_labels), y_labels=_short(q_labels), x_title=t("axis.key"),
                            y_title=t("axis.query"), decimals=0, sequential=True, clickable=True)
        show_heatmap(mspec, key=MASK_CHART, click_queue=CLICKS)
        if blocked and st.button(t("pg.mask.clear")):
            st.session_state[_key("blocked")] = []
            st.rerun()

    # -- compute (cached) with the last valid trace kept on failure
    scale_mode = st.session_state[_key("scale")]
    scale = None if scale_mode == "auto" else (core.default_scale("scaled_dot", d_k) if scale_mode == "sqrt_dk" else 1.0)
    try:
        trace = compute.playground(
            np.asarray(X_q, np.float32), np.asarray(X_kv, np.float32), qkv, Wq, Wk, Wv, Qd, Kd, Vd, score,
            {k: np.asarray(p, np.float32) for k, p in params.items()}, scale,
            float(st.session_state[_key("temperature")]), mask, conv, settings.get("device"))
        st.session_state["pg._last_trace"] = (trace, tq, tk)
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        last = st.session_state.get("pg._last_trace")
        if last is None:
            _show_problems(problems)
            return
        trace, tq, tk = last
        q_labels, k_labels = token_labels(tq), token_labels(tk)
        n_q, n_k = len(tq), len(tk)

    _show_problems(problems)
    _pipeline(trace, q_labels, k_labels, conv, dec, score, scale_mode)
    _inspector(trace, tq, tk, conv, dec)
    with tabs[4]:
        _share(trace, q_labels, k_labels, conv)


def _short(labels) -> list[str]:
    return [short(s) for s in labels]


def _show_problems(problems) -> None:
    seen = set()
    for kind, msg in problems:
        if msg in seen:
            continue
        seen.add(msg)
        getattr(st, kind)(msg)


# ---------------------------------------------------------------------------- the pipeline
def _axes(conv: str, q_labels, k_labels):
    """(x labels, y labels, x title, y title) for an (n_q×n_k) matrix in this convention."""
    if conv == "row":
        return k_labels, q_labels, t("axis.key"), t("axis.query")
    return q_labels, k_labels, t("axis.query"), t("axis.key")


def _pipeline(trace, q_labels, k_labels, conv, dec, score, scale_mode) -> None:
    A = trace.attn
    n_q, n_k = len(q_labels), len(k_labels)
    xl, yl, xt, yt = _axes(conv, _short(q_labels), _short(k_labels))
    sq = f"{n_q}×{n_k}" if conv == "row" else f"{n_k}×{n_q}"
    d_k, d_v = trace.Q.shape[1], trace.V.shape[1]
    st.subheader(t("pg.pipeline"))
    st.latex(formulas.WHOLE[conv])
    st.caption(t("pg.pipeline.values", scale=f"{A.scale:.{dec}f}", T=f"{A.temperature:g}"))

    def panel(title, latex, shape, z, **kw):
        st.markdown(f"**{title}**")
        st.latex(latex)
        shape_badge(shape)
        return heatmap(z, x_labels=kw.pop("x", xl), y_labels=kw.pop("y", yl), x_title=kw.pop("xt", xt),
                       y_title=kw.pop("yt", yt), decimals=dec, **kw)

    qk = f"Q ({n_q}×{d_k}) · Kᵀ ({d_k}×{n_k}) → ({n_q}×{n_k})" if conv == "row" else \
        f"Kᵀ ({n_k}×{d_k}) · Q ({d_k}×{n_q}) → ({n_k}×{n_q})"
    n_max = max(n_q, n_k)
    if n_max <= 6:  # three small maps side by side; larger ones get room to breathe
        c1, c2, c3 = st.columns(3)
    else:
        (c1, c2), (c3, _) = st.columns(2), st.columns(2)
    with c1:
        show_heatmap(panel(t("step.scores"), formulas.SCORE_MATRIX[conv][score], qk, A.scores.numpy()),
                     key="pg.fig.scores")
    with c2:
        show_heatmap(panel(t("step.scaled"), formulas.SCALED, f"({sq}) · {A.scale:.{dec}g} / {A.temperature:g} → ({sq})",
                           A.scaled.numpy()), key="pg.fig.scaled")
    with c3:
        neg = np.isneginf(A.logits.numpy())
        show_heatmap(panel(t("step.masked"), formulas.MASKED[conv], f"({sq}) + M ({sq}) → ({sq})",
                           np.where(neg, 0.0, A.logits.numpy()), neg_inf=neg), key="pg.fig.masked")
    if n_max <= 12:
        c4, c5 = st.columns([3, 2])
    else:
        c4, c5 = st.container(), st.container()
    with c4:
        W = A.weights.numpy()
        sums, fully = A.weight_sums.numpy(), A.fully_masked.numpy()
        notes = [("Σ " + f"{s:.{dec}f}") if not f else t("pg.fully_masked_short") for s, f in zip(sums, fully, strict=True)]
        q_sel = int(st.session_state.get(_key("query"), 0))
        kw = {"highlight_row": q_sel} if conv == "row" else {"highlight_col": q_sel}
        st.markdown(f"**{t('step.weights')}**")
        st.latex(formulas.SOFTMAX[conv])
        shape_badge(f"softmax ({sq}) → ({sq})")
        st.caption(t("pg.weights.click"))
        spec = heatmap(W, x_labels=xl, y_labels=yl, x_title=xt, y_title=yt, decimals=dec, sequential=True,
                       side_text=notes if conv == "row" else None, clickable=True, **kw)
        if conv == "column":
            st.caption(t("pg.column_sums") + "  " + ",  ".join(notes))
        show_heatmap(spec, key=WEIGHTS_CHART, click_queue=CLICKS)
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
                        x=_short(q_labels), xt=t("axis.query"))
        show_heatmap(fig, key="pg.fig.output")
        st.caption(t("pg.output.note"))


# ---------------------------------------------------------------------------- query inspector
def _inspector(trace, tq, tk, conv, dec) -> None:
    n_q = len(tq)
    if not 0 <= int(st.session_state.get(_key("query"), 0)) < n_q:
        st.session_state[_key("query")] = 0
    q_labels, k_labels = token_labels(tq), token_labels(tk)
    st.subheader(t("pg.inspector"))
    _by_label(st.selectbox, "query", q_labels, t("pg.inspector.query"))
    j = int(st.session_state[_key("query")])
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
def _share(trace, q_labels, k_labels, conv) -> None:
    values = _values()
    matrices = _changed_matrices()
    query = scenario.to_query(values, matrices) | settings.settings_query()
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    if current != query:
        st.query_params.from_dict(query)
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


def _changed_matrices() -> dict:
    """Matrices that differ from what the settings generate (edits and loaded overrides)."""
    return dict(st.session_state.get("pg._changed", {}))


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

