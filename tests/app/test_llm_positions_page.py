"""AppTest: the positions-in-LLMs page (added tables, RoPE, ALiBi, the permutation experiment with each) against core
and against references written here (complex-number RoPE, the ALiBi formula, attention by hand)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

import core
from core import positional, tokens
from ui import state

from .helpers import close, heat, no_errors, page, panels, texts

PAGE = "app_pages/llm_positions.py"
KEYS = state.LLM_POSITIONS
C18 = list(tokens.C18_TOKENS)
PERM = [1, 2, 3, 0]  # the page's order: the first token moved to the end


def at_kind(kind: str, **extra):
    at = page(PAGE, run=False)
    at.session_state[KEYS.kind] = kind
    for key, value in extra.items():
        at.session_state[key] = value
    return at.run()


def chart(at, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(key))


def rope_complex(x: np.ndarray, positions: np.ndarray, base: float) -> np.ndarray:
    """RoPE as complex multiplication: pairs (2i, 2i+1) as x_{2i} + i·x_{2i+1}, times e^{i·m·θ_i}."""
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * positions[:, None] * theta)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def sa_by_hand(Z: torch.Tensor, W: dict, *, rope_base: float | None = None, slope: float | None = None) -> np.ndarray:
    q, k, v = (Z @ W[n] for n in ("W_q", "W_k", "W_v"))
    q, k, v = q.double().numpy(), k.double().numpy(), v.double().numpy()
    n = len(q)
    if rope_base is not None:
        q, k = rope_complex(q, np.arange(n), rope_base), rope_complex(k, np.arange(n), rope_base)
    s = q @ k.T / np.sqrt(q.shape[1])
    if slope is not None:
        i = np.arange(n)
        s = s - slope * np.abs(i[:, None] - i[None, :])
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ v


def setup():
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    return X, W


@pytest.mark.parametrize("kind", ["rope", "alibi", "sinusoidal", "learned"])
def test_the_permutation_experiment_with_each_kind_of_positions(kind):
    at = at_kind(kind)
    no_errors(at)
    X, W = setup()
    extra = {"rope": {"rope_base": 10000.0}, "alibi": {"slope": 0.5}}.get(kind, {})
    table = {"sinusoidal": positional.sinusoidal(4, 8), "learned": positional.learned(4, 8, seed=0)}.get(kind)
    Z = X[PERM] if table is None else X[PERM] + table
    close(heat(at, KEYS.sa_px), sa_by_hand(Z, W, **extra), tol=2e-6)
    Z0 = X if table is None else X + table
    close(heat(at, KEYS.p_sa_x), sa_by_hand(Z0, W, **extra)[PERM], tol=2e-6)
    assert not np.allclose(heat(at, KEYS.sa_px), heat(at, KEYS.p_sa_x), atol=1e-3)  # order became visible
    assert "the output only shuffles" in texts(at)


def test_rope_pair_turns_on_a_circle_and_scores_depend_on_distance_only():
    at = at_kind("rope", **{KEYS.base: 100.0, KEYS.pair_dim: 1})
    no_errors(at)
    q = tokens.projection(1, 8, seed=0, name="lp.q")[0].double().numpy()
    track = chart(at, KEYS.rotation)["data"][-1]
    m = np.arange(8)
    want = rope_complex(np.tile(q, (8, 1)), m, 100.0)[:, 2:4]
    close(track["x"], want[:, 0], tol=2e-6)
    close(track["y"], want[:, 1], tol=2e-6)
    lines = chart(at, KEYS.distance)["data"]
    close(lines[0]["y"], lines[1]["y"], tol=1e-4)  # key at position 0 and at 7: the same curve
    k = tokens.projection(1, 8, seed=0, name="lp.k")[0].double().numpy()
    offsets = np.arange(-7, 8)
    score = [rope_complex(q[None], np.array([o + 7.0]), 100.0)[0] @ rope_complex(k[None], np.array([7.0]), 100.0)[0]
             for o in offsets]
    close(lines[1]["y"], score, tol=1e-4)
    assert "depends only on m − n" in texts(at)


def test_alibi_bias_maps_follow_the_formula():
    at = at_kind("alibi", **{KEYS.alibi_heads: 4})
    no_errors(at)
    slopes = 2.0 ** (-8 / 4 * np.arange(1, 5))  # the paper's geometric sequence for H = 4: 1/4, 1/16, 1/64, 1/256
    close(core.positional.alibi_slopes(4), slopes, tol=1e-7)
    shown = panels(at)
    i = np.arange(4)
    for h in range(4):
        z = np.array([[np.nan if v is None else v for v in row] for row in shown[state.item(KEYS.alibi, h)]["map"]["z"]])
        want = -slopes[h] * (i[:, None] - i[None, :])
        lower = i[:, None] >= i[None, :]
        close(z[lower], want[lower], tol=1e-6)
        assert np.isnan(z[~lower]).all()  # −∞: the causal mask


@pytest.mark.parametrize("base", [0.0, -5.0, float("nan"), float("inf"), "ten"])
def test_a_base_that_is_not_positive_gets_a_message(base):
    at = at_kind("rope", **{KEYS.base: base})
    assert not at.exception
    assert any("positive number" in e.value for e in at.error), [e.value for e in at.error]
    assert at.session_state[KEYS.base] == 10000.0
    X, W = setup()
    close(heat(at, KEYS.sa_px), sa_by_hand(X[PERM], W, rope_base=10000.0), tol=2e-6)


def test_tampered_kind_and_pair_fall_back():
    at = at_kind("nope", **{KEYS.pair_dim: 99, KEYS.pairing: "diagonal", KEYS.alibi_heads: 3})
    assert not at.exception and at.error
    assert at.session_state[KEYS.kind] == "rope"


def test_korean():
    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    assert "순열 실험" in texts(at)
