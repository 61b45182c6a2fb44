"""core.variants.sinks_gates* against the transformers modules they follow, built from tiny random configs on the CPU.

Each reference module gets seeded random weights (every parameter, norms and sinks included), the same
weights are handed to our function in row convention (x @ W = nn.Linear's x @ weightᵀ), and the rotary
tables come from the model's own RotaryEmbedding. Float64 where the module computes in the input's dtype
(some modules cast to float32 inside — softmax, RMSNorm, RoPE angles — so 1e-5 relative), else float32.
"""

from __future__ import annotations

import pytest
import torch

import core

transformers = pytest.importorskip("transformers", reason="the reference modules come from transformers")

F64 = torch.float64


def _randomize(module: torch.nn.Module, seed: int, std: float = 0.3) -> torch.nn.Module:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * std)
    return module.eval()


def _x(shape, seed: int, dtype=F64) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _w(linear: torch.nn.Linear) -> torch.Tensor:
    return linear.weight.detach().T  # (d_in, d_out): row convention


def _b(linear: torch.nn.Linear):
    return None if linear.bias is None else linear.bias.detach()


def _additive(mask: torch.Tensor, dtype=F64) -> torch.Tensor:
    """(n, n) boolean → (1, 1, n, n) additive 0 / −inf, as the eager attention functions take it."""
    return torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, float("-inf"))[None, None]


def _rel_gap(ours: torch.Tensor, ref: torch.Tensor) -> float:
    return float((ours - ref).abs().max() / ref.abs().max())


def _tables(rotary, x, n):
    cos, sin = rotary(x, torch.arange(n)[None])
    return cos, sin


def _hf(cos, sin, pairing):
    """Hugging Face's rotary tables (cat(freqs, freqs), width r) as core's RopeTables."""
    return core.RopeTables.duplicated(cos, sin, pairing=pairing)


@torch.no_grad()
@pytest.mark.parametrize("window", [None, 3])
def test_sinks_equal_gpt_oss_attention(window):
    from transformers import GptOssConfig
    from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention, GptOssRotaryEmbedding

    cfg = GptOssConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_hidden_layers=2,
                       intermediate_size=32, num_local_experts=2, vocab_size=10)
    cfg._attn_implementation = "eager"
    ref = _randomize(GptOssAttention(cfg, 0).double(), seed=1)
    n = 6
    x = _x((2, n, 32), seed=2)
    cos, sin = _tables(GptOssRotaryEmbedding(cfg), x, n)  # (B, n, d/2): gpt-oss keeps the half tables
    mask = core.masks.causal(n) if window is None else core.masks.window(n, window, causal_only=True)
    out_ref, w_ref = ref(x, (cos, sin), _additive(mask))
    tr = core.modern_attention(x, W_q=_w(ref.q_proj), W_k=_w(ref.k_proj), W_v=_w(ref.v_proj), W_o=_w(ref.o_proj),
                               b_q=_b(ref.q_proj), b_k=_b(ref.k_proj), b_v=_b(ref.v_proj), b_o=_b(ref.o_proj),
                               n_heads=4, n_kv_heads=2, rope=core.RopeTables.half(cos, sin, pairing="half"),
                               sinks=ref.sinks.detach(),
                               window=window)
    assert _rel_gap(tr.output, out_ref) < 1e-12
    assert _rel_gap(tr.weights, w_ref) < 1e-12
    # the sink takes a share of every row: rows sum to 1 − sink_weight < 1
    assert torch.allclose(tr.weight_sums + tr.sink_weight, torch.ones_like(tr.sink_weight))
    assert bool((tr.weight_sums < 1).all())


@torch.no_grad()
def test_qk_norm_equals_qwen3_attention():
    from transformers import Qwen3Config
    from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding

    cfg = Qwen3Config(hidden_size=48, num_attention_heads=4, num_key_value_heads=2, head_dim=12, num_hidden_layers=1,
                      intermediate_size=32, vocab_size=10, rms_norm_eps=1e-6)
    cfg._attn_implementation = "eager"
    ref = _randomize(Qwen3Attention(cfg, 0).double(), seed=3)
    with torch.no_grad():  # norm weights near 1, as trained ones are
        ref.q_norm.weight.add_(1.0)
        ref.k_norm.weight.add_(1.0)
    n = 7
    x = _x((1, n, 48), seed=4)
    cos, sin = _tables(Qwen3RotaryEmbedding(cfg), x, n)
    out_ref, w_ref = ref(x, (cos, sin), _additive(core.masks.causal(n)))
    tr = core.modern_attention(x, W_q=_w(ref.q_proj), W_k=_w(ref.k_proj), W_v=_w(ref.v_proj), W_o=_w(ref.o_proj),
                               n_heads=4, n_kv_heads=2, rope=_hf(cos, sin, "half"), q_norm=ref.q_norm.weight,
                               k_norm=ref.k_norm.weight, norm_eps=1e-6)
    # Qwen3RMSNorm normalises in float32 even for float64 input
    assert _rel_gap(tr.output, out_ref) < 1e-5
    assert _rel_gap(tr.weights, w_ref) < 1e-5


