"""Bring one part of the page into view and focus it, once per token (assets/components/focus.js): the exercise a
teacher took the class to. The part is found by its Streamlit key (``state.css_class``)."""

from __future__ import annotations

import streamlit as st

from .. import state
from .assets import ASSETS, SILENT_LIB

_FOCUS = st.components.v2.component("attention_lab_focus", js=SILENT_LIB + (ASSETS / "focus.js").read_text(encoding="utf-8"))


def bring_into_view(key: str, token: str, *, component_key: str) -> None:
    """Scroll the element of Streamlit key ``key`` into view and focus it when ``token`` is new to this page."""
    _FOCUS(data={"cls": state.css_class(key)[1:], "token": token}, key=component_key)
