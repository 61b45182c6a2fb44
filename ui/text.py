"""Making learner text safe to show: tokens are data, never markup."""

from __future__ import annotations

import re

# Korean particles after a placeholder ({q}을(를) → 나는을 / 사과를): shared with the notebook export
from attention_lab.korean import PARTICLES, coda, fill, particle  # noqa: F401

# the labels' shortening and indexing are shared with the notebook views
from attention_lab.labels import indexed_labels, short, shorts  # noqa: F401

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>$&:])")


def md(text: str) -> str:
    """Escape ``text`` for st.markdown so it shows literally (no HTML, links, math or emphasis)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))
