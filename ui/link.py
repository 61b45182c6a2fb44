"""The address bar, written one way per run, by this module alone. A page adds its own parameters during the
run (:func:`add`: a lesson and its progress, a model's open head); at the end of every run — a whole page's
or a fragment's: the outermost ``ui.page.boundary`` calls :func:`write` — the link is written once, with one
``st.query_params.from_dict``:

* a page that used the scenario: the scenario (``scenario_state.link_part``, through :func:`contribute`), the
  settings and the page's parameters — nothing else;
* any other page (and a lesson, whose scenario is the lesson's): the settings and the page's parameters in
  place, the rest of the link kept (a link's parameters for the page a learner goes on to).

The Playground writes its whole link (its view too) through :func:`address_bar` instead, in place in the
browser (``st.query_params`` would re-render the whole app in the browser on every change, BENCHMARKS.md);
then :func:`write` writes nothing for that run.

A page that is not the shared scenario keeps what the learner typed or chose in its link with :func:`keep`
(the language model's prompt and settings, the trained model's sentence, the ViT's image and patch size):
read from the link once per session and page (so a restart, whose guard reopens the link, brings them back),
written at the end of every run — plainly while short, packed into one parameter ``pz`` like the scenario's
``z`` (:func:`attention_lab.scenario.pack`) past ``PLAIN_LINK_BYTES``; a value that even packed does not fit
``LINK_BYTES`` is left out, and the page says so (:func:`left_out`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import streamlit as st

from attention_lab import scenario as _scenario

from . import settings, state, view
from .i18n import t
from .widgets.guard import address

_CONTRIBUTORS: list[Callable[[], dict[str, str] | None]] = []  # code, not state: who adds a part to every link


def contribute(part: Callable[[], dict[str, str] | None]) -> None:
    """A module above this one adds its part of the link after each run (``ui.scenario_state.link_part``: the
    scenario, or None when the page did not use it). Called once, when that module is imported."""
    if part not in _CONTRIBUTORS:
        _CONTRIBUTORS.append(part)

PUBLIC_URL_ENV = "ATTN_LAB_PUBLIC_URL"  # the address students use (a server behind a proxy): scheme://host[:port]
PAGE_PACKED = "pz"  # a page's kept values, packed (the scenario's own packed parameter is "z")


@dataclass(frozen=True)
class Kept:
    """One value a page keeps in its link: its session key, its name in the link, how the link's text reads
    back (``read`` raises ValueError for a value the page cannot take) and is written (``show``), and the
    default, which the link leaves out."""

    key: str
    name: str
    read: Callable[[str], object]
    default: object = None
    show: Callable[[object], str] = str


def whole(lo: int, hi: int) -> Callable[[str], int]:
    def read(text: str) -> int:
        if not (text.isdigit() and len(text) <= 9) or not lo <= int(text) <= hi:
            raise ValueError(text)
        return int(text)
    return read


def number(lo: float, hi: float) -> Callable[[str], float]:
    def read(text: str) -> float:
        x = float(text[:32])
        if not math.isfinite(x) or not lo <= x <= hi:
            raise ValueError(text)
        return x
    return read


def text(max_chars: int) -> Callable[[str], str]:
    def read(value: str) -> str:
        if len(value) > max_chars:
            raise ValueError("too long")
        return value
    return read


def one_of(options: Sequence) -> Callable[[str], object]:
    by_text = {str(o): o for o in options}

    def read(value: str):
        if value not in by_text:
            raise ValueError(value)
        return by_text[value]
    return read


def flag(value: str) -> bool:
    if value not in ("0", "1"):
        raise ValueError(value)
    return value == "1"


def show_flag(value) -> str:
    return "1" if value else "0"


def keep(page_name: str, kept: Sequence[Kept], problems: list | None = None) -> list[str]:
    """At the top of a page's run, before its widgets: on the session's first run of the page, the values its
    link carries go into session state; this run's values go into the link when the run ends (:func:`write`).
    The link's values the page could not take are named in a warning (added to ``problems``, or shown) and
    returned."""
    refused: list[str] = []
    loaded = st.session_state.setdefault(state.FRAME.kept_loaded, set())
    if page_name not in loaded:
        loaded.add(page_name)
        params = {k: st.query_params.get(k) for k in st.query_params.keys()}
        if PAGE_PACKED in params:
            inner = _scenario.unpack(params.pop(PAGE_PACKED))
            if inner is None:
                refused.append(PAGE_PACKED)
            else:
                params = inner | params
        for k in kept:
            if k.name in params:
                try:
                    st.session_state[k.key] = k.read(str(params[k.name]))
                except (ValueError, TypeError):
                    refused.append(k.name)
    st.session_state[state.FRAME.kept] = tuple(kept)
    if refused:
        message = ("warning", t("link.refused", names=", ".join(refused)))
        if problems is None:
            st.warning(message[1])
        else:
            problems.append(message)
    return refused


def _kept_part(kept: Sequence[Kept]) -> tuple[dict[str, str | None], list[str]]:
    """This run's kept values as link parameters (None: the parameter goes) and the names left out."""
    plain = {}
    for k in kept:
        v = st.session_state.get(k.key, k.default)
        if v != k.default and v is not None:
            plain[k.name] = k.show(v)
    names = {k.name: None for k in kept} | {PAGE_PACKED: None}
    left: list[str] = []
    while plain:
        if len(urlencode(plain)) <= _scenario.PLAIN_LINK_BYTES:
            return names | plain, left
        packed = {PAGE_PACKED: _scenario.pack(plain)}
        if len(urlencode(packed)) <= _scenario.LINK_BYTES:
            return names | packed, left
        longest = max(plain, key=lambda n: len(plain[n]))  # the prompt, in practice
        left.append(longest)
        del plain[longest]
    return names, left


