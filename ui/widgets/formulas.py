"""The formulas (LaTeX, and the MathML generated from it) live in :mod:`attention_lab.formulas` (streamlit-free, shared
with the notebook export and the notebook views); this name stays for the pages that import it."""

from attention_lab.formulas import *  # noqa: F401,F403
