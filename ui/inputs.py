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
from core.playground.tokens import tokenize

from . import compute, settings, state
from . import scenario_state as ss
from .i18n import current_lang, labeller, t
from .text import md, shorts
from .widgets import formulas
from .widgets.editor import EDIT_LIMIT
from .widgets.heatmap import heatmap, show_heatmap
from .widgets.layout import dim_labels, shape_badge, token_labels


@dataclass(frozen=True)
class Where:
    """Where a group of controls goes: a container (None: here), whether it is drawn at all (a closed tab is
    not drawn; its kept values still apply) and whether it is wide enough for its matrix editors side by
    side (the Playground's left column is not: there they stand one under another)."""

    box: Any = None
    drawn: bool = True
    wide: bool = True


def _editor_boxes(n: int, wide: bool):
    """Slots for n editors: side by side (``wide``) or one under another."""
    return st.columns(n) if wide else [st.container() for _ in range(n)]


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


# ------------------------------------------------------------------ the controls, then the ONE builder
# Each group of controls is drawn first, leaving a slot (a container) for each matrix editor it shows;
# ``attention_lab.scenario.numbers`` then builds the scenario's numbers once, calling :func:`_editor` for every
# matrix, which draws that matrix's editor in its slot (or none) and returns the matrix used.
Slots = dict  # matrix name → (the container its editor goes in or None, whether the editor is drawn)


def _embedding_controls(slots: Slots, *, drawn: bool, editors: bool, n: int, conv: str):
    """The embedding choice and d_model; the X editor's fold with its slots → the container for X's shape
    (filled once the numbers are built) or None."""
    if drawn:
        e1, e2 = st.columns([2, 2])
        with e1:
            st.radio(t("pg.embedding"), scenario.EMBEDDINGS, **ss.bind("embedding"),
                     format_func=labeller("pg.embedding."), horizontal=True)
        with e2:
            st.slider(t("pg.d_model"), 1, scenario.MAX_DIM, **ss.bind("d_model"),
                      disabled=ss.get("embedding") != "random", help=t("pg.d_model.help"))
    # the fold's title names no token count: while it is closed nothing here depends on the tokens
    fold, opened = _x_fold() if editors else (None, False)
    show = opened and n <= scenario.INTERACTIVE_TOKENS
    badge = None
    if opened:
        with fold:
            badge = st.empty()
            if not show:
                st.caption(t("info.large_n", n=n, limit=EDIT_LIMIT))
            elif conv == "column":
                st.caption(t("pg.editors_rows"))
    slots["X"] = slots["X_src"] = (fold, show)
    return badge


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


def _qkv_controls(slots: Slots, *, drawn: bool, editors: bool, show_direct: bool, conv: str, wide: bool = True):
    """Identity, projections or Q/K/V typed directly, d_k and d_v, and the editors' slots → the container
    for the shapes (filled once the numbers are built) or None."""
    if drawn:
        st.radio(t("pg.qkv"), core.lab.QKV_MODES, **ss.bind("qkv"), format_func=labeller("pg.qkv."), horizontal=True)
    if ss.get("qkv") == "projection":
        if drawn:
            s1, s2 = st.columns(2)
            with s1:
                st.slider(t("pg.d_k"), 1, scenario.MAX_DIM, **ss.bind("d_k"))
            with s2:
                st.slider(t("pg.d_v"), 1, scenario.MAX_DIM, **ss.bind("d_v"))
        if editors:
            st.latex(formulas.PROJECTION[conv])
        cols = _editor_boxes(3, wide) if editors else (None,) * 3
        slots.update({name: (col, editors) for name, col in zip(("W_q", "W_k", "W_v"), cols, strict=True)})
    else:
        if editors:
            st.caption(t("pg.qkv.direct.help")) if ss.get("qkv") == "direct" else st.markdown(t("pg.qkv.identity.help"))
        box = st.container() if show_direct else None
        slots.update({name: (box, show_direct) for name in ("Q", "K", "V")})
    return st.container() if editors else None


def _score_controls(slots: Slots, *, drawn: bool, wide: bool = True) -> None:
    """The score function, scale, temperature and the function's parameters (d_a, the editors' slots)."""
    if not drawn:
        return
    st.radio(t("pg.score"), core.SCORE_FUNCTIONS, **ss.bind("score"), format_func=labeller("score."), horizontal=True)
    score = ss.get("score")
    st.latex(formulas.SCORE_PAIR[score])
    s1, s2 = st.columns(2)
    with s1:
        st.radio(t("pg.scale"), scenario.SCALES, **ss.bind("scale"), format_func=labeller("scale."),
                 horizontal=True, help=t("pg.scale.help"))
    with s2:
        st.slider(t("pg.temperature"), 0.1, 5.0, step=0.1, **ss.bind("temperature"), help=t("pg.temperature.help"))
    _param_slots(slots, score, wide)
    st.caption(t("pg.score.note"))


