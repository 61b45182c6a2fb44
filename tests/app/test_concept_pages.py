"""AppTest for the three concept pages of issue 4: numbers on screen against core, and invariants."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import masks, tokens

from .helpers import close, heat, no_errors, page, spec, texts

NOTATIONS, SCORES, MASKS = "pages/2_Notations.py", "pages/3_Score_functions.py", "pages/4_Masks.py"
C18_X = tokens.c18_embedding().numpy()


def side_sums(at, key):
    return np.array([float(s.split()[-1]) for s in spec(at, key)["side"]])


# ---------------------------------------------------------------- notations
def test_notations_twins_are_cores_row_and_column_traces():
    at = page(NOTATIONS)
    no_errors(at)
    row = core.attention(C18_X, C18_X, C18_X)
    col = core.attention(C18_X.T, C18_X.T, C18_X.T, convention="column")
    for name, r, c in (("Q", row.q, col.q), ("scores", row.scores, col.scores), ("weights", row.weights, col.weights),
                       ("output", row.output, col.output)):
        close(heat(at, f"nt.row.{name}"), r)
        close(heat(at, f"nt.col.{name}"), c)
        close(heat(at, f"nt.col.{name}"), heat(at, f"nt.row.{name}").T, tol=0)
    assert any("max |row − columnᵀ| = 0 " in s.value for s in at.success)


def test_notations_causal_mask_in_both_notations():
    at = page(NOTATIONS)
    at.checkbox(key="pg.causal").check().run()
    no_errors(at)
    left, right = spec(at, "nt.row.logits")["text"], spec(at, "nt.col.logits")["text"]
    assert left[0][3] == "−∞" and left[3][0] != "−∞"  # row: key j > query i blocked (upper triangle)
    assert right[3][0] == "−∞" and right[0][3] != "−∞"  # column: key i > query j blocked (lower triangle)
    ref = core.attention(C18_X.T, C18_X.T, C18_X.T, convention="column", mask=masks.causal(4, convention="column"))
    close(heat(at, "nt.col.weights"), ref.weights)
    assert np.all(heat(at, "nt.col.weights")[np.tril_indices(4, -1)] == 0)


def test_selecting_a_cell_marks_its_twin_and_explains_the_mapping():
    at = page(NOTATIONS)
    at.session_state["nt.clicks"] = [("nt.row.weights", (3, 1))]
    at.run()
    no_errors(at)
    assert spec(at, "nt.row.weights")["mark"] == [3, 1]
    assert spec(at, "nt.col.weights")["mark"] == [1, 3]
    assert spec(at, "nt.row.scores")["mark"] is None
    info = " ".join(i.value for i in at.info)
    assert "weights[3, 1]" in info and "weightsᵀ[1, 3]" in info
    # and from the right-hand side back to the left
    at.session_state["nt.clicks"] = [("nt.col.Q", (2, 0))]
    at.run()
    assert spec(at, "nt.row.Q")["mark"] == [0, 2] and spec(at, "nt.col.Q")["mark"] == [2, 0]


def test_wrong_axis_softmax_rows_do_not_sum_to_one():
    at = page(NOTATIONS)
    no_errors(at)
    logits = core.attention(C18_X, C18_X, C18_X).logits.numpy()
    e = np.exp(logits - logits.max(axis=0))
    close(heat(at, "nt.wrong"), e / e.sum(axis=0))
    close(side_sums(at, "nt.right"), np.ones(4))
    assert not np.allclose(side_sums(at, "nt.wrong"), 1.0)


# ---------------------------------------------------------------- score functions
def _params(score):
    if score == "general":
        return {"W": tokens.projection(3, 3, seed=0, name="W").T}
    if score == "additive":
        return {"W_a": tokens.projection(3, 4, seed=0, name="W_a").T, "U_a": tokens.projection(3, 4, seed=0, name="U_a").T,
                "w_a": tokens.projection(4, 1, seed=0, name="w_a")[:, 0]}
    return None


@pytest.mark.parametrize("score", core.SCORE_FUNCTIONS)
def test_every_score_function_side_by_side(score):
    at = page(SCORES)
    no_errors(at)
    ref = core.attention(C18_X, C18_X, C18_X, score=score, params=_params(score))
    close(heat(at, f"sc.scores.{score}"), ref.scores)
    close(heat(at, f"sc.weights.{score}"), ref.weights)


def test_cosine_equals_dot_of_normalised_vectors_on_screen():
    at = page(SCORES)
    close(heat(at, "sc.cos.normed"), heat(at, "sc.cos.cos"), tol=1e-6)
    assert any("max |q̂ᵀk̂ − cosine| = 0" in s.value for s in at.success)


def test_sqrt_dk_experiment_shows_cores_measurements():
    import json

    at = page(SCORES)
    e = core.experiments.scaling_experiment(seed=0)
    charts = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}
    close(charts["sc.exp.var"]["data"][1]["y"], e.var_dot, tol=1e-3)
    close(charts["sc.exp.max"]["data"][0]["y"], e.max_weight, tol=1e-4)
    close(charts["sc.exp.max"]["data"][1]["y"], e.max_weight_scaled, tol=1e-4)
    close(charts["sc.exp.grad"]["data"][1]["y"], e.grad_norm_scaled, tol=1e-4)


def test_c19_slip_beside_the_correct_scale():
    at = page(SCORES)
    X = tokens.embed(tokens.C19_TOKENS, 3, seed=0)
    close(heat(at, "sc.c19.right"), core.attention(X, X, X).weights)
    close(heat(at, "sc.c19.wrong"), core.attention(X, X, X, scale=7 ** -0.5).weights)
    assert not np.allclose(heat(at, "sc.c19.right"), heat(at, "sc.c19.wrong"))


# ---------------------------------------------------------------- masks
def test_masks_page_defaults_to_a_causal_example():
    at = page(MASKS)
    no_errors(at)
    assert any("causal mask is used below as an example" in i.value for i in at.info)
    W = heat(at, "mk.mk.step.weights")
    close(W, core.attention(C18_X, C18_X, C18_X, mask=masks.causal(4)).weights)
    assert np.all(W[np.triu_indices(4, 1)] == 0)
    M = spec(at, "mk.mk.step.M")["text"]
    assert M[0][1] == "−∞" and M[1][0] == "0"


def test_masks_combine_causal_padding_and_window():
    at = page(MASKS)
    at.checkbox(key="pg.causal").check().run()
    at.multiselect(key="pg.w.pad").select("1 오늘").run()
    at.slider(key="mk.window").set_value(2).run()
    no_errors(at)
    m = masks.causal(4) & masks.padding([1, 0, 1, 1], 4) & masks.window(4, 2)
    close(heat(at, "mk.mk.step.weights"), core.attention(C18_X, C18_X, C18_X, mask=m).weights)
    assert np.all(heat(at, "mk.mk.step.weights")[~m.numpy()] == 0)


def test_order_matters_and_large_negative_matches():
    at = page(MASKS)
    no_errors(at)
    right, after, big = (side_sums(at, f"mk.order.{k}") for k in ("right", "after", "big"))
    close(right, np.ones(4))
    assert np.all(after[:3] < 1) and after[3] == pytest.approx(1.0)
    close(heat(at, "mk.order.big"), heat(at, "mk.order.right"))
    tr = core.attention(C18_X, C18_X, C18_X, mask=masks.causal(4))
    close(heat(at, "mk.order.after"), core.pitfalls.mask_after_softmax(tr.scaled, masks.causal(4)).weights)


def test_source_example_and_fully_masked_query():
    at = page(MASKS)
    close(heat(at, "mk.c11"), masks.causal(3).float())
    assert "attention" in texts(at) and "cool" in texts(at)
    assert np.all(heat(at, "mk.full.core")[0] == 0)
    assert spec(at, "mk.full.naive")["text"][0] == ["NaN"] * 4


# ---------------------------------------------------------------- every page: language and bad input
@pytest.mark.parametrize("path, title", [(NOTATIONS, "두 가지 표기법"), (SCORES, "점수 함수"), (MASKS, "마스크")])
def test_concept_pages_in_korean(path, title):
    at = page(path)
    at.radio(key="_w.settings.lang").set_value("ko").run()
    no_errors(at)
    assert at.title[0].value.endswith(title)
    assert at.caption[0].value.startswith("커리큘럼")


@pytest.mark.parametrize("path", [NOTATIONS, SCORES, MASKS])
@pytest.mark.parametrize("text", ["", "<script>alert(1)</script> x", " ".join(["w"] * 600)])
def test_concept_pages_refuse_bad_tokens_like_the_playground(path, text):
    at = page(path)
    at.text_input(key="pg.tokens").input(text).run()
    assert not at.exception
    if text.startswith("<script>"):
        assert not at.error
        assert any("<script>" in str(el.proto.json) for el in at.get("bidi_component"))  # data, shown as text
    else:
        assert at.error and "Something went wrong" not in at.error[0].value


@pytest.mark.parametrize("path, keys", [(SCORES, ("sc.scores.dot", "sc.weights.additive", "sc.cos.cos", "sc.c19.wrong")),
                                        (MASKS, ("mk.mk.step.weights", "mk.mk.step.M", "mk.order.after"))])
def test_score_and_mask_pages_follow_the_notation(path, keys):
    at = page(path)
    row = {k: heat(at, k) for k in keys}
    at.radio(key="pg.convention").set_value("column").run()
    no_errors(at)
    for k in keys:
        close(heat(at, k), row[k].T, tol=0)
    if path == SCORES:
        col = core.attention(C18_X.T, C18_X.T, C18_X.T, score="dot", convention="column")
        close(heat(at, "sc.scores.dot"), col.scores)
        assert any("K^\\top Q" in str(l.value) for l in at.latex)