def left_out(kept: Sequence[Kept]) -> list[str]:
    """The kept values that do not fit in a link now (the page says so, and keeps them for this session)."""
    return _kept_part(kept)[1]


def add(part: dict[str, str | None], *, scenario: bool = True) -> None:
    """A page's own parameters for this run's link (None: the parameter goes); ``scenario=False``: the link
    leaves the scenario out."""
    st.session_state.setdefault(state.FRAME.link, {}).update(part)
    if not scenario:
        st.session_state[state.FRAME.link_alone] = True


def address_bar(query: dict[str, str], *, key: str) -> None:
    """The whole link, written in place by the browser (the Playground, after every change)."""
    st.session_state[state.FRAME.link_own] = True
    address(query, key=key)


def write() -> None:
    """At the end of a run: the link, unless the page wrote its own through :func:`address_bar`."""
    parts = st.session_state.pop(state.FRAME.link, {})
    kept = st.session_state.pop(state.FRAME.kept, ())
    if kept:
        parts = _kept_part(kept)[0] | parts
    scenario_part = None
    for part in _CONTRIBUTORS:
        got = part()
        if got is not None:
            scenario_part = (scenario_part or {}) | got
    if st.session_state.pop(state.FRAME.link_alone, False):
        scenario_part = None
    if st.session_state.pop(state.FRAME.link_own, False):
        return
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    kept = {} if scenario_part is not None else {k: v for k, v in current.items() if k not in settings.URL_KEYS.values()}
    query = {k: v for k, v in (kept | (scenario_part or {}) | settings.query() | parts).items() if v is not None}
    if current != query:
        st.query_params.from_dict(query)


def public_url(host_key: str) -> str:
    """This page's address as students should open it: the browser's, with the host the teacher typed (the
    text box ``host_key``) or ``ATTN_LAB_PUBLIC_URL`` (a server behind a proxy) in place of its own."""
    try:
        url = (st.context.url or "").split("?")[0]
    except Exception:  # no browser (AppTest)
        url = ""
    for host in (st.session_state.get(host_key) or "", os.environ.get(PUBLIC_URL_ENV, "")):
        if host.strip() and (public := view.with_host(url, host)) is not None:
            return public
    return url
