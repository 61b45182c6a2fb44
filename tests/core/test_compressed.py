"""DeepSeek-V4's compressed attention (core.variants.compressed, issue 55) against transformers' DeepseekV4Attention
(sliding, CSA with its indexer, HCA) from a tiny random config with the same weights; the pools and the indexer's
choice; negative controls; what each cache keeps; bad input."""

from __future__ import annotations

import pytest
import torch

from core.mechanism.positional import RopeTables
from core.variants.compressed import compressed_attention

TYPES = ["sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"]
KIND = {"sliding_attention": "sliding", "compressed_sparse_attention": "csa", "heavily_compressed_attention": "hca"}
D, H, HD, M_CSA, M_HCA, TOP_K, WINDOW = 32, 4, 16, 2, 4, 2, 4


def _model(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4Attention, DeepseekV4RotaryEmbedding

    cfg = transformers.DeepseekV4Config(hidden_size=D, num_attention_heads=H, head_dim=HD, qk_rope_head_dim=8,
                                        q_lora_rank=12, o_groups=2, o_lora_rank=6, index_n_heads=2, index_head_dim=8,
                                        index_topk=TOP_K, sliding_window=WINDOW,
                                        compress_rates={"compressed_sparse_attention": M_CSA,
                                                        "heavily_compressed_attention": M_HCA},
                                        layer_types=TYPES, num_hidden_layers=3, vocab_size=16, intermediate_size=16,
                                        moe_intermediate_size=8, n_routed_experts=2, num_experts_per_tok=1)
    cfg._attn_implementation = "eager"
    g = torch.Generator().manual_seed(seed)
    layers = []
    for i in range(3):
        layer = DeepseekV4Attention(cfg, i).eval()
        with torch.no_grad():
            for name, p in layer.named_parameters():
                p.copy_(torch.randn(p.shape, generator=g) * (0.5 if "bias" in name else 0.3)
                        + (1.0 if "norm" in name else 0.0))
        layers.append(layer)
    return cfg, layers, DeepseekV4RotaryEmbedding(cfg)


def _reference(cfg, layer, rot, x):
    from transformers.masking_utils import create_sliding_window_causal_mask

    pos = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
    emb = {kind: rot(x, pos, kind) for kind in ("main", "compress")}
    with torch.no_grad():
        return layer(x, emb, pos, create_sliding_window_causal_mask(cfg, x, None, None, pos))[0]


def _weights(layer, rot, x) -> dict:
    pos = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
    cos, sin = rot(x, pos, layer.rope_layer_type)  # (B, n, r/2): V4's half tables, adjacent pairs
    W_oa = layer.o_a_proj.weight.view(2, 6, -1).transpose(1, 2)  # (g, H·d/g, r_o)
    w = dict(kind=KIND[layer.layer_type], W_qa=layer.q_a_proj.weight.T, q_norm=layer.q_a_norm.weight,
             W_qb=layer.q_b_proj.weight.T, W_kv=layer.kv_proj.weight.T, kv_norm=layer.kv_norm.weight, sinks=layer.sinks,
             W_oa=W_oa, W_ob=layer.o_b_proj.weight.T, n_heads=H, window=WINDOW,
             rope=RopeTables.half(cos, sin, pairing="adjacent"), norm_eps=layer.kv_norm.variance_epsilon)
    c = layer.compressor
    if c is not None:
        w["compressor"] = dict(W_c=c.kv_proj.weight.T, W_gate=c.gate_proj.weight.T, position_bias=c.position_bias,
                               norm_weight=c.kv_norm.weight, m=c.compress_rate)
    if getattr(c, "indexer", None) is not None:
        ix = c.indexer
        w["indexer"] = dict(W_c=ix.kv_proj.weight.T, W_gate=ix.gate_proj.weight.T, position_bias=ix.position_bias,
                            norm_weight=ix.kv_norm.weight, W_q=ix.q_b_proj.weight.T, W_w=ix.scorer.weights_proj.weight.T,
                            n_heads=ix.num_heads)
        w["top_k"] = ix.index_topk
    return w


def _rel(a, b) -> float:
    return float((a - b).abs().max() / b.abs().max())


@pytest.mark.parametrize("layer_idx", [0, 1, 2])
@pytest.mark.parametrize("n", [3, 9])
def test_equals_deepseek_v4_attention(layer_idx, n):
    cfg, layers, rot = _model()
    x = torch.randn(2, n, D, generator=torch.Generator().manual_seed(n))
    want = _reference(cfg, layers[layer_idx], rot, x)
    with torch.no_grad():
        got = compressed_attention(x, **_weights(layers[layer_idx], rot, x))
    assert _rel(got.output, want) < 1e-4
    assert torch.allclose(got.weights.sum(-1) + got.sink_weight, torch.ones(2, H, n))


def test_what_each_layer_keeps():
    _, layers, rot = _model()
    x = torch.randn(1, 16, D, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        csa, hca = (compressed_attention(x, **_weights(layers[i], rot, x)) for i in (1, 2))
    assert csa.pooled.entries.shape[-2] == 16 // M_CSA and hca.pooled.entries.shape[-2] == 16 // M_HCA
    assert csa.pooled.weights.shape[-2] == 2 * M_CSA and hca.pooled.weights.shape[-2] == M_HCA  # overlapping: 2m slots
    assert csa.pooled.weights[:, 0, :M_CSA].abs().max() == 0  # the first entry has no window before it
    assert csa.cache_values_per_token == HD / M_CSA and hca.cache_values_per_token == HD / M_HCA
    chosen = csa.index.chosen.sum(-1)  # (1, n): each query keeps at most top-k closed entries
    closed = (torch.arange(16) + 1) // M_CSA
    assert torch.equal(chosen[0], closed.clamp(max=TOP_K))


@pytest.mark.parametrize("mistake", ["pool off by one", "the wrong indexer choice", "output not turned back"])
def test_negative_controls_fail(mistake):
    cfg, layers, rot = _model(seed=4)
    layer = layers[1] if mistake != "pool off by one" else layers[2]
    x = torch.randn(2, 9, D, generator=torch.Generator().manual_seed(5))
    want = _reference(cfg, layer, rot, x)
    w = _weights(layer, rot, x)
    if mistake == "pool off by one":
        w["compressor"]["position_bias"] = w["compressor"]["position_bias"].roll(1, dims=0)
    elif mistake == "the wrong indexer choice":
        w["top_k"] = TOP_K + 1
    else:
        w["W_oa"] = w["W_oa"].flip(1)
    with torch.no_grad():
        assert _rel(compressed_attention(x, **w).output, want) > 1e-3


def test_bad_input_is_refused():
    _, layers, rot = _model()
    x = torch.randn(1, 5, D)
    w = _weights(layers[2], rot, x)
    with pytest.raises(ValueError, match="kind must be"):
        compressed_attention(x, **(w | {"kind": "mla"}))
    with pytest.raises(ValueError, match="pool size m must be an integer ≥ 1"):
        compressed_attention(x, **(w | {"compressor": w["compressor"] | {"m": 0}}))
    with pytest.raises(ValueError, match="takes no compressor"):
        compressed_attention(x, **(w | {"kind": "sliding"}))
    csa = _weights(layers[1], rot, x)
    with pytest.raises(ValueError, match="top_k must be an integer ≥ 1"):
        compressed_attention(x, **(csa | {"top_k": 0}))
