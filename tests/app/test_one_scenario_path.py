"""One scenario, behaviourally (issue 32): on every page that shows the shared tokens, a distinctive change of the
shared embedding (one-hot instead of the worked example's table) either changes the numbers the page draws, or the
page says, where the learner sees it, that it uses only the tokens (a page of its own sizes). Pages added later are
covered: the pages are those of ``ui.nav`` that draw the shared token box."""

from __future__ import annotations

import json

import pytest

from ui import nav, state
from ui.i18n import table

from .helpers import no_errors, page

TOKENS_KEY = state.scenario_value("tokens")


def _maps(at) -> list[str]:
    """Every map's and chart's numbers on the page (the components' data that carry values, plotly's figures)."""
    out = []
    for el in at.get("bidi_component"):
        data = json.loads(el.proto.json) if el.proto.json else None
        if isinstance(data, dict) and ({"z", "panels", "rows", "sections"} & set(data)):
            out.append(json.dumps(data, sort_keys=True))
    out += [el.proto.spec for el in at.get("plotly_chart")]
    return out


def _shows_tokens(at) -> bool:
    return any(w.key == TOKENS_KEY for w in at.text_input)


@pytest.mark.parametrize("p", [p for p in nav.PAGES if p.name not in ("home", "tutorial")], ids=lambda p: p.name)
def test_the_shared_embedding_changes_the_numbers_or_the_page_says_it_uses_only_the_tokens(p):
    before = page(p.file)
    no_errors(before)
    if not _shows_tokens(before):
        pytest.skip(f"{p.name} does not show the shared tokens")  # a page of its own (a model's sentence, an image)
    after = page(p.file, run=False)
    after.session_state[state.scenario_kept("embedding")] = "onehot"
    after.run()
    no_errors(after)
    notice = table("en")["shared.tokens_only"]
    said = any(c.value == notice for c in after.caption)
    assert _maps(before) != _maps(after) or said, f"{p.name}: the shared embedding is ignored and the page does not say so"
    if said:  # a page that says it uses only the tokens really does: the embedding changes none of its numbers
        assert _maps(before) == _maps(after), f"{p.name} says it uses only the tokens, yet its numbers moved"
