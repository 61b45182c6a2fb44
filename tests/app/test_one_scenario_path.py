"""One scenario, behaviourally (issue 32): on every page that shows the shared tokens, a distinctive change of the
shared embedding (one-hot instead of the worked example's table) either changes the numbers the page draws, or the
page says, where the learner sees it, that it uses only the tokens (a page of its own sizes). Pages added later are
covered: the pages are those of ``ui.nav`` that draw the shared token box."""

from __future__ import annotations

import json

import pytest

from attention_lab import scenario
from ui import memo, nav, state
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


def _run(p, monkeypatch, **kept):
    """A fresh run of page ``p`` (nothing reused from the server's cache) with these scenario values kept."""
    monkeypatch.setattr(memo, "CACHE", memo.ByteCache(memo.SERVER_BYTES, memo.MAX_ENTRY_BYTES))
    at = page(p.file, run=False)
    for name, value in kept.items():
        at.session_state[state.scenario_kept(name)] = value
    at.run()
    no_errors(at)
    return at


@pytest.mark.parametrize("p", [p for p in nav.PAGES if p.name not in ("home", "tutorial")], ids=lambda p: p.name)
def test_a_page_that_draws_the_tokens_vectors_draws_the_x_the_scenario_builds(p, monkeypatch):
    """Issue 53, as a property: on every page that shows the shared tokens and whose numbers depend on which tokens
    they are (not only on how many), the numbers follow the X that ``attention_lab.scenario`` builds. With the
    scenario's builder changed (every X it builds becomes 2X + 1) the page's numbers change; a page that built X
    from ``core.tokens`` itself would draw the same numbers as before."""
    n = len(scenario.token_list(scenario.DEFAULTS["tokens"]))
    before = _run(p, monkeypatch)
    if not _shows_tokens(before):
        pytest.skip(f"{p.name} does not show the shared tokens")
    other = _run(p, monkeypatch, tokens=" ".join(f"zq{i}" for i in range(n)))  # as many tokens, other ones
    if _maps(other) == _maps(before):
        pytest.skip(f"{p.name} draws numbers that depend only on how many tokens there are (no X of theirs)")
    real = scenario.embedding

    def shifted(kind, tokens, d_model, seed):
        X, unknown = real(kind, tokens, d_model, seed)
        return 2 * X + 1, unknown

    monkeypatch.setattr(scenario, "embedding", shifted)
    after = _run(p, monkeypatch)
    assert _maps(after) != _maps(before), f"{p.name} draws numbers from the tokens that are not the scenario's X"
