"""Where the Korean text lives, and the rules every Korean string, lesson and exercise follows:
particles after a placeholder go through ui.text.fill, 합니다체, one term per concept
(assets/i18n/terms.json). Shared by tests/app/test_korean_rules.py; each failure names the key
(or file) and quotes the text."""

from __future__ import annotations

import json
import re

from ui.i18n import ASSETS, table
from ui.text import PARTICLES

LESSONS = ASSETS / "lessons"


def exercises(lang: str) -> dict[str, str]:
    with open(LESSONS / f"exercises.{lang}.json", encoding="utf-8") as f:
        return json.load(f)


def ko_strings() -> dict[str, str]:
    """Every Korean string by a name that says where it is: i18n keys, ``exercises:<key>``,
    ``lesson:<file>``, ``explain:<file>``."""
    out = {f"i18n:{k}": v for k, v in table("ko").items()}
    out |= {f"exercises:{k}": v for k, v in exercises("ko").items()}
    out |= {f"lesson:{p.name}": p.read_text(encoding="utf-8") for p in sorted(LESSONS.glob("*.ko.md"))}
    out |= {f"explain:{p.name}": p.read_text(encoding="utf-8") for p in sorted((ASSETS / "explain").glob("*.ko.md"))}
    return out


def templates() -> dict[str, str]:
    """The Korean strings that take values (the i18n tables and the exercises)."""
    return {k: v for k, v in ko_strings().items() if k.startswith(("i18n:", "exercises:"))}


# A placeholder, then (past closing quotes, brackets, markdown) a Korean particle ending the word.
FIELD = r"\{[A-Za-z_]\w*(?:![rsa])?(?::[^{}]*)?\}"
CLOSERS = r"[*”’\"'_`]*"  # not ) or ]: in "값({x})은" the particle belongs to the word before the bracket
BARE_PARTICLE = re.compile(
    FIELD + CLOSERS
    + r"(은|는|이|가|을|를|과|와|으로|로|이나|나|이라는|라는|이라고|라고|이라|라|이랑|랑|으로서|로서|으로는|로는|과의|와의)"
    + r"(?=$|[^가-힣(])"  # "을(를)": the two-way form is the helper's
)
HELPER_FORMS = tuple(PARTICLES)


def bare_particles(text: str) -> list[str]:
    """Every particle written straight after a placeholder (not in the helper's two-way form)."""
    return [m.group(0) for m in BARE_PARTICLE.finditer(text)]


def context(text: str, piece: str, width: int = 40) -> str:
    i = text.find(piece)
    return text[max(0, i - width): i + len(piece) + width].replace("\n", " ")
