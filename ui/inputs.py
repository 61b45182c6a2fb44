"""The scenario's controls, shared by every page: the token box, embeddings, Q/K/V, the score
function's parameters, the mask builder and the notation switch.

The Playground draws them all with their matrix editors; concept pages draw the same controls
folded away and compute from the same numbers, the Playground's edits included.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
import streamlit as st

import core
from attention_lab import panels, scenario
from core.tokens import tokenize

from . import compute, settings, state
from . import scenario_state as ss
from .i18n import current_lang, labeller, t
from .text import md, shorts
from .widgets import formulas
from .widgets.editor import EDIT_LIMIT
from .widgets.heatmap import heatmap, show_heatmap
from .widgets.layout import dim_labels, shape_badge, token_labels


@dataclass
class Inputs:
    """The numbers every page starts from (row convention: one token per row)."""

    tq: list[str]
    tk: list[str]
    q_labels: list[str]
    k_labels: list[str]
    cross: bool
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


@dataclass(frozen=True)
class Where:
    """Where a group of controls goes: a container (None: here) and whether it is drawn at all
    (a closed tab is not drawn; its kept values still apply)."""

    box: Any = None
    drawn: bool = True


# ------------------------------------------------------------------ tokens
def _on_preset(widget_key: str) -> None:
    """Load an example, then reset the menu so it reads “choose an example” again."""
    choice = st.session_state.get(widget_key)
    st.session_state[widget_key] = ""
    if choice in scenario.PRESETS:
        for name, value in scenario.preset_values(choice).items():
            ss.put(name, value)


def by_label(factory, name: str, labels: list[str], label: str, **kw):
    """A select/multiselect over token labels whose state is kept as indices under the scenario's
    ``name`` (the index is what the URL and the click handlers use; labels change with tokens)."""
    wkey = state.scenario_picker(name)
    cur = ss.get(name)
    st.session_state[wkey] = labels[int(cur)] if name == "query" else [labels[int(i)] for i in cur]
    return factory(label, labels, key=wkey, on_change=_from_labels, args=(name, tuple(labels)), **kw)


def _from_labels(name: str, labels: tuple[str, ...]) -> None:
    chosen = st.session_state.get(state.scenario_picker(name))
    if name == "query":
        ss.put(name, labels.index(chosen) if chosen in labels else 0)
    else:
        ss.put(name, sorted(labels.index(c) for c in chosen or [] if c in labels))


def _tokens(name: str, last_key: str, problems: list) -> list[str]:
    """The tokens of a text box, or the last valid ones with a message."""
    text = ss.get(name)
    last = st.session_state.get(last_key) or tokenize(scenario.DEFAULTS["tokens"])
    if not isinstance(text, str) or len(text) > scenario.MAX_TOKEN_TEXT:
        problems.append(("error", t("err.tokens_text_long_kept", limit=scenario.MAX_TOKEN_TEXT, m=len(last))))
        return last
    toks = tokenize(text)
    if not toks:
        problems.append(("error", t("err.tokens_empty")))
        return last
    if len(toks) > scenario.MAX_TOKENS:
        problems.append(("error", t("err.tokens_too_many_kept", n=len(toks), limit=scenario.MAX_TOKENS, m=len(last))))
        return last
    if len(toks) == 1:
        problems.append(("info", t("info.single_token")))
    st.session_state[last_key] = toks
    return toks


def token_controls(problems: list, *, presets: bool = True, drawn: bool = True) -> tuple[list[str], list[str], bool]:
    """The token box (with the example menu and self/cross) → (query tokens, key tokens, cross).
    Not drawn (a lesson link hid it): the kept tokens still apply."""
    if drawn:
        st.text_input(t("pg.tokens"), **ss.bind("tokens"), help=t("pg.tokens.help"))
        token_options(presets=presets)
        token_boxes(main=False)
    return read_tokens(problems)


def token_options(*, presets: bool = True) -> None:
    """The example menu and the self/cross switch (they change more than the tokens)."""
    c2, c3 = st.columns([1, 1])
    if presets:
        with c2:
            preset_key = state.item(state.SCENARIO.preset, settings.get("lang"))  # one menu per language
            st.selectbox(t("pg.preset"), options=[""] + list(scenario.PRESETS), key=preset_key,
                         format_func=labeller("preset.", empty_key="pg.preset.none"),
                         on_change=_on_preset, args=(preset_key,))
    with c3:
        st.radio(t("pg.mode"), scenario.MODES, **ss.bind("mode"), format_func=labeller("pg.mode."), horizontal=True)


def token_boxes(*, main: bool = True) -> None:
    """The text boxes: the query tokens (unless ``main`` is False) and, in cross attention, the source tokens."""
    if main:
        st.text_input(t("pg.tokens"), **ss.bind("tokens"), help=t("pg.tokens.help"))
    if ss.get("mode") == "cross":
        st.text_input(t("pg.source"), **ss.bind("source"), help=t("pg.source.help"))


def read_tokens(problems: list) -> tuple[list[str], list[str], bool]:
    """The scenario's tokens → (query tokens, key tokens, cross): the last valid ones with a message
    where a box holds none or too many."""
    cross = ss.get("mode") == "cross"
    tq = _tokens("tokens", state.SCENARIO.last_tokens, problems)
    tk = _tokens("source", state.SCENARIO.last_source, problems) if cross else tq
    return tq, tk, cross


# ------------------------------------------------------------------ embeddings and Q/K/V
def _embeddings(problems: list, tq, tk, cross: bool, labels, *, drawn: bool, editors: bool, conv: str):
    """X (and X_src in cross mode) with the embedding choice → (X_q, X_kv, d_model)."""
    if drawn:
        e1, e2 = st.columns([2, 2])
        with e1:
            st.radio(t("pg.embedding"), scenario.EMBEDDINGS, **ss.bind("embedding"),
                     format_func=labeller("pg.embedding."), horizontal=True)
        with e2:
            st.slider(t("pg.d_model"), 1, scenario.MAX_DIM, **ss.bind("d_model"),
                      disabled=ss.get("embedding") != "random", help=t("pg.d_model.help"))
    all_tokens = tuple(tq) + (tuple(tk) if cross else ())
    X_all, unknown = compute.embedding(ss.get("embedding"), all_tokens, int(ss.get("d_model")), int(settings.get("seed")))
    if unknown:
        problems.append(("info", t("info.c18_unknown", tokens=", ".join(md(u) for u in unknown[:8]))))
    n_q, n_k, d_model = len(tq), len(tk), X_all.shape[1]
    # the fold's title names no token count: while it is closed nothing here depends on the tokens
    fold, opened = _x_fold() if editors else (None, False)
    show = opened and max(n_q, n_k) <= scenario.INTERACTIVE_TOKENS
    with fold or nullcontext():
        if opened:
            src = (f",  X_src {n_k}×{d_model}" if conv == "row" else f",  X_src {d_model}×{n_k}") if cross else ""
            shape_badge((f"X {n_q}×{d_model}" if conv == "row" else f"X {d_model}×{n_q}") + src)
            if not show:
                st.caption(t("info.large_n", n=max(n_q, n_k), limit=EDIT_LIMIT))
            elif conv == "column":
                st.caption(t("pg.editors_rows"))
        X_q = ss.editable("X", X_all[:n_q], labels[0], dim_labels(d_model), t("pg.edit_x"), problems, show_editor=show)
        X_kv = X_q if not cross else ss.editable("X_src", X_all[n_q:], labels[1], dim_labels(d_model),
                                                 t("pg.edit_x_src"), problems, show_editor=show)
    return X_q, X_kv, d_model


def x_fold_open() -> bool:
    """Whether the learner has opened the X editor's fold."""
    return bool(st.session_state.get(state.SCENARIO.x_fold_open))


