"""The small scaffold every page uses: collect problems, run a core call safely, show them.

A page body reads as: controls → ``guarded(core call)`` → building blocks. A ``ValueError``
from core becomes the translated message and the page keeps the last valid result."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import TypeVar

import streamlit as st

from serving import fair

from . import link, state
from .i18n import t, this_run

R = TypeVar("R")
log = logging.getLogger("attention_lab")
Problems = list[tuple[str, str]]  # (st function name: error / warning / info / success, message)


def guarded(problems: Problems, call: Callable[[], R], *, keep: str | None = None) -> R | None:
    """``call()``; on ``ValueError`` the message joins ``problems`` and the last valid result kept
    under the session key ``keep`` comes back instead (None when there is none)."""
    try:
        result = call()
    except ValueError as err:
        problems.append(("error", t("err.compute", detail=str(err))))
        return st.session_state.get(keep) if keep else None
    if keep:
        st.session_state[keep] = result
    return result


def show_problems(problems: Problems) -> None:
    """Each message once, in its own coloured box."""
    seen = set()
    for kind, msg in problems:
        if msg not in seen:
            seen.add(msg)
            getattr(st, kind)(msg)


def check_box(ok: bool, message: str) -> None:
    """A green box when a numerical check holds, a red one when it does not."""
    (st.success if ok else st.error)(message)


def boundary(render: Callable[[], None], *, queued: bool = False) -> None:
    """The last line of defence: an unexpected error becomes a message, never a traceback.

    The frame (app.py) runs every page inside it; a fragment, which reruns on its own, too.
    st.rerun / st.stop are BaseExceptions and pass through. The outermost boundary of a run also keeps
    the session within its fair share of the server (:mod:`serving.fair`) and, after the run, writes the link
    (:func:`ui.link.write`). ``queued``: a fragment whose heavy work is the server's one batch
    (:mod:`serving.decoding`), which shares it out among the sessions already; its run starts at once, never held
    back for the session's share, and its own CPU still counts."""
    def guarded_render() -> None:
        try:
            render()
        except Exception:
            log.exception("page failed")
            st.error(t("err.unexpected"))

    if fair.inside():  # inside the frame's boundary: the frame writes the link after the run
        fair.metered(guarded_render, cpu_spent, session_id)
        return
    with this_run():  # a fragment's rerun starts here
        fair.metered(guarded_render, cpu_spent, session_id, wait=not queued)
        link.write()


def cpu_spent() -> deque:
    """The session's CPU per run over the fair share's window ((end, cpu) entries, :mod:`serving.fair`), kept in its state."""
    spent = st.session_state.get(state.FRAME.cpu_spent)
    if spent is None:
        spent = st.session_state[state.FRAME.cpu_spent] = deque(maxlen=256)
    return spent


def session_id() -> str:
    """This run's session id ("" outside a run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)
    return ctx.session_id if ctx is not None else ""
