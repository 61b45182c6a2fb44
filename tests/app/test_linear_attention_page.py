"""AppTest: the linear-attention page against the paper's sums written out in numpy (both orders, causal
prefix sums) and softmax weights by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest

from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/linear_attention.py"
KEYS = state.LINEAR_ATTENTION
C18 = list(tokens.C18_TOKENS)


def qkv():
    X = tokens.embed(C18, 8, seed=0)
    return [(X @ tokens.projection(8, 8, seed=0, name=f"ps.{w}")).double().numpy() for w in ("W_q", "W_k", "W_v")]


def phi(x):
    return np.where(x > 0, x + 1, np.exp(x))  # elu(x) + 1


@pytest.mark.parametrize("causal", [False, True])
def test_both_orders_equal_the_papers_sums(causal):
    at = page(PAGE, run=False)
    at.session_state[KEYS.causal] = causal
    at.run()
    no_errors(at)
    q, k, v = qkv()
    n = len(q)
    out = np.zeros_like(v)
    for i in range(n):  # V'_i = Σ_j φ(q_i)ᵀφ(k_j) v_j / Σ_j φ(q_i)ᵀφ(k_j), j ≤ i when causal
        js = range(i + 1) if causal else range(n)
        sims = np.array([phi(q[i]) @ phi(k[j]) for j in js])
        out[i] = sims @ v[list(js)] / sims.sum()
    close(heat(at, KEYS.quadratic), out, tol=3e-6)
    close(heat(at, KEYS.associative), out, tol=3e-6)
    s = q @ k.T / np.sqrt(8)
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    w = np.exp(s - s.max(1, keepdims=True))
    close(heat(at, KEYS.softmax), w / w.sum(1, keepdims=True), tol=2e-6)
    assert not np.allclose(heat(at, KEYS.linear), heat(at, KEYS.softmax), atol=1e-2)
    assert "not softmax computed faster" in texts(at)


def test_cost_chart_counts():
    at = page(PAGE)
    fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(KEYS.cost))
    ns = fig["data"][0]["x"]
    assert fig["data"][0]["y"] == [n * n * 16 for n in ns]  # n²·(d_k + d_v)
    assert fig["data"][1]["y"] == [2 * n * 64 + n * 8 for n in ns]  # n·d·d twice, plus n·d for the denominators


def test_tampered_toggle_and_korean():
    at = page(PAGE, run=False, query={"lang": "ko"})
    at.session_state[KEYS.causal] = "yes"
    at.run()
    assert not at.exception
    assert "선형 어텐션" in texts(at)
