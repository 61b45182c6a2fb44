"""The Transformer block against torch's TransformerEncoderLayer; the FFN's token independence."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from core import block


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("norm", ["post", "pre"])
@pytest.mark.parametrize("act", ["relu", "gelu"])
def test_block_equals_torch_transformer_encoder_layer(norm, act):
    d, H, d_ff, n = 8, 2, 16, 5
    layer = torch.nn.TransformerEncoderLayer(d, H, d_ff, dropout=0.0, activation=act, batch_first=True,
                                             norm_first=norm == "pre", bias=True).double().eval()
    with torch.no_grad():
        for ln in (layer.norm1, layer.norm2):
            ln.weight.fill_(1.0)
            ln.bias.zero_()
        layer.self_attn.in_proj_bias.zero_()
        layer.self_attn.out_proj.bias.zero_()
    Wi = layer.self_attn.in_proj_weight.detach()
    W = dict(W_q=Wi[:d].T, W_k=Wi[d:2 * d].T, W_v=Wi[2 * d:].T, W_o=layer.self_attn.out_proj.weight.detach().T,
             W_1=layer.linear1.weight.detach().T, b_1=layer.linear1.bias.detach(),
             W_2=layer.linear2.weight.detach().T, b_2=layer.linear2.bias.detach())
    X = rand(n, d, seed=3)
    tr = block.transformer_block(X, n_heads=H, activation=act, norm=norm, **W)
    torch.testing.assert_close(tr.y, layer(X[None])[0])
    for m in (tr.attn, tr.res1, tr.z, tr.ffn, tr.res2, tr.y):
        assert m.shape == X.shape  # C31: every residual adds matching shapes


@settings(max_examples=15, deadline=None)
@given(n=st.integers(2, 7), seed=st.integers(0, 999))
def test_property_ffn_treats_tokens_independently(n, seed):
    Z = rand(n, 4, seed=seed)
    W_1, b_1, W_2, b_2 = rand(4, 8, seed=seed + 1), rand(8, seed=seed + 2), rand(8, 4, seed=seed + 3), rand(4, seed=4)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(block.ffn(Z[perm], W_1, b_1, W_2, b_2), block.ffn(Z, W_1, b_1, W_2, b_2)[perm])


def test_complexity_measures_quadratic_memory():
    c = block.complexity(ns=(64, 128, 256), d=16, chunk=32, repeats=1)
    assert c.bytes_full[1] == 4 * c.bytes_full[0] and c.bytes_full[2] == 4 * c.bytes_full[1]
    assert c.bytes_chunked[2] == 2 * c.bytes_chunked[1]
    assert all(t > 0 for t in c.time_full + c.time_chunked)


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 7), row=st.integers(0, 6), seed=st.integers(0, 999), act=st.sampled_from(["relu", "gelu"]))
def test_property_changing_one_token_moves_only_its_own_ffn_row(n, row, seed, act):
    row = row % n
    Z = rand(n, 4, seed=seed)
    W_1, b_1, W_2, b_2 = rand(4, 8, seed=seed + 1), rand(8, seed=seed + 2), rand(8, 4, seed=seed + 3), rand(4, seed=4)
    chk = block.ffn_independence(Z, W_1, b_1, W_2, b_2, act, row=row, seed=seed)
    assert chk.other_rows_gap == 0.0 and chk.rowwise_gap < 1e-12
    # the check can tell a token-mixing layer apart: the same measurement by hand on Z + mean(Z)
    mixed = lambda z: block.ffn(z + z.mean(dim=0, keepdim=True), W_1, b_1, W_2, b_2, act)  # noqa: E731
    z2 = Z.clone()
    z2[row] += 1.0
    if n > 1:
        others = [i for i in range(n) if i != row]
        assert (mixed(z2)[others] - mixed(Z)[others]).abs().max() > 1e-6


def test_seeded_block_reports_the_ffn_check_on_the_ffn_input():
    X = rand(5, 8, seed=7).float()
    for norm in ("post", "pre"):
        sb = block.seeded_block(X, seed=3, n_heads=2, d_ff=16, norm=norm)
        assert sb.trace.y.shape == X.shape
        assert sb.ffn_check.other_rows_gap == 0.0 and sb.ffn_check.changed_row_gap > 1e-3
        assert sb.ffn_check.rowwise_gap < 1e-5
