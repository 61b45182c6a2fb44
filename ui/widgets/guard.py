"""The connection guard (assets/components/guard.js): after a restart or a lost replica the page
reopens the link it held when the connection dropped, so the new session starts from the learner's
current scenario; while the server is away the learner reads the app's message, not Streamlit's.
:func:`address` is how the Playground writes that link (assets/components/address.js, through ui.link)."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

import streamlit as st

from .. import state
from ..i18n import t
from .assets import ASSETS, SILENT_LIB


def _component(name: str, file: str):
    return st.components.v2.component(name, js=SILENT_LIB + (ASSETS / file).read_text(encoding="utf-8"))


_GUARD = _component("attention_lab_guard", "guard.js")
_ADDRESS = _component("attention_lab_address", "address.js")


def session_id() -> str:
    """A random id for this server session (a new session after a restart or on another replica has another)."""
    sid = st.session_state.get(state.FRAME.session_id)
    if sid is None:
        sid = st.session_state[state.FRAME.session_id] = uuid.uuid4().hex
    return sid


def connection_guard() -> None:
    """Mount the guard (the frame calls this first on every full run, before anything writes the URL)."""
    # on_reconnected_change: the guard's trigger after a reconnect asks for a run (the callback has nothing to do)
    _GUARD(data={"sid": session_id(), "text": {"title": t("conn.title"), "body": t("conn.body")}}, key=state.FRAME.guard,
           on_reconnected_change=_reconnected)


def _reconnected() -> None:
    """The run the guard asked for after a reconnect: drawing the frame is all it needs."""


def address(query: dict, *, key: str) -> None:
    """Put ``query`` (URL parameters) in the browser's address bar in place (``ui.link.address_bar``).
    Streamlit's ``st.query_params`` is not written: its update re-renders the whole app in the browser."""
    _ADDRESS(data={"url": "?" + urlencode(query)}, key=key)


_MEMORY = st.components.v2.component("attention_lab_memory", js=(ASSETS / "memory.js").read_text(encoding="utf-8"),
                                     css=(ASSETS / "memory.css").read_text(encoding="utf-8"))


def memory(*, home: bool, tutorial: bool, pages: dict[str, str], lessons: dict[str, str]) -> None:
    """Where the learner stopped, kept in this browser (assets/components/memory.js): saved after every run;
    on a visit without parameters (the session's first run had none) the page offers to go back there.
    The sidebar's "Forget my progress" clears it (a new nonce in ``data.forget``). ``pages`` and ``lessons``: the
    offer's words for each page (by its URL path) and lesson (by its id), in this run's language."""
    bare = st.session_state.setdefault(state.FRAME.resume, not list(st.query_params.keys()))
    _MEMORY(data={"bare": bool(bare), "home": home, "tutorial": tutorial, "pages": pages, "lessons": lessons,
                  "forget": st.session_state.get(state.FRAME.forget),
                  "text": {k: t(f"mem.{k}") for k in ("title", "later", "forget", "note")}},
            key=state.FRAME.memory)


def forget_button() -> None:
    """The sidebar's control: forget the progress kept in this browser (the tutorial's and the last page)."""
    def _forget() -> None:
        st.session_state[state.FRAME.forget] = uuid.uuid4().hex

    st.button(t("mem.forget"), key=state.FRAME.forget_button, on_click=_forget, help=t("mem.note"),
              icon=":material/delete_history:")
    if st.session_state.get(state.FRAME.forget):
        st.caption(t("mem.forgotten"))
