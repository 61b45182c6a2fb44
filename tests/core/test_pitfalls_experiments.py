import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import experiments, masks, pitfalls


def rand(shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@settings(max_examples=25, deadline=None)
@given(n_q=st.integers(2, 7), n_k=st.integers(2, 7), seed=st.integers(0, 9999))
def test_property_wrong_axis_softmax_normalises_over_queries(n_q, n_k, seed):
    L = rand((n_q, n_k), seed)
    wrong = pitfalls.wrong_axis_softmax(L)
    e = np.exp(L.numpy() - L.numpy().max(axis=0))
    np.testing.assert_allclose(wrong.weights.numpy(), e / e.sum(axis=0), atol=1e-12)
    np.testing.assert_allclose(wrong.sums_per_key.numpy(), np.ones(n_k), atol=1e-12)
    right = core.attention(rand((n_q, 3), seed), rand((n_k, 3), seed + 1), rand((n_k, 2), seed + 2))
    assert not np.allclose(pitfalls.wrong_axis_softmax(right.logits).sums_per_query.numpy(), 1.0)


def test_wrong_axis_with_causal_logits_keeps_masked_zero():
    X = core.tokens.c18_embedding().double()
    tr = core.attention(X, X, X, mask=masks.causal(4))
    wrong = pitfalls.wrong_axis_softmax(tr.logits)
    assert (wrong.weights[~masks.causal(4)] == 0).all()
    torch.testing.assert_close(wrong.sums_per_key, torch.ones(4, dtype=torch.float64))
    assert wrong.weights[0, 0] < 1  # query 0 no longer puts all its weight on key 0


def test_mask_after_softmax_breaks_the_row_sums_and_large_negative_matches():
    q, k, v = rand((4, 3), 1), rand((4, 3), 2), rand((4, 2), 3)
    m = masks.causal(4)
    right = core.attention(q, k, v, mask=m)
    after = pitfalls.mask_after_softmax(right.scaled, m)
    assert (after.sums_per_query[:3] < 1 - 1e-6).all()  # every query that lost keys
    assert after.sums_per_query[3] == pytest.approx(1.0)  # the last query sees every key
    big = pitfalls.mask_with_value(right.scaled, m, value=-1e9)
    torch.testing.assert_close(big.weights, right.weights, atol=1e-12, rtol=0)


def test_fully_masked_row_large_negative_is_uniform_and_sdpa_is_nan():
    q, k, v = rand((3, 2), 1), rand((4, 2), 2), rand((4, 2), 3)
    m = torch.ones(3, 4, dtype=torch.bool)
    m[0] = False
    big = pitfalls.mask_with_value(core.attention(q, k, v).scaled, m)
    torch.testing.assert_close(big.weights[0], torch.full((4,), 0.25, dtype=torch.float64))
    ours = core.attention(q, k, v, mask=m)
    assert (ours.output[0] == 0).all()
    # torch 2.13's SDPA also gives zeros; a plain softmax over the −∞ row gives NaN
    torch.testing.assert_close(ours.output, pitfalls.torch_sdpa(q, k, v, mask=m))
    naive = pitfalls.naive_softmax(ours.logits)
    assert torch.isnan(naive[0]).all() and not torch.isnan(naive[1:]).any()


def test_transpose_gap_is_zero_for_twins_and_sees_a_difference():
    q, k, v = rand((4, 3), 1), rand((5, 3), 2), rand((5, 2), 3)
    row = core.attention(q, k, v, mask=masks.causal(4, 5))
    col = core.attention(q.T, k.T, v.T, mask=masks.causal(4, 5, convention="column"), convention="column")
    assert set(core.transpose_gap(row, col).values()) == {0.0}
    other = core.attention(q.T, k.T, (v * 2).T, mask=masks.causal(4, 5, convention="column"), convention="column")
    gaps = core.transpose_gap(row, other)
    assert gaps["output"] > 0 and gaps["weights"] == 0
    with pytest.raises(ValueError, match="give a row-convention trace and a column-convention trace"):
        core.transpose_gap(col, row)


def test_l2_normalize():
    x = torch.tensor([[3.0, 4.0], [0.0, 0.0]])
    torch.testing.assert_close(core.l2_normalize(x), torch.tensor([[0.6, 0.8], [0.0, 0.0]]))


def test_scaling_experiment_measures_var_d_and_the_saturation():
    e = experiments.scaling_experiment(dims=(1, 16, 256), n_samples=4000, seed=1)
    for d, var in zip(e.dims, e.var_dot.tolist(), strict=True):
        assert abs(var / d - 1) < 0.25, (d, var)
    # unscaled: softmax saturates as d grows; scaled: it stays put
    assert e.max_weight[-1] > 0.8 and e.max_weight_scaled[-1] < 0.5
    assert e.entropy[-1] < e.entropy_scaled[-1]
    assert e.grad_norm[-1] < 0.5 * e.grad_norm_scaled[-1]
    assert e.dots.shape == (3, 4000)
    torch.testing.assert_close(e.dots_scaled[2], e.dots[2] / 16)
    again = experiments.scaling_experiment(dims=(1, 16, 256), n_samples=4000, seed=1)
    assert torch.equal(again.var_dot, e.var_dot)
    with pytest.raises(ValueError, match="dims must be positive"):
        experiments.scaling_experiment(dims=())


def test_max_abs_diff():
    assert core.max_abs_diff([[1.0, 2.0]], [[1.0, 2.5]]) == 0.5
    with pytest.raises(ValueError, match="shapes differ"):
        core.max_abs_diff([[1.0]], [[1.0, 2.0]])


def test_head_layouts_against_torch_and_numpy():
    from core.playground.pitfalls import head_layouts

    g = torch.Generator().manual_seed(3)
    B, n, d, H = 1, 4, 8, 2
    x = torch.randn(B, n, d, generator=g)
    W = {k: torch.randn(d, d, generator=g) for k in ("q", "k", "v", "o")}
    lay = head_layouts(x, W["q"], W["k"], H)
    mha = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W["q"].T, W["k"].T, W["v"].T]))
        mha.out_proj.weight.copy_(W["o"].T)
    _, per_head = mha(x, x, x, average_attn_weights=False)  # (B, H, n, n)
    _, averaged = mha(x, x, x)  # the default: averaged over the heads, (B, n, n)
    torch.testing.assert_close(lay.right, per_head, atol=1e-5, rtol=0)
    torch.testing.assert_close(lay.averaged, averaged, atol=1e-5, rtol=0)
    assert tuple(lay.averaged.shape) == (1, 4, 4) and tuple(lay.heads_last.shape) == (1, 4, 2, 4)
    torch.testing.assert_close(lay.heads_last, lay.right.transpose(1, 2))  # the same numbers, another axis order
    # the missing transpose, by hand in numpy: (B, n, H, d_k) @ (B, n, d_k, H)
    q = (x @ W["q"]).numpy().reshape(B, n, H, d // H)
    k = (x @ W["k"]).numpy().reshape(B, n, H, d // H)
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // H)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(lay.no_transpose.numpy(), e / e.sum(-1, keepdims=True), atol=1e-5)
    assert tuple(lay.no_transpose.shape) == (1, 4, 2, 2)
    assert tuple(lay.view_only.shape) == (1, 2, 4, 4) and lay.view_gap > 1e-3  # the right shape, wrong numbers
