"""ALiBi and the additive bias= of core.attention (against torch SDPA's float attn_mask, BLOOM's slopes and
the paper's rule); the sliding window with attention sinks and its reach over layers."""

import math
import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks
from core.mechanism.positional import alibi_bias, alibi_slopes, relative_position_bias


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


# ---------------------------------------------------------------- ALiBi slopes
def test_slopes_of_a_power_of_two_follow_the_paper():
    """The paper: for 8 heads the slopes are 1/2, 1/4, …, 1/256."""
    torch.testing.assert_close(alibi_slopes(8, dtype=torch.float64), torch.tensor([2.0 ** -k for k in range(1, 9)],
                                                                                   dtype=torch.float64))
    torch.testing.assert_close(alibi_slopes(16, dtype=torch.float64), torch.tensor([2.0 ** (-k / 2) for k in range(1, 17)],
                                                                                    dtype=torch.float64))


def test_slopes_of_other_head_counts_follow_the_papers_rule():
    """H = 12: the 8 slopes of H = 8, then slopes 1, 3, 5, 7 (0-based 0, 2, 4, 6) of H = 16."""
    s16 = [2.0 ** (-k / 2) for k in range(1, 17)]
    expected = [2.0 ** -k for k in range(1, 9)] + s16[0::2][:4]
    torch.testing.assert_close(alibi_slopes(12, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64))


@pytest.mark.parametrize("H", list(range(1, 33)))
def test_slopes_equal_bloom(H):
    bloom = pytest.importorskip("transformers.models.bloom.modeling_bloom")
    alibi = bloom.build_alibi_tensor(torch.ones(1, 2), H, torch.float64)  # (H, 1, 2): slope · position
    torch.testing.assert_close(alibi_slopes(H, dtype=torch.float64), alibi[:, 0, 1], atol=1e-6, rtol=1e-6)


def test_bias_formula_and_relative_table():
    H, n = 3, 5
    b = alibi_bias(H, n, dtype=torch.float64)
    m = alibi_slopes(H, dtype=torch.float64)
    for h in range(H):
        for i in range(n):
            for j in range(n):
                assert b[h, i, j] == pytest.approx(-m[h].item() * (i - j))
    sym = alibi_bias(H, n, symmetric=True, dtype=torch.float64)
    assert torch.equal(sym, -(m[:, None, None] * (torch.arange(n)[:, None] - torch.arange(n)[None]).abs()) + 0.0)
    # a learned relative-position table gives the same grid when it holds ALiBi's numbers
    offsets = torch.arange(-(n - 1), n, dtype=torch.float64)  # j − i
    torch.testing.assert_close(relative_position_bias(m[:, None] * offsets, n), b)
    # queries as the last positions, as with a cache
    torch.testing.assert_close(alibi_bias(H, 2, n, dtype=torch.float64), b[:, -2:, :])


# ---------------------------------------------------------------- bias= in core.attention
@settings(max_examples=25, deadline=None)
@given(H=st.integers(1, 6), n=st.integers(1, 7), d=st.integers(1, 6), causal=st.booleans(), seed=st.integers(0, 999))
def test_property_alibi_attention_equals_sdpa_float_mask(H, n, d, causal, seed):
    q, k, v = rand(H, n, d, seed=seed), rand(H, n, d, seed=seed + 1), rand(H, n, d, seed=seed + 2)
    bias = alibi_bias(H, n, dtype=torch.float64)
    mask = masks.causal(n) if causal else None
    tr = core.attention(q, k, v, bias=bias, mask=mask)
    attn_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
    torch.testing.assert_close(tr.output, ref, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(tr.biased, tr.scaled + bias)


def test_bias_comes_before_the_mask():
    q, k, v = rand(4, 3), rand(4, 3, seed=1), rand(4, 3, seed=2)
    bias = torch.zeros(4, 4)
    bias[0, 3] = 1e6  # a huge bias on a cell the causal mask forbids
    tr = core.attention(q, k, v, bias=bias, mask=masks.causal(4))
    assert tr.weights[0, 3] == 0 and torch.isneginf(tr.logits[0, 3]) and tr.weights[0, 0] == 1
    assert torch.equal(tr.scaled, core.attention(q, k, v).scaled)  # scaled stays the scaled scores


def test_no_bias_changes_nothing_and_a_constant_row_bias_changes_no_weight():
    q, k, v = rand(5, 4), rand(5, 4, seed=1), rand(5, 4, seed=2)
    plain = core.attention(q, k, v)
    assert plain.bias is None and plain.biased is plain.scaled
    shifted = core.attention(q, k, v, bias=rand(5, 1, seed=3))  # softmax is shift-invariant per row
    torch.testing.assert_close(shifted.weights, plain.weights, atol=1e-12, rtol=0)


def test_column_convention_bias_is_the_transpose():
    q, k, v = rand(4, 3), rand(6, 3, seed=1), rand(6, 2, seed=2)
    bias = rand(4, 6, seed=3)
    row = core.attention(q, k, v, bias=bias)
    col = core.attention(q.T, k.T, v.T, bias=bias.T, convention="column")
    assert max(core.transpose_gap(row, col).values()) < 1e-12
    torch.testing.assert_close(col.bias, bias.T)


def test_multi_head_attention_with_alibi_per_head():
    H, n, d_model = 4, 6, 8
    W = {"W_q": rand(d_model, 8, seed=1), "W_k": rand(d_model, 4, seed=2), "W_v": rand(d_model, 4, seed=3),
         "W_o": rand(8, d_model, seed=4)}
    x = rand(1, n, d_model, seed=5)
    bias = alibi_bias(H, n, dtype=torch.float64)
    tr = core.multi_head_attention(x, n_heads=H, n_kv_heads=2, mask=masks.causal(n), bias=bias, **W)
    q = (x @ W["W_q"]).view(1, n, H, 2).transpose(1, 2)
    k = (x @ W["W_k"]).view(1, n, 2, 2).transpose(1, 2)
    v = (x @ W["W_v"]).view(1, n, 2, 2).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~masks.causal(n), float("-inf")),
                                       enable_gqa=True)
    torch.testing.assert_close(tr.output, o.transpose(1, 2).reshape(1, n, 8) @ W["W_o"], atol=1e-10, rtol=0)


