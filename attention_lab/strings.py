"""The app's strings without Streamlit: ``assets/i18n/<lang>.json`` merged with ``<lang>.<part>.json``.

:mod:`ui.i18n` reads its tables from here (one loader) and adds the session's current language;
the notebook views and the notebook export pass the language explicitly."""

from __future__ import annotations

import json
from functools import cache

from core.models.paths import ASSETS

from .korean import fill, names

LANGS = ("en", "ko")


@cache
def table(lang: str) -> dict[str, str]:
    """``assets/i18n/<lang>.json`` merged with ``<lang>.<part>.json`` (one part per feature)."""
    merged: dict[str, str] = {}
    for path in [ASSETS / "i18n" / f"{lang}.json", *sorted((ASSETS / "i18n").glob(f"{lang}.*.json"))]:
        with open(path, encoding="utf-8") as f:
            merged |= json.load(f)
    return merged


def translate(key: str, lang: str, **fmt) -> str:
    """The string for ``key`` in ``lang``; falls back to English, then to the key itself (never raises).
    A Korean particle written after a placeholder in its two-way form ("{q}을(를)") is chosen from
    the value (:func:`attention_lab.korean.fill`), and one after a name such as "Mistral-7B은(는)" from the name
    (:func:`attention_lab.korean.names`)."""
    lang = lang if lang in LANGS else "en"
    text = table(lang).get(key) or table("en").get(key) or key
    return fill(text, **fmt) if fmt else names(text)
