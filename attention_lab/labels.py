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


def parse_perm(text, n: int) -> tuple[int, ...] | None:
    """A typed order of the n token indices ("2 0 1" or "2, 0, 1") → the permutation, or None when it is
    not one (the position page's box and the tutorial's position task read it the same way)."""
    if not isinstance(text, str) or len(text) > 4000:
        return None
    try:
        perm = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        return None
    return perm if sorted(perm) == list(range(n)) else None
