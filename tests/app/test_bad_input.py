"""AppTest: bad input gives a clear message in the learner's language; the last valid state stays."""

from __future__ import annotations

import pytest

import core
from core import tokens
from ui import nav, state

from .helpers import PG_WEIGHTS, chosen_query, close, edit, heat, is_plotly, open_tab, page, texts, ticks

C18_X = tokens.c18_embedding().numpy()
C18_W = core.attention(C18_X, C18_X, C18_X).weights


def no_exception(at):
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize("lang, fragment", [("en", "no tokens"), ("ko", "토큰이 없습니다")])
def test_empty_text_keeps_the_last_valid_tokens(lang, fragment):
    at = page()
    at.radio(key=state.setting_widget("lang")).set_value(lang).run()
    at.text_input(key=state.SCENARIO.tokens).input("   ").run()
    no_exception(at)
    assert any(fragment in e.value for e in at.error)
    close(heat(at, PG_WEIGHTS), C18_W)


def test_too_many_tokens_are_refused():
    at = page()
    at.text_input(key=state.SCENARIO.tokens).input(" ".join(f"w{i}" for i in range(513))).run()
    no_exception(at)
    assert any("513 tokens" in e.value and "512" in e.value for e in at.error)
    assert heat(at, PG_WEIGHTS).shape == (4, 4)


def test_large_inputs_hide_values_and_editors_but_still_compute():
    at = page()
    toks = [f"t{i}" for i in range(100)]
    at.text_input(key=state.SCENARIO.tokens).input(" ".join(toks)).run()
    no_exception(at)
    assert not at.error
    assert any("100 tokens" in i.value for i in at.info)
    assert not [d for d in at.dataframe if (d.key or "").startswith(state.EDITOR_PREFIX + "X.")]
    W = heat(at, PG_WEIGHTS)
    assert W.shape == (100, 100)
    assert is_plotly(at, PG_WEIGHTS)  # large maps are drawn as an image without cell text
    X, _ = core.lab.c18_lookup(toks, fallback_seed=0)
    close(W, core.attention(X, X, X).weights)


def test_single_token_is_explained():
    at = page()
    at.text_input(key=state.SCENARIO.tokens).input("혼자").run()
    no_exception(at)
    assert any("Only one token" in i.value for i in at.info)
    close(heat(at, PG_WEIGHTS), [[1.0]])


@pytest.mark.parametrize("value", ["abc", None, float("nan"), float("inf")])
def test_non_numeric_or_non_finite_cells_are_refused(value):
    at = page()
    edit(at, "X", {0: {"d1": 2.0}})  # a valid edit first: this becomes the last valid state
    edit(at, "X", {0: {"d1": 2.0}, 1: {"d0": value}})
    no_exception(at)
    assert any("row “1 오늘”, column “d0”" in e.value for e in at.error)
    X = C18_X.copy()
    X[0, 1] = 2.0
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X).weights)


def test_huge_cell_is_refused():
    at = page()
    edit(at, "X", {2: {"d2": 1e30}})
    no_exception(at)
    assert any("larger than 1,000,000" in e.value for e in at.error)
    close(heat(at, PG_WEIGHTS), C18_W)


def test_html_and_script_tokens_render_as_text():
    at = page()
    evil = "<script>alert(1)</script> <img src=x onerror=alert(1)> **bold** [link](http://x)"
    at.text_input(key=state.SCENARIO.tokens).input(evil).run()
    no_exception(at)
    # the heatmap component inserts labels with textContent only (checked in the browser tests)
    assert ticks(at, PG_WEIGHTS)[0] == "0 <script>ale…"
    # markdown that allows HTML never contains a raw token
    for m in at.markdown:
        if m.proto.allow_html:
            assert "<script>" not in m.value and "onerror" not in m.value
    info = [i.value for i in at.info if "example's embedding" in i.value][0]
    assert "\\<script\\>" in info and "<script>" not in info


