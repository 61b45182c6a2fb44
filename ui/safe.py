"""The last line of defence: an unexpected error becomes a message, never a traceback."""

from __future__ import annotations

import logging

import streamlit as st

from .i18n import t

log = logging.getLogger("attention_lab")


def run(render) -> None:
    try:
        render()
    except Exception:  # any failure stays a friendly message (st.rerun/st.stop are BaseExceptions and pass)
        log.exception("page failed")
        st.error(t("err.unexpected"))
