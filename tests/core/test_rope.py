"""RoPE against a complex-number reference and Hugging Face's rotate_half; its properties: lengths kept,
scores that depend only on i − j, and the two pairings as one rotation with permuted dimensions."""

import math
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks
from core.mechanism.positional import rope, rope_frequencies, rope_pair_track, rope_permutation, rope_scores_by_offset


def complex_reference(x: np.ndarray, positions: np.ndarray, base: float, pairing: str) -> np.ndarray:
    """z_i = x_a + i·x_b multiplied by e^{i·m·θ_i}, θ_i = base^(−2i/d), written in numpy."""
    d = x.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    if pairing == "adjacent":
        z = x[..., 0::2] + 1j * x[..., 1::2]
    else:
        z = x[..., : d // 2] + 1j * x[..., d // 2:]
    z = z * np.exp(1j * positions[:, None] * theta)
    if pairing == "adjacent":
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = z.real, z.imag
        return out
    return np.concatenate([z.real, z.imag], axis=-1)


@settings(max_examples=30, deadline=None)
@given(half_d=st.integers(1, 8), n=st.integers(1, 7), lead=st.integers(1, 3), pairing=st.sampled_from(["adjacent", "half"]),
       base=st.sampled_from([10000.0, 100000.0, 500000.0, 2.0, 1.0]), offset=st.integers(0, 3000), seed=st.integers(0, 999))
def test_property_equals_complex_reference(half_d, n, lead, pairing, base, offset, seed):
    d = 2 * half_d
    x = np.random.default_rng(seed).standard_normal((lead, n, d))
    pos = np.arange(n) + offset
    got = rope(torch.from_numpy(x), positions=torch.from_numpy(pos), base=base, pairing=pairing)
    np.testing.assert_allclose(got.numpy(), complex_reference(x, pos.astype(float), base, pairing), atol=1e-10, rtol=0)
    # a rotation keeps every vector's length
    np.testing.assert_allclose(np.linalg.norm(got.numpy(), axis=-1), np.linalg.norm(x, axis=-1), atol=1e-10, rtol=0)


@settings(max_examples=30, deadline=None)
@given(half_d=st.integers(1, 16), n=st.integers(1, 8), shift=st.integers(-500, 5000),
       pairing=st.sampled_from(["adjacent", "half"]),
       base=st.sampled_from([10000.0, 100000.0]), seed=st.integers(0, 999))
def test_property_scores_depend_only_on_relative_position(half_d, n, shift, pairing, base, seed):
    """float32, as models run it: shifting every position by the same amount leaves qᵢᵀkⱼ unchanged (1e-5)."""
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(n, 2 * half_d, generator=g), torch.randn(n, 2 * half_d, generator=g)
    pos = torch.arange(n)
    s0 = rope(q, positions=pos, base=base, pairing=pairing) @ rope(k, positions=pos, base=base, pairing=pairing).T
    s1 = rope(q, positions=pos + shift, base=base, pairing=pairing) @ rope(k, positions=pos + shift, base=base,
                                                                              pairing=pairing).T
    torch.testing.assert_close(s1, s0, atol=1e-5, rtol=1e-5)


@settings(max_examples=20, deadline=None)
@given(half_d=st.integers(1, 12), n=st.integers(1, 6), seed=st.integers(0, 999), offset=st.integers(0, 100))
def test_property_the_two_pairings_are_one_rotation_with_permuted_dims(half_d, n, seed, offset):
    d = 2 * half_d
    x = torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    pos = torch.arange(n) + offset
    perm = rope_permutation(d)
    adjacent = rope(x, positions=pos, pairing="adjacent")
    half = rope(x[:, perm], positions=pos, pairing="half")
    torch.testing.assert_close(half, adjacent[:, perm], atol=1e-12, rtol=0)
    # the permutation is a real reordering, and the two pairings differ on the same layout when d ≥ 4
    assert sorted(perm.tolist()) == list(range(d))
    if d >= 4 and n > 1:
        assert not torch.allclose(rope(x, positions=pos, pairing="half"), adjacent)


def test_half_pairing_equals_hugging_face_rotate_half():
    llama = pytest.importorskip("transformers.models.llama.modeling_llama")
    B, H, n, d, base = 1, 2, 6, 8, 10000.0
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(B, H, n, d, generator=g), torch.randn(B, H, n, d, generator=g)
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2).float() / d)
    freqs = torch.arange(n).float()[:, None] * inv_freq  # (n, d/2), as LlamaRotaryEmbedding builds it
    emb = torch.cat([freqs, freqs], dim=-1)[None]  # (1, n, d)
    q_hf, k_hf = llama.apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
    torch.testing.assert_close(rope(q, pairing="half"), q_hf, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rope(k, pairing="half"), k_hf, atol=1e-5, rtol=1e-5)


