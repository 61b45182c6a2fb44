"""(being written)"""

import streamlit as st

from ui.i18n import t

st.markdown(t("page.long_context.blurb"))
