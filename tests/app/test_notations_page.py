"""AppTest: the two-notations page against core's row and column traces; pages follow the notation switch."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import masks, tokens
from ui import state

from .helpers import close, heat, no_errors, page, spec

COL_LOGITS, COL_Q = state.item(state.NOTATIONS.col, "logits"), state.item(state.NOTATIONS.col, "Q")

NOTATIONS, SCORES, MASKS = "app_pages/notations.py", "app_pages/score_functions.py", "app_pages/masks.py"
C18_X = tokens.c18_embedding().numpy()


def side_sums(at, key):
    return np.array([float(s.split()[-1]) for s in spec(at, key)["side"]])


def test_notations_twins_are_cores_row_and_column_traces():
    at = page(NOTATIONS)
    no_errors(at)
    row = core.attention(C18_X, C18_X, C18_X)
    col = core.attention(C18_X.T, C18_X.T, C18_X.T, convention="column")
    for name, r, c in (("Q", row.q, col.q), ("scores", row.scores, col.scores), ("weights", row.weights, col.weights),
                       ("output", row.output, col.output)):
        close(heat(at, state.item(state.NOTATIONS.row, name)), r)
        close(heat(at, state.item(state.NOTATIONS.col, name)), c)
        close(heat(at, state.item(state.NOTATIONS.col, name)), heat(at, state.item(state.NOTATIONS.row, name)).T, tol=0)
    assert any("max |row − columnᵀ| = 0 " in s.value for s in at.success)


def test_notations_causal_mask_in_both_notations():
    at = page(NOTATIONS)
    at.checkbox(key=state.SCENARIO.causal).check().run()
    no_errors(at)
    left, right = spec(at, state.item(state.NOTATIONS.row, "logits"))["text"], spec(at, COL_LOGITS)["text"]
    assert left[0][3] == "−∞" and left[3][0] != "−∞"  # row: key j > query i blocked (upper triangle)
    assert right[3][0] == "−∞" and right[0][3] != "−∞"  # column: key i > query j blocked (lower triangle)
    ref = core.attention(C18_X.T, C18_X.T, C18_X.T, convention="column", mask=masks.causal(4, convention="column"))
    close(heat(at, state.item(state.NOTATIONS.col, "weights")), ref.weights)
    assert np.all(heat(at, state.item(state.NOTATIONS.col, "weights"))[np.tril_indices(4, -1)] == 0)


def test_selecting_a_cell_marks_its_twin_and_explains_the_mapping():
    at = page(NOTATIONS)
    at.session_state[state.NOTATIONS.clicks] = [(state.item(state.NOTATIONS.row, "weights"), (3, 1))]
    at.run()
    no_errors(at)
    assert spec(at, state.item(state.NOTATIONS.row, "weights"))["mark"] == [3, 1]
    assert spec(at, state.item(state.NOTATIONS.col, "weights"))["mark"] == [1, 3]
    assert spec(at, state.item(state.NOTATIONS.row, "scores"))["mark"] is None
    info = " ".join(i.value for i in at.info)
    assert "weights[3, 1]" in info and "weightsᵀ[1, 3]" in info
    # and from the right-hand side back to the left
    at.session_state[state.NOTATIONS.clicks] = [(COL_Q, (2, 0))]
    at.run()
    assert spec(at, state.item(state.NOTATIONS.row, "Q"))["mark"] == [0, 2] and spec(at, COL_Q)["mark"] == [2, 0]


def test_wrong_axis_softmax_rows_do_not_sum_to_one():
    at = page(NOTATIONS)
    no_errors(at)
    logits = core.attention(C18_X, C18_X, C18_X).logits.numpy()
    e = np.exp(logits - logits.max(axis=0))
    close(heat(at, state.NOTATIONS.wrong), e / e.sum(axis=0))
    close(side_sums(at, state.NOTATIONS.right), np.ones(4))
    assert not np.allclose(side_sums(at, state.NOTATIONS.wrong), 1.0)


SC, MK = state.SCORE_FUNCTIONS, state.MASKS
FOLLOWERS = [(SCORES, (state.item(SC.scores, "dot"), state.item(SC.weights, "additive"), SC.cos_cos, SC.c19_wrong)),
             (MASKS, (state.item(MK.step, "weights"), state.item(MK.step, "M"), state.item(MK.order, "after")))]


@pytest.mark.parametrize("path, keys", FOLLOWERS)
def test_score_and_mask_pages_follow_the_notation(path, keys):
    at = page(path)
    row = {k: heat(at, k) for k in keys}
    at.radio(key=state.SCENARIO.convention).set_value("column").run()
    no_errors(at)
    for k in keys:
        close(heat(at, k), row[k].T, tol=0)
    if path == SCORES:
        col = core.attention(C18_X.T, C18_X.T, C18_X.T, score="dot", convention="column")
        close(heat(at, state.item(state.SCORE_FUNCTIONS.scores, "dot")), col.scores)
        assert any("K^\\top Q" in str(l.value) for l in at.latex)
