"""One lookup for every UI string: ``t("key", **fmt)`` in the current language.

Tables live in ``assets/i18n/{en,ko}.json`` and ``{en,ko}.<part>.json``; a test checks both
languages hold the same keys.
Long explanations live in ``assets/explain/<name>.<lang>.md`` (:func:`explain`).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import streamlit as st

from attention_lab.strings import LANGS, table, translate  # noqa: F401  (table: the loader, for tests)

from . import state

ASSETS = Path(__file__).resolve().parent.parent / "assets"
LANG_NAMES = {"en": "English", "ko": "한국어"}


_run = threading.local()  # the language of the run in progress on this thread (see :func:`this_run`)


def _session_lang() -> str:
    lang = st.session_state.get(state.setting("lang"), "en")
    return lang if lang in LANGS else "en"


def current_lang() -> str:
    """The learner's language: read once per run (a page asks for it in every string it draws)."""
    return getattr(_run, "lang", None) or _session_lang()


@contextmanager
def this_run():
    """Around a run (the frame's, after the settings are read; a fragment's): the language is read from
    the session once and kept for the run. It changes only in the settings' callbacks, which run
    before a run starts."""
    before = getattr(_run, "lang", None)
    _run.lang = _session_lang()
    try:
        yield
    finally:
        _run.lang = before


def t(key: str, lang: str | None = None, **fmt) -> str:
    """The string for ``key``; falls back to English, then to the key itself (never raises). A Korean
    particle written after a placeholder in its two-way form ("{q}을(를)") is chosen from the value
    (:func:`attention_lab.korean.fill`)."""
    return translate(key, lang or current_lang(), **fmt)


def count(key: str, n: int, lang: str | None = None, **fmt) -> str:
    """``t(key)`` for a count ``n`` (filled in as ``n``): ``key + ".one"`` when n is 1 ("1 request is ahead", not
    "1 requests are ahead")."""
    return t(f"{key}.one" if n == 1 else key, lang, n=n, **fmt)


def labeller(prefix: str, *, empty_key: str | None = None):
    """A format_func for option widgets: option ``v`` → t(prefix + v), in the language of *this*
    run (bound now, so the label never depends on when Streamlit calls it)."""
    lang = current_lang()

    def label(v) -> str:
        if empty_key is not None and not v:
            return t(empty_key, lang=lang)
        return t(f"{prefix}{v}", lang=lang)

    return label


@cache
def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def explain(name: str, lang: str | None = None) -> str:
    """A long markdown explanation from assets/explain (English if the translation is missing)."""
    lang = lang or current_lang()
    for candidate in (lang, "en"):
        path = ASSETS / "explain" / f"{name}.{candidate}.md"
        if path.exists():
            return _read(path)
    return ""
