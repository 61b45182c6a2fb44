"""multi_head_attention against torch.nn.MultiheadAttention loaded with the same weights."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks


def weights(d_model, H, d_head, seed, dtype=torch.float64, bias=True):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype) * 0.5  # noqa: E731
    W = {"W_q": r(d_model, H * d_head), "W_k": r(d_model, H * d_head), "W_v": r(d_model, H * d_head),
         "W_o": r(H * d_head, d_model)}
    if bias:
        W |= {"b_q": r(H * d_head), "b_k": r(H * d_head), "b_v": r(H * d_head), "b_o": r(d_model)}
    return W


def torch_mha(W, d_model, H, bias, dtype):
    mha = torch.nn.MultiheadAttention(d_model, H, bias=bias, batch_first=True, dtype=dtype)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W["W_q"].T, W["W_k"].T, W["W_v"].T], dim=0))
        mha.out_proj.weight.copy_(W["W_o"].T)
        if bias:
            mha.in_proj_bias.copy_(torch.cat([W["b_q"], W["b_k"], W["b_v"]]))
            mha.out_proj.bias.copy_(W["b_o"])
    return mha.eval()


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_equals_nn_multihead_attention(bias, cross, causal, dtype):
    B, n_q, n_k, d_model, H = 2, 5, (7 if cross else 5), 12, 3
    g = torch.Generator().manual_seed(7)
    x_q = torch.randn(B, n_q, d_model, generator=g, dtype=dtype)
    x_kv = torch.randn(B, n_k, d_model, generator=g, dtype=dtype) if cross else None
    W = {k: v.to(dtype) for k, v in weights(d_model, H, d_model // H, 1, bias=bias).items()}
    mask = masks.causal(n_q, n_k) if causal else None
    tr = core.multi_head_attention(x_q, x_kv, n_heads=H, mask=mask, **W)
    src = x_q if x_kv is None else x_kv
    ref_out, ref_w = torch_mha(W, d_model, H, bias, dtype)(
        x_q, src, src, attn_mask=None if mask is None else ~mask, need_weights=True, average_attn_weights=False)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(tr.output, ref_out, atol=tol, rtol=tol)
    torch.testing.assert_close(tr.weights, ref_w, atol=tol, rtol=tol)
    assert tr.q.shape == (B, H, n_q, d_model // H) and tr.k.shape == (B, H, n_k, d_model // H)
    assert tr.concat.shape == (B, n_q, d_model)
    assert tr.output.shape == tr.x_q.shape  # C38: residual shapes line up


@settings(max_examples=15, deadline=None)
@given(H=st.sampled_from([1, 2, 4]), d_head=st.integers(1, 4), n=st.integers(1, 6), seed=st.integers(0, 1000))
def test_property_fused_qkv_equals_three_projections(H, d_head, n, seed):
    d_model = 8
    W = weights(d_model, H, d_head, seed)
    x = torch.randn(2, n, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    W_qkv = core.fuse_qkv_weights(W["W_q"], W["W_k"], W["W_v"])
    b_qkv = torch.cat([W["b_q"], W["b_k"], W["b_v"]])
    Q, K, V = core.fused_qkv(x, W_qkv, b_qkv)
    tr = core.multi_head_attention(x, n_heads=H, **W)
    torch.testing.assert_close(Q, tr.q_proj, atol=1e-12, rtol=0)
    torch.testing.assert_close(K, tr.k_proj, atol=1e-12, rtol=0)
    torch.testing.assert_close(V, tr.v_proj, atol=1e-12, rtol=0)


def test_split_and_merge_heads_round_trip_and_head_content():
    x = torch.arange(2 * 3 * 6, dtype=torch.float64).reshape(2, 3, 6)  # (B, N, H·d) with H=2, d=3
    h = core.split_heads(x, 2)
    assert h.shape == (2, 2, 3, 3)
    assert torch.equal(h[0, 1, 2], x[0, 2, 3:6])  # head 1 of token 2 = features 3..5
    assert torch.equal(core.merge_heads(h), x)


def test_single_head_is_plain_attention_of_projections():
    W = weights(4, 1, 4, 3, bias=False)
    x = torch.randn(5, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    tr = core.multi_head_attention(x, n_heads=1, **W)
    plain = core.attention(x @ W["W_q"], x @ W["W_k"], x @ W["W_v"])
    torch.testing.assert_close(tr.output, plain.output @ W["W_o"])


@pytest.mark.parametrize("change, fragment", [
    (dict(n_heads=5), "not divisible by n_heads=5"),
    (dict(n_heads=0), "n_heads must be a positive integer"),
    (dict(W_q=torch.ones(3, 12)), "x_q has width 12 but W_q (3, 12) expects 3 rows"),
    (dict(b_q=torch.ones(5)), "b_q has shape (5,) but needs (12,)"),
    (dict(W_o=torch.ones(6, 12)), "concat width 12"),
])
def test_bad_multihead_input(change, fragment):
    W = weights(12, 3, 4, 0) | change
    n_heads = W.pop("n_heads", 3)
    with pytest.raises(ValueError, match=re.escape(fragment)):
        core.multi_head_attention(torch.ones(1, 2, 12, dtype=torch.float64), n_heads=n_heads, **W)


def test_multihead_on_device(device):
    W = {k: v.to(device) for k, v in weights(8, 2, 4, 0, dtype=torch.float32).items()}
    x = torch.randn(1, 3, 8, device=device)
    tr = core.multi_head_attention(x, n_heads=2, **W)
    ref = core.multi_head_attention(x.cpu(), n_heads=2, **{k: v.cpu() for k, v in W.items()})
    assert tr.output.device.type == torch.device(device).type
    torch.testing.assert_close(tr.output.cpu(), ref.output, atol=1e-5, rtol=1e-5)
