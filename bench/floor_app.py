"""A floor for the browser benchmark: one text box and five heatmaps drawn by the app's own
renderer, with no attention computed (seeded numbers of the right shape). It shows what the
framework itself costs to send and draw five charts after a change."""

import sys
from pathlib import Path

import numpy as np
import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from ui.widgets.heatmap import heatmap, show_heatmap  # noqa: E402

text = st.text_input("text", key="text")
n = max(1, len(text.split()))
labels = [f"{i} w{i}" for i in range(n)]
rng = np.random.default_rng(n)
for name in ("scores", "scaled", "masked", "weights", "output"):
    spec = heatmap(rng.random((n, n)), x_labels=labels, y_labels=labels, x_title="key", y_title="query", decimals=3)
    show_heatmap(spec, key=f"floor.{name}")
st.markdown(f"echo: {len(text.split())} words")
