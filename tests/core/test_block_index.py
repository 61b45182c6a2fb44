"""Block indexers and a choice shared across layers (core.variants.block_index, issue 55): the block indexer against
transformers' Qwen4ExpTextQSAIndexer (the same chosen tokens), GLM-5's shared top-k against GlmMoeDsaConfig's
indexer_types, negative controls, bad input."""

from __future__ import annotations

import pytest
import torch

from core.mechanism.positional import RopeTables
from core.variants.block_index import block_index, shared_choice

D, HI, DI, BUDGET, C = 32, 2, 8, 4, 2


def _reference(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.qwen4_exp.modeling_qwen4_exp import Qwen4ExpTextQSAIndexer, Qwen4ExpTextRotaryEmbedding

    cfg = transformers.Qwen4ExpTextConfig(hidden_size=D, indexer_n_heads=HI, indexer_kv_heads=1, indexer_head_dim=DI,
                                          indexer_budget=BUDGET, indexer_compress_ratio=C, num_hidden_layers=2,
                                          num_attention_heads=2, num_key_value_heads=1, head_dim=8, vocab_size=16,
                                          intermediate_size=16, layer_types=["linear_attention", "indexed_attention"])
    ix = Qwen4ExpTextQSAIndexer(cfg, 1).eval()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in ix.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return ix, Qwen4ExpTextRotaryEmbedding(cfg)


def _run(ix, rot, x, **changes):
    pos = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
    cos, sin = rot(x, pos)
    W = ix.index_qk_proj.weight.T  # (d_model, (H_I + 1)·d): the queries, then the one key head
    w = dict(W_q=W[:, :HI * DI], W_k=W[:, HI * DI:], q_norm=1 + ix.q_layernorm.weight, k_norm=1 + ix.k_layernorm.weight,
             n_heads=HI, block=C, budget=BUDGET, rope=RopeTables.duplicated(cos, sin, pairing="half"),
             norm_eps=ix.q_layernorm.eps)
    with torch.no_grad():
        return block_index(x, **(w | changes)), (cos, sin)


@pytest.mark.parametrize("n", [1, 6, 11])
def test_chooses_the_tokens_qwen4_exp_qsa_chooses(n):
    ix, rot = _reference()
    x = torch.randn(2, n, D, generator=torch.Generator().manual_seed(n))
    got, emb = _run(ix, rot, x)
    causal = torch.ones(n, n, dtype=torch.bool).tril().expand(2, 1, n, n)
    with torch.no_grad():
        want = ix(x, emb, causal, None)[:, 0]  # (B, n, n)
    assert torch.equal(got.chosen, want)
    kept = got.chosen.sum(-1)  # at most ⌊budget / c⌋ closed blocks plus the open one
    assert int(kept.max()) <= BUDGET + C - 1 and torch.equal(got.chosen & ~causal[:, 0], torch.zeros_like(got.chosen))


@pytest.mark.parametrize("mistake", ["blocks one token late", "no key norm"])
def test_negative_controls_choose_otherwise(mistake):
    ix, rot = _reference(seed=3)
    x = torch.randn(2, 16, D, generator=torch.Generator().manual_seed(4))
    right, emb = _run(ix, rot, x)
    if mistake == "blocks one token late":
        wrong, _ = _run(ix, rot, torch.cat([x[:, :1] * 0, x[:, :-1]], dim=1))
    else:
        wrong, _ = _run(ix, rot, x, k_norm=torch.ones(DI) * 5.0 + torch.arange(DI))
    assert not torch.equal(wrong.chosen, right.chosen)


def test_shared_choice_equals_glm5_indexer_types():
    transformers = pytest.importorskip("transformers")
    cfg = transformers.GlmMoeDsaConfig(num_hidden_layers=8, index_topk_freq=3, index_skip_topk_offset=2)
    plan = shared_choice(cfg.indexer_types)
    assert plan.indexers == sum(k == "full" for k in cfg.indexer_types) < 8
    for layer, kind in enumerate(cfg.indexer_types):
        src = plan.source[layer]
        assert cfg.indexer_types[src] == "full" and (src == layer) == (kind == "full")
        assert all(k == "shared" for k in cfg.indexer_types[src + 1:layer + 1])  # the last full one before it


def test_bad_input_is_refused():
    ix, rot = _reference()
    x = torch.randn(1, 4, D)
    with pytest.raises(ValueError, match="holds no block"):
        _run(ix, rot, x, budget=1)
    with pytest.raises(ValueError, match="block size c must be an integer ≥ 1"):
        _run(ix, rot, x, block=0)
    with pytest.raises(ValueError, match="the first 'full'"):
        shared_choice(["shared", "full"])