@torch.no_grad()
def test_softcap_equals_gemma2_attention():
    from transformers import Gemma2Config
    from transformers.models.gemma2.modeling_gemma2 import Gemma2Attention, Gemma2RotaryEmbedding

    cfg = Gemma2Config(hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16, num_hidden_layers=2,
                       intermediate_size=32, vocab_size=10, query_pre_attn_scalar=24, attn_logit_softcapping=3.0)
    cfg._attn_implementation = "eager"
    ref = _randomize(Gemma2Attention(cfg, 1).double(), seed=5, std=0.5)
    n = 6
    x = _x((2, n, 32), seed=6)
    cos, sin = _tables(Gemma2RotaryEmbedding(cfg), x, n)
    out_ref, w_ref = ref(x, (cos, sin), _additive(core.masks.causal(n)))
    tr = core.modern_attention(x, W_q=_w(ref.q_proj), W_k=_w(ref.k_proj), W_v=_w(ref.v_proj), W_o=_w(ref.o_proj),
                               n_heads=2, n_kv_heads=1, rope=_hf(cos, sin, "half"), softcap=3.0, scale=24 ** -0.5)
    assert float(tr.scaled.abs().max()) > 3.0 > float(tr.capped.abs().max())  # the cap bites
    assert _rel_gap(tr.output, out_ref) < 1e-5  # Gemma 2's softmax runs in float32
    assert _rel_gap(tr.weights, w_ref) < 1e-5


@torch.no_grad()
def test_output_gate_equals_qwen3_next_attention():
    from transformers import Qwen3NextConfig
    from transformers.models.qwen3_next.modeling_qwen3_next import Qwen3NextAttention, Qwen3NextRotaryEmbedding

    cfg = Qwen3NextConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8, num_hidden_layers=1,
                          intermediate_size=32, vocab_size=10, num_experts=2, num_experts_per_tok=1,
                          moe_intermediate_size=16, shared_expert_intermediate_size=16, layer_types=["full_attention"])
    cfg._attn_implementation = "eager"
    ref = _randomize(Qwen3NextAttention(cfg, 0).double(), seed=7)
    n, H, d = 5, 4, 8
    x = _x((2, n, 32), seed=8)
    cos, sin = _tables(Qwen3NextRotaryEmbedding(cfg), x, n)  # partial rotary: (B, n, r) with r < d
    assert cos.shape[-1] < d
    out_ref, w_ref = ref(x, (cos, sin), _additive(core.masks.causal(n)))
    # q_proj's output is, per head, [q_h (d) | gate_h (d)]: split its rows into W_q and W_gate
    rows = torch.arange(2 * H * d).reshape(H, 2, d)
    Wqg = ref.q_proj.weight.detach()
    W_q, W_gate = Wqg[rows[:, 0].reshape(-1)].T, Wqg[rows[:, 1].reshape(-1)].T  # (32, H·d) each
    tr = core.modern_attention(x, W_q=W_q, W_k=_w(ref.k_proj), W_v=_w(ref.v_proj), W_o=_w(ref.o_proj), n_heads=H,
                               n_kv_heads=2, rope=_hf(cos, sin, "half"), gate_W=W_gate,
                               q_norm=1 + ref.q_norm.weight, k_norm=1 + ref.k_norm.weight,  # (1 + w) norms
                               norm_eps=cfg.rms_norm_eps)
    assert _rel_gap(tr.output, out_ref) < 1e-5
    assert _rel_gap(tr.weights, w_ref) < 1e-5
    assert tr.gate.shape == (2, n, H * d) and bool(((tr.gate > 0) & (tr.gate < 1)).all())


