"""The shared scenario in session state: its values, the learner's matrix edits, the mask and
the cached core call. Every page that uses the scenario goes through here; the controls that
change it are in :mod:`ui.inputs`.

Values live under ``ui.state.SCENARIO`` (one key per name of ``attention_lab.scenario.DEFAULTS``); edits
are carried in ``SCENARIO.carry`` so they survive page switches and reach pages without editors.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import streamlit as st

from attention_lab import scenario

from . import compute, link, settings, state
from .i18n import t
from .widgets.editor import matrix_editor


def get(name: str):
    """A scenario value, kept in plain session state (it survives pages that do not draw its widget)."""
    return st.session_state.get(state.scenario_kept(name), scenario.DEFAULTS[name])


def put(name: str, value) -> None:
    st.session_state[state.scenario_kept(name)] = value


def _copy_back(name: str) -> None:
    put(name, st.session_state[state.scenario_value(name)])


def bind(name: str) -> dict:
    """Keyword arguments that tie a widget to a scenario value: ``st.radio(..., **bind("score"))``.

    The widget is seeded from the kept value on every draw and copies a change back, so the
    value survives page switches, closed tabs and fragment reruns (Streamlit forgets the state
    of a widget that a run does not draw)."""
    st.session_state[state.scenario_value(name)] = get(name)
    return {"key": state.scenario_value(name), "on_change": _copy_back, "args": (name,)}


def start(problems: list) -> None:
    """Every page that uses the scenario calls this first: defaults once per session, then, once,
    a shared link's scenario on top; the messages left by callbacks join this run's problems."""
    for name, default in scenario.DEFAULTS.items():
        st.session_state.setdefault(state.scenario_kept(name), list(default) if isinstance(default, list) else default)
    st.session_state.setdefault(state.SCENARIO.overrides, {})
    st.session_state.setdefault(state.SCENARIO.editor_version, 0)
    st.session_state.setdefault(state.SCENARIO.messages, [])
    if not st.session_state.get(state.SCENARIO.url_loaded):
        st.session_state[state.SCENARIO.url_loaded] = True
        params = {k: st.query_params.get(k) for k in st.query_params.keys()}
        if any(k in scenario.url_keys() or k.startswith("m_") for k in params):
            values_, matrices, refused = scenario.from_query(params)
            apply(values_, matrices)
            if refused:
                note("warning", t("err.url_values", names=", ".join(refused)))
    st.session_state[state.SCENARIO.changed] = {}
    st.session_state[state.SCENARIO.started] = True  # this run uses the scenario: the frame keeps it in the link
    problems.extend(st.session_state[state.SCENARIO.messages])
    st.session_state[state.SCENARIO.messages] = []


def link_part() -> dict[str, str] | None:
    """After a page's run (``ui.link.write`` asks): when the page used the scenario, its part of the link —
    tokens, matrices, masks — so a restart or another replica reopens the page from the learner's current
    scenario (the connection guard reopens the link; :func:`start` reads it); None when it did not."""
    if not st.session_state.pop(state.SCENARIO.started, False):
        return None
    return scenario.to_query(values(), kept_matrices())


def kept_matrices() -> dict:
    """The learner's matrices as they stand: this run's where the page computed them, else the edits and
    loaded ones kept so far (a page that draws no editor, such as the class page, reads them here)."""
    carried = {name: np.round(np.asarray(c["value"], dtype=float), 6).tolist()
               for name, c in st.session_state.get(state.SCENARIO.carry, {}).items()}
    loaded = {name: np.asarray(m, dtype=float).tolist()
              for name, m in st.session_state.get(state.SCENARIO.overrides, {}).items()}
    return loaded | carried | changed_matrices()


def note(kind: str, message: str) -> None:
    """A message for the next run (from a callback, before the page draws)."""
    st.session_state.setdefault(state.SCENARIO.messages, []).append((kind, message))


def apply(values_: dict, matrices: dict) -> None:
    """Put a scenario into the widgets' state (only before they render, or in a callback)."""
    for name, v in values_.items():
        put(name, v)
    st.session_state[state.SCENARIO.overrides] = {k: np.asarray(v, dtype=float) for k, v in matrices.items()}
    st.session_state[state.SCENARIO.editor_version] = st.session_state.get(state.SCENARIO.editor_version, 0) + 1


