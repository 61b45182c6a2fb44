"""AppTest: the differential attention page against core.differential_attention — both softmax maps and their
difference, λ from its re-parameterisation, rows summing to 1 − λ, the measured concentration sentence chosen
from the numbers; λ outside (0, 1) is said; tampered values get a message and the default."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import core
from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/diff.py"
KEYS = state.DIFF
C18 = list(tokens.C18_TOKENS)


def reference(layer: int, a: float, b: float, seed: int = 0):
    """core on the page's seeded projections: d_model 16, 4 query heads (2 pairs) of 4, 2 K/V heads; λ vectors
    a·e₁, e₁, b·e₁, e₁ (so λ_q1·λ_k1 = a and λ_q2·λ_k2 = b); layer counted from 1 on the page."""
    X = tokens.embed(C18, 16, seed=seed)
    W = {n: tokens.projection(*s, seed=seed, name=f"df.{n}") for n, s in
         {"W_q": (16, 16), "W_k": (16, 8), "W_v": (16, 8), "W_o": (16, 16)}.items()}
    e1 = torch.zeros(4)
    e1[0] = 1.0
    return core.differential_attention(X, **W, n_heads=4, n_kv_heads=2, layer_idx=layer - 1, lambda_q1=a * e1,
                                       lambda_k1=e1, lambda_q2=b * e1, lambda_k2=e1)


def run(**values):
    at = page(PAGE, run=False)
    for name, value in values.items():
        at.session_state[getattr(KEYS, name)] = value
    return at.run()


@pytest.mark.parametrize(("layer", "a", "b", "head"), [(1, 0.0, 0.0, 0), (12, 0.3, -0.2, 1), (32, -0.5, 0.5, 0)])
def test_the_maps_lambda_and_rows_are_cores(layer, a, b, head):
    at = run(layer=layer, a=a, b=b, head=head)
    tr = reference(layer, a, b)
    close(heat(at, KEYS.w1), tr.weights1[head])
    close(heat(at, KEYS.w2), tr.weights2[head])
    close(heat(at, KEYS.diff), tr.weights[head])
    lam = math.exp(a) - math.exp(b) + 0.8 - 0.6 * math.exp(-0.3 * (layer - 1))  # by hand
    assert abs(float(tr.lam) - lam) < 1e-6
    np.testing.assert_allclose(tr.weights[head].sum(-1), 1 - lam, atol=1e-5)
    latex = "\n".join(str(x.value) for x in at.latex)
    assert f"= {float(tr.lam):.6f}" in latex and f"{tr.lambda_init:.6f}" in latex
    peak = lambda w: (w.abs().amax(-1) / w.abs().sum(-1)).mean().item()  # noqa: E731
    one, diff = peak(tr.weights1[head]), peak(tr.weights[head])
    said = texts(at)
    assert f"**{100 * one:.1f}%** of a row's absolute weight in map 1 and **{100 * diff:.1f}%**" in said
    assert ("The difference is more concentrated" in said) == (diff > one)
    if 0 < lam < 1:
        no_errors(at)
        assert not at.warning


def test_lambda_outside_zero_one_is_said():
    at = run(a=-1.0, b=1.0)  # e^-1 − e + 0.2 < 0
    assert any("≤ 0: the second map is added instead of subtracted" in w.value for w in at.warning)
    at = run(a=1.0, b=-1.0, layer=32)  # e − e^-1 + 0.8 > 1
    assert any("≥ 1: the second map outweighs the first" in w.value for w in at.warning)
    assert not at.exception


@pytest.mark.parametrize(("name", "bad", "default"), [("layer", 0, 1), ("layer", 99, 1), ("a", 7.0, 0.0),
                                                      ("b", float("nan"), 0.0), ("head", 5, 0), ("a", "x", 0.0)])
def test_tampered_values_get_a_message_and_the_default(name, bad, default):
    at = run(**{name: bad})
    assert not at.exception
    assert any("cannot be used here" in e.value for e in at.error)
    assert at.session_state[getattr(KEYS, name)] == default


def test_korean():
    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    assert "소프트맥스 맵 두 개" in texts(at)
