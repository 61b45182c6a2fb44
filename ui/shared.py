"""The scenario every page shares: tokens, embeddings and Q/K/V, with their controls.

Widget keys are ``pg.<name>`` (see ui.scenario.DEFAULTS). The Playground shows all the
controls and the matrix editors; the concept pages show the same token and Q/K/V controls
without editors and compute from the same numbers, edits included.
"""

from __future__ import annotations

import zlib
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import streamlit as st

import core
from core.tokens import tokenize

from . import compute, formulas, scenario, settings
from .i18n import labeller, t
from .render import EDIT_LIMIT, dim_labels, heatmap, matrix_editor, shape_badge, show_heatmap, token_labels
from .text import md, shorts

K = "pg."  # widget-key prefix
PERSISTED = tuple(f"pg.{name}" for name in scenario.DEFAULTS)


def persist() -> None:
    """Keep the scenario's widget values across page switches (Streamlit drops the state of
    widgets a page does not draw; re-assigning makes it plain session state)."""
    for k in PERSISTED:
        if k in st.session_state:
            st.session_state[k] = st.session_state[k]


def key(name: str) -> str:
    return K + name




def init_state() -> None:
    """Defaults once per session; then, once, the shared URL's scenario on top."""
    for name, default in scenario.DEFAULTS.items():
        st.session_state.setdefault(key(name), list(default) if isinstance(default, list) else default)
    st.session_state.setdefault("pg.overrides", {})
    st.session_state.setdefault("pg.editor_version", 0)
    st.session_state.setdefault("pg.messages", [])
    if not st.session_state.get("pg._url_loaded"):
        st.session_state["pg._url_loaded"] = True
        params = {k: st.query_params.get(k) for k in st.query_params.keys()}
        if any(k in scenario.url_keys() or k.startswith("m_") for k in params):
            values, matrices, refused = scenario.from_query(params)
            apply(values, matrices)
            if refused:
                st.session_state["pg.messages"].append(("warning", t("err.url_values", names=", ".join(refused))))




def apply(values: dict, matrices: dict) -> None:
    """Put a scenario into the widgets' state (only valid before they render, or in a callback)."""
    for name, v in values.items():
        st.session_state[key(name)] = v
    st.session_state["pg.overrides"] = {k: np.asarray(v, dtype=float) for k, v in matrices.items()}
    st.session_state["pg.editor_version"] = st.session_state.get("pg.editor_version", 0) + 1




def values() -> dict:
    vals = {name: st.session_state.get(key(name), d) for name, d in scenario.DEFAULTS.items()}
    vals["pad"] = sorted(int(i) for i in vals["pad"])
    vals["blocked"] = sorted([int(i), int(j)] for i, j in vals["blocked"])
    return vals




def _on_preset(widget_key: str) -> None:
    """Load an example, then reset the menu so it reads “choose an example” again."""
    choice = st.session_state.get(widget_key)
    st.session_state[widget_key] = ""
    if choice in scenario.PRESETS:
        st.session_state[key("tokens")] = scenario.PRESETS[choice]
        st.session_state[key("embedding")] = "c18" if choice == "c18" else "random"
        st.session_state[key("causal")] = choice == "c11"
        st.session_state[key("query")] = 0
        st.session_state[key("blocked")] = []
        st.session_state[key("pad")] = []




def by_label(factory, name: str, labels: list[str], label: str, **kw):
    """A select/multiselect over token labels whose state is kept as indices under pg.<name>.

    The options change whenever the tokens do, so the widget holds labels and a callback
    copies the chosen indices back (the index is what the URL and the click handler use)."""
    wkey = f"pg.w.{name}"
    cur = st.session_state[key(name)]
    if name == "query":
        st.session_state[wkey] = labels[int(cur)]
    else:
        st.session_state[wkey] = [labels[int(i)] for i in cur]
    return factory(label, labels, key=wkey, on_change=_from_labels, args=(name, tuple(labels)), **kw)




def _from_labels(name: str, labels: tuple[str, ...]) -> None:
    chosen = st.session_state.get(f"pg.w.{name}")
    if name == "query":
        st.session_state[key(name)] = labels.index(chosen) if chosen in labels else 0
    else:
        st.session_state[key(name)] = sorted(labels.index(c) for c in chosen or [] if c in labels)




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




