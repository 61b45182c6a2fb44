"""Small layout pieces: labels, a panel's header (title, formula, shape line), the shape badge, CSS."""

from __future__ import annotations

import html
from collections.abc import Sequence

import streamlit as st

from attention_lab.labels import dim_labels  # noqa: F401  (shared with the notebook views)

from .. import state
from ..i18n import current_lang, t
from ..text import indexed_labels


def token_labels(tokens: Sequence[str]) -> list[str]:
    return indexed_labels(list(tokens))


def panel_header(title: str, latex: str, shape: str, *, compact: bool = False) -> None:
    """A panel's bold title, its formula and its shape line as one element.

    One element instead of three: every element is a message the browser renders on each
    rerun, and the pipeline has five panels. ``compact`` puts the formula on the title's line
    (the Playground's pipeline beside its controls). ``title`` is UI text (no learner input)."""
    badge = f"<span class='shape-badge'>{html.escape(shape, quote=True)}</span>"
    if compact:
        st.markdown(f"**{title}** &nbsp; ${latex}$\n\n{badge}", unsafe_allow_html=True)
    else:
        st.markdown(f"**{title}**\n\n$$\n{latex}\n$$\n\n{badge}", unsafe_allow_html=True)


def shape_badge(text: str) -> None:
    """A one-line shape statement such as ``Q (4×3) · Kᵀ (3×4) → (4×4)``."""
    st.markdown(f"<span class='shape-badge'>{html.escape(text, quote=True)}</span>", unsafe_allow_html=True)


CSS = """
<style>
.shape-badge {font-family: "Source Code Pro", ui-monospace, SFMono-Regular, Menlo, "attention-lab-kr", monospace;
  font-size: 0.92rem;
  background: #eef2ff; color: #1e3a8a; border-radius: 6px; padding: 2px 8px; display: inline-block;}
div[data-testid="stMetricValue"] {font-size: 1.4rem;}
/* words inside formulas (행, 열, 타깃 … in Korean) fall back to the app's Korean web font */
.katex .mord.text, .katex .text {font-family: KaTeX_Main, "attention-lab-kr", "Times New Roman", serif;}
.katex-mathml, .katex-mathml * {font-family: math, "attention-lab-kr", serif;}
/* display formulas a little smaller than KaTeX's 1.21em, so the long ones fit half a page */
.katex-display > .katex {font-size: 1.08em;}
/* a compact header: the pipeline should start high on a 720-pixel projector screen */
.stMainBlockContainer {padding-top: 2.2rem; padding-left: 2.5rem; padding-right: 2.5rem;}
h1 {font-size: 2.1rem !important; padding-top: 0.2rem !important; padding-bottom: 0.4rem !important;}
/* a live class's join code, read from the back of the room */
.stMarkdown p.al-join-code {font-family: "Source Code Pro", ui-monospace, monospace; font-size: 2.8rem !important;
  font-weight: 700; letter-spacing: 0.14em; white-space: nowrap; line-height: 1.1; margin: 0 0 0.4rem 0; color: inherit;}
</style>
"""


def file_uploader(label: str, *, types: list[str], key: str, limit_kb: int, **kw):
    """``st.file_uploader`` whose own texts follow the app's language. Streamlit writes its button
    ("Upload") and limit line ("1MB per file • JSON") in English whatever the app's language; in
    Korean a style scoped to this uploader hides them and draws ours in their place (CSS
    ``::after``: Streamlit re-renders its own elements, so their text cannot be replaced in place).
    The limit shown is the app's own (``limit_kb``), which is what the upload is checked against."""
    got = st.file_uploader(label, type=types, key=key, **kw)
    if current_lang() != "en":
        sel, kinds = state.css_class(key), "/".join(x.upper() for x in types if x != "jpeg")
        browse, limit = _css_text(t("class.upload.browse")), _css_text(t("class.upload.limit", types=kinds, kb=limit_kb))
        button = f"{sel} [data-testid=stFileUploaderDropzone] button [data-testid=stMarkdownContainer] p"
        note = f"{sel} [data-testid=stFileUploaderDropzoneInstructions] span"
        st.markdown(f"<style>{button}, {note} {{font-size: 0;}} {button}::after {{content: {browse}; font-size: 0.875rem;}}"
                    f" {note}::after {{content: {limit}; font-size: 0.75rem;}}</style>", unsafe_allow_html=True)
    return got


def _css_text(text: str) -> str:
    """A CSS string of UI text (our own strings: no quotes or backslashes are kept)."""
    return '"' + "".join(c for c in text if c not in '"\\<>\n') + '"'
