"""Grouped-query and multi-query attention against torch's SDPA (enable_gqa=True) and an explicit
repeat_interleave written out head by head."""

import re

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks


def gqa_weights(d_model, H, G, d_head, seed, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype) * 0.5  # noqa: E731
    return {"W_q": r(d_model, H * d_head), "W_k": r(d_model, G * d_head), "W_v": r(d_model, G * d_head),
            "W_o": r(H * d_head, d_model)}


def sdpa_reference(x, W, H, G, causal):
    """Projections by hand, heads by view/transpose, attention by torch's SDPA with enable_gqa."""
    B, n, _ = x.shape
    d = W["W_q"].shape[1] // H
    q = (x @ W["W_q"]).view(B, n, H, d).transpose(1, 2)
    k = (x @ W["W_k"]).view(B, n, G, d).transpose(1, 2)
    v = (x @ W["W_v"]).view(B, n, G, d).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
    return o.transpose(1, 2).reshape(B, n, H * d) @ W["W_o"]


def loop_reference(x, W, H, G):
    """Each query head h with K/V head h // (H/G), one head at a time (no batching tricks)."""
    d = W["W_q"].shape[1] // H
    Q, K, V = x @ W["W_q"], x @ W["W_k"], x @ W["W_v"]
    outs, weights = [], []
    for h in range(H):
        g = h // (H // G)
        q, k, v = Q[..., h * d:(h + 1) * d], K[..., g * d:(g + 1) * d], V[..., g * d:(g + 1) * d]
        a = torch.softmax(q @ k.transpose(-1, -2) / d ** 0.5, dim=-1)
        weights.append(a)
        outs.append(a @ v)
    return torch.cat(outs, dim=-1) @ W["W_o"], torch.stack(weights, dim=1)


@pytest.mark.parametrize("H,G", [(4, 4), (4, 2), (4, 1), (6, 3), (9, 3), (8, 1)])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_sdpa_with_enable_gqa(H, G, causal):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 7, 12, generator=g, dtype=torch.float64)
    W = gqa_weights(12, H, G, 4, seed=H * 10 + G)
    tr = core.multi_head_attention(x, n_heads=H, n_kv_heads=G, mask=masks.causal(7) if causal else None, **W)
    torch.testing.assert_close(tr.output, sdpa_reference(x, W, H, G, causal), atol=1e-10, rtol=1e-10)
    assert tr.weights.shape == (2, H, 7, 7)
    assert tr.k.shape == (2, G, 7, 4) and tr.v.shape == (2, G, 7, 4) and tr.q.shape == (2, H, 7, 4)
    assert tr.n_kv_heads == G and tr.group_size == H // G


@settings(max_examples=25, deadline=None)
@given(H=st.sampled_from([1, 2, 3, 4, 6, 8, 9, 12]), data=st.data(), d_head=st.integers(1, 5),
       n=st.integers(1, 6), B=st.integers(1, 2), seed=st.integers(0, 10_000))
def test_property_equals_explicit_repeat_interleave(H, data, d_head, n, B, seed):
    G = data.draw(st.sampled_from([g for g in range(1, H + 1) if H % g == 0]), label="G")
    d_model = 5
    W = gqa_weights(d_model, H, G, d_head, seed)
    x = torch.randn(B, n, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    tr = core.multi_head_attention(x, n_heads=H, n_kv_heads=G, **W)
    ref_out, ref_w = loop_reference(x, W, H, G)
    torch.testing.assert_close(tr.output, ref_out, atol=1e-10, rtol=1e-10)
    torch.testing.assert_close(tr.weights, ref_w, atol=1e-10, rtol=1e-10)
    # the map: group i of H/G consecutive query heads reads K/V head i
    assert tr.kv_head_of == tuple(h // (H // G) for h in range(H))
    for h, g in enumerate(tr.kv_head_of):
        torch.testing.assert_close(tr.heads.k[:, h], tr.k[:, g], atol=0, rtol=0)
        torch.testing.assert_close(tr.heads.v[:, h], tr.v[:, g], atol=0, rtol=0)


def test_g_equal_h_is_todays_multi_head():
    W = gqa_weights(8, 4, 4, 2, seed=5)
    x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    a = core.multi_head_attention(x, n_heads=4, **W)
    b = core.multi_head_attention(x, n_heads=4, n_kv_heads=4, **W)
    assert torch.equal(a.output, b.output) and a.kv_head_of == (0, 1, 2, 3) and a.n_kv_heads == 4


def test_multi_query_every_head_reads_the_one_kv_head():
    W = gqa_weights(8, 4, 1, 2, seed=6)
    tr = core.multi_head_attention(torch.randn(1, 3, 8, dtype=torch.float64), n_heads=4, n_kv_heads=1, **W)
    assert tr.kv_head_of == (0, 0, 0, 0) and tr.group_size == 4 and tr.k.shape == (1, 1, 3, 2)


def test_kv_head_map():
    assert core.mechanism.multihead.kv_head_map(9, 3) == (0, 0, 0, 1, 1, 1, 2, 2, 2)
    assert core.mechanism.multihead.kv_head_map(4) == (0, 1, 2, 3)


@pytest.mark.parametrize("H,G,fragment", [
    (4, 3, "n_kv_heads=3 must divide n_heads=4"),
    (4, 8, "n_kv_heads=8 must divide n_heads=4"),
    (4, 0, "n_kv_heads must be a positive integer"),
])
def test_bad_group_count(H, G, fragment):
    W = gqa_weights(8, 4, 2, 2, seed=0)
    with pytest.raises(ValueError, match=re.escape(fragment)) as err:
        core.multi_head_attention(torch.ones(1, 2, 8), n_heads=H, n_kv_heads=G, **W)
    if "divide" in fragment:
        assert "divisors of 4: 1, 2, 4" in str(err.value)


def test_kv_width_must_match_per_head_width():
    W = gqa_weights(8, 4, 2, 2, seed=0) | {"W_k": torch.ones(8, 6, dtype=torch.float64)}
    with pytest.raises(ValueError, match="same width per head"):
        core.multi_head_attention(torch.ones(1, 2, 8, dtype=torch.float64), n_heads=4, n_kv_heads=2, **W)


def test_gqa_on_device(device):
    W = {k: v.float().to(device) for k, v in gqa_weights(8, 4, 2, 2, seed=2).items()}
    x = torch.randn(1, 5, 8, device=device)
    tr = core.multi_head_attention(x, n_heads=4, n_kv_heads=2, mask=masks.causal(5, device=device), **W)
    ref = sdpa_reference(x.cpu(), {k: v.cpu() for k, v in W.items()}, 4, 2, causal=True)
    assert tr.output.device.type == torch.device(device).type
    torch.testing.assert_close(tr.output.cpu(), ref, atol=1e-5, rtol=1e-5)