def editable(name: str, generated: np.ndarray, rows: list[str], cols: list[str], label: str,
             problems: list, decimals: int, show_editor: bool) -> np.ndarray:
    """generated ⊕ URL/file override ⊕ the learner's cell edits → the matrix core receives.

    The learner's edits are carried in session state (``pg.carry``) under the editor's key, so
    they survive page switches and reach the concept pages, which show no editors. A carried
    matrix is used only while its editor key — token labels, generated values, loaded
    scenario — is unchanged.
    """
    generated = np.asarray(generated, dtype=float)
    shape2 = generated.reshape(generated.shape[0], -1).shape
    base = generated
    ov = st.session_state["pg.overrides"].get(name)
    if ov is not None:
        ov = ov if ov.ndim == 2 else ov.reshape(-1, 1)
        if ov.shape == shape2:
            base = ov.reshape(generated.shape)
        else:
            problems.append(("warning", t("err.override_shape", name=name, got="×".join(map(str, ov.shape)),
                                          want="×".join(map(str, shape2)))))
            del st.session_state["pg.overrides"][name]
    k = editor_key(name, rows, cols, generated)
    carry = st.session_state.setdefault("pg.carry", {})
    carried = carry.get(name)
    if carried is not None and carried["key"] == k:
        base = np.asarray(carried["value"], dtype=float).reshape(generated.shape)
    elif carried is not None:  # the tokens, sizes or seed changed: the edits no longer belong here
        problems.append(("info", t("info.edits_reset", name=name)))
        del carry[name]
        carried = None
    value = base
    if show_editor:
        value, problem = matrix_editor(label, base, row_labels=rows, col_labels=cols, key=k, decimals=decimals)
        if problem:
            problems.append(("error", problem))
    value = np.asarray(value, dtype=float).reshape(generated.shape)
    if not np.array_equal(value, generated):
        st.session_state["pg._changed"][name] = np.round(value, 6).tolist()
        carry[name] = {"key": k, "value": value}
    elif carried is not None and carried["key"] == k:
        del carry[name]
    return value


def editor_key(name: str, rows, cols, generated: np.ndarray) -> str:
    """Widget key of a matrix editor. It changes — so edits start afresh — when its labels, the
    generated values (seed, sizes, embedding) or a loaded scenario change."""
    sig = zlib.crc32("\x1f".join(list(rows) + ["|"] + list(cols)).encode("utf-8"))
    sig = zlib.crc32(np.ascontiguousarray(generated, dtype=np.float64).tobytes(), sig)
    return f"pg.ed.{name}.{sig:08x}.{st.session_state.get('pg.editor_version', 0)}"




@dataclass
class Inputs:
    """The numbers every page starts from (row convention: one token per row)."""

    tq: list[str]
    tk: list[str]
    q_labels: list[str]
    k_labels: list[str]
    cross: bool
    interactive: bool
    d_model: int
    X_q: np.ndarray
    X_kv: np.ndarray
    qkv: str
    W_q: np.ndarray | None
    W_k: np.ndarray | None
    W_v: np.ndarray | None
    Q: np.ndarray | None
    K: np.ndarray | None
    V: np.ndarray | None
    d_k: int
    d_v: int


def token_controls(problems: list, *, presets: bool = True) -> tuple[list[str], list[str], bool]:
    """The token box (with the example menu and self/cross) → (query tokens, key tokens, cross)."""
    c1, c2, c3 = st.columns([3, 1.3, 1.3])
    with c1:
        st.text_input(t("pg.tokens"), key=key("tokens"), help=t("pg.tokens.help"))
    if presets:
        with c2:
            preset_key = f"pg.preset_choice.{settings.get('lang')}"  # one menu per language
            st.selectbox(t("pg.preset"), options=[""] + list(scenario.PRESETS), key=preset_key,
                         format_func=labeller("preset.", empty_key="pg.preset.none"),
                         on_change=_on_preset, args=(preset_key,))
    with c3:
        st.radio(t("pg.mode"), scenario.MODES, key=key("mode"), format_func=labeller("pg.mode."), horizontal=True)
    cross = st.session_state[key("mode")] == "cross"
    if cross:
        st.text_input(t("pg.source"), key=key("source"), help=t("pg.source.help"))
    tq = _tokens(key("tokens"), "pg._last_tokens", problems)
    tk = _tokens(key("source"), "pg._last_source", problems) if cross else tq
    return tq, tk, cross


