"""Presenter view on every page and lesson, from the frame (app.py), not page by page: a link with ``present=1``
opens it (``present=0`` closes it); it then stays for the session's page switches, and every link written keeps
it. No sidebar, no header bar, larger type (the root size: everything in rem grows), the maps enlarged to the
screen (:mod:`ui.widgets.heatmap` asks :func:`ui.settings.presenting`) and the page's main map on the first screen, and a button
to leave it. The Playground's own view (:mod:`ui.view`) follows it, and its presenter toggle sets it. The pages'
step-throughs stay as they are."""

from __future__ import annotations

import streamlit as st

from . import link, nav, settings, state, view
from .i18n import t
from .widgets.assets import ASSETS, SILENT_LIB

PARAM = view.URL["present"]
ROOT_PX = 20  # the root font size in presenter view (Streamlit's own: 16 px): type 1.25× larger
ROOT = f"<style>html {{font-size: {ROOT_PX}px;}}</style>"  # not on the Playground: its step-through fits its own sizes
CSS = ("<style>section[data-testid=stSidebar], [data-testid=stSidebarCollapsedControl], [data-testid=stExpandSidebarButton],"
       " header[data-testid=stHeader] {display: none;}"
       " .stMainBlockContainer {padding: 0.5rem 1.5rem 2rem 1.5rem; max-width: 100%;}"
       " .stMainBlockContainer h1 {font-size: 1.9rem; padding: 0.25rem 0 0.5rem 0;}"
       # a code block's function names (Streamlit's #1c83e1: 3.8:1, under 4.5:1 at this size) darker: 6.5:1
       " .stMainBlockContainer code .token.function {color: #0b5cad;}</style>")
_MAP_FIRST = st.components.v2.component("attention_lab_present",
                                        js=SILENT_LIB + (ASSETS / "present.js").read_text(encoding="utf-8"))


on = settings.presenting  # whether this session shows the presenter view (kept in ui.settings, which the maps read)


def put(value: bool) -> None:
    st.session_state[state.FRAME.present] = bool(value)


def from_link() -> None:
    """Once per session: ``present=1`` (or ``true``) in the link opens the view, ``0`` (``false``) closes it; any
    other value is ignored here (the Playground names it in its own message)."""
    if st.session_state.get(state.FRAME.present_loaded):
        return
    st.session_state[state.FRAME.present_loaded] = True
    raw = st.query_params.get(PARAM)
    if raw in ("1", "true", "0", "false"):
        put(raw in ("1", "true"))


def frame(page: str) -> None:
    """Every run, before the page's title: in presenter view its style, the way out, and the page's main map brought
    to the first screen once per page shown (assets/components/present.js); the link keeps it."""
    from_link()
    if not on():
        if st.query_params.get(PARAM) in ("1", "true"):  # left: the link loses it (a bad value stays, to be named)
            link.add({PARAM: None})
        return
    link.add({PARAM: "1"})
    # style only: Streamlit puts it out of the flow (a markdown element would be the first, invisible)
    st.html(CSS if page == nav.PAGE_BY_NAME["playground"].url else CSS + ROOT)
    st.button(t("present.leave"), key=state.FRAME.present_leave, on_click=put, args=(False,), type="tertiary",
              help=t("present.leave.help"))
    lesson = st.query_params.get("lesson") or ""  # a lesson of the tutorial is a page of its own here
    _MAP_FIRST(data={"token": f"{page}?{lesson}"}, key=state.FRAME.present_map)