def test_position_zero_is_the_identity_and_frequencies():
    x = torch.randn(1, 6, dtype=torch.float64)
    assert torch.equal(rope(x), x)
    torch.testing.assert_close(rope_frequencies(6, base=100.0), torch.tensor([1.0, 100 ** (-1 / 3), 100 ** (-2 / 3)],
                                                                              dtype=torch.float64))


def test_pair_track_turns_by_theta_per_position():
    x = torch.tensor([1.0, 0.0, 0.0, 1.0], dtype=torch.float64)
    track = rope_pair_track(x, 0, [0, 1, 2], base=10000.0)  # pair 0 turns 1 radian per position
    torch.testing.assert_close(track, torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)], [math.cos(2), math.sin(2)]],
                                                   dtype=torch.float64))
    track1 = rope_pair_track(x, 1, [0, 100], base=10000.0)  # pair 1: θ = 0.01
    torch.testing.assert_close(track1[1], torch.tensor([-math.sin(1), math.cos(1)], dtype=torch.float64))


def test_scores_by_offset_do_not_depend_on_the_start():
    g = torch.Generator().manual_seed(4)
    q, k = torch.randn(8, generator=g, dtype=torch.float64), torch.randn(8, generator=g, dtype=torch.float64)
    a = rope_scores_by_offset(q, k, range(-5, 6), start=0.0)
    b = rope_scores_by_offset(q, k, range(-5, 6), start=1234.0)
    torch.testing.assert_close(a, b, atol=1e-9, rtol=0)
    assert a[5] == pytest.approx(float(q @ k))  # offset 0: the plain dot product


@pytest.mark.parametrize("G", [4, 2, 1])
def test_multi_head_attention_with_rope_equals_sdpa_on_rotated_heads(G):
    H, d, n, d_model = 4, 6, 5, 8
    g = torch.Generator().manual_seed(G)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    W = {"W_q": r(d_model, H * d), "W_k": r(d_model, G * d), "W_v": r(d_model, G * d), "W_o": r(H * d, d_model)}
    x = r(1, n, d_model)
    tr = core.multi_head_attention(x, n_heads=H, n_kv_heads=G, mask=masks.causal(n), rope_base=500.0, **W)
    q = torch.from_numpy(complex_reference((x @ W["W_q"]).view(1, n, H, d).transpose(1, 2).numpy(), np.arange(float(n)),
                                           500.0, "adjacent"))
    k = torch.from_numpy(complex_reference((x @ W["W_k"]).view(1, n, G, d).transpose(1, 2).numpy(), np.arange(float(n)),
                                           500.0, "adjacent"))
    v = (x @ W["W_v"]).view(1, n, G, d).transpose(1, 2)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    torch.testing.assert_close(tr.output, o.transpose(1, 2).reshape(1, n, H * d) @ W["W_o"], atol=1e-10, rtol=1e-10)
    assert tr.rope_base == 500.0


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(x=torch.ones(3, 5)), "even width"),
    (dict(base=0.0), "positive finite"),
    (dict(base=-2.0), "positive finite"),
    (dict(base=float("inf")), "positive finite"),
    (dict(pairing="spiral"), "unknown RoPE pairing"),
    (dict(positions=[0, 1]), "do not match"),
    (dict(x=torch.ones(4)), "must be (..., n, d)"),
])
def test_bad_rope_input(kwargs, fragment):
    kwargs = {"x": torch.ones(3, 4)} | kwargs
    with pytest.raises(ValueError, match=re.escape(fragment)):
        rope(kwargs.pop("x"), **kwargs)


def test_rope_on_device(device):
    x = torch.randn(2, 5, 8)
    got = rope(x.to(device), positions=torch.arange(5) + 7, base=100000.0)
    assert got.device.type == torch.device(device).type and got.dtype == torch.float32
    torch.testing.assert_close(got.cpu(), rope(x, positions=torch.arange(5) + 7, base=100000.0), atol=1e-6, rtol=1e-6)
