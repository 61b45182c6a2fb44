import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import core
from core import masks, positional


# ---------------------------------------------------------------- C22 paper form
def test_paper_attention_equals_hand_written_loop():
    rng = np.random.default_rng(0)
    d, n, H, d_k = 4, 5, 3, 2
    X = rng.normal(size=(d, n))
    W_Q, W_K, W_V = rng.normal(size=(H, d_k, d)), rng.normal(size=(H, d_k, d)), rng.normal(size=(H, d, d))
    expected = X.copy()
    for h in range(H):
        Q, K, V = W_Q[h] @ X, W_K[h] @ X, W_V[h] @ X
        S = K.T @ Q  # (n, n): entry (i, j) = k_iᵀ q_j
        A = np.exp(S - S.max(axis=0)) / np.exp(S - S.max(axis=0)).sum(axis=0)  # softmax per column
        expected += V @ A
    tr = core.paper_attention(X, W_Q, W_K, W_V)
    np.testing.assert_allclose(tr.output.numpy(), expected, atol=1e-10)
    assert tr.heads.weights.shape == (H, n, n)
    np.testing.assert_allclose(tr.heads.weights.sum(dim=1).numpy(), np.ones((H, n)), atol=1e-12)


def test_paper_h1_without_residual_is_plain_column_attention():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3, 4))
    W_Q, W_K, W_V = rng.normal(size=(1, 2, 3)), rng.normal(size=(1, 2, 3)), rng.normal(size=(1, 3, 3))
    tr = core.paper_attention(X, W_Q, W_K, W_V)
    plain = core.attention(W_Q[0] @ X, W_K[0] @ X, W_V[0] @ X, score="dot", convention="column")
    np.testing.assert_allclose((tr.output - tr.X).numpy(), plain.output.numpy(), atol=1e-12)


def test_paper_bad_shapes():
    with pytest.raises(ValueError, match="W_V must be"):
        core.paper_attention(np.ones((3, 4)), np.ones((2, 2, 3)), np.ones((2, 2, 3)), np.ones((2, 2, 3)))


# ---------------------------------------------------------------- chunked / online softmax
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("n, chunk", [(37, 8), (130, 128), (5, 64), (64, 16)])
def test_chunked_equals_standard_path(device, masked, n, chunk):
    g = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(2, n, 16, generator=g).to(device) for _ in range(3))
    mask = masks.causal(n, device=device) if masked else None
    out = core.chunked_attention(q, k, v, mask=mask, chunk_size=chunk)
    ref = core.attention(q, k, v, mask=mask).output
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


@settings(max_examples=25, deadline=None)
@given(n_q=st.integers(1, 20), n_k=st.integers(1, 40), chunk=st.integers(1, 17), seed=st.integers(0, 9999))
def test_property_chunked_random_masks_with_fully_masked_rows(n_q, n_k, chunk, seed):
    g = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(n_q, 4, generator=g), torch.randn(n_k, 4, generator=g), torch.randn(n_k, 3, generator=g)
    mask = torch.rand(n_q, n_k, generator=g) > 0.6
    out = core.chunked_attention(q, k, v, mask=mask, chunk_size=chunk, scale=0.9)
    ref = core.attention(q, k, v, mask=mask, scale=0.9).output
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    assert not torch.isnan(out).any()


def test_chunked_never_materialises_more_than_n_q_by_chunk_scores(monkeypatch):
    """Spy on matmul-shaped products: no (n_q, n_k) score block is ever created."""
    seen = []
    real = torch.Tensor.__matmul__

    def spy(a, b):
        out = real(a, b)
        seen.append(tuple(out.shape))
        return out

    monkeypatch.setattr(torch.Tensor, "__matmul__", spy)
    core.chunked_attention(torch.randn(50, 8), torch.randn(300, 8), torch.randn(300, 8), chunk_size=32)
    score_blocks = [s for s in seen if s[-1] != 8]
    assert score_blocks and max(s[-1] for s in score_blocks) <= 32


def test_chunked_bad_input():
    with pytest.raises(ValueError, match="chunk_size"):
        core.chunked_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), chunk_size=0)
    with pytest.raises(ValueError, match="K has n_k=2 keys but V has 3"):
        core.chunked_attention(np.ones((2, 2)), np.ones((2, 2)), np.ones((3, 2)))


# ---------------------------------------------------------------- positions and permutation (C23, C24)
def test_sinusoidal_matches_the_formula():
    pe = positional.sinusoidal(7, 6)
    for pos in range(7):
        for i in range(3):
            w = pos / 10000 ** (2 * i / 6)
            assert pe[pos, 2 * i].item() == pytest.approx(np.sin(w), abs=1e-6)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(np.cos(w), abs=1e-6)
    assert positional.sinusoidal(3, 5).shape == (3, 5)


def test_learned_table_is_seeded():
    assert torch.equal(positional.learned(4, 3, seed=1), positional.learned(4, 3, seed=1))
    assert not torch.equal(positional.learned(4, 3, seed=1), positional.learned(4, 3, seed=2))


@settings(max_examples=20, deadline=None)
@given(n=st.integers(2, 8), seed=st.integers(0, 9999))
def test_property_self_attention_is_permutation_equivariant_without_positions(n, seed):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 4, generator=g, dtype=torch.float64)
    W_q, W_k, W_v = (torch.randn(4, 4, generator=g, dtype=torch.float64) for _ in range(3))
    perm = torch.randperm(n, generator=g)
    P = torch.eye(n, dtype=torch.float64)[perm]

    def sa(Z):
        return core.attention(Z @ W_q, Z @ W_k, Z @ W_v).output

    torch.testing.assert_close(sa(P @ X), P @ sa(X))


def test_positions_break_permutation_equivariance():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(5, 4, generator=g, dtype=torch.float64)
    pe = positional.sinusoidal(5, 4, dtype=torch.float64)
    P = torch.eye(5, dtype=torch.float64)[[1, 0, 2, 4, 3]]

    def sa_pos(Z):
        Z = positional.add(Z, pe)
        return core.attention(Z, Z, Z).output

    assert (sa_pos(P @ X) - P @ sa_pos(X)).abs().max() > 1e-3
