"""A second floor for the browser benchmark: the Playground's layout with no attention computed.

The controls a token change re-sends (token row, notation, five setup tabs drawn lazily with
the score tab open), the whole pipeline as ONE heatmap component of the right number of cells
(n × 5n, seeded numbers) and a small inspector. It bounds what any Playground with these
controls can reach on this framework, whatever it computes."""

import sys
from pathlib import Path

import numpy as np
import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ui.widgets.heatmap import heatmap, show_heatmap  # noqa: E402

c1, c2, c3 = st.columns([3, 1.3, 1.3])
with c1:
    text = st.text_input("text", key="text")
with c2:
    st.selectbox("example", ["", "a", "b"], key="example")
with c3:
    st.radio("mode", ["self", "cross"], key="mode", horizontal=True)
st.radio("notation", ["row", "column"], key="notation", horizontal=True)
tabs = st.tabs(["X", "Q, K, V", "score", "mask", "share"], key="tab", on_change="rerun", default="score")
with tabs[2]:
    st.radio("score", ["dot", "scaled", "general", "additive", "cosine"], key="score", horizontal=True)
    st.latex(r"S = Q K^\top")
    st.slider("T", 0.1, 5.0, 1.0, key="T")
n = max(1, len(text.split()))
labels = [f"{i} w{i}" for i in range(n)]
rng = np.random.default_rng(n)
st.subheader("pipeline")
st.latex(r"\mathrm{softmax}\left(Q K^\top / \sqrt{d_k}\right) V")
show_heatmap(heatmap(rng.random((n, 5 * n)), x_labels=[f"k{i}" for i in range(5 * n)], y_labels=labels,
                     x_title="key", y_title="query", decimals=3), key="skeleton.pipeline")
st.subheader("inspector")
st.selectbox("query", labels, key="query")
show_heatmap(heatmap(rng.random((n, 3)), x_labels=["v0", "v1", "v2"], y_labels=labels, x_title="dim",
                     y_title="query", decimals=3), key="skeleton.inspector")
st.markdown(f"echo: {len(text.split())} words")
