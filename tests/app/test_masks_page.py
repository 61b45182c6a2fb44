"""AppTest: the masks page against core (builder, order of operations, a source's example, a fully masked query)."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import masks, tokens
from ui import state

from .helpers import close, heat, no_errors, page, spec, texts

NOTATIONS, SCORES, MASKS = "app_pages/notations.py", "app_pages/score_functions.py", "app_pages/masks.py"
C18_X = tokens.c18_embedding().numpy()


def side_sums(at, key):
    return np.array([float(s.split()[-1]) for s in spec(at, key)["side"]])


def test_masks_page_defaults_to_a_causal_example():
    at = page(MASKS)
    no_errors(at)
    assert any("causal mask is used below as an example" in i.value for i in at.info)
    W = heat(at, state.item(state.MASKS.step, "weights"))
    close(W, core.attention(C18_X, C18_X, C18_X, mask=masks.causal(4)).weights)
    assert np.all(W[np.triu_indices(4, 1)] == 0)
    M = spec(at, state.item(state.MASKS.step, "M"))["text"]
    assert M[0][1] == "−∞" and M[1][0] == "0"


def test_masks_combine_causal_padding_and_window():
    at = page(MASKS)
    at.checkbox(key=state.SCENARIO.causal).check().run()
    at.multiselect(key=state.scenario_picker("pad")).select("1 오늘").run()
    at.slider(key=state.MASKS.window).set_value(2).run()
    no_errors(at)
    m = masks.causal(4) & masks.padding([1, 0, 1, 1], 4) & masks.window(4, 2)
    close(heat(at, state.item(state.MASKS.step, "weights")), core.attention(C18_X, C18_X, C18_X, mask=m).weights)
    assert np.all(heat(at, state.item(state.MASKS.step, "weights"))[~m.numpy()] == 0)


def test_order_matters_and_large_negative_matches():
    at = page(MASKS)
    no_errors(at)
    right, after, big = (side_sums(at, state.item(state.MASKS.order, k)) for k in ("right", "after", "big"))
    close(right, np.ones(4))
    assert np.all(after[:3] < 1) and after[3] == pytest.approx(1.0)
    close(heat(at, state.item(state.MASKS.order, "big")), heat(at, state.item(state.MASKS.order, "right")))
    tr = core.attention(C18_X, C18_X, C18_X, mask=masks.causal(4))
    close(heat(at, state.item(state.MASKS.order, "after")), core.pitfalls.mask_after_softmax(tr.scaled, masks.causal(4)).weights)


def test_source_example_and_fully_masked_query():
    at = page(MASKS)
    close(heat(at, state.MASKS.c11), masks.causal(3).float())
    assert "attention" in texts(at) and "cool" in texts(at)
    assert np.all(heat(at, state.MASKS.full_core)[0] == 0)
    assert spec(at, state.MASKS.full_naive)["text"][0] == ["NaN"] * 4