def values() -> dict:
    vals = {name: get(name) for name in scenario.DEFAULTS}
    vals["pad"] = sorted(int(i) for i in vals["pad"])
    vals["blocked"] = sorted([int(i), int(j)] for i, j in vals["blocked"])
    return vals


def changed_matrices() -> dict:
    """The matrices that differ from the generated ones this run (edits and loaded matrices)."""
    return dict(st.session_state.get(state.SCENARIO.changed, {}))


# ------------------------------------------------------------------ matrices with the learner's edits
def editor_key(name: str, rows, cols, generated: np.ndarray) -> str:
    """Widget key of a matrix editor. It changes — so edits start afresh — when its labels, the
    generated values (seed, sizes, embedding) or a loaded scenario change."""
    sig = zlib.crc32("\x1f".join(list(rows) + ["|"] + list(cols)).encode("utf-8"))
    sig = zlib.crc32(np.ascontiguousarray(generated, dtype=np.float64).tobytes(), sig)
    return state.editor(name, f"{sig:08x}", st.session_state.get(state.SCENARIO.editor_version, 0))


def _override(name: str, generated: np.ndarray, problems: list) -> np.ndarray:
    """A matrix loaded from a link or a file, when it still fits; else the generated one."""
    ov = st.session_state[state.SCENARIO.overrides].get(name)
    if ov is None:
        return generated
    fitted = scenario.fit(ov, generated)
    if fitted is not None:
        return fitted
    got = ov.shape if ov.ndim == 2 else (ov.size, 1)
    problems.append(("warning", t("err.override_shape", name=name, got="×".join(map(str, got)),
                                  want="×".join(map(str, generated.reshape(generated.shape[0], -1).shape)))))
    del st.session_state[state.SCENARIO.overrides][name]
    return generated


def editable(name: str, generated: np.ndarray, rows: list[str], cols: list[str], label: str,
             problems: list, *, show_editor: bool) -> np.ndarray:
    """generated ⊕ URL/file override ⊕ the learner's cell edits → the matrix core receives.

    A carried edit is used only while its editor key (labels, generated values, loaded
    scenario) is unchanged; otherwise it no longer belongs here and is dropped with a note."""
    generated = np.asarray(generated, dtype=float)
    base = _override(name, generated, problems)
    k = editor_key(name, rows, cols, generated)
    carry = st.session_state.setdefault(state.SCENARIO.carry, {})
    carried = carry.get(name)
    if carried is not None and carried["key"] == k:
        base = np.asarray(carried["value"], dtype=float).reshape(generated.shape)
    elif carried is not None:  # the tokens, sizes or seed changed
        problems.append(("info", t("info.edits_reset", name=name)))
        del carry[name]
        carried = None
    value = base
    if show_editor:
        value, problem = matrix_editor(label, base, row_labels=rows, col_labels=cols, key=k,
                                       decimals=settings.get("precision"))
        if problem:
            problems.append(("error", problem))
    value = np.asarray(value, dtype=float).reshape(generated.shape)
    if not np.array_equal(value, generated):
        st.session_state[state.SCENARIO.changed][name] = np.round(value, 6).tolist()
        carry[name] = {"key": k, "value": value}
    elif carried is not None:
        del carry[name]
    return value


# ------------------------------------------------------------------ mask, scale and the core call
def current_mask(n_q: int, n_k: int, *, cross: bool = False, window: int = 0):
    """The scenario's mask (causal & padding & clicked cells; a sliding window where the masks page adds
    one), row convention, or None: ``attention_lab.scenario.mask`` on the kept values."""
    return scenario.mask(n_q, n_k, causal=get("causal"), pad=get("pad"), blocked=get("blocked"), cross=cross,
                         window=window)


def toggle_mask_cell(cell: tuple[int, int]) -> None:
    """A click on a mask cell blocks or unblocks that (query, key) pair."""
    if get("convention") == "column":
        cell = (cell[1], cell[0])  # column notation: rows are keys, columns are queries
    blocked = {tuple(c) for c in get("blocked")} ^ {tuple(cell)}
    put("blocked", sorted(list(c) for c in blocked))


def run(num: scenario.Numbers, conv: str = "row", **changes):
    """The cached core call for the scenario's numbers in one notation (raises ValueError); ``changes`` replace
    fields of the numbers (another score function and its parameters, another mask)."""
    num = dataclasses.replace(num, **changes) if changes else num
    return compute.playground(**num.args(conv), device=settings.get("device"))


link.contribute(link_part)  # ui.link writes the scenario's part of the link without importing this module
