"""core.lab.permutation_check: the one permutation experiment, with each kind of positions, against numpy written here."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core import lab, positional


def sa_numpy(Z, Wq, Wk, Wv, *, base=None, slope=None):
    q, k, v = Z @ Wq, Z @ Wk, Z @ Wv
    n, d = q.shape
    if base is not None:  # RoPE as complex multiplication of the adjacent pairs
        theta = base ** (-np.arange(0, d, 2) / d)
        rot = np.exp(1j * np.arange(n)[:, None] * theta)
        for x in (q, k):
            z = (x[:, 0::2] + 1j * x[:, 1::2]) * rot
            x[:, 0::2], x[:, 1::2] = z.real, z.imag
    s = q @ k.T / np.sqrt(d)
    if slope is not None:
        s = s - slope * np.abs(np.arange(n)[:, None] - np.arange(n)[None, :])
    w = np.exp(s - s.max(1, keepdims=True))
    return (w / w.sum(1, keepdims=True)) @ v


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 7), seed=st.integers(0, 10_000), kind=st.sampled_from(["none", "sinusoidal", "rope", "alibi"]))
def test_against_numpy_and_equivariance_only_without_positions(n, seed, kind):
    g = np.random.default_rng(seed)
    X, Wq, Wk, Wv = g.normal(size=(n, 4)), *(g.normal(size=(4, 4)) for _ in range(3))
    perm = list(g.permutation(n))
    table = positional.sinusoidal(n, 4).double().numpy() if kind == "sinusoidal" else None
    how = {"sinusoidal": {"positions": table}, "rope": {"rope_base": 100.0}, "alibi": {"alibi_slope": 0.5}}.get(kind, {})
    c = lab.permutation_check(X, perm, W_q=Wq, W_k=Wk, W_v=Wv, **how)
    assert c.kind == {"sinusoidal": "added"}.get(kind, kind)
    extra = {"rope": {"base": 100.0}, "alibi": {"slope": 0.5}}.get(kind, {})
    Z = X[perm] + (0 if table is None else table)
    np.testing.assert_allclose(c.sa_px.numpy(), sa_numpy(Z, Wq, Wk, Wv, **extra), atol=1e-9)
    if kind == "none":
        assert c.max_diff < 1e-9  # SA(PX) = P·SA(X)


def test_a_shift_breaks_every_kind_of_positions():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(5, 4, generator=g, dtype=torch.float64)
    Wq, Wk, Wv = (torch.randn(4, 4, generator=g, dtype=torch.float64) for _ in range(3))
    for how in ({"positions": positional.sinusoidal(5, 4).double()}, {"rope_base": 10000.0}, {"alibi_slope": 0.5}):
        c = lab.permutation_check(X, [1, 2, 3, 4, 0], W_q=Wq, W_k=Wk, W_v=Wv, **how)
        assert c.max_diff > 1e-3, how


@pytest.mark.parametrize("kwargs, message", [
    ({"rope_base": 10.0, "alibi_slope": 0.5}, "give one way of adding positions, not rope_base and alibi_slope"),
    ({"alibi_slope": 0.0}, "the ALiBi slope m must be positive, got 0.0"),
    ({"positions": np.ones((2, 3))}, "added positions need a table of X's shape (3, 3)"),
    ({"rope_base": 100.0}, "RoPE needs an even width d, got d=3"),
    ({"perm": [0, 0, 1]}, "[0, 0, 1] is not a permutation of 0..2"),
    ({"W_k": np.eye(4)}, "X (3, 3) and W_k (4, 4) do not fit"),
])
def test_bad_input_raises_value_error(kwargs, message):
    X = np.eye(3)
    args = {"perm": [2, 1, 0], "W_q": X, "W_k": X, "W_v": X} | kwargs
    with pytest.raises(ValueError, match=re.escape(message)):
        lab.permutation_check(X, args.pop("perm"), **args)
