"""Home page: what attention is, the map of pages, and where to start."""

from __future__ import annotations

import streamlit as st

from .i18n import explain, t
from .settings import PAGES, settings_query


def render() -> None:
    st.markdown(t("home.lead"))
    st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")
    st.caption(t("home.formula_note"))
    st.subheader(t("home.map"))
    for p in PAGES:
        if p.id == "home":
            continue
        c1, c2 = st.columns([1, 3])
        with c1:
            st.page_link(p.path, label=t(f"page.{p.id}.title"), icon=p.icon, query_params=settings_query())
        with c2:
            st.markdown(f"{t(f'page.{p.id}.blurb')}  \n`{p.curriculum}`")
    st.subheader(t("home.start"))
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(explain("start_self"))
    with c2:
        st.markdown(explain("start_class"))
