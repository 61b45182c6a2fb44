"""core.mechanism.measures.counted_macs and the cost curves' property (bench/cost.py), at tiny widths and contexts:
a cached attention step's counted multiply-adds grow by exactly 2·H·d_head per token of context (scores + weighted
sum) and equal core's decode_step_macs; a Gated DeltaNet or Mamba-2 step after a real prefill counts the same at
every length. Negative controls: recomputing the prefix instead of caching is not linear / not constant."""

from __future__ import annotations

import torch

from core.mechanism.kv_cache import attend_with_cache, decode_step_macs
from core.mechanism.masks import causal
from core.mechanism.measures import counted_macs
from core.mechanism.multihead import merge_heads, multi_head_attention, split_heads
from core.variants.gated_deltanet import gated_deltanet
from core.variants.linear import linear_attention, linear_attention_macs
from core.variants.mamba2 import mamba2

D, H, G, d = 8, 4, 2, 4  # d_model, query heads, K/V heads, head width
LENGTHS = (1, 2, 3, 5, 8)


def _w(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed)) * 0.3


def _affine(ts, counts):
    """(a, b) with counts == a + b·t at every t, or None."""
    b = (counts[-1] - counts[0]) // (ts[-1] - ts[0])
    a = counts[0] - b * ts[0]
    return (a, b) if all(c == a + b * t for t, c in zip(ts, counts, strict=True)) else None


def test_counted_macs_counts_matrix_products_and_sees_products_apart():
    a, b = _w(3, 4), _w(4, 5, seed=1)
    conv_in, taps = _w(1, 6, 5, seed=2), _w(6, 1, 4, seed=3)
    c = counted_macs(lambda: (a @ b, torch.einsum("ij,jk->ik", a, b), a * a, a * 2.0,
                              torch.nn.functional.conv1d(conv_in, taps, groups=6)))
    assert c.by_op == {"mm": 60, "bmm": 60, "convolution": 6 * 2 * 4}  # 3·4·5 twice; 6 channels × 2 outputs × 4 taps
    assert c.macs == 168 and c.products == 12  # a * a: 12 products; a scaling by a number is not one
    assert counted_macs(torch.softmax, a, -1).macs == 0  # element-wise work is not a multiply-add


def test_linear_attention_count_is_its_formula():
    q, k, v = _w(2, 3, 4), _w(2, 7, 4, seed=1), _w(2, 7, 5, seed=2)
    quadratic, associative = linear_attention_macs(3, 7, 4, 5)
    softmax = 3 * 7 * (4 + 5)  # linear_attention also computes softmax attention on the same q, k, v to compare
    assert counted_macs(linear_attention, q, k, v).macs == 2 * (quadratic + associative + softmax)  # batch of 2


def _gqa_step(t, *, cached=True):
    """One layer's step for the token at position t − 1: the projections, then attention over t keys."""
    W_q, W_k, W_v, W_o = _w(D, H * d), _w(D, G * d, seed=1), _w(D, G * d, seed=2), _w(H * d, D, seed=3)
    x = _w(1, t, D, seed=4)
    if not cached:  # the negative control: no cache, the whole prefix again
        return counted_macs(multi_head_attention, x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=H, n_kv_heads=G,
                            mask=causal(t)).macs
    prefill = attend_with_cache(split_heads(x[:, :-1] @ W_q, H), split_heads(x[:, :-1] @ W_k, G),
                                split_heads(x[:, :-1] @ W_v, G)).cache if t > 1 else None
    new = x[:, -1:]

    def step():
        s = attend_with_cache(split_heads(new @ W_q, H), split_heads(new @ W_k, G), split_heads(new @ W_v, G), prefill)
        return merge_heads(s.output) @ W_o
    return counted_macs(step).macs


def test_a_cached_attention_step_grows_by_2_H_d_per_token_and_equals_decode_step_macs():
    counts = [_gqa_step(t) for t in LENGTHS]
    assert _affine(LENGTHS, counts) == (D * (H + 2 * G) * d + H * d * D, 2 * H * d)
    assert counts == [decode_step_macs(d_model=D, n_heads=H, n_kv_heads=G, d_head=d, length=t) for t in LENGTHS]


def test_negative_control_recomputing_the_prefix_is_not_linear():
    assert _affine(LENGTHS, [_gqa_step(t, cached=False) for t in LENGTHS]) is None


def _gdn(x, cache=None):
    Hk, Hv, dk, dv = 1, 2, 3, 2
    C = 2 * Hk * dk + Hv * dv
    return gated_deltanet(x, cache, W_q=_w(D, Hk * dk), W_k=_w(D, Hk * dk, seed=1), W_v=_w(D, Hv * dv, seed=2),
                          W_z=_w(D, Hv * dv, seed=3), W_b=_w(D, Hv, seed=4), W_a=_w(D, Hv, seed=5),
                          conv_taps=_w(C, 4, seed=6), A_log=_w(Hv, seed=7), dt_bias=_w(Hv, seed=8),
                          norm_weight=torch.ones(dv), W_out=_w(Hv * dv, D, seed=9), n_key_heads=Hk, n_value_heads=Hv)


def _mamba2(x, cache=None):
    Hm, Gm, N, P = 2, 1, 3, 2
    C = Hm * P + 2 * Gm * N
    return mamba2(x, cache, W_z=_w(D, Hm * P), W_xBC=_w(D, C, seed=1), W_dt=_w(D, Hm, seed=2), conv_taps=_w(C, 4, seed=3),
                  dt_bias=_w(Hm, seed=4), A_log=_w(Hm, seed=5), D=_w(Hm, seed=6), norm_weight=torch.ones(Hm * P),
                  W_out=_w(Hm * P, D, seed=7), n_heads=Hm, n_groups=Gm)


def test_a_state_step_counts_the_same_at_every_length_and_recomputing_does_not():
    for layer in (_gdn, _mamba2):
        x = _w(1, max(LENGTHS), D, seed=10)
        steps, whole = [], []
        for t in LENGTHS[1:]:  # after at least one token, so that every step has a cache
            cache = layer(x[:, :t - 1]).cache  # a real prefill of t − 1 tokens
            step = counted_macs(layer, x[:, t - 1:t], cache)
            steps.append((step.macs, step.products))
            whole.append(counted_macs(layer, x[:, :t]).macs)  # negative control: the prefix again, no cache
        assert len(set(steps)) == 1 and steps[0][0] > 0, layer.__name__
        a_b = _affine(LENGTHS[1:], whole)
        assert a_b is not None and a_b[1] == steps[0][0], layer.__name__  # the prefix costs one step per token