def test_stale_shape_from_a_link_is_dropped_with_a_message():
    at = page(query={"m_X": "[[1,2],[3,4]]"})
    no_exception(at)
    assert any("X" in w.value and "2×2" in w.value and "4×3" in w.value for w in at.warning)
    close(heat(at, PG_WEIGHTS), C18_W)


@pytest.mark.parametrize("query", [
    {"dk": "abc", "qkv": "projection"},
    {"score": "<script>", "T": "nan"},
    {"tok": "a b", "q": "-1"},
    {"m_X": "not json", "blk": "[[1]]", "pad": "x"},
    {"lang": "fr", "seed": "-5", "prec": "99", "dev": "tpu"},
    {"emb": "random", "dm": "1e9", "causal": "maybe"},
])
def test_tampered_links_never_break_the_page(query):
    at = page(query=query)
    no_exception(at)
    assert heat(at, PG_WEIGHTS).size > 0
    assert at.warning or at.landing_warnings, "the refused values are reported"


def test_query_index_out_of_range_falls_back_to_first():
    at = page(query={"tok": "a b", "q": "99"})
    no_exception(at)
    assert chosen_query(at) == "0 a"


def test_unexpected_failure_is_a_message_not_a_traceback(monkeypatch):
    from ui import compute

    at = page(run=False)

    def boom(*a, **k):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(compute, "playground", boom)
    at.run()
    no_exception(at)
    assert any("Something went wrong" in e.value for e in at.error)
    assert "simulated bug" not in texts(at)


def test_edits_that_no_longer_fit_after_a_token_change_are_reported():
    at = page()
    edit(at, "X", {0: {"d0": 5.0}})
    at.text_input(key=state.SCENARIO.tokens).input("나는 오늘 사과를 먹었다 또").run()
    no_exception(at)
    assert any("Your edits to X" in i.value for i in at.info)
    X, _ = core.lab.c18_lookup("나는 오늘 사과를 먹었다 또".split(), fallback_seed=0)
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X).weights)
    at.run()  # reported once, not on every rerun
    assert not any("Your edits to X" in i.value for i in at.info)


SCENARIO_PAGES = [p for p in nav.PAGES if p.name in ("notations", "score_functions", "masks", "multi_head", "self_vs_cross",
                                                     "position", "transformer_block")]


@pytest.mark.parametrize("info", SCENARIO_PAGES, ids=[p.name for p in SCENARIO_PAGES])
@pytest.mark.parametrize("text", ["", "<script>alert(1)</script> x", "<img src=x onerror=alert(1)>", " ".join(["w"] * 600),
                                  "solo"])
def test_every_page_handles_bad_tokens_like_the_playground(info, text):
    at = page(info.file)
    at.text_input(key=state.SCENARIO.tokens).input(text).run()
    no_exception(at)
    assert not any("Something went wrong" in e.value for e in at.error)
    if text.strip() in ("", " ".join(["w"] * 600)):
        assert at.error, "empty or too many tokens are refused with a message"
    elif text.startswith("<"):
        assert not at.error
        assert any(text[:4] in str(el.proto.json) for el in at.get("bidi_component"))  # data, drawn as text


@pytest.mark.parametrize("tab", [None, "qkv", "mask", "share"])
def test_a_message_about_the_tokens_is_said_once_whichever_tab_is_open(tab):
    """Both columns of the Playground read the tokens (the left for its open tab, the right for the maps); what
    the tokens say is shown once, by the right column beside the token box."""
    at = page()
    if tab:
        open_tab(at, tab)
    at.text_input(key=state.SCENARIO.tokens).input(" ".join(f"w{i}" for i in range(513))).run()
    no_exception(at)
    assert [e.value for e in at.error if "513 tokens" in e.value] == [at.error[0].value]  # once
    at.text_input(key=state.SCENARIO.tokens).input("the zyx").run()  # a word the worked example's table lacks
    no_exception(at)
    assert len([i.value for i in at.info if "zyx" in i.value]) == 1
