"""Every page that uses the shared scenario keeps it in its link (issue 27): after a restart or on another
replica the connection guard reopens the address bar's link, and the new session starts from it."""

from __future__ import annotations

import pytest

from attention_lab import scenario
from ui import state

from .helpers import no_errors, page

TEXT = "tokens typed on this page"


@pytest.mark.parametrize("path", ["app_pages/masks.py", "app_pages/multi_head.py", "app_pages/notations.py"])
def test_a_scenario_page_writes_its_scenario_into_the_link_and_a_new_session_reads_it(path):
    at = page(path)
    at.text_input(key=state.SCENARIO.tokens).input(TEXT).run()
    at.checkbox(key=state.SCENARIO.causal).check().run()
    no_errors(at)
    link = {k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
            for k in at.query_params}
    values, _, refused = scenario.from_query(link)
    assert not refused
    assert values["tokens"] == TEXT and values["causal"] is True
    assert link["lang"] == "en"  # the settings stay in it

    fresh = page(path, query=link)  # what a reconnecting browser sends: the link it holds
    no_errors(fresh)
    assert fresh.text_input(key=state.SCENARIO.tokens).value == TEXT
    assert fresh.checkbox(key=state.SCENARIO.causal).value is True


def test_pages_without_the_scenario_and_the_playground_keep_their_own_links():
    at = page("app_pages/home.py")
    no_errors(at)
    assert "tok" not in at.query_params  # home draws no scenario: no scenario in its link
