"""core.attention against independent references: torch SDPA, hand-written numpy, C18."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks

TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def rand(shape, seed, dtype=torch.float64, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=dtype).to(device)


# ---------------------------------------------------------------- numpy references
def np_softmax(x, axis):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def np_scores(score, q, k, params):
    """Loop form straight from the formulas: S[i, j] = score(q_i, k_j)."""
    n_q, n_k = q.shape[0], k.shape[0]
    S = np.zeros((n_q, n_k))
    for i in range(n_q):
        for j in range(n_k):
            if score == "general":
                S[i, j] = k[j] @ params["W"] @ q[i]
            elif score == "additive":
                S[i, j] = params["w_a"] @ np.tanh(params["W_a"] @ q[i] + params["U_a"] @ k[j])
            elif score == "cosine":
                S[i, j] = q[i] @ k[j] / (np.linalg.norm(q[i]) * np.linalg.norm(k[j]))
            else:
                S[i, j] = q[i] @ k[j]
    return S


def make_params(score, d_q, d_k, d_a, seed):
    rng = np.random.default_rng(seed)
    if score == "general":
        return {"W": rng.normal(size=(d_k, d_q))}
    if score == "additive":
        return {"W_a": rng.normal(size=(d_a, d_q)), "U_a": rng.normal(size=(d_a, d_k)), "w_a": rng.normal(size=d_a)}
    return None


shapes = st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4))


# ---------------------------------------------------------------- C18 worked example
def test_c18_numbers_match_the_curriculum():
    X = core.tokens.c18_embedding()
    tr = core.attention(X, X, X)
    assert tr.weights.dtype == torch.float32
    assert torch.equal(tr.scores, torch.tensor([[2.0, 1, 1, 2], [1, 2, 1, 2], [1, 1, 2, 2], [2, 2, 2, 3]]))
    assert tr.scale == pytest.approx(1 / math.sqrt(3))
    torch.testing.assert_close(tr.weights[0], torch.tensor([0.3202, 0.1798, 0.1798, 0.3202]), atol=5e-5, rtol=0)
    torch.testing.assert_close(tr.weights[3], torch.tensor([0.2091, 0.2091, 0.2091, 0.3726]), atol=5e-5, rtol=0)
    torch.testing.assert_close(tr.output[0], torch.tensor([0.8202, 0.6798, 0.8202]), atol=5e-5, rtol=0)
    torch.testing.assert_close(tr.output[3], torch.tensor([0.7909, 0.7909, 0.7909]), atol=5e-5, rtol=0)
    # the lessons: rows sum to 1; the diagonal is not 1
    torch.testing.assert_close(tr.weights.sum(-1), torch.ones(4))
    assert (tr.weights.diagonal() < 0.5).all()


# ---------------------------------------------------------------- SDPA reference
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("score", ["dot", "scaled_dot"])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch_sdpa(device, dtype, score, causal):
    q, k, v = (rand((2, 3, 5, 8), s, dtype, device) for s in (1, 2, 3))
    mask = masks.causal(5, device=device) if causal else None
    tr = core.attention(q, k, v, score=score, mask=mask)
    sdpa_scale = 1.0 if score == "dot" else None
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sdpa_scale)
    assert tr.output.device.type == torch.device(device).type
    torch.testing.assert_close(tr.output, ref, atol=TOL[dtype], rtol=TOL[dtype])


@settings(max_examples=40, deadline=None)
@given(shapes=shapes, seed=st.integers(0, 2**16), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_property_sdpa_with_random_mask(shapes, seed, dtype):
    n_q, n_k, d_k, d_v, b = shapes
    q, k, v = rand((b, n_q, d_k), seed, dtype), rand((b, n_k, d_k), seed + 1, dtype), rand((b, n_k, d_v), seed + 2, dtype)
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(b, n_q, n_k, generator=g) > 0.3
    mask[..., 0] = True  # keep every query alive: SDPA returns NaN on fully masked rows
    tr = core.attention(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(tr.output, ref, atol=TOL[dtype], rtol=TOL[dtype])


# ---------------------------------------------------------------- numpy reference for the rest
@settings(max_examples=30, deadline=None)
@given(shapes=shapes, seed=st.integers(0, 2**16), score=st.sampled_from(["general", "additive", "cosine", "dot"]))
def test_property_scores_match_numpy_loops(shapes, seed, score):
    n_q, n_k, d_k, d_v, d_a = shapes
    rng = np.random.default_rng(seed)
    q, k, v = rng.normal(size=(n_q, d_k)), rng.normal(size=(n_k, d_k)), rng.normal(size=(n_k, d_v))
    params = make_params(score, d_k, d_k, d_a, seed)
    tr = core.attention(q, k, v, score=score, params=params, scale=0.7, temperature=1.3)
    S = np_scores(score, q, k, params)
    A = np_softmax(S * 0.7 / 1.3, axis=1)
    np.testing.assert_allclose(tr.scores.numpy(), S, atol=1e-10)
    np.testing.assert_allclose(tr.weights.numpy(), A, atol=1e-10)
    np.testing.assert_allclose(tr.output.numpy(), A @ v, atol=1e-10)


def test_additive_and_general_allow_different_query_and_key_widths():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 5)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    p = make_params("additive", 5, 2, 6, 1)
    tr = core.attention(q, k, v, score="additive", params=p)
    np.testing.assert_allclose(tr.scores.numpy(), np_scores("additive", q, k, p), atol=1e-12)
    pg = make_params("general", 5, 2, 0, 2)
    tr = core.attention(q, k, v, score="general", params=pg)
    np.testing.assert_allclose(tr.scores.numpy(), np_scores("general", q, k, pg), atol=1e-12)


def test_cosine_is_dot_of_normalized_vectors_and_bounded():
    q, k = rand((4, 6), 1), rand((5, 6), 2)
    cos = core.attention(q, k, k, score="cosine").scores
    dot_n = core.attention(F.normalize(q, dim=-1), F.normalize(k, dim=-1), k, score="dot").scores
    torch.testing.assert_close(cos, dot_n)
    assert cos.abs().max() <= 1 + 1e-12


def test_scale_override_and_temperature():
    q, k, v = rand((3, 4), 1), rand((3, 4), 2), rand((3, 2), 3)
    tr = core.attention(q, k, v, score="scaled_dot", scale=1.0, temperature=2.0)
    torch.testing.assert_close(tr.logits, q @ k.T / 2.0)
    assert core.attention(q, k, v, score="dot").scale == 1.0
    assert core.attention(q, k, v).scale == pytest.approx(0.5)


# ---------------------------------------------------------------- conventions
@settings(max_examples=30, deadline=None)
@given(shapes=shapes, seed=st.integers(0, 2**16), score=st.sampled_from(core.SCORE_FUNCTIONS), causal=st.booleans())
def test_property_column_trace_is_transpose_of_row_trace(shapes, seed, score, causal):
    n, _, d_k, d_v, d_a = shapes
    q, k, v = rand((n, d_k), seed), rand((n, d_k), seed + 1), rand((n, d_v), seed + 2)
    params = make_params(score, d_k, d_k, d_a, seed)
    row = core.attention(q, k, v, score=score, params=params, mask=masks.causal(n) if causal else None)
    col = core.attention(q.T, k.T, v.T, score=score, params=params, convention="column",
                         mask=masks.causal(n, convention="column") if causal else None)
    assert col.convention == "column" and row.convention == "row"
    for name in ("q", "k", "v", "scores", "scaled", "logits", "weights", "output"):
        assert torch.equal(getattr(col, name), getattr(row, name).T), name
    torch.testing.assert_close(col.weights.sum(dim=0), torch.ones(n, dtype=torch.float64))


def test_column_convention_definition_entry_ij_is_score_of_q_j_with_k_i():
    Q, K = rand((3, 2), 1), rand((3, 4), 2)  # d_k=3, n_q=2, n_k=4
    V = rand((5, 4), 3)
    tr = core.attention(Q, K, V, score="dot", convention="column")
    assert tr.scores.shape == (4, 2) and tr.output.shape == (5, 2)
    for i in range(4):
        for j in range(2):
            assert tr.scores[i, j] == pytest.approx(float(Q[:, j] @ K[:, i]))
    torch.testing.assert_close(tr.output, V @ torch.softmax(K.T @ Q, dim=0))


# ---------------------------------------------------------------- masks and the fully-masked policy
@settings(max_examples=30, deadline=None)
@given(n_q=st.integers(1, 7), n_k=st.integers(1, 7), seed=st.integers(0, 2**16))
def test_property_masked_weights_zero_logits_neg_inf_rows_sum_one(n_q, n_k, seed):
    q, k, v = rand((n_q, 3), seed), rand((n_k, 3), seed + 1), rand((n_k, 2), seed + 2)
    mask = torch.rand(n_q, n_k, generator=torch.Generator().manual_seed(seed)) > 0.5
    tr = core.attention(q, k, v, mask=mask)
    assert (tr.weights[~mask] == 0).all()
    assert torch.isneginf(tr.logits[~mask]).all()
    assert torch.isfinite(tr.logits[mask]).all()
    alive = mask.any(-1)
    torch.testing.assert_close(tr.weights.sum(-1)[alive], torch.ones(int(alive.sum()), dtype=torch.float64))
    assert torch.equal(tr.fully_masked, ~alive)
    assert not torch.isnan(tr.weights).any() and not torch.isnan(tr.output).any()


def test_fully_masked_query_gets_zero_weights_and_output_in_both_conventions():
    q, k, v = rand((3, 2), 1), rand((4, 2), 2), rand((4, 5), 3)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    tr = core.attention(q, k, v, mask=mask)
    assert tr.fully_masked.tolist() == [False, True, False]
    assert (tr.weights[1] == 0).all() and (tr.output[1] == 0).all()
    col = core.attention(q.T, k.T, v.T, mask=mask.T, convention="column")
    assert col.fully_masked.tolist() == [False, True, False]
    assert (col.output[:, 1] == 0).all()


def test_mask_accepts_0_1_numbers_and_broadcasts():
    q, k, v = rand((2, 3, 2), 1), rand((2, 4, 2), 2), rand((2, 4, 2), 3)
    tr = core.attention(q, k, v, mask=[1, 1, 0, 1])  # (n_k,) broadcasts over batch and queries
    assert tr.mask.shape == (2, 3, 4)
    assert (tr.weights[..., 2] == 0).all()


# ---------------------------------------------------------------- input forms, dtypes
def test_accepts_lists_numpy_tensors_and_ints():
    X = [[1, 0, 1], [0, 1, 1]]
    a = core.attention(X, X, X)
    b = core.attention(np.array(X, dtype=np.float32), np.array(X, dtype=np.float32), np.array(X, dtype=np.float32))
    c = core.attention(torch.tensor(X), torch.tensor(X), torch.tensor(X))
    assert a.output.dtype == torch.float32 and c.output.dtype == torch.float32
    torch.testing.assert_close(a.output, b.output)
    torch.testing.assert_close(a.output, c.output)
    assert core.attention(np.eye(2), np.eye(2), np.eye(2)).output.dtype == torch.float64


def test_trace_is_frozen():
    tr = core.attention([[1.0]], [[1.0]], [[1.0]])
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'weights'"):
        tr.weights = None  # type: ignore[misc]


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(q=np.ones((2, 4)), k=np.ones((3, 3)), v=np.ones((3, 2))), "K has d_k=3 but Q has d_k=4"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((4, 2))), "K has n_k=3 keys but V has 4"),
        (dict(q=np.ones(3), k=np.ones((3, 3)), v=np.ones((3, 2))), "Q must be a matrix"),
        (dict(q=[[1.0, float("nan")]], k=np.ones((3, 2)), v=np.ones((3, 2))), "Q (1, 2) contains NaN"),
        (dict(q=np.ones((1, 2)), k=[[1.0, float("inf")]], v=np.ones((1, 2))), "K (1, 2) contains NaN or infinity"),
        (dict(q=[["a", "b"]], k=np.ones((3, 2)), v=np.ones((3, 2))), "Q must contain only numbers"),
        (dict(q=[[1.0, 2.0], [1.0]], k=np.ones((3, 2)), v=np.ones((3, 2))), "Q is not a rectangular array"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), score="bogus"), "unknown score 'bogus'"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), score="general"), "needs params['W'] of shape (3, 3)"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), score="general", params={"W": np.ones((2, 2))}),
         "params['W'] has shape (2, 2) but score 'general' needs (3, 3)"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), score="additive",
              params={"W_a": np.ones((4, 3)), "U_a": np.ones((4, 3))}), "needs params['w_a'] of shape (4,)"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), mask=np.ones((3, 3), bool)),
         "mask of shape (3, 3) does not broadcast to the weights' shape (2, 3)"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), mask=[[0.5, 1, 1]]), "mask must be boolean"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), temperature=0), "temperature must be a positive"),
        (dict(q=np.ones((2, 3)), k=np.ones((3, 3)), v=np.ones((3, 2)), convention="diag"), "unknown convention"),
        (dict(q=np.full((2, 3), 1e30, dtype=np.float32), k=np.full((3, 3), 1e30, dtype=np.float32),
              v=np.ones((3, 2), dtype=np.float32)),
         "scores overflow"),
        (dict(q=np.ones((0, 3)), k=np.ones((3, 3)), v=np.ones((3, 2))), "empty input"),
        (dict(q=np.ones((2, 2, 3)), k=np.ones((3, 3, 3)), v=np.ones((3, 3, 2))), "batch dimensions do not broadcast"),
    ],
)
def test_bad_input_raises_value_error_naming_shapes(kwargs, fragment):
    q, k, v = kwargs.pop("q"), kwargs.pop("k"), kwargs.pop("v")
    with pytest.raises(ValueError, match=re.escape(fragment)):
        core.attention(q, k, v, **kwargs)


def test_column_mask_shape_error_is_in_column_terms():
    with pytest.raises(ValueError, match=r"mask of shape \(2, 3\) does not broadcast to the weights' shape \(3, 2\)"):
        core.attention(np.ones((4, 2)), np.ones((4, 3)), np.ones((5, 3)), convention="column", mask=np.ones((2, 3), bool))


def test_contributions_sum_to_the_output_in_both_conventions():
    q, k, v = rand((3, 4), 1), rand((5, 4), 2), rand((5, 2), 3)
    row = core.attention(q, k, v)
    col = core.attention(q.T, k.T, v.T, convention="column")
    for j in range(3):
        c = row.contributions(j)
        assert c.shape == (5, 2)
        torch.testing.assert_close(c.sum(0), row.output[j])
        torch.testing.assert_close(c[1], row.weights[j, 1] * v[1])
        torch.testing.assert_close(col.contributions(j), c)
    with pytest.raises(ValueError, match="out of range"):
        row.contributions(3)


def test_weight_sums_and_top_keys_in_both_conventions():
    q, k, v = rand((3, 4), 1), rand((5, 4), 2), rand((5, 2), 3)
    mask = torch.ones(3, 5, dtype=torch.bool)
    mask[2] = False
    row = core.attention(q, k, v, mask=mask)
    col = core.attention(q.T, k.T, v.T, mask=mask.T, convention="column")
    for tr in (row, col):
        torch.testing.assert_close(tr.weight_sums, torch.tensor([1.0, 1.0, 0.0], dtype=torch.float64))
        expected = [int(np.argmax(row.weights[i].numpy())) for i in range(2)] + [-1]
        assert tr.top_keys.tolist() == expected
