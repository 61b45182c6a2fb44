"""core.variants.sinks_gates*: checks that need no reference model — two forms of one computation agree, special cases reduce
to known attention, reach equals the masks multiplied out, the paged cache reads back what a contiguous one holds."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import core

F64 = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(*shape, seed: int, dtype=F64, device="cpu") -> torch.Tensor:
    return torch.randn(*shape, generator=_gen(seed), dtype=dtype).to(device)


def _weights(d_model: int, H: int, G: int, d: int, seed: int, device="cpu") -> dict:
    return dict(W_q=_randn(d_model, H * d, seed=seed, device=device) * 0.4,
                W_k=_randn(d_model, G * d, seed=seed + 1, device=device) * 0.4,
                W_v=_randn(d_model, G * d, seed=seed + 2, device=device) * 0.4,
                W_o=_randn(H * d, d_model, seed=seed + 3, device=device) * 0.4)


# ---------------------------------------------------------------------------
# modern_attention
# ---------------------------------------------------------------------------

def test_with_every_switch_off_it_is_multi_head_attention_with_rope():
    x, w = _randn(2, 6, 16, seed=1), _weights(16, 4, 2, 4, seed=2)
    ours = core.modern_attention(x, **w, n_heads=4, n_kv_heads=2, rope=10000.0, rope_pairing="adjacent")
    theirs = core.multi_head_attention(x, **w, n_heads=4, n_kv_heads=2, mask=core.masks.causal(6), rope_base=10000.0)
    assert torch.allclose(ours.output, theirs.output, rtol=0, atol=1e-12)
    assert torch.allclose(ours.weights, theirs.weights, rtol=0, atol=1e-12)
    assert float(ours.sink_weight.abs().max()) == 0.0 and ours.gate is None


def test_a_very_low_sink_changes_nothing_and_a_high_one_takes_the_rows():
    x, w = _randn(1, 5, 16, seed=3), _weights(16, 2, 2, 8, seed=4)
    plain = core.modern_attention(x, **w, n_heads=2)
    low = core.modern_attention(x, **w, n_heads=2, sinks=[-1e4, -1e4])
    high = core.modern_attention(x, **w, n_heads=2, sinks=[0.0, 50.0])
    assert torch.allclose(low.output, plain.output, rtol=0, atol=1e-12)
    assert float(high.sink_weight[0, 1].min()) > 1 - 1e-12  # head 1 attends to "nothing"
    assert float(high.heads_output[0, 1].abs().max()) < 1e-12
    assert torch.allclose(high.weight_sums + high.sink_weight, torch.ones(1, 2, 5, dtype=F64))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(n=st.integers(1, 6), cap=st.floats(0.1, 20.0), seed=st.integers(0, 2**16))
def test_softcap_bounds_the_logits_and_a_huge_cap_changes_nothing(n, cap, seed):
    x, w = _randn(1, n, 8, seed=seed) * 3, _weights(8, 2, 1, 4, seed=seed + 10)
    tr = core.modern_attention(x, **w, n_heads=2, n_kv_heads=1, softcap=cap)
    assert float(tr.capped.abs().max()) <= cap
    assert torch.equal(torch.sign(tr.capped), torch.sign(tr.scaled))  # tanh keeps the order and the sign
    loose = core.modern_attention(x, **w, n_heads=2, n_kv_heads=1, softcap=1e9)
    plain = core.modern_attention(x, **w, n_heads=2, n_kv_heads=1)
    assert torch.allclose(loose.output, plain.output, rtol=1e-9, atol=1e-12)


def test_a_gate_per_head_equals_the_same_gate_spread_over_its_features():
    x, w = _randn(2, 4, 16, seed=5), _weights(16, 4, 4, 4, seed=6)
    g_head = _randn(16, 4, seed=7)
    per_head = core.modern_attention(x, **w, n_heads=4, gate_W=g_head)
    spread = core.modern_attention(x, **w, n_heads=4, gate_W=g_head.repeat_interleave(4, dim=1))
    assert torch.allclose(per_head.output, spread.output, rtol=0, atol=1e-12)
    assert per_head.gate.shape == (2, 4, 4)


def test_qk_norm_makes_every_head_vector_unit_rms_and_rope_keeps_it():
    x, w = _randn(1, 5, 16, seed=8) * 10, _weights(16, 2, 2, 8, seed=9)
    tr = core.modern_attention(x, **w, n_heads=2, q_norm=torch.ones(8), k_norm=torch.ones(8), norm_eps=1e-12,
                               rope=10000.0)
    rms = tr.q.pow(2).mean(-1).sqrt()
    assert torch.allclose(rms, torch.ones_like(rms))


def test_a_window_of_w_sees_the_w_most_recent_keys():
    x, w = _randn(1, 7, 8, seed=10), _weights(8, 2, 2, 4, seed=11)
    tr = core.modern_attention(x, **w, n_heads=2, window=3)
    assert torch.equal(tr.mask[0, 0], core.masks.window(7, 3, causal_only=True))
    assert torch.equal(tr.weights[0, 0] > 0, tr.mask[0, 0])


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_heads=3), "not divisible by n_heads=3"),
    (dict(n_heads=4, n_kv_heads=3), "n_kv_heads=3 must divide n_heads=4"),
    (dict(n_heads=4, sinks=[0.0, 0.0]), r"sinks has shape \(2,\) but needs one logit per head, \(4,\)"),
    (dict(n_heads=4, q_norm=torch.ones(3)), r"q_norm has shape \(3,\) but needs \(d_k,\) = \(4,\)"),
    (dict(n_heads=4, softcap=0.0), "softcap must be a positive finite number"),
    (dict(n_heads=4, gate_W=torch.ones(16, 5)), "gate_W has 5 columns; it needs H·d_v = 16"),
    (dict(n_heads=4, rope=(torch.ones(3, 2), torch.ones(3, 2))), "bare \\(cos, sin\\) tables are ambiguous"),
    (dict(n_heads=4, rope=10000.0, rope_dims=3), "rope_dims must be even"),
    (dict(n_heads=4, rope_pairing="odd"), "unknown RoPE pairing 'odd'"),
    (dict(n_heads=4, mask=torch.ones(3, 3, dtype=torch.bool)), r"mask \(3, 3\) does not broadcast"),
    (dict(n_heads=4, window=0), "window must be an integer ≥ 1"),
])
def test_modern_attention_refuses_bad_input(kwargs, match):
    x, w = _randn(1, 5, 16, seed=12), _weights(16, 4, 4, 4, seed=13)
    with pytest.raises(ValueError, match=match):
        core.modern_attention(x, **w, **kwargs)


def test_modern_attention_refuses_mismatched_weights():
    x, w = _randn(1, 5, 16, seed=14), _weights(16, 4, 4, 4, seed=15)
    with pytest.raises(ValueError, match=r"x has width 16 but W_q \(8, 16\) expects 8 rows"):
        core.modern_attention(x, **(w | {"W_q": torch.ones(8, 16)}), n_heads=4)
    with pytest.raises(ValueError, match="contains NaN or infinity"):
        core.modern_attention(x * float("nan"), **w, n_heads=4)


# ---------------------------------------------------------------------------
# differential attention
# ---------------------------------------------------------------------------

def test_lambda_init_follows_the_paper_counting_layers_from_zero():
    assert core.lambda_init(0) == pytest.approx(0.2)
    assert core.lambda_init(5) == pytest.approx(0.8 - 0.6 * math.exp(-1.5))
    with pytest.raises(ValueError, match="layer_idx must be an integer ≥ 0"):
        core.lambda_init(-1)


def test_differential_attention_refuses_odd_heads_and_wrong_lambdas():
    x, w = _randn(1, 4, 12, seed=16), _weights(12, 3, 3, 4, seed=17)
    lam = {f"lambda_{a}": torch.zeros(4) for a in ("q1", "k1", "q2", "k2")}
    with pytest.raises(ValueError, match="must be even"):
        core.differential_attention(x, **w, n_heads=3, **lam)
    w2 = _weights(12, 4, 2, 4, seed=18)
    with pytest.raises(ValueError, match=r"lambda_q1 has shape \(3,\) but needs \(d,\) = \(4,\)"):
        core.differential_attention(x, **w2, n_heads=4, n_kv_heads=2, **(lam | {"lambda_q1": torch.zeros(3)}))


# ---------------------------------------------------------------------------
# MLA
# ---------------------------------------------------------------------------

def _mla_weights(d_model, H, d_c, d_R, d_h, d_v, d_cq, seed):
    shapes = dict(W_DKV=(d_model, d_c), W_KR=(d_model, d_R), W_UK=(d_c, H * d_h), W_UV=(d_c, H * d_v),
                  W_UQ=(d_cq or d_model, H * d_h), W_QR=(d_cq or d_model, H * d_R), W_o=(H * d_v, d_model))
    if d_cq:
        shapes["W_DQ"] = (d_model, d_cq)
    return {name: _randn(*shape, seed=seed + i) * 0.4 for i, (name, shape) in enumerate(sorted(shapes.items()))}


@settings(max_examples=20, deadline=None, derandomize=True)
@given(H=st.integers(1, 3), d_c=st.integers(1, 6), d_R=st.sampled_from([2, 4]), d_h=st.integers(1, 4),
       d_v=st.integers(1, 4), d_cq=st.sampled_from([0, 3]), n=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_mla_absorbed_form_equals_the_explicit_one(H, d_c, d_R, d_h, d_v, d_cq, n, seed):
    x = _randn(2, n, 8, seed=seed)
    tr = core.mla(x, **_mla_weights(8, H, d_c, d_R, d_h, d_v, d_cq, seed + 1), n_heads=H, rope=10000.0)
    assert tr.form_gap < 1e-12 * max(1.0, float(tr.output.abs().max()))
    assert tr.k.shape == (2, H, n, d_h + d_R) and tr.q_absorbed.shape == (2, H, n, d_c)
    # every head reads the same rotary key
    assert torch.equal(tr.k[:, :, :, d_h:], tr.k_rope.unsqueeze(1).expand(2, H, n, d_R))


def test_mla_cache_is_d_c_plus_d_r_per_token():
    v3 = core.mla_cache_values(kv_rank=512, rope_dim=64, n_heads=128, head_dim=128)
    assert (v3.mla, v3.mha) == (576, 32768) and v3.ratio == pytest.approx(56.89, abs=0.01)
    with pytest.raises(ValueError, match="kv_rank must be an integer ≥ 1"):
        core.mla_cache_values(kv_rank=0, rope_dim=64, n_heads=1, head_dim=1)


def test_mla_refuses_mismatched_latents():
    w = _mla_weights(8, 2, 4, 2, 3, 3, 0, seed=20)
    x = _randn(1, 3, 8, seed=21)
    with pytest.raises(ValueError, match=r"W_UK \(5, 6\) must have d_c = 4 rows"):
        core.mla(x, **(w | {"W_UK": torch.ones(5, 6)}), n_heads=2)
    with pytest.raises(ValueError, match="q_norm normalises the q-LoRA latent"):
        core.mla(x, **w, n_heads=2, q_norm=torch.ones(4))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5, 3, 3\) does not broadcast to the weights' shape \(1, 2, 3, 3\)"):
        core.mla(x, **w, n_heads=2, mask=torch.ones(3, 5, 3, 3, dtype=torch.bool))


# ---------------------------------------------------------------------------
# gated delta rule
# ---------------------------------------------------------------------------

def _delta_inputs(B, H, n, d_k, d_v, seed):
    g_ = _gen(seed)
    q, k = (torch.randn(B, H, n, d_k, generator=g_, dtype=F64) for _ in range(2))
    v = torch.randn(B, H, n, d_v, generator=g_, dtype=F64)
    return q, k, v, torch.rand(B, H, n, generator=g_, dtype=F64), -torch.rand(B, H, n, generator=g_, dtype=F64)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(n=st.integers(1, 12), C=st.integers(1, 8), d_k=st.integers(1, 5), d_v=st.integers(1, 4),
       delta=st.booleans(), seed=st.integers(0, 2**16))
def test_chunked_delta_rule_equals_the_recurrence(n, C, d_k, d_v, delta, seed):
    q, k, v, beta, g = _delta_inputs(2, 2, n, d_k, d_v, seed)
    rec = core.gated_delta_rule(q, k, v, beta=beta, g=g, l2_normalize_qk=True, delta=delta)
    chunk = core.gated_delta_rule_chunked(q, k, v, beta=beta, g=g, chunk_size=C, l2_normalize_qk=True, delta=delta)
    assert torch.allclose(chunk.output, rec.output, rtol=1e-9, atol=1e-10)
    assert torch.allclose(chunk.final_state, rec.final_state, rtol=1e-9, atol=1e-10)
    # the chunk boundaries are states of the recurrence
    ends = [min((c + 1) * C, n) - 1 for c in range(math.ceil(n / C))]
    assert torch.allclose(chunk.boundary_states[..., 1:, :, :], rec.states[..., ends, :, :], rtol=1e-9, atol=1e-10)


def test_without_the_delta_and_decay_it_is_causal_linear_attention():
    q, k, v, _, _ = _delta_inputs(1, 2, 6, 4, 3, seed=30)
    ones = torch.ones(1, 2, 6, dtype=F64)
    tr = core.gated_delta_rule(q, k, v, beta=ones, delta=False)
    quadratic = ((q @ k.transpose(-1, -2)) * 4 ** -0.5).masked_fill(~core.masks.causal(6), 0.0) @ v
    assert torch.allclose(tr.output, quadratic, rtol=0, atol=1e-12)


def test_with_orthonormal_keys_the_delta_rule_is_linear_attention():
    basis = torch.linalg.qr(_randn(6, 6, seed=31))[0]  # 6 orthonormal keys of width 6
    k = basis.T.reshape(1, 1, 6, 6)
    q, v = _randn(1, 1, 6, 6, seed=32), _randn(1, 1, 6, 2, seed=33)
    ones = torch.ones(1, 1, 6, dtype=F64)
    delta = core.gated_delta_rule(q, k, v, beta=ones)
    linear = core.gated_delta_rule(q, k, v, beta=ones, delta=False)
    assert torch.allclose(delta.output, linear.output, rtol=0, atol=1e-12)


def test_the_plain_delta_rule_with_beta_one_stores_the_last_value_of_a_repeated_key():
    k = torch.tensor([[[[1.0, 0.0], [1.0, 0.0]]]], dtype=F64)  # the same unit key twice
    v = torch.tensor([[[[3.0], [5.0]]]], dtype=F64)
    tr = core.gated_delta_rule(k, k, v, beta=torch.ones(1, 1, 2, dtype=F64), scale=1.0)
    assert tr.states[0, 0, 1].flatten().tolist() == [5.0, 0.0]  # overwritten, not summed (linear attention: 8)


@pytest.mark.parametrize("kwargs, match", [
    (dict(g=torch.ones(1, 1, 3)), "must be ≤ 0"),
    (dict(beta=torch.ones(1, 1, 2)), r"beta has shape \(1, 1, 2\) but needs one number per token"),
    (dict(initial_state=torch.zeros(1, 1, 3, 3)), r"initial_state has shape \(1, 1, 3, 3\) but needs \(1, 1, 2, 2\)"),
    (dict(k=torch.zeros(1, 1, 3, 3)), "q and k must be"),
])
def test_the_delta_rule_refuses_bad_input(kwargs, match):
    base = dict(q=torch.zeros(1, 1, 3, 2), k=torch.zeros(1, 1, 3, 2), v=torch.zeros(1, 1, 3, 2),
                beta=torch.ones(1, 1, 3))
    args = base | kwargs
    with pytest.raises(ValueError, match=match):
        core.gated_delta_rule(args.pop("q"), args.pop("k"), args.pop("v"), **args)
    with pytest.raises(ValueError, match="chunk_size must be an integer ≥ 1"):
        core.gated_delta_rule_chunked(base["q"], base["k"], base["v"], beta=base["beta"], chunk_size=0)


# ---------------------------------------------------------------------------
# sparse top-k
# ---------------------------------------------------------------------------

def test_top_k_at_least_n_is_dense_causal_attention():
    q, k, v = _randn(1, 2, 5, 4, seed=40), _randn(1, 1, 5, 4, seed=41), _randn(1, 1, 5, 3, seed=42)
    scores = _randn(1, 5, 5, seed=43)
    sp = core.sparse_topk_attention(q, k, v, index_scores=scores, top_k=5)
    dense = core.attention(q, k.expand(1, 2, 5, 4), v.expand(1, 2, 5, 3), mask=core.masks.causal(5))
    assert torch.allclose(sp.output, dense.output, rtol=0, atol=1e-12)
    assert torch.equal(sp.chosen[0], core.masks.causal(5))


def test_top_one_attends_to_the_best_scored_allowed_key():
    q, k, v = _randn(1, 1, 4, 2, seed=44), _randn(1, 1, 4, 2, seed=45), _randn(1, 1, 4, 3, seed=46)
    scores = torch.tensor([[[0.0, 9, 9, 9], [1, 2, 9, 9], [5, 1, 2, 9], [0, 0, 3, 1]]], dtype=F64)
    sp = core.sparse_topk_attention(q, k, v, index_scores=scores, top_k=1)
    assert sp.chosen[0].nonzero()[:, 1].tolist() == [0, 1, 0, 2]  # never a future key, whatever its score
    assert torch.allclose(sp.output[0, 0], v[0, 0, [0, 1, 0, 2]])
    with pytest.raises(ValueError, match="top_k must be an integer ≥ 1"):
        core.sparse_topk_attention(q, k, v, index_scores=scores, top_k=0)
    with pytest.raises(ValueError, match=r"index_scores \(1, 4, 3\) must end in \(n_q, n_k\) = \(4, 4\)"):
        core.sparse_topk_attention(q, k, v, index_scores=scores[..., :3], top_k=1)


# ---------------------------------------------------------------------------
# layer schedules
# ---------------------------------------------------------------------------

def _brute_force_oldest(layers, n):
    """Row n − 1 of M_l ⋯ M_1 for every depth l, from the boolean masks."""
    out, R = [], None
    for layer in layers:
        M = layer.mask(n).to(torch.float64)
        R = M if R is None else (M @ R > 0).to(torch.float64)
        out.append(int(R[n - 1].nonzero()[0]))
    return out


_kinds = st.one_of(st.just(core.global_layer()), st.integers(1, 6).map(core.window_layer),
                   st.integers(1, 6).map(core.chunk_layer))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(layers=st.lists(_kinds, min_size=1, max_size=6), n=st.integers(1, 24))
def test_reach_equals_the_masks_multiplied_out(layers, n):
    sched = core.LayerSchedule("test", tuple(layers), n_kv_heads=1, d_head=1)
    assert list(core.schedule_reach(sched, n).oldest) == _brute_force_oldest(layers, n)


def test_a_repeated_window_matches_core_masks_reach():
    sched = core.repeat_pattern("w", [core.window_layer(3)], 4, n_kv_heads=1, d_head=1)
    wr = core.masks.window_reach(12, 3, 4)
    assert core.schedule_reach(sched, 12).reach == wr.farthest


def test_presets_have_their_published_shapes():
    assert core.GEMMA3_27B.counts == {"window 1024": 52, "global": 10}
    assert [lay.kind for lay in core.GEMMA3_27B.layers[:6]] == ["window"] * 5 + ["global"]
    assert core.GPT_OSS_120B.counts == {"window 128": 18, "global": 18}
    assert core.GPT_OSS_120B.layers[0].kind == "window"
    assert core.LLAMA4_SCOUT.counts == {"chunk 8192": 36, "global (NoPE)": 12}
    assert [lay.rope for lay in core.LLAMA4_SCOUT.layers[:4]] == [True, True, True, False]
    r = core.schedule_reach(core.GEMMA3_27B, 32768)
    assert r.all_reached_at == 6 and r.cached_tokens[:6] == (1024,) * 5 + (32768,)
    assert r.cache_bytes == (52 * 1024 + 10 * 32768) * 2 * 16 * 128 * 2
    assert r.global_cache_bytes == 62 * 32768 * 2 * 16 * 128 * 2
    # gpt-oss: a window layer alone reaches 127 tokens back, window then global reaches everything
    g = core.schedule_reach(core.GPT_OSS_120B, 4096)
    assert g.reach[:2] == (127, 4095)
    # Llama 4: the last token of a chunk boundary sees only itself through three chunked layers
    ll = core.schedule_reach(core.LLAMA4_SCOUT, 8193)
    assert ll.reach[:4] == (0, 0, 0, 8192) and ll.cached_tokens[:4] == (1, 1, 1, 8193)


def test_layer_kinds_refuse_bad_sizes():
    with pytest.raises(ValueError, match="unknown layer kind 'local'"):
        core.LayerKind("local", 4)
    with pytest.raises(ValueError, match="the window size must be an integer ≥ 1"):
        core.window_layer(0)
    with pytest.raises(ValueError, match="a global layer has no size"):
        core.LayerKind("global", 4)
    with pytest.raises(ValueError, match="pattern must be a non-empty sequence of LayerKind"):
        core.repeat_pattern("x", [], 3, n_kv_heads=1, d_head=1)


# ---------------------------------------------------------------------------
# paged KV cache
# ---------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, derandomize=True)
@given(page=st.integers(1, 5), splits=st.lists(st.integers(1, 6), min_size=1, max_size=4),
       extra=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_paged_reads_equal_contiguous_after_appends_and_a_fork(page, splits, extra, seed):
    G, H, d = 2, 4, 3
    cache = core.PagedKVCache(n_pages=64, page_size=page, n_kv_heads=G, d_k=d, dtype=F64)
    a = cache.new_sequence()
    K, V = _randn(G, sum(splits), d, seed=seed), _randn(G, sum(splits), d, seed=seed + 1)
    start = 0
    for s in splits:
        cache.append(a, K[:, start:start + s], V[:, start:start + s])
        start += s
    b = cache.fork(a)
    K2, V2 = _randn(G, extra, d, seed=seed + 2), _randn(G, extra, d, seed=seed + 3)
    cache.append(b, K2, V2)
    ka, va = cache.gather(a)
    kb, vb = cache.gather(b)
    assert torch.equal(ka, K) and torch.equal(va, V)  # the parent is untouched by the child's writes
    assert torch.equal(kb, torch.cat([K, K2], 1)) and torch.equal(vb, torch.cat([V, V2], 1))
    n_full = sum(splits) // page
    assert cache.block_table(b)[:n_full] == cache.block_table(a)[:n_full]  # full pages stay shared
    q = _randn(H, 2, d, seed=seed + 4)
    paged = cache.attend(b, q)
    t = kb.shape[1]
    contiguous = core.attention(q, kb.repeat_interleave(2, 0), vb.repeat_interleave(2, 0), mask=core.masks.causal(2, t))
    assert torch.equal(paged.output, contiguous.output)
    mem = cache.memory(max_len=64)
    assert mem.paged_wasted_bytes < 2 * page * 2 * G * d * 8  # less than one page per sequence
    cache.free(a)
    cache.free(b)
    assert cache.free_pages == 64


def test_copy_on_write_copies_only_a_shared_partial_page():
    cache = core.PagedKVCache(n_pages=4, page_size=4, n_kv_heads=1, d_k=2)
    a = cache.new_sequence()
    cache.append(a, torch.ones(1, 6, 2), torch.ones(1, 6, 2))  # pages 0 (full) and 1 (2 of 4)
    b = cache.fork(a)
    cache.append(b, torch.zeros(1, 1, 2), torch.zeros(1, 1, 2))
    assert cache.block_table(a) == (0, 1) and cache.block_table(b) == (0, 2) and cache.copies == 1
    mem = cache.memory(max_len=16)
    assert (mem.pages_used, mem.shared_pages) == (3, 1)
    assert mem.contiguous_bytes == 2 * 16 * 2 * 2 * 4
    with pytest.raises(ValueError, match="need 2 new pages but only 1 are free"):
        cache.append(a, torch.ones(1, 8, 2), torch.ones(1, 8, 2))
    with pytest.raises(ValueError, match="unknown sequence 7"):
        cache.gather(7)
    with pytest.raises(ValueError, match=r"k \(2, 1, 2\) must be \(G, s, d_k\)"):
        cache.append(a, torch.ones(2, 1, 2), torch.ones(2, 1, 2))


# ---------------------------------------------------------------------------
# CUDA: same numbers on the GPU, tensors stay there
# ---------------------------------------------------------------------------

@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_modern_attention_and_mla_on_cuda_match_the_cpu():
    x, w = _randn(2, 6, 16, seed=50), _weights(16, 4, 2, 4, seed=51)
    kw = dict(n_heads=4, n_kv_heads=2, rope=10000.0, sinks=[0.1, -0.2, 0.3, 0.0], softcap=5.0,
              q_norm=torch.ones(4, dtype=F64), k_norm=torch.ones(4, dtype=F64), gate_W=_randn(16, 4, seed=52))
    cpu = core.modern_attention(x, **w, **kw)
    gpu = core.modern_attention(x.cuda(), **{k: v.cuda() for k, v in w.items()}, **kw)
    assert gpu.output.device.type == "cuda" and gpu.weights.device.type == "cuda"
    assert torch.allclose(gpu.output.cpu(), cpu.output, rtol=1e-9, atol=1e-12)
    mw = _mla_weights(8, 2, 4, 2, 3, 3, 3, seed=53)
    xm = _randn(1, 5, 8, seed=54)
    m_cpu = core.mla(xm, **mw, n_heads=2, rope=10000.0)
    m_gpu = core.mla(xm.cuda(), **{k: v.cuda() for k, v in mw.items()}, n_heads=2, rope=10000.0)
    assert m_gpu.output_absorbed.device.type == "cuda"
    assert torch.allclose(m_gpu.output.cpu(), m_cpu.output, rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_chunked_delta_rule_and_paged_cache_on_cuda():
    q, k, v, beta, g = (t.cuda() for t in _delta_inputs(1, 2, 9, 4, 3, seed=55))
    rec = core.gated_delta_rule(q, k, v, beta=beta, g=g)
    chunk = core.gated_delta_rule_chunked(q, k, v, beta=beta, g=g, chunk_size=4)
    assert chunk.output.device.type == "cuda"
    assert torch.allclose(chunk.output, rec.output, rtol=1e-9, atol=1e-10)
    cache = core.PagedKVCache(n_pages=4, page_size=2, n_kv_heads=1, d_k=3, dtype=F64, device="cuda")
    s = cache.new_sequence()
    K = _randn(1, 5, 3, seed=56, device="cuda")
    cache.append(s, K, K)
    assert torch.equal(cache.gather(s)[0], K)