def inputs(problems: list, *, conv: str = "row", editors: bool = True, embed_box=None, qkv_box=None,
           presets: bool = True, draw_embed: bool = True, draw_qkv: bool = True) -> Inputs:
    """Draw the token, embedding and Q/K/V controls and build the matrices.

    ``embed_box``/``qkv_box`` are containers (the Playground's tabs); by default everything goes
    where this is called. With ``editors=False`` no matrix editor is drawn, but the learner's
    edits from the Playground still apply. ``draw_embed``/``draw_qkv`` False (a closed tab)
    build the same matrices from the kept state without drawing those controls.
    """
    dec = settings.get("precision")
    seed = int(settings.get("seed"))
    tq, tk, cross = token_controls(problems, presets=presets)
    n_q, n_k = len(tq), len(tk)
    interactive = max(n_q, n_k) <= scenario.INTERACTIVE_TOKENS
    if not interactive:
        problems.append(("info", t("info.large_n", n=max(n_q, n_k), limit=EDIT_LIMIT)))
    show = editors and interactive
    q_labels, k_labels = token_labels(tq), token_labels(tk)

    with embed_box or nullcontext():
        if draw_embed:
            e1, e2 = st.columns([2, 2])
            with e1:
                st.radio(t("pg.embedding"), scenario.EMBEDDINGS, key=key("embedding"),
                         format_func=labeller("pg.embedding."), horizontal=True)
        emb = st.session_state[key("embedding")]
        if draw_embed:
            with e2:
                st.slider(t("pg.d_model"), 1, scenario.MAX_DIM, key=key("d_model"), disabled=emb != "random",
                          help=t("pg.d_model.help"))
        all_tokens = tuple(tq) + (tuple(tk) if cross else ())
        X_all, unknown = compute.embedding(emb, all_tokens, int(st.session_state[key("d_model")]), seed)
        if unknown:
            problems.append(("info", t("info.c18_unknown", tokens=", ".join(md(u) for u in unknown[:8]))))
        d_model = X_all.shape[1]
        dcols = dim_labels(d_model)
        X_q = editable("X", X_all[:n_q], q_labels, dcols, t("pg.edit_x"), problems, dec, show and draw_embed)
        X_kv = X_q
        if cross:
            X_kv = editable("X_src", X_all[n_q:], k_labels, dcols, t("pg.edit_x_src"), problems, dec,
                            show and draw_embed)
        if editors and draw_embed:
            if conv == "row":
                shape_badge(f"X {n_q}×{d_model}" + (f",  X_src {n_k}×{d_model}" if cross else ""))
            else:
                shape_badge(f"X {d_model}×{n_q}" + (f",  X_src {d_model}×{n_k}" if cross else ""))
                st.caption(t("pg.editors_rows"))

    with qkv_box or nullcontext():
        ed = editors and draw_qkv  # a closed tab: the same numbers, nothing drawn
        if draw_qkv:
            st.radio(t("pg.qkv"), core.lab.QKV_MODES, key=key("qkv"), format_func=labeller("pg.qkv."),
                     horizontal=True)
        qkv = st.session_state[key("qkv")]
        Wq = Wk = Wv = Qd = Kd = Vd = None
        if qkv == "projection":
            if draw_qkv:
                s1, s2 = st.columns(2)
                with s1:
                    st.slider(t("pg.d_k"), 1, scenario.MAX_DIM, key=key("d_k"))
                with s2:
                    st.slider(t("pg.d_v"), 1, scenario.MAX_DIM, key=key("d_v"))
            d_k, d_v = int(st.session_state[key("d_k")]), int(st.session_state[key("d_v")])
            if ed:
                st.latex(formulas.PROJECTION[conv])
            w1, w2, w3 = st.columns(3) if ed else (nullcontext(),) * 3
            with w1:
                Wq = editable("W_q", compute.projection(d_model, d_k, seed, "W_q"), dcols, dim_labels(d_k, "k"),
                              "W_Q", problems, dec, ed)
            with w2:
                Wk = editable("W_k", compute.projection(d_model, d_k, seed, "W_k"), dcols, dim_labels(d_k, "k"),
                              "W_K", problems, dec, ed)
            with w3:
                Wv = editable("W_v", compute.projection(d_model, d_v, seed, "W_v"), dcols, dim_labels(d_v, "v"),
                              "W_V", problems, dec, ed)
            if ed and conv == "row":
                shape_badge(f"Q = X·W_Q: ({n_q}×{d_model})·({d_model}×{d_k}) → ({n_q}×{d_k})")
                shape_badge(f"K = X·W_K: ({n_k}×{d_model})·({d_model}×{d_k}) → ({n_k}×{d_k})")
                shape_badge(f"V = X·W_V: ({n_k}×{d_model})·({d_model}×{d_v}) → ({n_k}×{d_v})")
            elif ed:  # W^Q = W_Qᵀ acts on columns
                shape_badge(f"Q = W^Q·X: ({d_k}×{d_model})·({d_model}×{n_q}) → ({d_k}×{n_q})")
                shape_badge(f"K = W^K·X: ({d_k}×{d_model})·({d_model}×{n_k}) → ({d_k}×{n_k})")
                shape_badge(f"V = W^V·X: ({d_v}×{d_model})·({d_model}×{n_k}) → ({d_v}×{n_k})")
        elif qkv == "direct":
            d_k = d_v = d_model
            if ed:
                st.caption(t("pg.qkv.direct.help"))
            Qd = editable("Q", X_q, q_labels, dcols, "Q", problems, dec, show and ed)
            Kd = editable("K", X_kv, k_labels, dcols, "K", problems, dec, show and ed)
            Vd = editable("V", X_kv, k_labels, dcols, "V", problems, dec, show and ed)
        else:
            d_k = d_v = d_model
            if ed:
                st.markdown(t("pg.qkv.identity.help"))
        if ed:
            shape_badge(f"Q {n_q}×{d_k},  K {n_k}×{d_k},  V {n_k}×{d_v}" if conv == "row"
                        else f"Q {d_k}×{n_q},  K {d_k}×{n_k},  V {d_v}×{n_k}")
    return Inputs(tq=tq, tk=tk, q_labels=q_labels, k_labels=k_labels, cross=cross, interactive=interactive,
                  d_model=d_model, X_q=X_q, X_kv=X_kv, qkv=qkv, W_q=Wq, W_k=Wk, W_v=Wv, Q=Qd, K=Kd, V=Vd,
                  d_k=d_k, d_v=d_v)


