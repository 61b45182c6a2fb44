"""A bare Streamlit page for benchmark baselines: one text box, one line of output."""

import streamlit as st

text = st.text_input("text", key="text")
st.markdown(f"echo: {len(text.split())} words")