def test_alibi_with_a_kv_cache():
    H, G, n, d = 4, 2, 6, 3
    q, k, v = rand(H, n, d), rand(G, n, d, seed=1), rand(G, n, d, seed=2)
    cache, rows = None, []
    for t in range(n):
        step = core.attend_with_cache(q[:, t:t + 1], k[:, t:t + 1], v[:, t:t + 1], cache,
                                      bias=alibi_bias(H, 1, t + 1, dtype=torch.float64))
        cache = step.cache
        rows.append(step.output)
    full = core.attention(q, k.repeat_interleave(2, 0), v.repeat_interleave(2, 0), mask=masks.causal(n),
                          bias=alibi_bias(H, n, dtype=torch.float64))
    torch.testing.assert_close(torch.cat(rows, dim=-2), full.output, atol=1e-12, rtol=0)


@pytest.mark.parametrize("bias,kwargs,fragment", [
    (torch.zeros(3, 4), {}, "bias of shape (3, 4) does not broadcast to the weights' shape (4, 4)"),
    (torch.tensor([[0.0, float("inf")]]), {}, "bias (1, 2) contains NaN or infinity"),
    (torch.zeros(4), {"convention": "column"}, "ambiguous in column convention"),
    (torch.full((4, 4), 3e38, dtype=torch.float32), {}, "scores + bias overflow"),
])
def test_bad_bias(bias, kwargs, fragment):
    x = torch.full((4, 2), 1e19 if "overflow" in fragment else 1.0)  # scaled scores 1.4e38: finite alone
    with pytest.raises(ValueError, match=re.escape(fragment)):
        core.attention(x if not kwargs else x.T, x if not kwargs else x.T, x if not kwargs else x.T, bias=bias, **kwargs)


@pytest.mark.parametrize("call,fragment", [
    (lambda: alibi_slopes(0), "n_heads must be a positive integer"),
    (lambda: alibi_bias(2, 3, 2), "cannot be fewer"),
    (lambda: relative_position_bias(torch.zeros(4), 3), "must be (..., 5)"),
])
def test_bad_alibi_input(call, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        call()


def test_alibi_on_device(device):
    q = torch.randn(2, 5, 4, device=device)
    bias = alibi_bias(2, 5, device=device)
    tr = core.attention(q, q, q, bias=bias, mask=masks.causal(5, device=device))
    ref = core.attention(q.cpu(), q.cpu(), q.cpu(), bias=bias.cpu(), mask=masks.causal(5))
    assert tr.output.device.type == torch.device(device).type
    torch.testing.assert_close(tr.output.cpu(), ref.output, atol=1e-5, rtol=1e-5)
    assert math.isclose(float(alibi_slopes(2, device=device)[0].cpu()), 2 ** -4)


# ---------------------------------------------------------------- sliding window with sinks
def window_loops(n, size, causal_only, sinks):
    """The rule written cell by cell."""
    m = torch.zeros(n, n, dtype=torch.bool)
    for i in range(n):
        for j in range(n):
            in_window = (j <= i and i - j < size) if causal_only else abs(i - j) < size
            sink = j < sinks and (j <= i or not causal_only)
            m[i, j] = in_window or sink
    return m


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 12), size=st.integers(1, 12), causal_only=st.booleans(), sinks=st.integers(0, 14))
def test_property_window_with_sinks_equals_the_rule(n, size, causal_only, sinks):
    got = masks.window(n, size, causal_only=causal_only, sinks=sinks)
    assert torch.equal(got, window_loops(n, size, causal_only, sinks))
    assert torch.equal(masks.window(n, size, causal_only=causal_only, sinks=sinks, convention="column"), got.T)
    if causal_only:  # the cache never needs more than size + sinks keys
        assert int(got.sum(-1).max()) <= size + sinks


