"""The address bar, written one way per page. On every page but the Playground, a page adds its own
parameters during the run (:func:`add`: a lesson and its progress, a model's open head) and the frame writes
the link once, after the page, with one ``st.query_params.from_dict``:

* a page that used the scenario: the scenario (``scenario_state.link_part``), the settings and the page's
  parameters — nothing else;
* any other page (and a lesson, whose scenario is the lesson's): the settings and the page's parameters in
  place, the rest of the link kept (a link's parameters for the page a learner goes on to).

The Playground's right column reruns alone (a fragment, without the frame), so it writes its whole link
itself through ``ui.widgets.guard.address_bar``, and the frame writes nothing there (``own``)."""

from __future__ import annotations

import streamlit as st

from . import scenario_state, settings, state


def add(part: dict[str, str | None], *, scenario: bool = True) -> None:
    """A page's own parameters for this run's link (None: the parameter goes); ``scenario=False``: the link
    leaves the scenario out."""
    st.session_state.setdefault(state.FRAME.link, {}).update(part)
    if not scenario:
        st.session_state[state.FRAME.link_alone] = True


def write(*, own: bool) -> None:
    """After the page's run (the frame calls this): the link, unless the page writes its own."""
    parts = st.session_state.pop(state.FRAME.link, {})
    scenario_part = scenario_state.link_part()
    if st.session_state.pop(state.FRAME.link_alone, False):
        scenario_part = None
    if own:
        return
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    kept = {} if scenario_part is not None else {k: v for k, v in current.items() if k not in settings.URL_KEYS.values()}
    query = {k: v for k, v in (kept | (scenario_part or {}) | settings.query() | parts).items() if v is not None}
    if current != query:
        st.query_params.from_dict(query)
