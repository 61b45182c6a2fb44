import re

import numpy as np
import pytest
import torch

import core
from core import masks


def test_causal_row_is_lower_triangle_and_column_is_its_transpose():
    m = masks.causal(4)
    for i in range(4):
        for j in range(4):
            assert bool(m[i, j]) == (j <= i)
    assert torch.equal(masks.causal(4, convention="column"), m.T)


def test_causal_rectangular_aligns_queries_to_the_end():
    m = masks.causal(2, 4)
    assert m.tolist() == [[True, True, True, False], [True, True, True, True]]


def test_causal_upper_triangle_weights_are_zero():
    X = core.tokens.c18_embedding()
    tr = core.attention(X, X, X, mask=masks.causal(4))
    assert (torch.triu(tr.weights, diagonal=1) == 0).all()
    assert tr.weights[0, 0] == 1.0
    torch.testing.assert_close(tr.weights.sum(-1), torch.ones(4))


def test_padding_mask_ignores_pad_keys():
    m = masks.padding([1, 1, 0], n_q=2)
    assert m.tolist() == [[True, True, False], [True, True, False]]
    assert torch.equal(masks.padding([True, True, False], 2, convention="column"), m.T)
    assert masks.padding([[1, 0], [1, 1]], 3).shape == (2, 3, 2)


def test_window_and_combination_with_and():
    w = masks.window(5, 2)
    assert w.tolist()[2] == [False, True, True, True, False]
    cw = masks.window(5, 2, causal_only=True)
    assert cw.tolist()[2] == [False, True, True, False, False]
    combined = masks.causal(5) & masks.window(5, 2)
    assert torch.equal(combined, cw)
    pad = masks.padding([1, 1, 1, 0, 1], 5)
    assert not (masks.causal(5) & pad)[4, 3]


def test_additive_form_is_zero_or_neg_inf():
    a = masks.additive(masks.causal(3))
    assert a[0, 0] == 0 and torch.isneginf(a[0, 1]) and a[2, 0] == 0


@pytest.mark.parametrize("call, message", [
    (lambda: masks.causal(0), "n_q must be a positive integer, got 0"),
    (lambda: masks.window(3, 0), "size must be a positive integer, got 0"),
    (lambda: masks.causal(2, convention="x"), "unknown convention 'x'; choose 'row' or 'column'"),
    (lambda: masks.padding(np.ones((1, 1, 1)), 2), "key_valid must be (n_k,) or (B, n_k), got (1, 1, 1)"),
    (lambda: masks.padding([2, 1], 2), "mask must be boolean (True = may attend) or contain only 0 and 1"),
])
def test_bad_mask_arguments(call, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        call()


def test_combine_matches_a_hand_built_mask():
    n_q = n_k = 5
    pad, blocked, w = [3], [(4, 0), (9, 9)], 3
    want = np.ones((n_q, n_k), dtype=bool)
    for i in range(n_q):
        for j in range(n_k):
            if j > i or j in pad or abs(i - j) >= w or (i, j) in blocked:
                want[i, j] = False
    got = masks.combine(n_q, n_k, causal=True, pad=pad, blocked=blocked, window=w)
    assert np.array_equal(got.numpy(), want)
    assert np.array_equal(masks.combine(n_q, n_k, causal=True, pad=pad, blocked=blocked, window=w,
                                        convention="column").numpy(), want.T)
    assert masks.combine(3, 4) is None and masks.combine(3, 4, blocked=[(7, 7)], pad=[9]) is None
    cross = masks.combine(2, 4, pad=[0], window=2)  # a window needs a square matrix: ignored here
    assert np.array_equal(cross.numpy(), np.array([[False, True, True, True]] * 2))
