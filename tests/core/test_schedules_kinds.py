"""Issue 55's layer kinds in schedules (MLA, CSA/HCA, linear, Mamba-2, reused layers): each published schedule's count
is held to a count by hand from the record's published numbers, the reach through the new kinds to the masks multiplied
out, and kept() to the schedule (one count); wrong sizes change the count, bad input is refused by name."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core.shapes import MODELS
from core.variants.kept import kept
from core.variants.schedules import ALL_SCHEDULES, LayerKind, schedule_of, schedule_reach

TOKENS = (1, 3, 127, 128, 129, 4096, 100_003)


def test_every_record_is_a_schedule_of_its_pattern():
    for key, p in MODELS.items():
        s = ALL_SCHEDULES[key]
        assert s == schedule_of(p) and s.name == p.name and len(s.layers) == p.layers, key
        pattern = p.layer_pattern or (("mla",) if p.kv_rank else ("window",) if p.window else ("global",))
        assert [lay.name for lay in s.layers] == [pattern[i % len(pattern)] for i in range(p.layers)], key
        assert p.source in s.source
        for t in TOKENS:  # one count: kept() and the schedule's cache at one byte a value are the same sum
            assert kept(p, t).total == schedule_reach(s, t, bytes_per_value=1).cache_bytes, (key, t)


def test_qwen3_next_by_hand():
    """48 layers, every 4th full attention (2 KV heads of 256); 36 Gated DeltaNet layers of 32 states of 128 × 128
    and a conv of kernel 4 over q, k (16 heads of 128) and v (32 heads of 128)."""
    s = core.QWEN3_NEXT
    assert [i for i, lay in enumerate(s.layers) if lay.kind == "global"] == list(range(3, 48, 4))
    state, conv = 32 * 128 * 128, 3 * (16 * 128 + 16 * 128 + 32 * 128)
    for t in TOKENS:
        assert kept(MODELS["qwen3-next-80b-a3b"], t).by_kind == {"linear": (36, 36 * (state + conv)),
                                                                 "global": (12, 12 * 2 * 2 * 256 * t)}
    r = schedule_reach(s, 1000)
    assert r.all_reached_at == 1 and r.oldest == (0,) * 48  # a state sums every earlier token
    assert r.cached_tokens == (0, 0, 0, 1000) * 12  # a state is no token
    assert r.global_cache_bytes == 48 * 1000 * 2 * 2 * 256 * 2 and s.has_states


def test_deepseek_v4_by_hand():
    """43 layers: 3 HCA, then CSA and HCA alternating; a window of 128 over one K = V head of 512; CSA pools 4 tokens
    into an entry of 512 plus an indexer key of 128, HCA 128 tokens into one of 512."""
    s = core.DEEPSEEK_V4_FLASH
    kinds = ["hca"] * 3 + ["csa", "hca"] * 20
    assert [lay.kind for lay in s.layers] == kinds and s.counts == {"hca 128": 23, "csa 4": 20}
    for t in TOKENS:
        csa = 512 * min(t, 128) + (512 + 128) * (t // 4)
        hca = 512 * min(t, 128) + 512 * (t // 128)
        assert s.values(t) == tuple(csa if k == "csa" else hca for k in kinds)
        assert kept(MODELS["deepseek-v4-flash"], t).total == 20 * csa + 23 * hca
    r = schedule_reach(s, 1000)
    assert r.all_reached_at == 1  # window plus pooled entries: every earlier token
    assert r.cached_tokens[2:4] == (128 + 1000 // 128, 128 + 1000 // 4)


def test_gemma4_by_hand_and_its_reused_layers():
    """30 layers, 5 windows (512; 4 KV heads of 256) for each global layer (4 KV heads of 512); the record reuses 0."""
    p = MODELS["gemma-4-e2b"]
    s = core.GEMMA4_E2B
    assert p.kv_shared_layers == 0 and not any(lay.reused for lay in s.layers)
    for t in TOKENS:
        assert kept(p, t).total == 25 * 2 * 4 * 256 * min(t, 512) + 5 * 2 * 4 * 512 * t
    shared = schedule_of(dataclasses.replace(p, kv_shared_layers=10))
    assert [lay.reused for lay in shared.layers] == [False] * 20 + [True] * 10
    t = 10_000  # the last 10 layers: 8 windows and 2 globals that keep nothing of their own
    assert sum(shared.values(t)) == 17 * 2 * 4 * 256 * 512 + 3 * 2 * 4 * 512 * t
    assert schedule_reach(shared, t).cached_tokens[20:] == (0,) * 10


def test_mamba2_by_hand():
    """64 layers of 128 heads with a state of N × P = 128 × 64, 8 groups; conv of kernel 4 over x (128 · 64), B and C."""
    s = core.MAMBA2_2_8B
    per_layer = 128 * 128 * 64 + 3 * (128 * 64 + 2 * 8 * 128)
    for t in TOKENS:
        assert s.values(t) == (per_layer,) * 64
    r = schedule_reach(s, 5000, bytes_per_value=2, batch=3)
    assert r.cache_bytes == 64 * per_layer * 2 * 3 and r.cached_tokens == (0,) * 64 and r.all_reached_at == 1


def test_kimi_linear_by_hand():
    s = core.KIMI_LINEAR
    assert [i for i, lay in enumerate(s.layers) if lay.kind == "mla"] == [4, 8, 12, 16, 20, 24]
    assert s.values(1000)[4] == (512 + 64) * 1000 and s.values(7)[0] == s.values(70_000)[0]


def test_gemma2_alternates_window_4096_and_global():
    p = MODELS["gemma-2-2b"]
    s = core.GEMMA2_2B
    assert p.window == 4096 and p.layer_pattern == ("window", "global")
    assert [(lay.kind, lay.size) for lay in s.layers] == [("window", 4096), ("global", None)] * 13
    assert core.SCHEDULE_PRESETS["Gemma 2 2B"] is s
    r = schedule_reach(s, 8192)
    assert r.reach[:2] == (4095, 8191) and r.all_reached_at == 2
    assert r.cache_bytes == 13 * (4096 + 8192) * 2 * 4 * 256 * 2


def test_the_long_context_presets_stay_attention_over_spans():
    for s in core.SCHEDULE_PRESETS.values():
        assert {lay.kind for lay in s.layers} <= {"global", "window", "chunk"} and not s.has_states


def test_negative_controls_a_wrong_size_changes_the_count():
    v4, g4, q = MODELS["deepseek-v4-flash"], MODELS["gemma-4-e2b"], MODELS["qwen3-next-80b-a3b"]
    t = 10_000
    assert kept(dataclasses.replace(v4, csa_rate=8), t).total < kept(v4, t).total  # half the CSA entries
    assert kept(dataclasses.replace(v4, hca_rate=64), t).total > kept(v4, t).total
    assert kept(dataclasses.replace(g4, kv_shared_layers=1), t).total < kept(g4, t).total
    assert kept(dataclasses.replace(q, conv_kernel=2), t).total < kept(q, t).total
    assert kept(dataclasses.replace(q, linear_value_heads=16), t).by_kind["linear"] != kept(q, t).by_kind["linear"]


_new_kinds = st.one_of(
    st.just(core.global_layer()), st.integers(1, 6).map(core.window_layer), st.integers(1, 6).map(core.chunk_layer),
    st.just(core.mla_layer(4, 2)), st.just(core.state_layer("linear", value_heads=2, key_heads=1, key_dim=2, value_dim=2,
                                                            conv_kernel=4)),
    st.integers(1, 4).map(lambda m: core.pooled_layer("csa", window=m + 2, rate=m, d_head=2, index_dim=1)),
    st.integers(1, 4).map(lambda m: core.pooled_layer("hca", window=m - 1 or 1, rate=m, d_head=2)),  # w = m − 1: no gap
)


@pytest.mark.parametrize(("w", "m"), [(1, 4), (2, 5), (3, 8)])
def test_a_window_shorter_than_an_open_block_leaves_a_gap_the_mask_shows(w, m):
    """w < m − 1: the mask misses exactly the open block's tokens older than the window (counted by hand), kept()
    still counts the layer, and reach, which would claim an interval, is refused."""
    layer = core.pooled_layer("hca", window=w, rate=m, d_head=2)
    n = 3 * m + 1
    M = layer.mask(n)
    missed = 0
    for i in range(n):
        closed = m * ((i + 1) // m)  # tokens 0 … closed − 1 sit in entries
        seen = {j for j in range(i + 1) if j < closed or i - j < w}
        assert set(M[i].nonzero().flatten().tolist()) == seen
        missed += i + 1 - len(seen)
    assert layer.leaves_a_gap and missed > 0 and layer.values(n) == 2 * min(n, w) + 2 * (n // m)
    with pytest.raises(ValueError, match="no interval"):
        schedule_reach(core.LayerSchedule("gap", (layer,), n_kv_heads=1, d_head=1), n)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(layers=st.lists(_new_kinds, min_size=1, max_size=5), n=st.integers(1, 20))
def test_reach_through_every_kind_equals_the_masks_multiplied_out(layers, n):
    R = None
    oldest = []
    for layer in layers:
        M = layer.mask(n).to(torch.float64)
        R = M if R is None else (M @ R > 0).to(torch.float64)
        oldest.append(int(R[n - 1].nonzero()[0]))
    assert list(schedule_reach(core.LayerSchedule("t", tuple(layers), n_kv_heads=1, d_head=1), n).oldest) == oldest


@pytest.mark.parametrize(("make", "words"), [
    (lambda: LayerKind("ssm"), "unknown layer kind 'ssm'"),
    (lambda: LayerKind("csa", 128, token_values=512, entry_values=512), "csa pool rate"),
    (lambda: LayerKind("hca", None, rate=128, token_values=512, entry_values=512), "window size"),
    (lambda: LayerKind("mla"), "mla layer's token_values"),
    (lambda: LayerKind("linear", conv_values=0), "linear layer's state_values"),
    (lambda: LayerKind("mamba", state_values=8), "mamba layer's conv_values must be an integer ≥ 0"),
    (lambda: LayerKind("linear", state_values=8, conv_values=0, reused=True), "keeps a state, no tokens"),
    (lambda: LayerKind("window", 4, rate=2), "only csa and hca layers pool"),
    (lambda: core.pooled_layer("hca", window=16, rate=128, d_head=8).first_key(200), r"window \(16\) is shorter"),
    (lambda: core.state_layer("mla", value_heads=1, key_heads=1, key_dim=1, value_dim=1, conv_kernel=1), "linear or mamba"),
    (lambda: schedule_of(dataclasses.replace(MODELS["deepseek-v4-flash"], csa_rate=None)), "csa layers need csa_rate"),
    (lambda: schedule_of(dataclasses.replace(MODELS["mamba2"], conv_kernel=None)), "mamba layers need conv_kernel"),
    (lambda: schedule_of(dataclasses.replace(MODELS["gpt2"], layer_pattern=("global", "moe"))),
     "kinds a schedule does not know \\('moe'\\)"),
    (lambda: schedule_of(dataclasses.replace(MODELS["gemma-4-e2b"], kv_shared_layers=30)), "needs an earlier layer"),
    (lambda: LayerKind("mla", token_values=8).values(0), "tokens must be an integer ≥ 1"),
    (lambda: LayerKind("global").values(5), "needs the values one cached token costs"),
])
def test_bad_input_is_refused_by_name(make, words):
    with pytest.raises(ValueError, match=words):
        make()
