"""core.sparse_topk_macs: the cost curves of the sparse page are counted multiply-adds. Checked against torch's own
FlopCounterMode on the matmuls written here: full attention, the indexer's scores, and attention over the k chosen
keys gathered per query (FLOPs = 2 · multiply-adds)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

import core


def _macs(fn) -> int:
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops() // 2


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 12), k=st.integers(1, 14), H=st.integers(1, 3), d_k=st.integers(1, 5), d_v=st.integers(1, 5),
       H_I=st.integers(1, 3), d_I=st.integers(1, 5))
def test_the_counts_equal_flopcountermode_on_the_same_matmuls(n, k, H, d_k, d_v, H_I, d_I):
    g = torch.Generator().manual_seed(n * 100 + k)
    q, key, v = torch.randn(H, n, d_k, generator=g), torch.randn(H, n, d_k, generator=g), torch.randn(H, n, d_v, generator=g)
    q_I, k_I = torch.randn(H_I, n, d_I, generator=g), torch.randn(n, d_I, generator=g)
    kk = min(k, n)
    idx = torch.stack([torch.randperm(n, generator=g)[:kk] for _ in range(n)])  # (n, k): each query's chosen keys
    k_sel, v_sel = key[:, idx], v[:, idx]  # (H, n, k, d)

    def full():
        w = torch.softmax(q @ key.transpose(-1, -2), dim=-1)  # (H, n, n)
        return w @ v

    def indexer():
        return torch.relu(q_I @ k_I.T)  # (H_I, n, n)

    def selected():
        w = torch.softmax(q.unsqueeze(-2) @ k_sel.transpose(-1, -2), dim=-1)  # (H, n, 1, k)
        return w @ v_sel  # (H, n, 1, d_v)

    cost = core.sparse_topk_macs(n, k, n_heads=H, d_k=d_k, d_v=d_v, n_index_heads=H_I, d_index=d_I)
    assert cost.full == _macs(full)
    assert cost.indexer == _macs(indexer)
    assert cost.selected == _macs(selected)
    assert cost.sparse == cost.indexer + cost.selected


def test_sparse_costs_grow_linearly_in_n_past_the_indexer_and_bad_input_is_named():
    small, big = (core.sparse_topk_macs(n, 64, n_heads=8, d_k=64, d_v=64, n_index_heads=4, d_index=32)
                  for n in (1024, 2048))
    assert big.full == 4 * small.full and big.selected == 2 * small.selected and big.indexer == 4 * small.indexer
    with pytest.raises(ValueError, match="top_k must be an integer ≥ 1, got 0"):
        core.sparse_topk_macs(4, 0, n_heads=1, d_k=1, d_v=1, n_index_heads=1, d_index=1)