@torch.no_grad()
def test_differential_attention_equals_diffllama():
    from transformers import DiffLlamaConfig
    from transformers.models.diffllama.modeling_diffllama import DiffLlamaAttention, DiffLlamaRotaryEmbedding

    cfg = DiffLlamaConfig(hidden_size=32, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=3,
                          intermediate_size=32, vocab_size=10, rms_norm_eps=1e-6)
    cfg._attn_implementation = "eager"
    ref = _randomize(DiffLlamaAttention(cfg, layer_idx=2).double(), seed=9)
    n = 6
    x = _x((2, n, 32), seed=10)
    cos, sin = _tables(DiffLlamaRotaryEmbedding(cfg), x, n)
    out_ref, _ = ref(x, (cos, sin), _additive(core.masks.causal(n)))
    tr = core.differential_attention(
        x, W_q=_w(ref.q_proj), W_k=_w(ref.k_proj), W_v=_w(ref.v_proj), W_o=_w(ref.o_proj), n_heads=4, n_kv_heads=2,
        lambda_q1=ref.lambda_q1, lambda_k1=ref.lambda_k1, lambda_q2=ref.lambda_q2, lambda_k2=ref.lambda_k2,
        layer_idx=2, rope=_hf(cos, sin, "half"), norm_eps=1e-6)
    assert tr.lambda_init == pytest.approx(ref.lambda_init)
    assert _rel_gap(tr.output, out_ref) < 1e-5  # DiffLlama's softmax and λ run in float32
    # the differential map's rows sum to 1 − λ
    assert torch.allclose(tr.weights.sum(-1), (1 - tr.lam).expand(tr.weights.shape[:-1]))


def _mla_weights(ref, H: int, d_nope: int, d_rope: int, d_v: int, d_c: int) -> dict:
    """DeepseekV3Attention's projections in the paper's names (row convention)."""
    qb = ref.q_b_proj.weight.detach().reshape(H, d_nope + d_rope, -1)  # per head [nope | rope] rows
    kvb = ref.kv_b_proj.weight.detach().reshape(H, d_nope + d_v, -1)  # per head [k_nope | v] rows
    kva = ref.kv_a_proj_with_mqa.weight.detach()  # [c_KV (d_c) | k_R (d_R)] rows
    return dict(W_DQ=_w(ref.q_a_proj), q_norm=ref.q_a_layernorm.weight.detach(),
                W_UQ=qb[:, :d_nope].reshape(H * d_nope, -1).T, W_QR=qb[:, d_nope:].reshape(H * d_rope, -1).T,
                W_DKV=kva[:d_c].T, W_KR=kva[d_c:].T, kv_norm=ref.kv_a_layernorm.weight.detach(),
                W_UK=kvb[:, :d_nope].reshape(H * d_nope, -1).T, W_UV=kvb[:, d_nope:].reshape(H * d_v, -1).T,
                W_o=_w(ref.o_proj))


def _deepseek_config(cls, **extra):
    cfg = cls(hidden_size=32, num_attention_heads=4, num_key_value_heads=4, q_lora_rank=12, kv_lora_rank=10,
              qk_rope_head_dim=4, qk_nope_head_dim=6, v_head_dim=5, num_hidden_layers=1, intermediate_size=32,
              vocab_size=10, n_routed_experts=2, num_experts_per_tok=1, moe_intermediate_size=8, **extra)
    cfg._attn_implementation = "eager"
    return cfg


@torch.no_grad()
def test_mla_equals_deepseek_v3_attention_in_both_forms():
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention, DeepseekV3RotaryEmbedding

    cfg = _deepseek_config(DeepseekV3Config)
    assert cfg.rope_interleave  # adjacent pairs, as the checkpoints store them
    ref = _randomize(DeepseekV3Attention(cfg, 0).double(), seed=11)
    with torch.no_grad():
        ref.q_a_layernorm.weight.add_(1.0)
        ref.kv_a_layernorm.weight.add_(1.0)
    n = 7
    x = _x((2, n, 32), seed=12)
    cos, sin = _tables(DeepseekV3RotaryEmbedding(cfg), x, n)
    out_ref, w_ref = ref(x, (cos, sin), _additive(core.masks.causal(n)))
    tr = core.mla(x, **_mla_weights(ref, 4, 6, 4, 5, 10), n_heads=4, rope=_hf(cos, sin, "adjacent"), scale=ref.scaling)
    assert _rel_gap(tr.output, out_ref) < 1e-5  # DeepseekV3RMSNorm and the softmax run in float32
    assert _rel_gap(tr.output_absorbed, out_ref) < 1e-5
    assert _rel_gap(tr.weights, w_ref) < 1e-5
    assert tr.form_gap < 1e-12 and tr.cache_values_per_token == 10 + 4


