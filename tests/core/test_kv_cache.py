"""The KV cache: decoding token by token equals full causal attention (MHA, GQA, MQA, with RoPE at the
right positions); the multiply-adds it counts equal torch's own FLOP counter on the real computations."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

import core
from core import masks
from core.mechanism.kv_cache import KVCache, attend_with_cache, decode_step_macs
from core.mechanism.multihead import merge_heads, split_heads


def weights(d_model, H, G, d, seed, dtype=torch.float64, d_v=None):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=dtype) * 0.5  # noqa: E731
    d_v = d if d_v is None else d_v
    return {"W_q": r(d_model, H * d), "W_k": r(d_model, G * d), "W_v": r(d_model, G * d_v), "W_o": r(H * d_v, d_model)}


def rotate_numpy(x, base):
    """Adjacent-pair RoPE as complex multiplication, positions 0 … n−1 (independent of core.positional)."""
    n, d = x.shape[-2], x.shape[-1]
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.arange(n)[:, None] * base ** (-np.arange(0, d, 2) / d))
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def sdpa_causal(x, W, H, G, rope_base):
    """Full causal attention over the whole sequence: torch SDPA with enable_gqa on numpy-rotated q, k."""
    B, n, _ = x.shape
    d, d_v = W["W_q"].shape[1] // H, W["W_v"].shape[1] // G
    q = (x @ W["W_q"]).view(B, n, H, d).transpose(1, 2)
    k = (x @ W["W_k"]).view(B, n, G, d).transpose(1, 2)
    v = (x @ W["W_v"]).view(B, n, G, d_v).transpose(1, 2)
    if rope_base is not None:
        q, k = (torch.from_numpy(rotate_numpy(t.numpy(), rope_base)) for t in (q, k))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return o.transpose(1, 2).reshape(B, n, H * d_v) @ W["W_o"]


@pytest.mark.parametrize("H,G", [(4, 4), (4, 2), (4, 1), (9, 3)])
@pytest.mark.parametrize("rope_base", [None, 10000.0, 100000.0])
def test_step_t_equals_row_t_of_full_causal_attention(H, G, rope_base):
    n, d_model, d = 9, 10, 4
    W = weights(d_model, H, G, d, seed=H + G)
    x = torch.randn(1, n, d_model, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    dec = core.cached_decode(x, n_heads=H, n_kv_heads=G, rope_base=rope_base, **W)
    torch.testing.assert_close(dec.output, sdpa_causal(x, W, H, G, rope_base), atol=1e-6, rtol=0)
    full = core.multi_head_attention(x, n_heads=H, n_kv_heads=G, mask=masks.causal(n), rope_base=rope_base, **W)
    torch.testing.assert_close(dec.output, full.output, atol=1e-6, rtol=0)
    for t, step in enumerate(dec.steps):
        assert step.position == t and step.cache_length == t + 1 and step.weights.shape == (1, H, t + 1)
        torch.testing.assert_close(step.weights, full.weights[..., t, : t + 1], atol=1e-6, rtol=0)
        torch.testing.assert_close(step.output, full.output[..., t, :], atol=1e-6, rtol=0)
    torch.testing.assert_close(dec.weights, full.weights, atol=1e-6, rtol=0)
    # the cache holds G heads of rotated keys: exactly the full computation's k and v
    assert dec.cache.k.shape == (1, G, n, d) and dec.cache.n_kv_heads == G
    torch.testing.assert_close(dec.cache.k, full.k, atol=1e-12, rtol=0)
    torch.testing.assert_close(dec.cache.v, full.v, atol=1e-12, rtol=0)
    assert dec.kv_head_of == full.kv_head_of


@settings(max_examples=20, deadline=None)
@given(H=st.sampled_from([1, 2, 3, 4, 6]), data=st.data(), n=st.integers(1, 8), d_half=st.integers(1, 3),
       d_model=st.integers(1, 6), B=st.integers(1, 2), rope=st.booleans(), seed=st.integers(0, 999))
def test_property_cached_decode_equals_full_causal(H, data, n, d_half, d_model, B, rope, seed):
    G = data.draw(st.sampled_from([g for g in range(1, H + 1) if H % g == 0]), label="G")
    W = weights(d_model, H, G, 2 * d_half, seed)
    x = torch.randn(B, n, d_model, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    base = 10000.0 if rope else None
    dec = core.cached_decode(x, n_heads=H, n_kv_heads=G, rope_base=base, **W)
    torch.testing.assert_close(dec.output, sdpa_causal(x, W, H, G, base), atol=1e-6, rtol=0)


def test_float32_and_unbatched_input():
    W = {k: v.float() for k, v in weights(8, 4, 2, 4, seed=1).items()}
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(0))
    dec = core.cached_decode(x, n_heads=4, n_kv_heads=2, rope_base=10000.0, **W)
    assert dec.output.shape == (6, 8) and dec.output.dtype == torch.float32
    ref = sdpa_causal(x[None].double(), {k: v.double() for k, v in W.items()}, 4, 2, 10000.0)[0]
    torch.testing.assert_close(dec.output.double(), ref, atol=1e-5, rtol=0)


def test_prefill_then_one_at_a_time_equals_full():
    """A real model's use: the prompt in one call, then one token per call, one cache per layer."""
    H, G, d, n, p = 9, 3, 8, 7, 4
    g = torch.Generator().manual_seed(5)
    q, k, v = torch.randn(1, H, n, d, generator=g), torch.randn(1, G, n, d, generator=g), torch.randn(1, G, n, d, generator=g)
    q, k, v = q.double(), k.double(), v.double()
    first = attend_with_cache(q[..., :p, :], k[..., :p, :], v[..., :p, :], None, rope_base=100000.0)
    outs, cache = [first.output], first.cache
    assert cache.length == p and first.positions.tolist() == list(range(p))
    for t in range(p, n):
        step = attend_with_cache(q[..., t:t + 1, :], k[..., t:t + 1, :], v[..., t:t + 1, :], cache, rope_base=100000.0)
        assert step.positions.tolist() == [t] and step.weights.shape == (1, H, 1, t + 1)
        cache = step.cache
        outs.append(step.output)
    qr, kr = (torch.from_numpy(rotate_numpy(a.numpy(), 100000.0)) for a in (q, k))
    ref = F.scaled_dot_product_attention(qr, kr, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(torch.cat(outs, dim=-2), ref, atol=1e-10, rtol=0)
    assert cache.nbytes == 2 * 1 * G * n * d * 8


def test_precomputed_rope_angles_and_unchecked_inputs_give_the_same_step():
    """What the decoder does in each of its 30 blocks: the angles computed once, no NaN/∞ scans."""
    from core.mechanism.positional import RopeTables, rope_cos_sin, rope_tables

    H, G, d, p = 6, 2, 8, 5
    g = torch.Generator().manual_seed(11)
    q, k, v = torch.randn(H, p, d, generator=g), torch.randn(G, p, d, generator=g), torch.randn(G, p, d, generator=g)
    first = attend_with_cache(q, k, v, None, rope_base=500.0)
    q1, k1, v1 = torch.randn(H, 1, d, generator=g), torch.randn(G, 1, d, generator=g), torch.randn(G, 1, d, generator=g)
    ref = attend_with_cache(q1, k1, v1, first.cache, rope_base=500.0)
    cs = rope_tables(1, d, base=500.0, start=p)
    fast = attend_with_cache(q1, k1, v1, first.cache, tables=cs, check_finite=False)
    torch.testing.assert_close(fast.output, ref.output, atol=0, rtol=0)
    torch.testing.assert_close(fast.cache.k, ref.cache.k, atol=0, rtol=0)
    with pytest.raises(ValueError, match="not both"):
        attend_with_cache(q1, k1, v1, first.cache, tables=cs, rope_base=500.0)
    with pytest.raises(ValueError, match="tables must be"):
        attend_with_cache(q1, k1, v1, first.cache, tables=rope_tables(2, d, base=500.0))
    with pytest.raises(ValueError, match="tables must be"):  # a bare (cos, sin) pair says nothing of its layout
        attend_with_cache(q1, k1, v1, first.cache, tables=rope_cos_sin(torch.arange(p, p + 1), d, base=500.0))
    assert isinstance(cs, RopeTables)
    with pytest.raises(ValueError, match="NaN"):  # the scans stay on by default
        attend_with_cache(q1 * float("nan"), k1, v1, first.cache, tables=cs)


def test_cache_append_is_pure_and_checks_shapes():
    c = KVCache(k=torch.zeros(2, 3, 4), v=torch.zeros(2, 3, 5))
    c2 = c.append(torch.ones(2, 1, 4), torch.ones(2, 1, 5))
    assert c.length == 3 and c2.length == 4
    with pytest.raises(ValueError, match="do not fit"):
        c.append(torch.ones(3, 1, 4), torch.ones(2, 1, 5))


def _flops_of(fn) -> int:
    with FlopCounterMode(display=False) as fc:
        fn()
    return fc.get_total_flops()


@pytest.mark.parametrize("H,G,d_v", [(4, 4, 4), (6, 2, 4), (4, 1, 6)])
def test_macs_equal_torchs_flop_counter(H, G, d_v):
    """decode_step_macs against torch.utils.flop_counter on the very computations (a matmul counts 2 per MAC)."""
    d_model, d, L = 12, 4, 7
    W = weights(d_model, H, G, d, seed=0, d_v=d_v)
    x = torch.randn(1, L, d_model, dtype=torch.float64)
    shape = dict(d_model=d_model, n_heads=H, n_kv_heads=G, d_head=d, d_v=d_v, length=L)
    # recompute: the whole prefix through multi-head attention
    recompute = _flops_of(lambda: core.multi_head_attention(x, n_heads=H, n_kv_heads=G, mask=masks.causal(L), **W))
    assert recompute == 2 * decode_step_macs(**shape, cached=False)
    # cached: the last token's projections, its attention over the cache, the output projection
    prev = core.cached_decode(x[:, : L - 1], n_heads=H, n_kv_heads=G, **W).cache

    def one_step():
        x_t = x[:, L - 1:]
        q, k, v = split_heads(x_t @ W["W_q"], H), split_heads(x_t @ W["W_k"], G), split_heads(x_t @ W["W_v"], G)
        merge_heads(attend_with_cache(q, k, v, prev).output) @ W["W_o"]
    assert _flops_of(one_step) == 2 * decode_step_macs(**shape, cached=True)
    dec = core.cached_decode(x, n_heads=H, n_kv_heads=G, **W)
    assert dec.steps[-1].macs_cached == decode_step_macs(**shape, cached=True)
    assert dec.macs_recompute == sum(decode_step_macs(**shape | {"length": t}, cached=False) for t in range(1, L + 1))


def test_the_cache_saves_work_that_grows_with_length():
    kw = dict(d_model=576, n_heads=9, n_kv_heads=3, d_head=64)
    ratio = [decode_step_macs(**kw, length=L, cached=False) / decode_step_macs(**kw, length=L, cached=True)
             for L in (1, 16, 256)]
    assert ratio[0] == 1.0 and ratio[0] < ratio[1] < ratio[2]


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(n_heads=4, n_kv_heads=3), "must divide"),
    (dict(n_heads=4, n_kv_heads=2, W_o=torch.ones(5, 8)), "needs H·d_v"),
    (dict(n_heads=4, n_kv_heads=2, x=torch.ones(3, 7)), "expects 8 rows"),
    (dict(n_heads=4, n_kv_heads=2, rope_base=-1.0), "positive finite"),
])
def test_bad_decode_input(kwargs, fragment):
    kwargs = {"x": torch.ones(3, 8, dtype=torch.float64)} | weights(8, 4, 2, 2, seed=0) | kwargs
    with pytest.raises(ValueError, match=re.escape(fragment)):
        core.cached_decode(kwargs.pop("x"), **kwargs)


