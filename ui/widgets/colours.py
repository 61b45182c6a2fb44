"""The maps' colour scales and contrast rule live in :mod:`attention_lab.colours` (streamlit-free,
shared with the notebook views); this name stays for the app's building blocks."""

from attention_lab.colours import *  # noqa: F401,F403
