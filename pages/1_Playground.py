"""The Attention Playground (C1–C2, C4–C9, C11, C13–C16, C18–C19, C33, C39)."""

import streamlit as st

from ui import playground, safe, settings, shared

settings.page_setup("playground")


@st.fragment
def body() -> None:
    """Everything below the header: a change here reruns only this part (not the sidebar).

    A fragment rerun skips page_setup, so the scenario's widget values are kept here too
    (the closed setup tabs' widgets are not drawn)."""
    shared.persist()
    safe.run(playground.render)


body()
