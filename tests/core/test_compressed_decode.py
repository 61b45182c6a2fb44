"""DeepSeek-V4's decoding cache (core.variants.compressed.compressed_step, issue 55): a prefill then one token at a
time equals the full pass row by row, for sliding, CSA and HCA layers; it equals transformers' DeepseekV4Attention
driven with its own cache (DeepseekV4CSACache / DeepseekV4HCACache), the cache's contents included; deliberately
wrong decoders (an entry that closes a token late, a pool buffer or C_a share dropped between steps, a window one row
short) are far off; and what the cache keeps per token is what core.variants.kept counts."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
import torch

import core.variants.compressed as compressed
from core.mechanism.positional import RopeTables, rope_tables
from core.shapes import Published
from core.variants.compressed import CompressedCache, compressed_attention, compressed_step
from core.variants.kept import kept

# tiny: the window (5) shorter than the sequence, several entries closed (m = 2 for CSA, 3 for HCA), top-k 2 of up to 6
D, H, HD, R, Q, G, R_O, H_I, D_I = 32, 4, 16, 8, 12, 2, 6, 4, 8
WINDOW, TOP_K, LENGTH = 5, 2, 13
RATES = {"csa": 2, "hca": 3}
KINDS = ["sliding", "csa", "hca"]
PREFILLS = [1, 4, 6, 7]  # CSA (m = 2): 1, 7 end inside a window, 4, 6 at a boundary; HCA (m = 3): 6 at one, the rest inside


def _layer(kind: str, dtype: torch.dtype, seed: int = 0) -> dict:
    """Random weights of one layer in compressed_attention's form; RoPE on the trailing R of HD dims, adjacent pairs."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape, scale=0.3):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)

    rope = rope_tables(LENGTH, HD, base=100.0, pairing="adjacent", rotated_dims=R, dtype=dtype)  # (n, R/2)
    w = dict(kind=kind, W_qa=r(D, Q), q_norm=1 + r(Q), W_qb=r(Q, H * HD), W_kv=r(D, HD), kv_norm=1 + r(HD), sinks=r(H),
             W_oa=r(G, H * HD // G, R_O), W_ob=r(G * R_O, D), n_heads=H, window=WINDOW, rope=rope)
    if kind != "sliding":
        width = HD * (2 if kind == "csa" else 1)  # CSA: C_a and C_b side by side
        w["compressor"] = dict(W_c=r(D, width), W_gate=r(D, width), position_bias=r(RATES[kind], width, scale=0.5),
                               norm_weight=1 + r(HD), m=RATES[kind])
    if kind == "csa":
        w["indexer"] = dict(W_c=r(D, 2 * D_I), W_gate=r(D, 2 * D_I), position_bias=r(RATES[kind], 2 * D_I, scale=0.5),
                            norm_weight=1 + r(D_I), W_q=r(Q, H_I * D_I), W_w=r(D, H_I), n_heads=H_I)
        w["top_k"] = TOP_K
    return w


def _x(dtype: torch.dtype, B: int = 2, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, LENGTH, D, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def _decode(x, w, prefill: int, *, between=lambda cache: cache, step=compressed_step):
    """A prefill of ``prefill`` tokens, then one token at a time; ``between`` may alter the cache between calls (the
    negative controls). Returns [(first position, trace)] per call."""
    out = [(0, step(x[:, :prefill], None, **w))]
    for i in range(prefill, x.shape[1]):
        out.append((i, step(x[:, i:i + 1], between(out[-1][1].cache), **w)))
    return out


def _rows(calls, n: int, T_full: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The calls' outputs (B, n, d_out) and weights laid out as the full pass's (B, H, n, n + T_full): a call's window
    columns are the positions just before and up to its last query, its entry columns the first T it read."""
    weights = []
    for start, tr in calls:
        k, cw, T = tr.q.shape[-2], tr.window_kv.shape[-2], tr.weights.shape[-1] - tr.window_kv.shape[-2]
        row = tr.weights.new_zeros(*tr.weights.shape[:2], k, n + T_full)
        row[..., start + k - cw:start + k] = tr.weights[..., :cw]
        row[..., n:n + T] = tr.weights[..., cw:]
        weights.append(row)
    return torch.cat([tr.output for _, tr in calls], dim=1), torch.cat(weights, dim=2)


def _rel(a, b) -> float:
    return float((a - b).abs().max() / b.abs().max())


def _untied(scores: torch.Tensor) -> bool:
    """No row's top-k ends in a tie. The indexer's ReLU can score several entries exactly 0, and torch.topk breaks a
    tie differently in rows of different lengths (the full pass's and a step's), in transformers as here: the seeds
    below are chosen free of such ties, and this says so if they stop being."""
    v = scores.sort(-1, descending=True).values  # (B, n, T)
    return v.shape[-1] <= TOP_K or not bool(((v[..., TOP_K - 1] == v[..., TOP_K]) & torch.isfinite(v[..., TOP_K])).any())


@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-5), (torch.float32, 1e-4)])
@pytest.mark.parametrize("prefill", PREFILLS)
@pytest.mark.parametrize("kind", KINDS)
def test_a_prefill_then_steps_equals_the_full_pass_row_by_row(kind, prefill, dtype, tol):
    w, x = _layer(kind, dtype), _x(dtype)
    full = compressed_attention(x, **w)
    calls = _decode(x, w, prefill)
    T_full = full.weights.shape[-1] - LENGTH
    output, weights = _rows(calls, LENGTH, T_full)
    assert _rel(output, full.output) < tol
    assert float((weights - full.weights).abs().max()) < tol  # every column, the ones a step never saw at 0 in full
    last = calls[-1][1].cache
    assert _rel(last.window_kv, full.cache.window_kv) < tol and last.length == LENGTH == full.cache.length
    if kind != "sliding":
        assert _rel(last.compressor.entries, full.pooled.entries) < tol and T_full == LENGTH // RATES[kind]
        assert torch.equal(last.pending, x[:, LENGTH - LENGTH % RATES[kind]:])  # the open window's raw inputs
    if kind == "csa":
        assert _untied(full.index.scores) and _rel(last.indexer.entries, full.index.keys) < tol
        for start, tr in calls:  # each query's top-k over the T entries closed so far
            k, T = tr.index.chosen.shape[-2:]
            assert torch.equal(tr.index.chosen, full.index.chosen[:, start:start + k, :T])
        assert int(full.index.chosen.sum(-1).max()) == TOP_K < T_full  # the indexer really drops entries


@pytest.mark.parametrize("kind", ["csa", "hca"])
def test_steps_of_several_tokens_equal_it_too(kind):
    """The cache takes any number of new tokens: chunks of 3 and 2 that straddle the pool's windows."""
    w, x = _layer(kind, torch.float64), _x(torch.float64)
    full = compressed_attention(x, **w)
    cuts = [0, 3, 5, 8, 11, LENGTH]
    calls, cache = [], None
    for a, b in itertools.pairwise(cuts):
        tr = compressed_step(x[:, a:b], cache, **w)
        calls.append((a, tr))
        cache = tr.cache
    output, weights = _rows(calls, LENGTH, full.weights.shape[-1] - LENGTH)
    assert _rel(output, full.output) < 1e-10 and float((weights - full.weights).abs().max()) < 1e-10


# ---------------------------------------------------------------------------
# transformers' DeepseekV4Attention, driven with its own cache
# ---------------------------------------------------------------------------

TYPES = {"sliding": "sliding_attention", "csa": "compressed_sparse_attention", "hca": "heavily_compressed_attention"}


def _reference(seed: int = 0):
    transformers = pytest.importorskip("transformers")
    from transformers.models.deepseek_v4.modeling_deepseek_v4 import DeepseekV4Attention, DeepseekV4RotaryEmbedding

    cfg = transformers.DeepseekV4Config(hidden_size=D, num_attention_heads=H, head_dim=HD, qk_rope_head_dim=R,
                                        q_lora_rank=Q, o_groups=G, o_lora_rank=R_O, index_n_heads=H_I,
                                        index_head_dim=D_I, index_topk=TOP_K, sliding_window=WINDOW,
                                        compress_rates={TYPES["csa"]: RATES["csa"], TYPES["hca"]: RATES["hca"]},
                                        layer_types=[TYPES[k] for k in KINDS], num_hidden_layers=3, vocab_size=16,
                                        intermediate_size=16, moe_intermediate_size=8, n_routed_experts=2,
                                        num_experts_per_tok=1)
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


def _weights_of(layer, rot, x) -> dict:
    """The module's weights in compressed_attention's form, with its RoPE tables for positions 0 … n − 1."""
    pos = torch.arange(x.shape[1])[None].expand(x.shape[0], -1)
    cos, sin = rot(x, pos, layer.rope_layer_type)  # (B, n, r/2): V4's half tables, adjacent pairs
    w = dict(kind={v: k for k, v in TYPES.items()}[layer.layer_type], W_qa=layer.q_a_proj.weight.T,
             q_norm=layer.q_a_norm.weight, W_qb=layer.q_b_proj.weight.T, W_kv=layer.kv_proj.weight.T,
             kv_norm=layer.kv_norm.weight, sinks=layer.sinks, W_oa=layer.o_a_proj.weight.view(G, R_O, -1).transpose(1, 2),
             W_ob=layer.o_b_proj.weight.T, n_heads=H, window=WINDOW, rope=RopeTables.half(cos, sin, pairing="adjacent"),
             norm_eps=layer.kv_norm.variance_epsilon)
    c = layer.compressor
    if c is not None:
        w["compressor"] = dict(W_c=c.kv_proj.weight.T, W_gate=c.gate_proj.weight.T, position_bias=c.position_bias,
                               norm_weight=c.kv_norm.weight, m=c.compress_rate)
    if getattr(c, "indexer", None) is not None:
        ix = c.indexer
        w["indexer"] = dict(W_c=ix.kv_proj.weight.T, W_gate=ix.gate_proj.weight.T, position_bias=ix.position_bias,
                            norm_weight=ix.kv_norm.weight, W_q=ix.q_b_proj.weight.T,
                            W_w=ix.scorer.weights_proj.weight.T, n_heads=ix.num_heads)
        w["top_k"] = ix.index_topk
    return w


def _reference_decode(cfg, layers, rot, x, prefill: int):
    """Each module with a DynamicCache(config=cfg) — it builds DeepseekV4CSACache / DeepseekV4HCACache for those
    layers — over a prefill, then one token at a time. The three layers run side by side on the same x (three
    attention modules, not a stack): create_sliding_window_causal_mask reads the mask's size from the cache's first
    sliding layer, so that layer's cache must advance with the others. Returns the outputs per layer and the cache."""
    from transformers import DynamicCache
    from transformers.masking_utils import create_sliding_window_causal_mask

    cache = DynamicCache(config=cfg)
    outs = [[] for _ in layers]
    with torch.no_grad():
        for a, b in [(0, prefill)] + [(i, i + 1) for i in range(prefill, x.shape[1])]:
            xs, pos = x[:, a:b], torch.arange(a, b)[None].expand(x.shape[0], -1)
            emb = {kind: rot(xs, pos, kind) for kind in ("main", "compress")}
            mask = create_sliding_window_causal_mask(cfg, xs, None, cache, pos)
            for out, layer in zip(outs, layers, strict=True):
                out.append(layer(xs, emb, pos, mask, cache=cache)[0])
    return [torch.cat(o, dim=1) for o in outs], cache


@pytest.mark.parametrize("prefill", PREFILLS)
def test_equals_deepseek_v4_attention_with_its_cache(prefill):
    cfg, layers, rot = _reference(seed=2)
    x = torch.randn(3, LENGTH, D, generator=torch.Generator().manual_seed(prefill))
    want, ref_cache = _reference_decode(cfg, layers, rot, x, prefill)
    with torch.no_grad():  # the modules' parameters require grad
        for i, layer in enumerate(layers):
            w = _weights_of(layer, rot, x)
            calls = _decode(x, w, prefill)
            assert "indexer" not in w or _untied(compressed_attention(x, **w).index.scores)
            got = torch.cat([tr.output for _, tr in calls], dim=1)
            assert _rel(got, want[i]) < 1e-4, layer.layer_type
            ours, theirs = calls[-1][1].cache, ref_cache.layers[i]
            # transformers keeps the window's last w − 1 rows (the newest arrives with its query); core the last w
            assert _rel(ours.window_kv[:, -(WINDOW - 1):], theirs.keys[:, 0]) < 1e-5
            if ours.compressor is None:
                continue
            assert _rel(ours.compressor.entries, theirs.compressed_kv["compressor"]) < 1e-5
            assert theirs.entry_count["compressor"] == ours.compressor.entries.shape[-2] == LENGTH // RATES[ours.kind]
            c = w["compressor"]  # transformers buffers the open window's projections, core its raw inputs
            assert _rel(ours.pending @ c["W_c"], theirs.buffer_kv["compressor"]) < 1e-5
            if ours.kind == "csa":
                assert _rel(ours.compressor.share_kv, theirs.overlap_kv["compressor"]) < 1e-5
                assert _rel(ours.compressor.share_gate, theirs.overlap_gate["compressor"]) < 1e-5
                assert _rel(ours.indexer.entries, theirs.compressed_kv["indexer"]) < 1e-5
                assert _rel(ours.indexer.share_kv, theirs.overlap_kv["indexer"]) < 1e-5


# ---------------------------------------------------------------------------
# negative controls: deliberately wrong decoders
# ---------------------------------------------------------------------------

def _late_visible(n, T, m, device=None, *, first=0):
    """An off-by-one in when an entry closes: the query at a window's last token cannot read it yet."""
    closed = (torch.arange(first, first + n, device=device)) // m
    return torch.arange(T, device=device)[None, :] < closed[:, None]


WRONG = {
    "an entry closes a token late": ("late", lambda cache: cache),
    "the pool buffer dropped between steps":
        (None, lambda cache: dataclasses.replace(cache, pending=cache.pending[:, :0])),
    "the C_a share dropped between steps": (None, lambda cache: dataclasses.replace(
        cache, compressor=dataclasses.replace(cache.compressor, share_kv=None, share_gate=None))),
    "a window one row short": (None, lambda cache: dataclasses.replace(cache, window_kv=cache.window_kv[:, -(WINDOW - 2):])),
}
CONTROLS = [(mistake, kind) for mistake in WRONG for kind in KINDS
            if (kind != "sliding" or mistake == "a window one row short")
            and (kind == "csa" or mistake != "the C_a share dropped between steps")]


@pytest.mark.parametrize("mistake, kind", CONTROLS)
def test_negative_controls_fail(mistake, kind, monkeypatch):
    w, x = _layer(kind, torch.float64), _x(torch.float64)
    full = compressed_attention(x, **w).output
    patch, between = WRONG[mistake]
    if patch == "late":
        monkeypatch.setattr(compressed, "visible", _late_visible)
    output, _ = _rows(_decode(x, w, 4, between=between), LENGTH, 0 if kind == "sliding" else LENGTH // RATES[kind])
    assert _rel(output, full) > 0.1, f"{mistake}: {_rel(output, full):.2e}"  # measured 0.19 to 0.68


def test_the_transformers_window_of_w_minus_1_rows_is_enough():
    """The row core keeps beyond transformers' w − 1 is never read by the next query: trimming it changes nothing
    (the control above trims one more and fails)."""
    w, x = _layer("hca", torch.float64), _x(torch.float64)
    full = compressed_attention(x, **w).output
    trim = lambda cache: dataclasses.replace(cache, window_kv=cache.window_kv[:, -(WINDOW - 1):])  # noqa: E731
    output, _ = _rows(_decode(x, w, 4, between=trim), LENGTH, LENGTH // RATES["hca"])
    assert _rel(output, full) < 1e-12


# ---------------------------------------------------------------------------
# what the cache keeps per token
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["csa", "hca"])
def test_the_cache_keeps_what_kept_counts(kind):
    """After t tokens the numbers that grow with t — the window's rows, the entries, CSA's indexer keys — are
    d·min(t, w) + d·⌊t/m⌋ (+ d_I·⌊t/m⌋), measured as the cache tensors' numel and as core.variants.kept counts them
    for a one-layer model of this shape; the rest (the pending inputs, the C_a shares) stays bounded."""
    w, x = _layer(kind, torch.float64), _x(torch.float64, B=1)
    m = RATES[kind]
    shape = Published("tiny", source="this test", layers=1, n_heads=H, n_kv_heads=1, d_head=HD, d_model=D, window=WINDOW,
                      layer_pattern=(kind,), csa_rate=RATES["csa"], hca_rate=RATES["hca"], index_head_dim=D_I)
    for t, (_, tr) in enumerate(_decode(x, w, 1), start=1):
        c: CompressedCache = tr.cache
        grows = c.window_kv.numel() + c.compressor.entries.numel() + (c.indexer.entries.numel() if c.indexer else 0)
        assert grows == HD * min(t, WINDOW) + HD * (t // m) + (D_I * (t // m) if kind == "csa" else 0)
        assert grows == kept(shape, t).total == c.kept_values
        shares = [s for p in (c.compressor, c.indexer) if p for s in (p.share_kv, p.share_gate) if s is not None]
        fixed = c.pending.numel() + sum(s.numel() for s in shares)
        assert c.pending.shape[-2] == t % m and fixed == c.buffered_values
        assert fixed <= (m - 1) * D + (2 * m * (HD + D_I) if kind == "csa" else 0)


def test_bad_caches_are_refused():
    w, x = _layer("hca", torch.float64), _x(torch.float64)
    cache = compressed_step(x[:, :4], **w).cache
    with pytest.raises(ValueError, match="the cache is of a hca layer"):
        compressed_step(x[:, 4:5], cache, **(_layer("csa", torch.float64)))
    with pytest.raises(ValueError, match="with batch 2, not hca with batch 1"):
        compressed_step(x[:1, 4:5], cache, **w)
    with pytest.raises(ValueError, match="do not reach position 13"):
        compressed_step(x[:, :1], compressed_step(x, **w).cache, **w)
