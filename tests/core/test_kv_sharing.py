"""Gemma 4's cross-layer KV sharing and K = V (core.variants.kv_sharing, issue 55) against transformers'
Gemma4TextAttention from a tiny random config with the same weights, layer by layer with its shared_kv_states;
the sharing plan against Gemma4TextConfig.kv_sharing_modes; negative controls; bad input."""

from __future__ import annotations

import pytest
import torch

from core.variants.kv_sharing import RopeTables, gemma4_attention, proportional_rope, sharing_plan

TYPES = ["sliding_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"]
D, H, WINDOW = 32, 2, 3


def _model(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.gemma4.modeling_gemma4 import Gemma4TextAttention, Gemma4TextRotaryEmbedding

    cfg = transformers.Gemma4TextConfig(hidden_size=D, num_attention_heads=H, num_key_value_heads=1, head_dim=8,
                                        global_head_dim=16, num_global_key_value_heads=1, num_hidden_layers=5,
                                        layer_types=TYPES, num_kv_shared_layers=2, attention_k_eq_v=True,
                                        sliding_window=WINDOW, vocab_size=16, intermediate_size=16)
    cfg._attn_implementation = "eager"
    g = torch.Generator().manual_seed(seed)
    layers = []
    for i in range(len(TYPES)):
        layer = Gemma4TextAttention(cfg, i).eval()
        with torch.no_grad():
            for p in layer.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3 + (1.0 if p.dim() == 1 else 0.0))
        layers.append(layer)
    return cfg, layers, Gemma4TextRotaryEmbedding(cfg)


def _tables(rot, x, kind) -> RopeTables:
    cos, sin = rot(x, torch.arange(x.shape[1])[None].expand(x.shape[0], -1), kind)  # (B, n, d): cat(freqs, freqs)
    return RopeTables.duplicated(cos, sin, pairing="half")


def _run_reference(cfg, layers, rot, x):
    from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask

    pos = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
    masks = {"full_attention": create_causal_mask(cfg, x, None, None, pos),
             "sliding_attention": create_sliding_window_causal_mask(cfg, x, None, None, pos)}
    shared, outs = {}, []
    with torch.no_grad():
        for layer, kind in zip(layers, TYPES, strict=True):
            outs.append(layer(x, rot(x, pos, kind), masks[kind], shared)[0])
    return outs


def _run_core(layers, rot, x, plan, *, mistake=None):
    traces = []
    for i, (layer, kind) in enumerate(zip(layers, TYPES, strict=True)):
        w = dict(W_q=layer.q_proj.weight.T, q_norm=layer.q_norm.weight, W_o=layer.o_proj.weight.T, n_heads=H,
                 rope=_tables(rot, x, kind), window=WINDOW if kind == "sliding_attention" else None,
                 norm_eps=layer.q_norm.variance_epsilon)
        if plan.modes[i] == "reuse":
            wrong = mistake == "wrong shared layer" and kind == "sliding_attention"
            src = 0 if wrong else plan.source[i]  # layer 3 reads layer 0, the other local layer, instead of layer 1
            w["shared"] = (traces[src].k, traces[src].v)
        else:
            w |= dict(W_k=layer.k_proj.weight.T, k_norm=layer.k_norm.weight,
                      W_v=None if layer.v_proj is None else layer.v_proj.weight.T)
        if mistake == "the usual 1/sqrt(d) scaling":
            w["scale"] = layer.head_dim ** -0.5
        with torch.no_grad():
            traces.append(gemma4_attention(x, **w))
    return traces


def test_the_plan_equals_gemma4_text_config():
    cfg, _, _ = _model()
    plan = sharing_plan(TYPES, 2)
    assert list(plan.modes) == cfg.kv_sharing_modes and plan.source == (0, 1, 2, 1, 2) and plan.cached_layers == 3


def test_every_layer_equals_gemma4_text_attention():
    cfg, layers, rot = _model()
    x = torch.randn(2, 7, D, generator=torch.Generator().manual_seed(1))
    want = _run_reference(cfg, layers, rot, x)
    got = _run_core(layers, rot, x, sharing_plan(TYPES, 2))
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        assert float((a.output - b).abs().max() / b.abs().max()) < 1e-5, i
    assert [t.reused for t in got] == [False, False, False, True, True]
    assert got[3].k is got[1].k and got[4].v is got[2].v  # read, not recomputed: the shared layers cache nothing
    ours = proportional_rope(7, 16, base=1_000_000.0, fraction=0.25)  # the global layers' defaults
    theirs = _tables(rot, x, "full_attention")
    torch.testing.assert_close(theirs.cos[0], ours.cos, atol=1e-6, rtol=0)
    torch.testing.assert_close(theirs.sin[0], ours.sin, atol=1e-6, rtol=0)


@pytest.mark.parametrize("mistake", ["wrong shared layer", "the usual 1/sqrt(d) scaling"])
def test_negative_controls_fail(mistake):
    cfg, layers, rot = _model(seed=2)
    x = torch.randn(2, 7, D, generator=torch.Generator().manual_seed(3))
    want = _run_reference(cfg, layers, rot, x)
    got = _run_core(layers, rot, x, sharing_plan(TYPES, 2), mistake=mistake)
    worst = max(float((a.output - b).abs().max() / b.abs().max()) for a, b in zip(got, want, strict=True))
    assert worst > 1e-3


def test_proportional_rope_turns_only_the_first_pairs_with_the_whole_widths_frequencies():
    t = proportional_rope(4, 16, base=100.0, fraction=0.25)  # 2 of 8 pairs turn
    assert torch.equal(t.cos[:, 2:], torch.ones(4, 6)) and torch.equal(t.sin[:, 2:], torch.zeros(4, 6))
    torch.testing.assert_close(t.sin[1, 1], torch.sin(torch.tensor(100.0 ** (-2 / 16))))  # θ^(−2i/d), d the whole width
    with pytest.raises(ValueError, match="fraction"):
        proportional_rope(4, 16, base=100.0, fraction=0.0)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="needs an earlier layer"):
        sharing_plan(["sliding_attention", "full_attention"], 1)  # the shared global layer has no global to read
    with pytest.raises(ValueError, match="layer types"):
        sharing_plan(["local"], 0)
    _, layers, rot = _model()
    x = torch.randn(1, 3, D)
    layer = layers[0]
    with pytest.raises(ValueError, match="one of them"):
        gemma4_attention(x, W_q=layer.q_proj.weight.T, q_norm=layer.q_norm.weight, W_o=layer.o_proj.weight.T,
                         n_heads=H, rope=_tables(rot, x, "sliding_attention"))