def _param_slots(slots: Slots, score: str, wide: bool = True) -> None:
    """d_a (additive) and the slots of a score function's parameter editors, drawn."""
    if score == "additive":
        st.slider(t("pg.d_a"), 1, scenario.MAX_DIM, **ss.bind("d_a"), help=t("pg.d_a.help"))
        boxes = st.columns([2, 2, 1]) if wide else _editor_boxes(3, False)
        slots.update({name: (box, True) for name, box in zip(("W_a", "U_a", "w_a"), boxes, strict=True)})
    elif score == "general":
        slots["W"] = (st.container(), True)


# what each matrix's editor shows: its rows, its columns (token labels, or dimensions with a suffix), its label
EDITORS = {"X": ("q", "d", "pg.edit_x"), "X_src": ("k", "d", "pg.edit_x_src"),
           "W_q": ("d", "dk", "W_Q"), "W_k": ("d", "dk", "W_K"), "W_v": ("d", "dv", "W_V"),
           "Q": ("q", "d", "Q"), "K": ("k", "d", "K"), "V": ("k", "d", "V"),
           "W": ("dk", "dk", "W (d_k×d_k)"), "W_a": ("da", "dk", "W_a (d_a×d_k)"), "U_a": ("da", "dk", "U_a (d_a×d_k)"),
           "w_a": ("da", "w_a", "w_a (d_a)")}


def _editor(slots: Slots, labels: tuple, problems: list):
    """The ``edit`` of ``attention_lab.scenario.numbers``: each matrix through its editor, drawn in its slot
    when the slot shows it (else the learner's kept edits still apply)."""

    def axis(kind: str, size: int) -> list[str]:
        if kind in ("q", "k"):
            return list(labels[kind == "k"])
        if kind == "w_a":
            return ["w_a"]
        return dim_labels(size, {"d": "d", "dk": "k", "dv": "v", "da": "a"}[kind])

    def edit(name: str, generated):
        generated = np.asarray(generated, dtype=float)
        rows, cols, label = EDITORS[name]
        box, shown = slots.get(name, (None, False))
        shape = generated.reshape(generated.shape[0], -1).shape
        with box or nullcontext():
            return ss.editable(name, generated, axis(rows, shape[0]), axis(cols, shape[1]),
                               t(label) if label.startswith("pg.") else label, problems, show_editor=shown)

    return edit


def inputs(problems: list, *, conv: str = "row", editors: bool = False, embed: Where = Where(), qkv: Where = Where(),
           score: Where = Where(drawn=False), presets: bool = True, tokens: Where = Where(),
           options: bool = True, reading: list | None = None) -> scenario.Numbers:
    """Draw the token, embedding, Q/K/V (and, where ``score`` is drawn, score function) controls, then build
    the scenario's numbers once (``attention_lab.scenario.numbers``) with the matrix editors as its edits.

    With ``editors`` the matrix editors are drawn (up to 64 tokens); without, the learner's edits from the
    Playground still apply. ``embed``/``qkv``/``score`` say where those groups go; without ``options`` only
    the text boxes are drawn (the example menu and self/cross are elsewhere). ``reading``: where the messages
    about the tokens themselves go (too many, unknown, large n) when not with ``problems`` — the Playground's
    left column drops them, as its right column reads the same tokens and says them beside the token box."""
    said = problems if reading is None else reading
    if options:
        tq, tk, cross = token_controls(said, presets=presets, drawn=tokens.drawn)
    else:
        if tokens.drawn:
            token_boxes()
        tq, tk, cross = read_tokens(said)
    n = max(len(tq), len(tk))
    if n > scenario.INTERACTIVE_TOKENS:
        said.append(("info", t("info.large_n", n=n, limit=EDIT_LIMIT)))
    ss.put("pad", [i for i in ss.get("pad") if 0 <= int(i) < len(tk)])  # PAD positions past the tokens go
    slots: Slots = {}
    with embed.box or nullcontext():
        x_badge = _embedding_controls(slots, drawn=embed.drawn, editors=editors and embed.drawn, n=n, conv=conv)
    with qkv.box or nullcontext():
        show = editors and qkv.drawn and n <= scenario.INTERACTIVE_TOKENS
        qkv_badges = _qkv_controls(slots, drawn=qkv.drawn, editors=editors and qkv.drawn, show_direct=show, conv=conv,
                                   wide=qkv.wide)
    with score.box or nullcontext():
        _score_controls(slots, drawn=score.drawn, wide=score.wide)
    num = scenario.numbers(ss.values(), tq, tk, seed=int(settings.get("seed")),
                           edit=_editor(slots, (token_labels(tq), token_labels(tk)), problems),
                           project=compute.projection, embed=compute.embedding)
    if num.unknown:
        said.append(("info", t("info.c18_unknown", tokens=", ".join(md(u) for u in num.unknown[:8]))))
    if x_badge is not None:
        _x_shape(x_badge, num, conv)
    if qkv_badges is not None:
        with qkv_badges:
            _qkv_shapes(num, conv)
    return num


