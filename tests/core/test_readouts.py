"""core.variants.readouts: the numbers the variant pages read off a trace, against hand-written numpy and against
core's own functions (the delta rule's recurrence, attention's scores, sparse top-k attention, the schedules)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from core.variants import readouts
from core.variants.delta import gated_delta_rule


def _delta_numpy(k: np.ndarray, v: np.ndarray, beta: np.ndarray, decay: np.ndarray, delta: bool):
    """The recurrence written out: S ← α_t S; pred_t = Sᵀ k_t; write_t = β_t (v_t − pred_t) (or β_t v_t); S += k_t write_tᵀ."""
    S = np.zeros((k.shape[1], v.shape[1]))
    preds, writes, states = [], [], []
    for t in range(k.shape[0]):
        S = decay[t] * S
        pred = S.T @ k[t]
        write = beta[t] * (v[t] - pred if delta else v[t])
        S = S + np.outer(k[t], write)
        preds.append(pred)
        writes.append(write)
        states.append(S)
    return np.array(preds), np.array(writes), np.array(states)


@pytest.mark.parametrize("delta", [True, False])
def test_the_delta_rule_readout_is_the_recurrence_written_out(delta):
    g = torch.Generator().manual_seed(3)
    n, d_k, d_v = 6, 4, 3
    q, k = torch.randn(n, d_k, generator=g), torch.randn(n, d_k, generator=g)
    v = torch.randn(n, d_v, generator=g)
    beta, logdecay = torch.rand(n, generator=g), -torch.rand(n, generator=g)
    tr = gated_delta_rule(q, k, v, beta=beta, g=logdecay, l2_normalize_qk=True, delta=delta)
    pred, write = readouts.delta_readout(tr, delta=delta)
    want_pred, want_write, want_states = _delta_numpy(tr.k.double().numpy(), tr.v.double().numpy(),
                                                      tr.beta.double().numpy(), tr.decay.double().numpy(), delta)
    np.testing.assert_allclose(tr.states.numpy(), want_states, atol=1e-5)  # the trace is that recurrence
    np.testing.assert_allclose(pred.numpy(), want_pred, atol=1e-5)
    np.testing.assert_allclose(write.numpy(), want_write, atol=1e-5)
    # each state is the one before, decayed, plus the write along k_t (outer product)
    before = torch.cat([torch.zeros_like(tr.states[:1]), tr.states[:-1]]) * tr.decay[:, None, None]
    torch.testing.assert_close(tr.states, before + tr.k[:, :, None] * write[:, None, :])


def test_the_delta_rule_readout_keeps_leading_dims():
    g = torch.Generator().manual_seed(4)
    q, k, v = (torch.randn(2, 3, 5, 4, generator=g) for _ in range(3))
    beta = torch.rand(2, 3, 5, generator=g)
    tr = gated_delta_rule(q, k, v, beta=beta)
    pred, write = readouts.delta_readout(tr)
    assert pred.shape == write.shape == (2, 3, 5, 4)
    one = gated_delta_rule(q[1, 2], k[1, 2], v[1, 2], beta=beta[1, 2])
    torch.testing.assert_close(pred[1, 2], readouts.delta_readout(one)[0])


def test_the_oracle_index_is_the_heads_mean_of_attentions_own_scores():
    g = torch.Generator().manual_seed(5)
    n, H, d = 5, 2, 4
    q, k, v = (torch.randn(1, H, n, d, generator=g) for _ in range(3))
    full = core.attention(q, k, v, mask=core.masks.causal(n))
    index = readouts.oracle_index(full.scores, full.mask)
    s = (q @ k.transpose(-1, -2)).numpy()[0]  # (H, n, n): the raw dot products, hand-written
    s[:, ~np.tril(np.ones((n, n), dtype=bool))] = -np.inf
    np.testing.assert_allclose(index[0].numpy(), s.mean(0), atol=1e-5)
    # top-1 by the oracle picks, for every query, a key the heads weigh most on average
    tr = core.sparse_topk_attention(q, k, v, index_scores=index, top_k=1)
    chosen = tr.chosen[0]
    assert torch.equal(chosen.float().argmax(-1), torch.as_tensor(s.mean(0)).argmax(-1))
    kept = readouts.weight_kept(full.weights[0], chosen)
    np.testing.assert_allclose(kept.numpy(), (full.weights[0].numpy() * chosen.numpy()).sum(-1), atol=1e-6)
    assert torch.all(kept <= 1 + 1e-6) and torch.allclose(kept[:, 0], torch.ones(H))  # the first query has one key


def test_the_peak_share():
    w = torch.tensor([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.6, -0.2, 0.2]])
    np.testing.assert_allclose(readouts.peak_share(w).numpy(), [0.5, 1.0, 0.6], atol=1e-7)
    assert readouts.peak_share(torch.zeros(1, 3)).item() == 0.0  # an empty row: no division by zero


def test_the_schedule_period():
    assert readouts.schedule_period("llllg" * 3) == list("llllg")
    assert readouts.schedule_period([1, 1, 1]) == [1]
    assert readouts.schedule_period([1, 2, 1]) == [1, 2]  # the last repetition may be cut short
    assert readouts.schedule_period([1, 2, 3]) == [1, 2, 3]  # no repetition: the whole list
    s = core.SCHEDULE_PRESETS[next(iter(core.SCHEDULE_PRESETS))]
    kinds = [(layer.kind, layer.size, layer.rope) for layer in s.layers]
    p = readouts.schedule_period(kinds)
    assert [kinds[i % len(p)] for i in range(len(kinds))] == kinds
