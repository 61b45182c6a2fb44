"""Labels for maps and charts: shortened, indexed when a token repeats, per dimension (plain text)."""

from __future__ import annotations


def short(text: str, limit: int = 14) -> str:
    """A label shortened for a chart axis (shown as text, never as HTML)."""
    s = str(text)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def shorts(labels) -> list[str]:
    """:func:`short` for every label."""
    return [short(s) for s in labels]


def indexed_labels(tokens: list[str]) -> list[str]:
    """Unique labels for axes and table rows even when a token repeats: '0 the', '3 the'."""
    return [f"{i} {tok}" for i, tok in enumerate(tokens)]


def dim_labels(d: int, prefix: str = "d") -> list[str]:
    return [f"{prefix}{i}" for i in range(d)]
