"""The Playground's run computes once (#20): whatever part of the left column is open, one run of
the page calls core's attention (core.lab.playground) once — with every cache off, so a second call
in the same run cannot hide behind a cache hit."""

from __future__ import annotations

import pytest

import core
from ui import memo, state

from .helpers import PG_WEIGHTS, no_errors, open_tab, page, panels


@pytest.fixture
def calls(monkeypatch) -> list:
    """Every call of core.lab.playground from now on (the server's caches answer nothing)."""
    made: list = []
    real = core.lab.playground

    def counting(*args, **kwargs):
        made.append(kwargs.get("score"))
        return real(*args, **kwargs)

    monkeypatch.setattr(core.lab, "playground", counting)
    monkeypatch.setattr(memo.CACHE, "get", lambda key: None)
    return made


@pytest.mark.parametrize("tab", [None, "embed", "qkv", "score", "mask", "share"])
def test_one_rerun_of_the_playground_calls_core_attention_once(calls, tab):
    at = page()
    if tab:
        open_tab(at, tab)
    if tab == "embed":  # the X editor open too: the right column is then drawn with the whole page
        at.session_state[state.SCENARIO.x_fold_open] = True
    for text in ("a b c", "a b c d"):
        calls.clear()
        at.text_input(key=state.SCENARIO.tokens).input(text).run()
        no_errors(at)
        assert len(panels(at)[PG_WEIGHTS]["map"]["xs"]) == len(text.split())  # drawn from this run's call
        assert len(calls) == 1, (tab, calls)


def test_the_count_sees_a_second_call(calls):
    """The check can fail: two calls in one run are both counted."""
    from ui import compute

    page()
    calls.clear()
    compute.playground.__wrapped__(**_args())
    compute.playground(**_args())
    assert len(calls) == 2


def _args() -> dict:
    import numpy as np

    X = np.eye(3, dtype=np.float32)
    return {"X_q": X, "X_kv": X, "qkv": "identity", "W_q": None, "W_k": None, "W_v": None, "Q": None, "K": None,
            "V": None, "score": "dot", "params": {}, "scale": None, "temperature": 1.0, "mask": None,
            "convention": "row", "device": "cpu"}
