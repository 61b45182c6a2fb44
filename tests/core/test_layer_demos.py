"""core.variants.layer_demos: the delta-rule page's untrained GDN, KDA and Mamba-2 layers, checked by hand."""

from __future__ import annotations

import pytest
import torch

from core.seeded import seeded_normal
from core.variants import layer_demos as L
from core.variants.gated_deltanet import causal_conv

TOKENS = ("나는", "오늘", "사과를", "먹었다", "x")


def test_gdn_shapes_fewer_key_heads_and_the_beta_range():
    s = L.DEMO
    one, two = L.gdn_demo(TOKENS, 0, 1.0), L.gdn_demo(TOKENS, 0, 2.0)
    assert one.taps.shape == (2 * s.key_heads * s.d + s.value_heads * s.d, s.kappa)
    assert one.states.shape == (1, s.value_heads, len(TOKENS), s.d, s.d)
    assert 0 < one.beta.min() and one.beta.max() < 1 and two.beta.max() < 2
    torch.testing.assert_close(two.beta, 2 * one.beta)  # the same σ(x W_b), scaled by β_max
    # one key head serves both value heads: the two heads read the same normalised keys
    torch.testing.assert_close(one.k[:, 0], one.k[:, 1])
    with pytest.raises(ValueError, match="beta_max must be 1 or 2"):
        L.gdn_demo(TOKENS, 0, 3.0)


def test_fades_kda_per_channel_gdn_and_mamba_one_per_head():
    g, k, m = L.gdn_demo(TOKENS, 0), L.kda_demo(TOKENS, 0), L.mamba2_demo(TOKENS, 0)
    f = L.fades(g, k, m)
    assert f.gdn.shape == f.mamba2.shape == (len(TOKENS),) and f.kda.shape == (len(TOKENS), L.DEMO.d)
    assert ((0 < f.kda) & (f.kda < 1)).all() and ((0 < f.gdn) & (f.gdn < 1)).all()
    assert (f.kda.max(-1).values - f.kda.min(-1).values > 0.01).all()  # each channel its own rate
    torch.testing.assert_close(f.kda, torch.exp(k.log_decay[0, 0]))


def test_mamba2_scan_is_gated_linear_attention_with_q_c_k_b_v_x():
    """The scan's q, k, v are C, B and x of the conv's output (x | B | C), rebuilt by hand from the same seeded weights."""
    s, seed = L.DEMO, 0
    m = L.mamba2_demo(TOKENS, seed)
    inner, C = s.value_heads * s.d, s.value_heads * s.d + 2 * s.d
    W = L.weight(s.d_model, C, seed, "m2.W_xBC")
    taps = seeded_normal((C, s.kappa), seed=seed, salt="demo.m2.taps", dtype=torch.float64) / s.kappa
    xs, B, Cm = causal_conv(L.demo_x(TOKENS, seed) @ W, taps)[0].split([inner, s.d, s.d], dim=-1)
    for h in range(s.value_heads):
        torch.testing.assert_close(m.scan.q[0, h], Cm)  # q = C (one group serves both heads)
        torch.testing.assert_close(m.scan.k[0, h], B)  # k = B
        torch.testing.assert_close(m.scan.v[0, h], xs[:, h * s.d:(h + 1) * s.d])  # v = x
    assert not m.scan.delta  # gated linear attention: no delta correction
    torch.testing.assert_close(m.scan.output + m.skip, m.y)  # y = scan + D·x


def test_cache_values_are_states_and_the_convs_last_inputs():
    s = L.DEMO
    g = L.gdn_demo(TOKENS, 0)
    assert L.cache_values(g) == (s.value_heads * s.d * s.d, (s.kappa - 1) * (2 * s.key_heads * s.d + s.value_heads * s.d))
    m = L.mamba2_demo(TOKENS, 0)
    assert L.cache_values(m) == (s.value_heads * s.d * s.d, (s.kappa - 1) * (s.value_heads * s.d + 2 * s.d))


def test_shared_layers_copy_the_choice_of_the_last_full_layer():
    toks = ("나는", "오늘", "사과를", "먹었다", "그리고", "잤다", "아주", "잘")
    r = L.shared_blocks_demo(toks, 0, 2, 1, "FSSF")
    assert r.source == (0, 0, 0, 3) and r.n_blocks == 4
    for layer in (1, 2):
        assert torch.equal(r.chosen[layer], r.chosen[0]) and torch.equal(r.chosen_blocks[layer], r.chosen_blocks[0])
    assert (r.chosen_blocks[0].sum(-1) <= 1).all()  # one block kept per query (fewer before a block closes)
    other = L.shared_blocks_demo(toks, 0, 2, 1, "FFFF")  # layer 1 with its own indexer chooses on its own
    assert torch.equal(other.chosen[0], r.chosen[0])
    for bad, match in (((2, 5, "FSSF"), "top-k of 5 blocks"), ((2, 1, "SF"), "first 'full'"), ((2, 1, "FX"), "F and S")):
        with pytest.raises(ValueError, match=match):
            L.shared_blocks_demo(toks, 0, *bad)