def _x_fold():
    """The X editor's fold → (the expander, whether it is open). Closed by default and drawn only
    while open: a data grid re-rendered on every change cost the browser much of a Playground
    round trip (BENCHMARKS.md). Open or closed is kept across reruns, tabs and pages."""
    st.session_state[state.SCENARIO.x_fold] = x_fold_open()
    fold = st.expander(t("pg.edit_x.fold"), key=state.SCENARIO.x_fold, on_change=_keep_x_fold)
    return fold, bool(fold.open)


def _keep_x_fold() -> None:
    st.session_state[state.SCENARIO.x_fold_open] = bool(st.session_state.get(state.SCENARIO.x_fold))


def _projection_controls(*, drawn: bool, editors: bool, conv: str):
    """d_k and d_v sliders and the projection formula → (d_k, d_v, the editors' columns by name)."""
    if drawn:
        s1, s2 = st.columns(2)
        with s1:
            st.slider(t("pg.d_k"), 1, scenario.MAX_DIM, **ss.bind("d_k"))
        with s2:
            st.slider(t("pg.d_v"), 1, scenario.MAX_DIM, **ss.bind("d_v"))
    if editors:
        st.latex(formulas.PROJECTION[conv])
    cols = st.columns(3) if editors else (nullcontext(),) * 3
    return int(ss.get("d_k")), int(ss.get("d_v")), dict(zip(("W_q", "W_k", "W_v"), cols, strict=True))


