"""Linear attention (φ = elu + 1): the two orders of the product agree, the causal prefix-sum form equals the
masked quadratic form, both equal the paper's sums written in numpy; the distance from softmax's weights."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

import core
from core.variants.linear import associative_form, elu_feature_map, linear_attention_macs, quadratic_form


def rand(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def numpy_reference(q, k, v, causal):
    """Eq. 2/9 of Katharopoulos et al. as loops over queries: Σ_j φ(q_i)ᵀφ(k_j) v_j / Σ_j φ(q_i)ᵀφ(k_j)."""
    phi = lambda x: np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))  # noqa: E731  elu(x) + 1
    fq, fk = phi(q), phi(k)
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        keys = range(i + 1) if causal else range(k.shape[0])
        sims = np.array([fq[i] @ fk[j] for j in keys])
        out[i] = sum(s * v[j] for s, j in zip(sims, keys, strict=True)) / sims.sum()
    return out


@settings(max_examples=30, deadline=None)
@given(n_q=st.integers(1, 8), n_k=st.integers(1, 8), d_k=st.integers(1, 5), d_v=st.integers(1, 5),
       batch=st.sampled_from([(), (2,), (2, 2)]), seed=st.integers(0, 999))
def test_property_quadratic_equals_associative(n_q, n_k, d_k, d_v, batch, seed):
    q, k, v = rand(*batch, n_q, d_k, seed=seed), rand(*batch, n_k, d_k, seed=seed + 1), rand(*batch, n_k, d_v, seed=seed + 2)
    tr = core.linear_attention(q, k, v)
    torch.testing.assert_close(tr.output, tr.output_quadratic, atol=1e-12, rtol=1e-12)
    assert tr.form_gap < 1e-12 and tr.kv.shape == (*batch, d_k, d_v) and tr.z.shape == (*batch, d_k)
    flat = lambda x: x.reshape(-1, *x.shape[-2:])  # noqa: E731
    for b, (qb, kb, vb) in enumerate(zip(flat(q), flat(k), flat(v), strict=True)):
        np.testing.assert_allclose(flat(tr.output)[b].numpy(), numpy_reference(qb.numpy(), kb.numpy(), vb.numpy(), False),
                                   atol=1e-12)
    torch.testing.assert_close(tr.weights.sum(-1), torch.ones(*batch, n_q, dtype=torch.float64))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 9), d_k=st.integers(1, 5), d_v=st.integers(1, 5), batch=st.sampled_from([(), (3,)]),
       seed=st.integers(0, 999))
def test_property_causal_prefix_sums_equal_the_masked_quadratic_form(n, d_k, d_v, batch, seed):
    q, k, v = rand(*batch, n, d_k, seed=seed), rand(*batch, n, d_k, seed=seed + 1), rand(*batch, n, d_v, seed=seed + 2)
    tr = core.linear_attention(q, k, v, causal=True)
    torch.testing.assert_close(tr.output, tr.output_quadratic, atol=1e-12, rtol=1e-12)
    assert tr.kv.shape == (*batch, n, d_k, d_v)  # one running state S_i per position
    assert bool((tr.weights.triu(1) == 0).all())
    flat = lambda x: x.reshape(-1, *x.shape[-2:])  # noqa: E731
    for b, (qb, kb, vb) in enumerate(zip(flat(q), flat(k), flat(v), strict=True)):
        np.testing.assert_allclose(flat(tr.output)[b].numpy(), numpy_reference(qb.numpy(), kb.numpy(), vb.numpy(), True),
                                   atol=1e-12)
    # the last running state is the non-causal summary
    torch.testing.assert_close(tr.kv[..., -1, :, :], core.linear_attention(q, k, v).kv, atol=1e-12, rtol=0)


def test_feature_map_is_elu_plus_one_and_positive():
    x = torch.linspace(-30, 5, 101, dtype=torch.float64)
    phi = elu_feature_map(x)
    torch.testing.assert_close(phi, torch.where(x > 0, x + 1, torch.exp(x)))
    assert bool((phi > 0).all())


def test_distance_from_softmax_weights():
    q, k, v = rand(2, 6, 4), rand(2, 6, 4, seed=1), rand(2, 6, 3, seed=2)
    for causal in (False, True):
        tr = core.linear_attention(q, k, v, causal=causal)
        soft = F.softmax((q @ k.transpose(-1, -2) / 2.0).masked_fill(~core.masks.causal(6), float("-inf")) if causal
                         else q @ k.transpose(-1, -2) / 2.0, dim=-1)
        torch.testing.assert_close(tr.softmax_weights, soft)
        torch.testing.assert_close(tr.total_variation, 0.5 * (tr.weights - soft).abs().sum(-1))
        assert tr.weight_gap == pytest.approx(float((tr.weights - soft).abs().max()))
        assert bool(((tr.total_variation >= 0) & (tr.total_variation < 1)).all())
        # a different attention: on random Q, K its weights are not softmax's
        assert tr.weight_gap > 1e-3
    # the first causal query sees only itself: both give weight 1 there
    assert float(core.linear_attention(q, k, v, causal=True).total_variation[..., 0].abs().max()) < 1e-12


@pytest.mark.parametrize("n_q,n_k,d_k,d_v", [(5, 7, 3, 2), (16, 16, 4, 4), (1, 9, 6, 1)])
def test_macs_equal_torchs_flop_counter(n_q, n_k, d_k, d_v):
    fq, fk, v = elu_feature_map(rand(n_q, d_k)), elu_feature_map(rand(n_k, d_k, seed=1)), rand(n_k, d_v, seed=2)
    quad, assoc = linear_attention_macs(n_q, n_k, d_k, d_v)
    with FlopCounterMode(display=False) as fc:
        quadratic_form(fq, fk, v, None)
    assert fc.get_total_flops() == 2 * quad
    with FlopCounterMode(display=False) as fc:
        associative_form(fq, fk, v)
    assert fc.get_total_flops() == 2 * assoc
    tr = core.linear_attention(rand(n_q, d_k), rand(n_k, d_k, seed=1), v)
    assert (tr.macs_quadratic, tr.macs_associative) == (quad, assoc)


def test_the_associative_order_grows_linearly():
    quad = [linear_attention_macs(n, n, 64, 64)[0] for n in (1024, 2048)]
    assoc = [linear_attention_macs(n, n, 64, 64)[1] for n in (1024, 2048)]
    assert quad[1] == 4 * quad[0] and assoc[1] == 2 * assoc[0]


@pytest.mark.parametrize("args,kwargs,fragment", [
    ((torch.ones(3, 2), torch.ones(4, 2), torch.ones(4, 2)), {"causal": True}, "needs as many queries as keys"),
    ((torch.ones(3, 2), torch.ones(4, 3), torch.ones(4, 2)), {}, "K has d_k=3 but Q has d_k=2"),
    ((torch.ones(3, 2), torch.ones(4, 2), torch.ones(5, 2)), {}, "K has n_k=4 keys but V has 5 values"),
    ((torch.ones(2), torch.ones(4, 2), torch.ones(4, 2)), {}, "must be (..., n, d)"),
    ((torch.tensor([[float("nan"), 0.0]]), torch.ones(4, 2), torch.ones(4, 2)), {}, "contains NaN"),
])
def test_bad_linear_attention_input(args, kwargs, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        core.linear_attention(*args, **kwargs)


def test_very_negative_features_give_zeros_not_nan():
    q = torch.full((2, 2), -200.0)  # φ = e^{−200} underflows to 0 in float32
    tr = core.linear_attention(q, q, torch.ones(2, 3))
    assert bool(torch.isfinite(tr.output).all())


def test_linear_attention_on_device(device):
    q = torch.randn(2, 6, 4, device=device)
    tr = core.linear_attention(q, q, q, causal=True)
    ref = core.linear_attention(q.cpu(), q.cpu(), q.cpu(), causal=True)
    assert tr.output.device.type == torch.device(device).type
    torch.testing.assert_close(tr.output.cpu(), ref.output, atol=1e-5, rtol=1e-5)