def numbers_panel(problems: list, *, tokens_only: bool = False, help_text: str | None = None):
    """The shared scenario's controls, folded away on the concept pages: the full inputs
    (tokens, embedding, Q/K/V; returns :class:`Inputs`) or just the token box (returns the tokens)."""
    with st.expander(t("shared.numbers"), expanded=False):
        st.caption(help_text or t("shared.numbers.help"))
        if tokens_only:
            return token_controls(problems)[0]
        return inputs(problems, editors=False)


def score_params(score: str, d_k: int, problems: list, *, editors: bool) -> dict[str, np.ndarray]:
    """The seeded (or edited) parameters of a score function: W for general; W_a, U_a, w_a for additive."""
    dec = settings.get("precision")
    seed = int(settings.get("seed"))
    kcols = dim_labels(d_k, "k")
    params = {}
    if score == "general":
        params["W"] = editable("W", compute.projection(d_k, d_k, seed, "W").T, kcols, kcols, "W (d_k×d_k)",
                               problems, dec, editors)
    elif score == "additive":
        if editors:
            st.slider(t("pg.d_a"), 1, scenario.MAX_DIM, key=key("d_a"), help=t("pg.d_a.help"))
        d_a = int(st.session_state[key("d_a")])
        acols = dim_labels(d_a, "a")
        a1, a2, a3 = st.columns([2, 2, 1]) if editors else (nullcontext(),) * 3
        with a1:
            params["W_a"] = editable("W_a", compute.projection(d_k, d_a, seed, "W_a").T, acols, kcols,
                                     "W_a (d_a×d_k)", problems, dec, editors)
        with a2:
            params["U_a"] = editable("U_a", compute.projection(d_k, d_a, seed, "U_a").T, acols, kcols,
                                     "U_a (d_a×d_k)", problems, dec, editors)
        with a3:
            params["w_a"] = editable("w_a", compute.projection(d_a, 1, seed, "w_a")[:, 0], acols, ["w_a"],
                                     "w_a (d_a)", problems, dec, editors)
    return params


def scale_choice(d_k: int) -> tuple[str, float | None]:
    """(mode, scale) of the scale radio: None = the score function's own default (core decides)."""
    mode = st.session_state.get(key("scale"), "auto")
    if mode == "auto":
        return mode, None
    return mode, core.default_scale("scaled_dot", d_k) if mode == "sqrt_dk" else 1.0


def current_mask(n_q: int, n_k: int):
    """The scenario's mask (causal & padding & clicked cells), row convention, or None."""
    pad = tuple(int(i) for i in st.session_state.get(key("pad"), []) if 0 <= int(i) < n_k)
    blocked = tuple((int(i), int(j)) for i, j in st.session_state.get(key("blocked"), []) if i < n_q and j < n_k)
    return compute.mask(n_q, n_k, bool(st.session_state.get(key("causal"), False)), pad, blocked)