@torch.no_grad()
@pytest.mark.parametrize("l2", [True, False])
def test_gated_delta_rule_equals_qwen3_next_torch_kernels(l2):
    from transformers.models.qwen3_next.modeling_qwen3_next import (
        torch_chunk_gated_delta_rule,
        torch_recurrent_gated_delta_rule,
    )

    B, n, H, d_k, d_v = 2, 11, 2, 8, 6  # the reference's layout is (B, n, H, d); ours is (B, H, n, d)
    g_ = torch.Generator().manual_seed(13)
    q, k = (torch.randn(B, n, H, d_k, generator=g_) for _ in range(2))
    v = torch.randn(B, n, H, d_v, generator=g_)
    beta = torch.rand(B, n, H, generator=g_)
    g = -torch.rand(B, n, H, generator=g_) * 0.5
    S0 = torch.randn(B, H, d_k, d_v, generator=g_) * 0.1
    rec_ref, rec_state = torch_recurrent_gated_delta_rule(q, k, v, g, beta, initial_state=S0, output_final_state=True,
                                                          use_qk_l2norm_in_kernel=l2)
    chunk_ref, chunk_state = torch_chunk_gated_delta_rule(q, k, v, g, beta, chunk_size=4, initial_state=S0,
                                                          output_final_state=True, use_qk_l2norm_in_kernel=l2)

    def heads_first(x):
        return x.transpose(1, 2)  # (B, n, H, …) → (B, H, n, …)

    kw = dict(beta=heads_first(beta), g=heads_first(g), l2_normalize_qk=l2, initial_state=S0)
    rec = core.gated_delta_rule(heads_first(q), heads_first(k), heads_first(v), **kw)
    chunk = core.gated_delta_rule_chunked(heads_first(q), heads_first(k), heads_first(v), chunk_size=4, **kw)
    for ours, ref in ((rec.output, rec_ref), (chunk.output, chunk_ref), (rec.output, chunk_ref)):
        assert _rel_gap(ours, heads_first(ref)) < 1e-4
    for ours, ref in ((rec.final_state, rec_state), (chunk.final_state, chunk_state)):
        assert _rel_gap(ours, ref) < 1e-4
    assert torch.equal(rec.states[..., -1, :, :], rec.final_state)


@torch.no_grad()
def test_indexer_and_sparse_attention_equal_deepseek_v32():
    from transformers import DeepseekV32Config
    from transformers.models.deepseek_v32.modeling_deepseek_v32 import DeepseekV32Attention, DeepseekV32RotaryEmbedding

    top_k = 3
    cfg = _deepseek_config(DeepseekV32Config, index_n_heads=4, index_head_dim=8, index_topk=top_k)
    ref = _randomize(DeepseekV32Attention(cfg, 0).double(), seed=14)
    with torch.no_grad():
        for norm in (ref.q_a_layernorm, ref.kv_a_layernorm, ref.indexer.k_norm):
            norm.weight.add_(1.0)
    n = 8
    x = _x((2, n, 32), seed=15)
    cos, sin = _tables(DeepseekV32RotaryEmbedding(cfg), x, n)
    mask = _additive(core.masks.causal(n))
    q_resid = ref.q_a_layernorm(ref.q_a_proj(x))
    ref_idx = ref.indexer(x, q_resid, (cos, sin), mask[:, 0], None).long()  # (B, n, top_k)
    ix = ref.indexer
    tr = core.lightning_indexer(x, q_resid, W_Iq=_w(ix.wq_b), W_Ik=_w(ix.wk), W_w=_w(ix.weights_proj), n_index_heads=4,
                                k_norm_weight=ix.k_norm.weight, k_norm_bias=ix.k_norm.bias,
                                rope=_hf(cos, sin, "half"))
    # the reference returns indices only (ties under the ReLU may be ordered differently): the scores of the keys
    # it picked must be our top-k scores
    theirs = tr.scores.gather(-1, ref_idx).sort(-1, descending=True).values
    ours = tr.scores.topk(top_k, dim=-1).values
    finite = torch.isfinite(ours)
    assert torch.equal(finite, torch.isfinite(theirs))
    assert _rel_gap(ours[finite], theirs[finite]) < 1e-5  # the indexer scores in float32
    # the attention over the reference's chosen keys is MLA with that mask
    chosen = torch.zeros(2, n, n, dtype=torch.bool).scatter(-1, ref_idx, True) & core.masks.causal(n)
    assert torch.equal(chosen.sum(-1), torch.arange(1, n + 1).clamp(max=top_k).expand(2, n))
    out_ref, w_ref = ref(x, (cos, sin), mask)
    mla_tr = core.mla(x, **_mla_weights(ref, 4, 6, 4, 5, 10), n_heads=4, rope=_hf(cos, sin, "adjacent"),
                      scale=ref.scaling, mask=chosen.unsqueeze(1))
    assert _rel_gap(mla_tr.output, out_ref) < 1e-5
    assert _rel_gap(mla_tr.weights, w_ref) < 1e-5
    # sparse_topk_attention on MLA's expanded heads, with our own index scores, attends to top_k keys per query
    q = torch.cat([mla_tr.q_nope, mla_tr.q_rope], -1)  # (B, H, n, d_h + d_R)
    sp = core.sparse_topk_attention(q, mla_tr.k, mla_tr.v, index_scores=tr.scores, top_k=top_k, scale=ref.scaling)
    assert torch.equal(sp.keys_per_query, chosen.sum(-1))
    assert bool((sp.attention.weights.masked_select(~sp.chosen.unsqueeze(1).expand_as(sp.attention.weights)) == 0).all())