def _x_shape(box, num: scenario.Numbers, conv: str) -> None:
    n_q, n_k, d = len(num.tq), len(num.tk), num.d_model
    src = (f",  X_src {n_k}×{d}" if conv == "row" else f",  X_src {d}×{n_k}") if num.cross else ""
    with box:
        shape_badge((f"X {n_q}×{d}" if conv == "row" else f"X {d}×{n_q}") + src)


def _qkv_shapes(num: scenario.Numbers, conv: str) -> None:
    n_q, n_k, d_model, d_k, d_v = len(num.tq), len(num.tk), num.d_model, num.d_k, num.d_v
    if num.qkv == "projection":
        for m, n, d in (("Q", n_q, d_k), ("K", n_k, d_k), ("V", n_k, d_v)):
            shape_badge(f"{m} = X·W_{m}: ({n}×{d_model})·({d_model}×{d}) → ({n}×{d})" if conv == "row"
                        else f"{m} = W^{m}·X: ({d}×{d_model})·({d_model}×{n}) → ({d}×{n})")  # W^Q = W_Qᵀ acts on columns
    shape_badge(f"Q {n_q}×{d_k},  K {n_k}×{d_k},  V {n_k}×{d_v}" if conv == "row"
                else f"Q {d_k}×{n_q},  K {d_k}×{n_k},  V {d_v}×{n_k}")


def numbers_panel(problems: list, *, tokens_only: bool = False, help_text: str | None = None,
                  max_tokens: int | None = None, cut_message: str = "shared.too_long"):
    """The shared scenario's controls, folded away on the concept pages: the full inputs
    (returns ``attention_lab.scenario.Numbers``) or just the token box (returns the tokens; with ``max_tokens``
    the first that many, and the warning ``cut_message`` naming the cut). A page that shows them uses the scenario: it is started
    here if the page has not (so the frame keeps it in the page's link, and a restart brings the tokens back)."""
    if not st.session_state.get(state.SCENARIO.started):
        ss.start(problems)
    with st.expander(t("shared.numbers"), expanded=False):
        st.caption(help_text or t("shared.numbers.help"))
        if not tokens_only:
            return inputs(problems)
        tokens = token_controls(problems)[0]
    # a page of its own sizes takes only the tokens: it says so where the learner sees it, not only in the fold
    st.caption(t("shared.tokens_only"))
    if max_tokens is not None and len(tokens) > max_tokens:
        problems.append(("warning", t(cut_message, n=len(tokens), limit=max_tokens)))
        tokens = tokens[:max_tokens]
    return tokens


# ------------------------------------------------------------------ score function, mask, notation
def score_params(score: str, num: scenario.Numbers, problems: list) -> dict[str, np.ndarray]:
    """Another score function's parameters on the scenario's numbers, with their editors (the score functions
    page shows every function): ``attention_lab.scenario.score_params`` through :func:`_editor`."""
    slots: Slots = {}
    _param_slots(slots, score)
    edit = _editor(slots, (num.q_labels, num.k_labels), problems)
    return scenario.score_params(score, num.d_k, int(ss.get("d_a")), int(settings.get("seed")), edit, compute.projection)


def causal_checkbox(cross: bool, *, help_key: str = "pg.mask.causal.help") -> None:
    """The causal mask's checkbox; in cross attention it is off and says why."""
    st.checkbox(t("pg.mask.causal"), **ss.bind("causal"), disabled=cross,
                help=t("pg.mask.causal.cross") if cross else t(help_key))


def mask_controls(num: scenario.Numbers, conv: str, *, chart_key: str, click_queue: str, clear_key: str) -> None:
    """Causal checkbox, PAD tokens and the clickable map of the scenario's mask (``num.mask``)."""
    n_q, n_k = len(num.tq), len(num.tk)
    causal_checkbox(num.cross)
    by_label(st.multiselect, "pad", list(num.k_labels), t("pg.mask.pad"), help=t("pg.mask.pad.help"),
             placeholder=t("pg.mask.pad.none"))
    st.caption(t("pg.mask.custom.help"))
    mshow = np.ones((n_q, n_k)) if num.mask is None else num.mask.astype(float)
    if conv == "column":
        st.caption(t("pg.mask.column_note"))
    z, axes = qk_view(mshow, conv, shorts(num.q_labels), shorts(num.k_labels))
    show_heatmap(heatmap(z, decimals=0, sequential=True, clickable=True, **axes), key=chart_key, click_queue=click_queue)
    if ss.get("blocked") and st.button(t("pg.mask.clear"), key=clear_key):
        ss.put("blocked", [])
        st.rerun()


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
