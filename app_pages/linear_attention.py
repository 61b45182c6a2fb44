"""(being written)"""

import streamlit as st

from ui.i18n import t

st.markdown(t("page.linear_attention.blurb"))
