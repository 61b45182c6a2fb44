"""Step-through controls: ◀ ▶ buttons and the ← → keys over steps 1 … count, with a sentence saying where the
learner is. One building block for every page that replays something step by step (the KV cache, the tiles,
the delta rule's state)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import streamlit as st

from ..i18n import t
from .keys import arrow_keys


def _move(step_key: str, count: int, direction: str) -> None:
    step = st.session_state.get(step_key, 1)
    step = step if isinstance(step, int) and not isinstance(step, bool) else 1
    st.session_state[step_key] = min(count, step + 1) if direction == "next" else max(1, step - 1)


def stepper(count: int, problems: list, *, step_key: str, prev_key: str, next_key: str, keys_key: str, bad: str,
            now: Callable[[int], str]) -> int:
    """The step 1 … ``count`` kept in ``step_key``: a value outside (a tampered link or state, fewer steps than
    before) is brought within and, unless it was the first step, named (``bad``); ``now(step)`` is the sentence
    beside the buttons. Returns the step."""
    raw = st.session_state.get(step_key, 1)
    step = raw if isinstance(raw, int) and not isinstance(raw, bool) else 1
    if not 1 <= step <= count:
        if raw != 1:
            problems.append(("warning", bad))
        step = min(max(step, 1), count)
    st.session_state[step_key] = step
    c1, c2, c3 = st.columns([1, 1, 4])
    with c1:
        st.button("◀", key=prev_key, disabled=step <= 1, on_click=_move, args=(step_key, count, "prev"), width="stretch",
                  help=t("kv.step.prev"))
    with c2:
        st.button("▶", key=next_key, disabled=step >= count, on_click=_move, args=(step_key, count, "next"),
                  width="stretch", help=t("kv.step.next"))
    with c3:
        st.markdown(now(step))
    arrow_keys(key=keys_key, on_key=partial(_move, step_key, count))
    return step
