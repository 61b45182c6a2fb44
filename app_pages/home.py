"""Home: what attention is, the map of pages, and where to start (self-study or a class)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from attention_lab.tutorial import LESSONS
from ui import nav, settings
from ui.i18n import explain, t


def page_map() -> None:
    st.subheader(t("home.map"))
    for p in nav.PAGES[1:]:
        c1, c2 = st.columns([1, 3])
        with c1:
            st.page_link(p.file, label=t(f"page.{p.name}.title"), icon=p.icon, query_params=settings.query())
        with c2:
            st.markdown(t(f"page.{p.name}.blurb", n=len(LESSONS)) if p.name == "tutorial" else t(f"page.{p.name}.blurb"))


def where_to_start() -> None:
    st.subheader(t("home.start"))
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(explain("start_self").replace("{lessons}", str(len(LESSONS))))
    with c2:
        st.markdown(explain("start_class"))


def sources() -> None:
    """The five source documents, by title, in the learner's language."""
    with st.expander(t("sources.title")):
        st.caption(t("sources.help"))
        st.markdown("\n".join(f"- {t(f'sources.{n:03d}')}" for n in range(5)))


def for_teachers() -> None:
    """The curriculum mapping, for teachers only (learners read plain titles)."""
    with st.expander(t("home.teachers")):
        st.caption(t("home.teachers.help"))
        st.dataframe(pd.DataFrame([(t(f"page.{p.name}.title"), p.curriculum) for p in nav.PAGES],
                                  columns=[t("home.teachers.page"), t("home.teachers.ids")]),
                     hide_index=True, width="stretch")


st.markdown(t("home.lead"))
st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")
st.caption(t("home.formula_note"))
page_map()
where_to_start()
sources()
for_teachers()
