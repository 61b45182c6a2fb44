"""The address bar, written one way per run, by this module alone. A page adds its own parameters during the
run (:func:`add`: a lesson and its progress, a model's open head); at the end of every run — a whole page's
or a fragment's: the outermost ``ui.page.boundary`` calls :func:`write` — the link is written once, with one
``st.query_params.from_dict``:

* a page that used the scenario: the scenario (``scenario_state.link_part``), the settings and the page's
  parameters — nothing else;
* any other page (and a lesson, whose scenario is the lesson's): the settings and the page's parameters in
  place, the rest of the link kept (a link's parameters for the page a learner goes on to).

The Playground writes its whole link (its view too) through :func:`address_bar` instead, in place in the
browser (``st.query_params`` would re-render the whole app in the browser on every change, BENCHMARKS.md);
then :func:`write` writes nothing for that run."""

from __future__ import annotations

import streamlit as st

from . import scenario_state, settings, state
from .widgets.guard import address


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
    scenario_part = scenario_state.link_part()
    if st.session_state.pop(state.FRAME.link_alone, False):
        scenario_part = None
    if st.session_state.pop(state.FRAME.link_own, False):
        return
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    kept = {} if scenario_part is not None else {k: v for k, v in current.items() if k not in settings.URL_KEYS.values()}
    query = {k: v for k, v in (kept | (scenario_part or {}) | settings.query() | parts).items() if v is not None}
    if current != query:
        st.query_params.from_dict(query)
