"""Tiled attention with an online softmax: equal to torch SDPA, and every tile's m, ℓ and partial output equal to
ordinary softmax attention over the keys seen so far."""

import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks
from core.mechanism.chunked import tiled_attention


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@settings(max_examples=30, deadline=None)
@given(n_q=st.integers(1, 9), n_k=st.integers(1, 9), d=st.integers(1, 5), bq=st.integers(1, 10), bk=st.integers(1, 10),
       causal=st.booleans(), batch=st.sampled_from([(), (2,), (2, 3)]), seed=st.integers(0, 999))
def test_property_equals_sdpa_and_every_tile_is_exact_so_far(n_q, n_k, d, bq, bk, causal, batch, seed):
    q, k, v = rand(*batch, n_q, d, seed=seed), rand(*batch, n_k, d, seed=seed + 1), rand(*batch, n_k, d + 1, seed=seed + 2)
    mask = masks.causal(n_q, n_k) if causal else None
    tr = tiled_attention(q, k, v, mask=mask, block_q=bq, block_k=bk)
    torch.testing.assert_close(tr.output, F.scaled_dot_product_attention(q, k, v, attn_mask=mask), atol=1e-10, rtol=0)
    torch.testing.assert_close(tr.output, core.chunked_attention(q, k, v, mask=mask, chunk_size=bk), atol=1e-12, rtol=0)
    assert len(tr.tiles) == tr.n_q_blocks * tr.n_k_blocks
    full = (q @ k.transpose(-1, -2)) / d ** 0.5  # (..., n_q, n_k)
    if mask is not None:
        full = full.masked_fill(~mask, float("-inf"))
    for t in tr.tiles:
        rows, seen = slice(t.q_start, t.q_stop), slice(0, t.k_stop)
        S_seen = full[..., rows, seen]
        torch.testing.assert_close(t.scores, full[..., rows, t.k_start:t.k_stop], atol=1e-12, rtol=0)
        m = S_seen.amax(-1)
        torch.testing.assert_close(t.m_after, m, atol=1e-12, rtol=0)
        safe = torch.where(torch.isinf(m), torch.zeros_like(m), m)
        torch.testing.assert_close(t.l_after, torch.exp(S_seen - safe[..., None]).sum(-1), atol=1e-10, rtol=1e-10)
        # the partial output is exactly softmax attention over the keys 0 … k_stop − 1 (0 where none is visible)
        visible = None if mask is None else mask[rows, seen]
        ref = F.scaled_dot_product_attention(q[..., rows, :], k[..., seen, :], v[..., seen, :], attn_mask=visible)
        ref = torch.nan_to_num(ref) if visible is not None else ref
        if visible is not None:
            ref = ref.masked_fill(~visible.any(-1)[:, None], 0.0)
        torch.testing.assert_close(t.partial_output, ref, atol=1e-10, rtol=0)
        assert t.last_of_row == (t.k_stop == n_k)


def test_the_running_maximum_rescales_the_old_sums():
    q = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    k = torch.tensor([[0.0, 0.0], [4.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    v = torch.eye(3, dtype=torch.float64)[:, :2]
    tr = tiled_attention(q, k, v, scale=1.0, block_k=1)
    m = [float(t.m_after[0]) for t in tr.tiles]
    assert m == [0.0, 4.0, 4.0]  # the max rises at the second key and stays
    corr = [float(t.correction[0]) for t in tr.tiles]
    assert corr[1] == pytest.approx(torch.exp(torch.tensor(-4.0)).item()) and corr[2] == 1.0
    torch.testing.assert_close(tr.output, core.attention(q, k, v, scale=1.0).output)
    torch.testing.assert_close(tr.m + torch.log(tr.l), torch.logsumexp(q @ k.T, dim=-1))


def test_shapes_and_largest_tile():
    tr = tiled_attention(rand(10, 4), rand(12, 4, seed=1), rand(12, 3, seed=2), block_q=4, block_k=5)
    assert (tr.n_q_blocks, tr.n_k_blocks) == (3, 3) and tr.largest_tile == 20
    assert [(t.q_block, t.k_block) for t in tr.tiles[:4]] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert tr.tiles[-1].scores.shape == (2, 2) and tr.tiles[-1].partial_output.shape == (2, 3)


def test_a_query_that_sees_nothing_gets_zeros():
    mask = torch.tensor([[False, False, False], [True, False, True]])
    tr = tiled_attention(rand(2, 2), rand(3, 2, seed=1), rand(3, 2, seed=2), mask=mask, block_k=2)
    assert torch.equal(tr.output[0], torch.zeros(2, dtype=torch.float64))
    torch.testing.assert_close(tr.output, core.attention(rand(2, 2), rand(3, 2, seed=1), rand(3, 2, seed=2), mask=mask).output)


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(block_q=0), "block_q must be a positive integer"),
    (dict(block_k=1.5), "block_k must be a positive integer"),
    (dict(mask=torch.ones(3, 3, dtype=torch.bool)), "does not broadcast"),
])
def test_bad_tile_input(kwargs, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        tiled_attention(torch.ones(2, 2), torch.ones(3, 2), torch.ones(3, 2), **kwargs)


def test_tiles_on_device(device):
    q = torch.randn(2, 7, 4, device=device)
    tr = tiled_attention(q, q, q, mask=masks.causal(7, device=device), block_q=3, block_k=2)
    assert tr.output.device.type == torch.device(device).type
    torch.testing.assert_close(tr.output.cpu(), F.scaled_dot_product_attention(q.cpu(), q.cpu(), q.cpu(), is_causal=True),
                               atol=1e-5, rtol=1e-5)
