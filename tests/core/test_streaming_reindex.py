"""StreamingLLM's positions within the cache (issue 56): Mechanism(reindex=True) gives a window with sinks the
positions StreamingLLM gives them, checked against each query's cache built by hand; without sliding nothing moves."""

from __future__ import annotations

import pytest
import torch

from core.mechanism.multihead import grouped_query_attention
from core.mechanism.positional import RopeTables, rope_cos_sin, rope_tables
from core.models import decoder
from core.models.decoder_forward import reindex_bias, window_mask

H, G, N_TOK, D, W, SINKS, BASE = 4, 2, 11, 8, 3, 2, 100.0


def _qkv(seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(H, N_TOK, D, generator=g, dtype=torch.float64),
            torch.randn(G, N_TOK, D, generator=g, dtype=torch.float64),
            torch.randn(G, N_TOK, D, generator=g, dtype=torch.float64))


def _by_hand(q, k, v, pairing):
    """Each query's StreamingLLM cache: the sinks at 0 … s − 1, its window's keys after them, itself last."""
    out = torch.zeros(H, N_TOK, D, dtype=q.dtype)
    for i in range(N_TOK):
        kept = sorted(set(range(min(SINKS, i + 1))) | set(range(max(0, i - W + 1), i + 1)))
        pos = torch.arange(len(kept), dtype=torch.float64)  # positions within the cache, in order
        cos, sin = rope_cos_sin(pos, D, base=BASE, dtype=q.dtype)
        t = RopeTables(cos, sin, pairing)
        keys = t.apply(k[:, kept])  # (G, |kept|, d)
        qi = RopeTables(cos[-1:], sin[-1:], pairing).apply(q[:, i:i + 1])  # (H, 1, d): the query at the cache's end
        for h in range(H):
            w = torch.softmax(qi[h] @ keys[h // (H // G)].T / D ** 0.5, dim=-1)  # (1, |kept|)
            out[h, i] = (w @ v[h // (H // G), kept])[0]
    return out


@pytest.mark.parametrize("pairing", ["adjacent", "half"])
def test_the_bias_gives_every_query_its_cache_positions(pairing):
    q, k, v = _qkv()
    rope = rope_tables(N_TOK, D, base=BASE, pairing=pairing, dtype=q.dtype)
    pos = torch.arange(N_TOK)
    mask = window_mask(pos, N_TOK, W, SINKS)
    bias = reindex_bias(q, k, rope, pos, W, SINKS, BASE, D ** -0.5)
    got = grouped_query_attention(q, k, v, rope=rope, mask=mask, bias=bias)[3].output  # (H, n, d)
    torch.testing.assert_close(got, _by_hand(q, k, v, pairing), atol=1e-12, rtol=0)
    original = grouped_query_attention(q, k, v, rope=rope, mask=mask)[3].output
    slid = pos >= SINKS + W  # before the window slides past the sinks, the two numberings agree
    torch.testing.assert_close(got[:, ~slid], original[:, ~slid], atol=1e-12, rtol=0)
    assert (got[:, slid] - original[:, slid]).abs().max() > 1e-3  # after it, the sinks sit closer
    assert torch.equal(bias[:, :, SINKS:], torch.zeros_like(bias[:, :, SINKS:]))  # only the sink columns change


def test_the_mechanism_flag_reaches_the_forward_pass():
    m = decoder.Mechanism(window=3, sinks=2, reindex=True)
    assert not m.is_plain and decoder.Mechanism(window=3, sinks=2) != m
