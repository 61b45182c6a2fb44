"""Making learner text safe to show: tokens are data, never markup."""

from __future__ import annotations

import html
import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$&:])")


def md(text: str) -> str:
    """Escape ``text`` for st.markdown so it shows literally (no HTML, links, math or emphasis)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def plotly_label(text: str, limit: int = 24) -> str:
    """Escape ``text`` for plotly (which renders a subset of HTML in labels) and shorten it."""
    s = str(text)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return html.escape(s, quote=True)


def indexed_labels(tokens: list[str]) -> list[str]:
    """Unique labels for axes and table rows even when a token repeats: '0 the', '3 the'."""
    return [f"{i} {tok}" for i, tok in enumerate(tokens)]
