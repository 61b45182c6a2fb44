"""← / → anywhere on the page (not while typing) step through the pipeline."""

from __future__ import annotations

import streamlit as st

from .assets import ASSETS, SILENT_LIB

_KEYS = st.components.v2.component("attention_lab_keys", js=SILENT_LIB + (ASSETS / "keys.js").read_text(encoding="utf-8"))


def arrow_keys(*, key: str, on_key) -> None:
    """Mount the listener; ``on_key("prev" | "next")`` runs when an arrow is pressed."""

    def changed() -> None:
        state = st.session_state.get(key) or {}
        pressed = state.get("key") if hasattr(state, "get") else None
        if pressed in ("prev", "next"):
            on_key(pressed)

    _KEYS(key=key, on_key_change=changed)
