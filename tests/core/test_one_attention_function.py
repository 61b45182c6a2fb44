"""The one attention function (issue 53): every variant, cache and model computes its softmax over attention scores
in ``core.mechanism.attention.attention``.

The guard is a counting wrapper: it replaces the function in every core module that holds it (so it sees a call
whichever way the name was imported) and runs each variant once. A variant with a softmax of its own makes no call
and fails here. The RoPE tables' one layout and the one rms_norm are checked below it.
"""

from __future__ import annotations

import pytest
import torch

import core
import core.mechanism.attention as home
from core.mechanism import masks
from core.mechanism.paged import PagedKVCache
from core.models.decoder_batch import BatchCache, extend_batch
from core.models.decoder_forward import forward
from core.models.decoder_load import LlamaConfig, LlamaLayer, LlamaWeights


@pytest.fixture
def calls(attention_calls):
    """The calls of the one attention function while the test runs (tests/core/conftest.py)."""
    return attention_calls


def _g(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _w(*shape, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_g(seed)) * 0.3


def _tiny_decoder(L: int = 2, H: int = 4, G: int = 2, d: int = 16, d_ff: int = 24, vocab: int = 11):
    c = LlamaConfig(n_layers=L, n_heads=H, n_kv_heads=G, d_model=d, d_ff=d_ff, vocab_size=vocab, rope_base=100.0,
                    eps=1e-5, context=64)
    dh = d // H
    layers = tuple(LlamaLayer(g_attn=1 + _w(d, seed=10 * l), W_q=_w(d, H * dh, seed=10 * l + 1),
                              W_k=_w(d, G * dh, seed=10 * l + 2), W_v=_w(d, G * dh, seed=10 * l + 3),
                              W_o=_w(H * dh, d, seed=10 * l + 4), g_ffn=1 + _w(d, seed=10 * l + 5),
                              W_gate=_w(d, d_ff, seed=10 * l + 6), W_up=_w(d, d_ff, seed=10 * l + 7),
                              W_down=_w(d_ff, d, seed=10 * l + 8)) for l in range(L))
    return c, LlamaWeights(E=_w(vocab, d, seed=99), g_final=1 + _w(d, seed=98), layers=layers)


def _mha_weights(d=8, H=4, G=2, seed=0):
    dh = d // H
    return dict(W_q=_w(d, H * dh, seed=seed), W_k=_w(d, G * dh, seed=seed + 1), W_v=_w(d, G * dh, seed=seed + 2),
                W_o=_w(H * dh, d, seed=seed + 3), n_heads=H, n_kv_heads=G)


def _mla_weights(d=8, H=2, d_c=4, d_R=2, d_h=3, seed=0):
    return dict(W_DKV=_w(d, d_c, seed=seed), W_KR=_w(d, d_R, seed=seed + 1), W_UK=_w(d_c, H * d_h, seed=seed + 2),
                W_UV=_w(d_c, H * d_h, seed=seed + 3), W_UQ=_w(d, H * d_h, seed=seed + 4),
                W_QR=_w(d, H * d_R, seed=seed + 5), W_o=_w(H * d_h, d, seed=seed + 6), n_heads=H)


X = _w(2, 5, 8, seed=7)  # (B, n, d_model)


def _modern_all_switches():
    w = _mha_weights()
    return core.modern_attention(X, **w, rope=100.0, q_norm=1 + _w(2, seed=20), k_norm=1 + _w(2, seed=21),
                                 sinks=_w(4, seed=22), gate_W=_w(8, 8, seed=23), softcap=2.0, window=3)


def _differential():
    return core.differential_attention(X, **_mha_weights(), lambda_q1=_w(2, seed=30), lambda_k1=_w(2, seed=31),
                                       lambda_q2=_w(2, seed=32), lambda_k2=_w(2, seed=33), rope=100.0)


def _paged():
    cache = PagedKVCache(n_pages=4, page_size=2, n_kv_heads=2, d_k=3)
    s = cache.new_sequence()
    cache.append(s, _w(2, 3, 3, seed=40), _w(2, 3, 3, seed=41))  # (G, t, d)
    return cache.attend(s, _w(4, 1, 3, seed=42))  # (H, 1, d_k): one new query per head


def _sparse():
    q, k, v = _w(1, 4, 5, 3, seed=50), _w(1, 2, 5, 3, seed=51), _w(1, 2, 5, 3, seed=52)
    return core.sparse_topk_attention(q, k, v, index_scores=_w(1, 5, 5, seed=53), top_k=2)


def _decoder_alone():
    c, P = _tiny_decoder()
    return forward(torch.tensor([1, 4, 2]), P, c)


def _decoder_batch():
    c, P = _tiny_decoder()
    cache = BatchCache(c, n_pages=4, page_size=4)
    seqs = [cache.open(6), cache.open(6)]
    return extend_batch([torch.tensor([1, 4, 2]), torch.tensor([3, 5])], seqs, cache, P, c)


def _gemma4_shared():
    from core.mechanism.positional import rope_tables
    from core.variants.kv_sharing import gemma4_attention

    rope = rope_tables(5, 4, base=100.0, pairing="half")
    own = gemma4_attention(X, W_q=_w(8, 8, seed=70), q_norm=1 + _w(4, seed=71), W_o=_w(8, 8, seed=72), n_heads=2,
                           rope=rope, W_k=_w(8, 4, seed=73), k_norm=1 + _w(4, seed=74), window=3)
    return gemma4_attention(X, W_q=_w(8, 8, seed=75), q_norm=1 + _w(4, seed=76), W_o=_w(8, 8, seed=77), n_heads=2,
                            rope=rope, shared=(own.k, own.v))


def _deepseek_v4_csa():
    from core.mechanism.positional import rope_tables
    from core.variants.compressed import compressed_attention

    x = _w(1, 8, 8, seed=80)
    comp = dict(W_c=_w(8, 8, seed=81), W_gate=_w(8, 8, seed=82), position_bias=_w(2, 8, seed=83),
                norm_weight=1 + _w(4, seed=84), m=2)
    ix = dict(W_c=_w(8, 4, seed=85), W_gate=_w(8, 4, seed=86), position_bias=_w(2, 4, seed=87),
              norm_weight=1 + _w(2, seed=88), W_q=_w(6, 4, seed=89), W_w=_w(8, 2, seed=90), n_heads=2)
    return compressed_attention(x, kind="csa", W_qa=_w(8, 6, seed=91), q_norm=1 + _w(6, seed=92),
                                W_qb=_w(6, 8, seed=93), W_kv=_w(8, 4, seed=94), kv_norm=1 + _w(4, seed=95),
                                sinks=_w(2, seed=96), W_oa=_w(2, 4, 3, seed=97), W_ob=_w(6, 8, seed=98), n_heads=2,
                                window=3, rope=rope_tables(8, 2, base=100.0), compressor=comp, indexer=ix, top_k=2)


def _deepseek_v4_decode():
    """A CSA prefill of 5 tokens, then 3 single-token steps against its cache: one call each."""
    from core.mechanism.positional import rope_tables
    from core.variants.compressed import compressed_step

    x = _w(1, 8, 8, seed=80)
    comp = dict(W_c=_w(8, 8, seed=81), W_gate=_w(8, 8, seed=82), position_bias=_w(2, 8, seed=83),
                norm_weight=1 + _w(4, seed=84), m=2)
    ix = dict(W_c=_w(8, 4, seed=85), W_gate=_w(8, 4, seed=86), position_bias=_w(2, 4, seed=87),
              norm_weight=1 + _w(2, seed=88), W_q=_w(6, 4, seed=89), W_w=_w(8, 2, seed=90), n_heads=2)
    layer = dict(kind="csa", W_qa=_w(8, 6, seed=91), q_norm=1 + _w(6, seed=92), W_qb=_w(6, 8, seed=93),
                 W_kv=_w(8, 4, seed=94), kv_norm=1 + _w(4, seed=95), sinks=_w(2, seed=96), W_oa=_w(2, 4, 3, seed=97),
                 W_ob=_w(6, 8, seed=98), n_heads=2, window=3, rope=rope_tables(8, 2, base=100.0), compressor=comp,
                 indexer=ix, top_k=2)
    step = compressed_step(x[:, :5], **layer)
    for i in range(5, 8):
        step = compressed_step(x[:, i:i + 1], step.cache, **layer)
    return step


# each variant and how many calls it makes (L = 2 blocks for the decoder)
VARIANTS = {
    "multi-head / grouped-query": (lambda: core.multi_head_attention(X, **_mha_weights(), rope_base=100.0), 1),
    "KV cache, one step per token": (lambda: core.cached_decode(X[0], **_mha_weights(), rope_base=100.0), 5),
    "paged KV cache": (_paged, 1),
    "sinks, QK-norm, output gate, soft-cap, window": (_modern_all_switches, 1),
    "differential attention (two maps)": (_differential, 2),
    "MLA, explicit and absorbed": (lambda: core.mla(X, **_mla_weights(), rope=100.0), 2),
    "sparse top-k": (_sparse, 1),
    "decoder alone": (_decoder_alone, 2),
    "decoder in a batch": (_decoder_batch, 2),
    "linear attention's softmax twin": (lambda: core.linear_attention(X[0], X[0], X[0]), 1),
    "transformer block": (lambda: core.block.seeded_block(X[0], seed=1, n_heads=2, d_ff=8), 1),
    "ViT": (lambda: core.vit.vit_attention(torch.rand(8, 8, 3, generator=_g(1)), 4), 1),
    "Gemma 4, a layer and one that shares its K and V": (_gemma4_shared, 2),
    "DeepSeek-V4 compressed sparse attention": (_deepseek_v4_csa, 1),
    "DeepSeek-V4 decoding: a prefill, then 3 steps against its cache": (_deepseek_v4_decode, 4),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_every_variant_calls_the_one_attention_function(name, calls):
    run, expected = VARIANTS[name]
    run()
    assert len(calls) == expected, f"{name}: {len(calls)} calls of core.mechanism.attention.attention, not {expected}"


def test_the_wrapper_sees_a_call_however_the_name_was_imported(calls):
    from core.mechanism import multihead

    assert core.attention is home.attention is multihead.attention  # replaced in every module that holds it
    core.attention(torch.ones(2, 3), torch.ones(2, 3), torch.ones(2, 3))
    multihead.grouped_query_attention(torch.ones(1, 2, 3), torch.ones(1, 2, 3), torch.ones(1, 2, 3))
    assert len(calls) == 2


def test_the_variants_pass_their_switches_to_it(calls):
    _modern_all_switches()
    (kw,) = calls
    assert kw["softcap"] == 2.0 and kw["sinks"].shape == (4, 1) and kw["mask"] is not None


def test_soft_cap_and_sinks_in_the_one_function_equal_a_hand_written_softmax():
    g = _g(3)
    q, k, v = torch.randn(2, 3, 4, generator=g), torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 2, generator=g)
    z = torch.randn(2, 1, generator=g)  # one sink logit per batch row, for every query
    mask = masks.causal(3, 5)
    tr = core.attention(q, k, v, mask=mask, softcap=1.5, sinks=z)
    s = q @ k.transpose(-1, -2) / 2.0
    s = 1.5 * torch.tanh(s / 1.5)
    s = s.masked_fill(~mask, float("-inf"))
    full = torch.softmax(torch.cat([s, z[:, :, None].expand(2, 3, 1)], dim=-1), dim=-1)  # (2, 3, 6)
    torch.testing.assert_close(tr.weights, full[..., :5], atol=1e-7, rtol=0)
    torch.testing.assert_close(tr.sink_weight, full[..., 5], atol=1e-7, rtol=0)
    torch.testing.assert_close(tr.output, full[..., :5] @ v, atol=1e-6, rtol=0)
    with pytest.raises(ValueError, match="softcap must be a positive"):
        core.attention(q, k, v, softcap=0.0)
    with pytest.raises(ValueError, match="do not broadcast"):
        core.attention(q, k, v, sinks=torch.zeros(3, 7))


# ---------------------------------------------------------------------------
# one RoPE layout, one rms_norm, one mask module
# ---------------------------------------------------------------------------

def test_rope_tables_of_ambiguous_width_are_refused_with_a_message():
    """A bare (cos, sin) pair is refused: Hugging Face's full tables (width r) given where half tables (width r/2) are
    read was silently wrong for partial rotary (a relative gap of 0.55). The two constructors read each layout."""
    n, d_head, r = 5, 8, 4  # partial rotary: 4 of each head's 8 dims rotated
    half = core.rope_tables(n, d_head, base=100.0, pairing="half", rotated_dims=r)  # (n, r/2)
    hf_cos, hf_sin = torch.cat([half.cos, half.cos], -1), torch.cat([half.sin, half.sin], -1)  # (n, r): cat(f, f)
    w = _mha_weights(d=8, H=1, G=1)
    ref = core.modern_attention(X, **w, rope=100.0, rope_dims=r)
    for bare in ((hf_cos, hf_sin), (half.cos, half.sin)):
        with pytest.raises(ValueError, match="ambiguous"):
            core.modern_attention(X, **w, rope=bare)
    for tables in (core.RopeTables.duplicated(hf_cos, hf_sin, pairing="half"),
                   core.RopeTables.half(half.cos, half.sin, pairing="half")):
        torch.testing.assert_close(core.modern_attention(X, **w, rope=tables).output, ref.output, atol=0, rtol=0)
    with pytest.raises(ValueError, match="not cat"):  # half tables called duplicated: their halves differ
        core.RopeTables.duplicated(half.cos, half.sin, pairing="half")
    with pytest.raises(TypeError):  # the pairing is always said
        core.RopeTables.half(half.cos, half.sin)


def test_one_rms_norm_one_self_attention_mask():
    from core.mechanism.norms import rms_norm
    from core.models import decoder

    assert core.rms_norm is rms_norm is decoder.rms_norm
    x, w = _w(3, 6, seed=60), _w(6, seed=61)
    ref = x / torch.sqrt((x**2).mean(-1, keepdim=True) + 1e-5) * w
    torch.testing.assert_close(rms_norm(x, w, 1e-5), ref, atol=1e-6, rtol=0)
    m = masks.self_attention(5, causal=True, window=2)
    assert torch.equal(m, masks.causal(5) & masks.window(5, 2))
    assert masks.self_attention(5, causal=False) is None


def test_no_module_in_core_defines_its_own_rms_norm_or_rope_table_builder():
    """Defined once each: rms_norm in core.mechanism.norms, rope_tables in core.mechanism.positional."""
    import ast
    from pathlib import Path

    root = Path(core.__file__).parent
    defined = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in ("rms_norm", "rope_tables", "self_mask", "apply_rope"):
                defined.setdefault(node.name, []).append(str(path.relative_to(root)))
    assert defined == {"rms_norm": ["mechanism/norms.py"], "rope_tables": ["mechanism/positional.py"]}


def test_an_mla_decoding_step_calls_the_one_function_once(calls):
    step = core.mla_decode(X[:, :1], **_mla_weights(), rope_base=100.0)
    core.mla_decode(X[:, 1:2], step.cache, **_mla_weights(), rope_base=100.0)
    assert len(calls) == 2