def _qkv(problems: list, X_q, X_kv, labels, *, drawn: bool, editors: bool, show_editors: bool, conv: str) -> dict:
    """Q, K and V: identity (Q = K = V = X), projections, or typed directly — the matrices of
    ``attention_lab.scenario.qkv_matrices``, each through its editor."""
    if drawn:
        st.radio(t("pg.qkv"), core.lab.QKV_MODES, **ss.bind("qkv"), format_func=labeller("pg.qkv."), horizontal=True)
    qkv, d_model = ss.get("qkv"), X_q.shape[1]
    n_q, n_k = X_q.shape[0], X_kv.shape[0]
    d_k = d_v = d_model
    if qkv == "projection":
        d_k, d_v, where = _projection_controls(drawn=drawn, editors=editors, conv=conv)
        heads = {"W_q": ("W_Q", d_k, "k"), "W_k": ("W_K", d_k, "k"), "W_v": ("W_V", d_v, "v")}

        def edit(name, generated):
            label, d_out, suffix = heads[name]
            with where[name]:
                return ss.editable(name, generated, dim_labels(d_model), dim_labels(d_out, suffix), label, problems,
                                   show_editor=editors)
    else:
        rows = {"Q": labels[0], "K": labels[1], "V": labels[1]}
        if editors:
            st.caption(t("pg.qkv.direct.help")) if qkv == "direct" else st.markdown(t("pg.qkv.identity.help"))

        def edit(name, generated):
            return ss.editable(name, generated, rows[name], dim_labels(d_model), name, problems, show_editor=show_editors)
    out = scenario.qkv_matrices(qkv, X_q, X_kv, d_k, d_v, int(settings.get("seed")), edit, compute.projection)
    if editors and qkv == "projection":
        for m, n, d in (("Q", n_q, out["d_k"]), ("K", n_k, out["d_k"]), ("V", n_k, out["d_v"])):
            shape_badge(f"{m} = X·W_{m}: ({n}×{d_model})·({d_model}×{d}) → ({n}×{d})" if conv == "row"
                        else f"{m} = W^{m}·X: ({d}×{d_model})·({d_model}×{n}) → ({d}×{n})")  # W^Q = W_Qᵀ acts on columns
    if editors:
        d_k, d_v = out["d_k"], out["d_v"]
        shape_badge(f"Q {n_q}×{d_k},  K {n_k}×{d_k},  V {n_k}×{d_v}" if conv == "row"
                    else f"Q {d_k}×{n_q},  K {d_k}×{n_k},  V {d_v}×{n_k}")
    return {"qkv": qkv, **out}


def inputs(problems: list, *, conv: str = "row", editors: bool = False, embed: Where = Where(), qkv: Where = Where(),
           presets: bool = True, tokens: Where = Where(), options: bool = True) -> Inputs:
    """Draw the token, embedding and Q/K/V controls and build the matrices.

    With ``editors`` the matrix editors are drawn (up to 64 tokens); without, the learner's
    edits from the Playground still apply. ``embed``/``qkv`` say where those groups go; without
    ``options`` only the text boxes are drawn (the example menu and self/cross are elsewhere)."""
    if options:
        tq, tk, cross = token_controls(problems, presets=presets, drawn=tokens.drawn)
    else:
        if tokens.drawn:
            token_boxes()
        tq, tk, cross = read_tokens(problems)
    if max(len(tq), len(tk)) > scenario.INTERACTIVE_TOKENS:
        problems.append(("info", t("info.large_n", n=max(len(tq), len(tk)), limit=EDIT_LIMIT)))
    labels = (token_labels(tq), token_labels(tk))
    with embed.box or nullcontext():
        X_q, X_kv, d_model = _embeddings(problems, tq, tk, cross, labels, drawn=embed.drawn, editors=editors and embed.drawn,
                                         conv=conv)
    with qkv.box or nullcontext():
        show = editors and qkv.drawn and max(len(tq), len(tk)) <= scenario.INTERACTIVE_TOKENS
        m = _qkv(problems, X_q, X_kv, labels, drawn=qkv.drawn, editors=editors and qkv.drawn, show_editors=show, conv=conv)
    return Inputs(tq=tq, tk=tk, q_labels=labels[0], k_labels=labels[1], cross=cross, d_model=d_model,
                  X_q=X_q, X_kv=X_kv, **m)


