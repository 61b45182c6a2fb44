"""What the whole document needs for WCAG 2.2 AA, set by the frame (app.py) on every run: ``<html lang>``
following the chosen language, contrast fixes for Streamlit's own greys, visible focus, reduced
motion, and the high-contrast setting. The maps' own accessibility lives in their components
(assets/components/heatmap_lib.js, modelview.js)."""

from __future__ import annotations

import streamlit as st

from .assets import ASSETS, SILENT_LIB

_FRAME = st.components.v2.component("attention_lab_frame", js=SILENT_LIB + (ASSETS / "frame_a11y.js").read_text(encoding="utf-8"))

# Streamlit's own greys that fall under 4.5 : 1 on white (measured with axe-core): captions #828180
# (3.9 : 1), a disabled widget's label #acabaa (2.3 : 1), code comments #808495 (3.6 : 1).
CSS = """
<style>
[data-testid="stCaptionContainer"] { opacity: 1 !important; }
[data-testid="stCaptionContainer"], [data-testid="stCaptionContainer"] p { color: #57534e; }
label[data-testid="stWidgetLabel"][disabled] p, [data-testid="stWidgetLabel"][disabled] { color: #6b6b6b; }
.stCode .token.comment, .stCode .token.prolog { color: #5c6370; }
/* KaTeX's last glyph overhangs its box by 1–3 px, which made every display formula a scroll box a
   keyboard cannot reach (axe: scrollable-region-focusable) */
.katex-display { padding: 0 6px 6px 0; }
:focus-visible { outline: 3px solid #1d4ed8 !important; outline-offset: 2px; }
@media (prefers-reduced-motion: reduce) {
  *, *::before, *::after { animation-duration: 0.001ms !important; animation-iteration-count: 1 !important;
    transition-duration: 0.001ms !important; scroll-behavior: auto !important; }
}
/* the frame's own element takes no room */
.st-key-frame-a11y { position: absolute; width: 1px; height: 1px; overflow: hidden; }
</style>
"""

# the high-contrast setting: black text on white, outlined controls, thick focus rings
HC_CSS = """
<style>
html.al-hc .stApp, html.al-hc .stApp p, html.al-hc .stApp li, html.al-hc .stApp label, html.al-hc .stApp span,
html.al-hc [data-testid="stCaptionContainer"] p, html.al-hc .stApp h1, html.al-hc .stApp h2, html.al-hc .stApp h3 {
  color: #000000 !important; }
html.al-hc .stApp { background: #ffffff !important; }
html.al-hc [data-testid="stSidebar"] { background: #ffffff !important; border-right: 2px solid #000000; }
html.al-hc .stApp button, html.al-hc .stApp input, html.al-hc .stApp textarea, html.al-hc [data-baseweb="select"] > div {
  border: 2px solid #000000 !important; }
html.al-hc .stApp a { color: #0000ee !important; text-decoration: underline !important; }
html.al-hc .shape-badge { background: #ffffff; color: #000000; border: 1px solid #000000; }
html.al-hc :focus-visible { outline: 4px solid #000000 !important; outline-offset: 2px; }
</style>
"""


def frame(lang: str, high_contrast: bool, *, key: str, css: str = "") -> None:
    """Once per run, from app.py: the CSS (the app's ``css`` and this module's, one element), and the
    document's language and contrast class."""
    st.markdown(css + CSS + (HC_CSS if high_contrast else ""), unsafe_allow_html=True)
    _FRAME(data={"lang": lang, "hc": bool(high_contrast)}, key=key)