def test_sinks_zero_is_the_old_window():
    for causal_only in (False, True):
        assert torch.equal(masks.window(7, 3, causal_only=causal_only, sinks=0), masks.window(7, 3, causal_only=causal_only))


def test_window_with_sinks_in_attention_equals_sdpa():
    q, k, v = rand(2, 9, 4), rand(2, 9, 4, seed=1), rand(2, 9, 4, seed=2)
    m = masks.window(9, 3, causal_only=True, sinks=2)
    tr = core.attention(q, k, v, mask=m)
    torch.testing.assert_close(tr.output, F.scaled_dot_product_attention(q, k, v, attn_mask=m), atol=1e-12, rtol=0)
    assert (tr.weights[:, 8, :2] > 0).all() and (tr.weights[:, 8, 2:6] == 0).all()  # sinks seen, the middle not


def reach_by_paths(m, layers):
    """Reach by walking every path of ``layers`` hops (numpy-free, independent of the matmul)."""
    n = m.shape[0]
    now = [{j for j in range(n) if m[i, j]} for i in range(n)]
    for _ in range(layers - 1):
        now = [set().union(*(now[j] for j in range(n) if m[i, j])) for i in range(n)]
    out = torch.zeros(n, n, dtype=torch.bool)
    for i, s in enumerate(now):
        out[i, list(s)] = True
    return out


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 14), size=st.integers(1, 5), layers=st.integers(1, 5), sinks=st.integers(0, 3))
def test_property_reach_equals_walking_the_paths(n, size, layers, sinks):
    m = masks.window(n, size, causal_only=True, sinks=sinks)
    R = masks.reach(m, layers)
    assert R.shape == (layers, n, n)
    for l in range(layers):
        assert torch.equal(R[l], reach_by_paths(m, l + 1))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 40), size=st.integers(1, 8), layers=st.integers(1, 8))
def test_property_l_layers_of_window_w_reach_l_times_w_minus_1_back(n, size, layers):
    r = masks.window_reach(n, size, layers)
    assert r.farthest == tuple(min(n - 1, (l + 1) * (size - 1)) for l in range(layers))
    assert r.reachable == tuple(f + 1 for f in r.farthest)
    expect_full = next((l + 1 for l in range(layers) if (l + 1) * (size - 1) >= n - 1), None)
    assert r.all_reached_at == expect_full


def test_reach_of_the_mistral_preset():
    m = core.MODEL_PRESETS["mistral-7b"]
    assert m.reach() == 32 * 4095  # 131,040 tokens back through 32 layers of 4096
    small = masks.window_reach(200, 5, 32)
    assert small.farthest[-1] == min(199, core.MODEL_PRESETS["mistral-7b"].reach(window=5))
    assert m.cached_tokens(128_000, sinks=4) == 4100
    assert core.MODEL_PRESETS["llama-3-8b"].with_window(4096).kv_cache_bytes(32768) == m.kv_cache_bytes(32768)


@pytest.mark.parametrize("call,fragment", [
    (lambda: masks.window(4, 2, sinks=-1), "sinks must be an integer ≥ 0"),
    (lambda: masks.window(4, 0), "size must be a positive integer"),
    (lambda: masks.reach(torch.ones(2, 3, dtype=torch.bool), 2), "square"),
    (lambda: masks.reach(torch.ones(2, 2, dtype=torch.bool), 0), "layers must be a positive integer"),
])
def test_bad_window_input(call, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        call()


def test_window_with_sinks_on_device(device):
    m = masks.window(6, 2, causal_only=True, sinks=1, device=device)
    assert m.device.type == torch.device(device).type
    assert torch.equal(masks.reach(m, 3).cpu(), masks.reach(m.cpu(), 3))