def run(inp: Inputs, score: str, params: dict, mask, conv: str):
    """The cached core call for the scenario's numbers in one notation (raises ValueError)."""
    _, scale = scale_choice(inp.d_k)
    return compute.playground(
        np.asarray(inp.X_q, np.float32), np.asarray(inp.X_kv, np.float32), inp.qkv, inp.W_q, inp.W_k, inp.W_v,
        inp.Q, inp.K, inp.V, score, {k: np.asarray(p, np.float32) for k, p in params.items()}, scale,
        float(st.session_state.get(key("temperature"), 1.0)), mask, conv, settings.get("device"))


def toggle_mask_cell(cell: tuple[int, int]) -> None:
    """A click on a mask cell blocks or unblocks that (query, key) pair."""
    if st.session_state.get(key("convention"), "row") == "column":
        cell = (cell[1], cell[0])  # column notation: rows are keys, columns are queries
    blocked = {tuple(c) for c in st.session_state.get(key("blocked"), [])}
    blocked ^= {cell}
    st.session_state[key("blocked")] = sorted(list(c) for c in blocked)


def mask_controls(n_q: int, n_k: int, q_labels, k_labels, conv: str, *, chart_key: str, click_queue: str):
    """Causal checkbox, PAD tokens and the clickable mask map; returns the combined row mask or None."""
    m1, m2 = st.columns([1, 2])
    with m1:
        st.checkbox(t("pg.mask.causal"), key=key("causal"), help=t("pg.mask.causal.help"))
    with m2:
        st.session_state[key("pad")] = [i for i in st.session_state[key("pad")] if 0 <= int(i) < n_k]
        by_label(st.multiselect, "pad", k_labels, t("pg.mask.pad"), help=t("pg.mask.pad.help"),
                 placeholder=t("pg.mask.pad.none"))
    mask = current_mask(n_q, n_k)
    st.caption(t("pg.mask.custom.help"))
    mshow = np.ones((n_q, n_k)) if mask is None else mask.astype(float)
    ql, kl = shorts(q_labels), shorts(k_labels)
    if conv == "column":
        st.caption(t("pg.mask.column_note"))
        spec = heatmap(mshow.T, x_labels=ql, y_labels=kl, x_title=t("axis.query"), y_title=t("axis.key"),
                       decimals=0, sequential=True, clickable=True)
    else:
        spec = heatmap(mshow, x_labels=kl, y_labels=ql, x_title=t("axis.key"), y_title=t("axis.query"),
                       decimals=0, sequential=True, clickable=True)
    show_heatmap(spec, key=chart_key, click_queue=click_queue)
    if st.session_state.get(key("blocked")) and st.button(t("pg.mask.clear"), key=f"{chart_key}.clear"):
        st.session_state[key("blocked")] = []
        st.rerun()
    return mask


def qk_axes(conv: str, q_labels, k_labels) -> dict:
    """Heatmap labels of an (n_q × n_k) matrix in the chosen notation (column: rows = keys)."""
    if conv == "column":
        return {"x_labels": q_labels, "y_labels": k_labels, "x_title": t("axis.query"), "y_title": t("axis.key")}
    return {"x_labels": k_labels, "y_labels": q_labels, "x_title": t("axis.key"), "y_title": t("axis.query")}


def qk_view(z, conv: str, q_labels, k_labels) -> tuple[np.ndarray, dict]:
    """An (n_q × n_k) row-convention matrix laid out in the chosen notation: in column notation
    it is shown transposed. Returns (matrix, heatmap labels)."""
    z = np.asarray(z)
    return (z.T if conv == "column" else z), qk_axes(conv, q_labels, k_labels)


def notation_switch() -> str:
    """The row/column notation radio, shared by every page; returns the chosen notation."""
    st.radio(t("pg.convention"), scenario.CONVENTIONS, key=key("convention"), format_func=labeller("conv."),
             horizontal=True, help=t("pg.convention.help"))
    return st.session_state[key("convention")]


def show_problems(problems) -> None:
    seen = set()
    for kind, msg in problems:
        if msg in seen:
            continue
        seen.add(msg)
        getattr(st, kind)(msg)


def start(problems: list) -> None:
    """Every page that uses the scenario calls this first."""
    init_state()
    st.session_state["pg._changed"] = {}
    problems.extend(st.session_state["pg.messages"])
    st.session_state["pg.messages"] = []