def numbers_panel(problems: list, *, tokens_only: bool = False, help_text: str | None = None):
    """The shared scenario's controls, folded away on the concept pages: the full inputs
    (returns :class:`Inputs`) or just the token box (returns the tokens)."""
    with st.expander(t("shared.numbers"), expanded=False):
        st.caption(help_text or t("shared.numbers.help"))
        if tokens_only:
            return token_controls(problems)[0]
        return inputs(problems)


# ------------------------------------------------------------------ score function, mask, notation
def score_params(score: str, d_k: int, problems: list, *, editors: bool) -> dict[str, np.ndarray]:
    """The seeded (or edited) parameters of a score function (``attention_lab.scenario.score_params``):
    W for general; W_a, U_a, w_a for additive."""
    if score == "additive" and editors:
        st.slider(t("pg.d_a"), 1, scenario.MAX_DIM, **ss.bind("d_a"), help=t("pg.d_a.help"))
    d_a = int(ss.get("d_a"))
    kcols, acols = dim_labels(d_k, "k"), dim_labels(d_a, "a")
    cols = st.columns([2, 2, 1]) if editors and score == "additive" else (nullcontext(),) * 3
    shown = {"W": (cols[0], kcols, kcols, "W (d_k×d_k)"), "W_a": (cols[0], acols, kcols, "W_a (d_a×d_k)"),
             "U_a": (cols[1], acols, kcols, "U_a (d_a×d_k)"), "w_a": (cols[2], acols, ["w_a"], "w_a (d_a)")}

    def edit(name, generated):
        col, rows, columns, label = shown[name]
        with col:
            return ss.editable(name, generated, rows, columns, label, problems, show_editor=editors)

    return scenario.score_params(score, d_k, d_a, int(settings.get("seed")), edit, compute.projection)


def causal_checkbox(cross: bool, *, help_key: str = "pg.mask.causal.help") -> None:
    """The causal mask's checkbox; in cross attention it is off and says why."""
    st.checkbox(t("pg.mask.causal"), **ss.bind("causal"), disabled=cross,
                help=t("pg.mask.causal.cross") if cross else t(help_key))


def mask_controls(n_q: int, n_k: int, q_labels, k_labels, conv: str, *, cross: bool, chart_key: str,
                  click_queue: str, clear_key: str):
    """Causal checkbox, PAD tokens and the clickable mask map; returns the combined row mask or None."""
    causal_checkbox(cross)
    ss.put("pad", [i for i in ss.get("pad") if 0 <= int(i) < n_k])
    by_label(st.multiselect, "pad", k_labels, t("pg.mask.pad"), help=t("pg.mask.pad.help"), placeholder=t("pg.mask.pad.none"))
    mask = ss.current_mask(n_q, n_k, cross=cross)
    st.caption(t("pg.mask.custom.help"))
    mshow = np.ones((n_q, n_k)) if mask is None else mask.astype(float)
    if conv == "column":
        st.caption(t("pg.mask.column_note"))
    z, axes = qk_view(mshow, conv, shorts(q_labels), shorts(k_labels))
    show_heatmap(heatmap(z, decimals=0, sequential=True, clickable=True, **axes), key=chart_key, click_queue=click_queue)
    if ss.get("blocked") and st.button(t("pg.mask.clear"), key=clear_key):
        ss.put("blocked", [])
        st.rerun()
    return mask


def qk_axes(conv: str, q_labels, k_labels) -> dict:
    """Heatmap labels of an (n_q × n_k) matrix in the chosen notation (column: rows = keys)."""
    return panels.qk_axes(conv, q_labels, k_labels, current_lang())


def qk_view(z, conv: str, q_labels, k_labels) -> tuple[np.ndarray, dict]:
    """An (n_q × n_k) row-convention matrix laid out in the chosen notation (column: transposed)."""
    z = np.asarray(z)
    return (z.T if conv == "column" else z), qk_axes(conv, q_labels, k_labels)


def notation_switch() -> str:
    """The row/column notation radio, shared by every page; returns the chosen notation."""
    st.radio(t("pg.convention"), scenario.CONVENTIONS, **ss.bind("convention"), format_func=labeller("conv."),
             horizontal=True, help=t("pg.convention.help"))
    return ss.get("convention")
