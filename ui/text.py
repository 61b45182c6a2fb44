"""Making learner text safe to show: tokens are data, never markup."""

from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$&:])")


def md(text: str) -> str:
    """Escape ``text`` for st.markdown so it shows literally (no HTML, links, math or emphasis)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def indexed_labels(tokens: list[str]) -> list[str]:
    """Unique labels for axes and table rows even when a token repeats: '0 the', '3 the'."""
    return [f"{i} {tok}" for i, tok in enumerate(tokens)]


def short(text: str, limit: int = 14) -> str:
    """A label shortened for a chart axis (shown as text, never as HTML)."""
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def shorts(labels) -> list[str]:
    """:func:`short` for every label."""
    return [short(s) for s in labels]
