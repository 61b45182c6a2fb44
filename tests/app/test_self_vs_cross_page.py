"""AppTest: the self-vs-cross page (shapes, counts, the soft lookup) against core."""

from __future__ import annotations

import pytest

import core
from core import lab, tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

MULTI, SELFCROSS, POSITION = "app_pages/multi_head.py", "app_pages/self_vs_cross.py", "app_pages/position.py"
C18 = list(tokens.C18_TOKENS)


def test_self_vs_cross_shapes_counts_and_lookup():
    at = page(SELFCROSS)
    no_errors(at)
    assert "4 queries and 4 keys" in texts(at)
    at.radio(key=state.SCENARIO.embedding).set_value("random").run()
    at.radio(key=state.SCENARIO.mode).set_value("cross").run()
    at.text_input(key=state.SCENARIO.tokens).input("vediamo il cielo").run()
    no_errors(at)
    tgt, src = "vediamo il cielo".split(), "We see the sky".split()
    Xt, Xs = tokens.embed(tgt, 3, seed=0), tokens.embed(src, 3, seed=0)
    ref = core.attention(Xt, Xs, Xs)
    close(heat(at, state.SELF_VS_CROSS.weights), ref.weights)
    assert "Output: 3 vectors" in texts(at)
    table = at.dataframe[-1].value
    order = lab.rank_keys(ref, 0).tolist()
    assert list(table.iloc[:4, 1]) == [f"{i} {src[i]}" for i in order]
    assert float(table.iloc[4, 3]) == pytest.approx(1.0)


def test_the_formula_is_the_current_modes():
    at = page(SELFCROSS)
    no_errors(at)
    shown = [e.value.strip("$\n") for e in at.latex]
    assert "Q = K = V = X" in shown and not any("W_Q" in s for s in shown)  # identity: no W
    at = page(SELFCROSS, query={"qkv": "projection"})
    assert any("Q = X W_Q" in e.value for e in at.latex)
    at = page(SELFCROSS, query={"mode": "cross", "tok": "vediamo il cielo", "src": "We see the sky", "lang": "ko"})
    latex = " ".join(e.value for e in at.latex)
    assert r"X_{\text{타깃}}" in latex and r"\text{target}" not in latex and r"\text{source}" not in latex