def test_cached_decode_on_device(device):
    W = {k: v.float().to(device) for k, v in weights(8, 4, 2, 4, seed=3).items()}
    x = torch.randn(5, 8, device=device)
    dec = core.cached_decode(x, n_heads=4, n_kv_heads=2, rope_base=10000.0, **W)
    ref = core.cached_decode(x.cpu(), n_heads=4, n_kv_heads=2, rope_base=10000.0, **{k: v.cpu() for k, v in W.items()})
    assert dec.output.device.type == torch.device(device).type and dec.cache.k.device.type == dec.output.device.type
    torch.testing.assert_close(dec.output.cpu(), ref.output, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- cache size
def test_kv_cache_bytes_equals_the_bytes_of_real_caches():
    """SmolLM2-135M's shape: 30 layers of real float16 caches filled by attend_with_cache hold what the formula says."""
    m = core.MODEL_PRESETS["smollm2-135m"]
    tokens, batch = 5, 2
    total = 0
    for _ in range(m.layers):
        q = torch.zeros(batch, m.n_heads, tokens, m.d_head, dtype=torch.float16)
        kv = torch.zeros(batch, m.n_kv_heads, tokens, m.d_head, dtype=torch.float16)
        total += attend_with_cache(q, kv, kv).cache.nbytes
    assert total == core.kv_cache_bytes(layers=30, n_kv_heads=3, d_head=64, tokens=tokens, batch=batch, bytes_per_value=2)
    assert m.kv_cache_bytes(tokens, batch=batch) == total


def test_published_shapes_per_token():
    P = core.MODEL_PRESETS
    # bytes per token in float16: 2 · layers · G · d_head · 2
    assert P["gpt2"].kv_cache_bytes(1) == 2 * 12 * 12 * 64 * 2 == 36_864
    assert P["smollm2-135m"].kv_cache_bytes(1) == 2 * 30 * 3 * 64 * 2 == 23_040
    assert P["llama-3-8b"].kv_cache_bytes(1) == 128 * 1024  # the often-quoted 128 KiB per token
    assert P["llama-3-8b"].kv_cache_bytes(8192) == 2 ** 30  # 1 GiB at its full context
    assert [P[k].kind for k in ("gpt2", "smollm2-135m", "llama-3-8b", "mistral-7b")] == ["MHA", "GQA", "GQA", "GQA"]


def test_a_sliding_window_caps_the_cache():
    mistral = core.MODEL_PRESETS["mistral-7b"]
    llama = core.MODEL_PRESETS["llama-3-8b"]
    assert mistral.cached_tokens(32768) == 4096 and mistral.cached_tokens(100) == 100
    assert mistral.kv_cache_bytes(32768) == llama.kv_cache_bytes(4096)  # same shape otherwise
    assert mistral.kv_cache_bytes(2000) == llama.kv_cache_bytes(2000)


def test_mha_gqa_mqa_variants():
    v = core.MODEL_PRESETS["llama-3-8b"].kv_cache_variants(4096, batch=8)
    assert list(v) == ["MHA", "GQA", "MQA"]
    assert v["MHA"] == 4 * v["GQA"] == 32 * v["MQA"]
    assert core.MODEL_PRESETS["gpt2"].kv_cache_variants(10).keys() == {"MHA", "MQA"}  # published GPT-2 is MHA


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(layers=0), "layers must be an integer ≥ 1"),
    (dict(tokens=-1), "tokens must be an integer ≥ 0"),
    (dict(batch=1.5), "batch must be an integer"),
    (dict(bytes_per_value=0), "positive number"),
    (dict(bytes_per_value=float("nan")), "positive number"),
])
def test_bad_cache_size_input(kwargs, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        core.kv_cache_bytes(**dict(layers=2, n_kv_heads=2, d_head=4, tokens=3) | kwargs)
    with pytest.raises(ValueError, match="must divide"):
        core.MODEL_PRESETS["smollm2-135m"].with_kv_heads(2)


def test_half_and_4_bit_values():
    assert core.kv_cache_bytes(layers=1, n_kv_heads=1, d_head=3, tokens=1, bytes_per_value=0.5) == 3.0
