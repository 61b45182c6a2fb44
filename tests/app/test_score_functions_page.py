"""AppTest: the score-functions page against core (every function, cosine, the √d_k experiment, the √n slip)."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page

NOTATIONS, SCORES, MASKS = "app_pages/notations.py", "app_pages/score_functions.py", "app_pages/masks.py"
C18_X = tokens.c18_embedding().numpy()


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
    close(heat(at, state.item(state.SCORE_FUNCTIONS.scores, score)), ref.scores)
    close(heat(at, state.item(state.SCORE_FUNCTIONS.weights, score)), ref.weights)


def test_cosine_equals_dot_of_normalised_vectors_on_screen():
    at = page(SCORES)
    close(heat(at, state.SCORE_FUNCTIONS.cos_normed), heat(at, state.SCORE_FUNCTIONS.cos_cos), tol=1e-6)
    assert any(f"max |q̂ᵀk̂ − cosine| = {core.lab.gap_text(0.0)}" in s.value for s in at.success)  # the one gap format


def test_sqrt_dk_experiment_shows_cores_measurements():
    import json

    at = page(SCORES)
    e = core.experiments.scaling_experiment(seed=0)
    charts = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}
    close(charts[state.SCORE_FUNCTIONS.exp_var]["data"][1]["y"], e.var_dot, tol=1e-3)
    close(charts[state.item(state.SCORE_FUNCTIONS.exp_plot, "max")]["data"][0]["y"], e.max_weight, tol=1e-4)
    close(charts[state.item(state.SCORE_FUNCTIONS.exp_plot, "max")]["data"][1]["y"], e.max_weight_scaled, tol=1e-4)
    close(charts[state.item(state.SCORE_FUNCTIONS.exp_plot, "grad")]["data"][1]["y"], e.grad_norm_scaled, tol=1e-4)


def test_c19_slip_beside_the_correct_scale():
    at = page(SCORES)
    X = tokens.embed(tokens.C19_TOKENS, 3, seed=0)
    close(heat(at, state.SCORE_FUNCTIONS.c19_right), core.attention(X, X, X).weights)
    close(heat(at, state.SCORE_FUNCTIONS.c19_wrong), core.attention(X, X, X, scale=7 ** -0.5).weights)
    assert not np.allclose(heat(at, state.SCORE_FUNCTIONS.c19_right), heat(at, state.SCORE_FUNCTIONS.c19_wrong))
