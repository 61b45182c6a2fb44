import numpy as np
import pytest
import torch

import core
from core import lab, pitfalls, positional


def rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_split_without_transpose_scrambles_tokens_and_heads():
    x = torch.arange(2 * 3 * 4, dtype=torch.float64).reshape(2, 3, 4)  # B=2, N=3, H·d=4 with H=2
    wrong = pitfalls.split_heads_without_transpose(x, 2)
    right = core.split_heads(x, 2)
    assert wrong.shape == right.shape == (2, 2, 3, 2)
    assert not torch.equal(wrong, right)
    assert torch.equal(right[0, 1, 2], x[0, 2, 2:4])  # head 1, token 2 = token 2's features 2..3
    src = pitfalls.scrambled_source(3, 4, 2)
    for h in range(2):
        for n in range(3):
            for f in range(2):
                tok, feat = src[h, n, f].tolist()
                assert wrong[0, h, n, f] == x[0, tok, feat]
    assert src[0, 1, 0].tolist() == [0, 2]  # "head 0, token 1" is really token 0's features 2..3


def test_mha_equals_the_paper_form_with_folded_value_output():
    d, H, n = 6, 3, 5
    W_q, W_k, W_v, W_o = rand(d, d, seed=1), rand(d, d, seed=2), rand(d, d, seed=3), rand(d, d, seed=4)
    X = rand(n, d, seed=5)
    mha = core.multi_head_attention(X, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=H, score="dot")
    W_Q, W_K, W_V = lab.paper_weights_from_mha(W_q, W_k, W_v, W_o, H)
    paper = core.paper_attention(X.T, W_Q, W_K, W_V)
    torch.testing.assert_close(paper.output, X.T + mha.output.T)


def test_permutation_check_identity_and_its_break_with_positions():
    X, W = rand(5, 4, seed=1), [rand(4, 4, seed=s) for s in (2, 3, 4)]
    perm = [3, 0, 4, 1, 2]
    chk = lab.permutation_check(X, perm, W_q=W[0], W_k=W[1], W_v=W[2])
    assert chk.max_diff < 1e-12
    P = torch.eye(5, dtype=torch.float64)[perm]
    torch.testing.assert_close(chk.sa_px, core.attention(P @ X @ W[0], P @ X @ W[1], P @ X @ W[2]).output)
    pe = positional.sinusoidal(5, 4, dtype=torch.float64)
    broken = lab.permutation_check(X, perm, W_q=W[0], W_k=W[1], W_v=W[2], positions=pe)
    assert broken.max_diff > 1e-3


def test_rank_keys_orders_by_score():
    X = core.tokens.c18_embedding()
    tr = core.attention(X, X, X)
    order = lab.rank_keys(tr, 3).tolist()
    assert order[0] == 3 and tr.scores[3, order[0]] >= tr.scores[3, order[-1]]
    col = core.attention(X.T, X.T, X.T, convention="column")
    assert lab.rank_keys(col, 3).tolist() == order


def test_multi_head_without_transpose_differs_but_h1_is_harmless():
    x = rand(1, 5, 6, seed=9)
    W = {n: rand(6, 6, seed=s) for s, n in enumerate(("W_q", "W_k", "W_v", "W_o"))}
    right = core.multi_head_attention(x, n_heads=3, **W).output
    wrong = pitfalls.multi_head_without_transpose(x, n_heads=3, **W)
    assert wrong.shape == right.shape and (wrong - right).abs().max() > 1e-3
    one = pitfalls.multi_head_without_transpose(x, n_heads=1, **W)
    torch.testing.assert_close(one, core.multi_head_attention(x, n_heads=1, **W).output)


def test_scramble_table_names_what_each_row_holds_and_should_hold():
    n, width, H = 4, 8, 2  # d_head = 4
    x = torch.arange(n * width, dtype=torch.float64).reshape(1, n, width)  # entry = token·width + feature
    wrong = pitfalls.split_heads_without_transpose(x, H)  # (1, H, N, d_head)
    right = core.split_heads(x, H)
    for h in range(H):
        for row in pitfalls.scramble_table(n, width, H, head=h):
            got = wrong[0, h, row.row]
            assert sorted({int(v) // width for v in got}) == sorted(row.got_tokens)
            assert (int(got[0]) % width, int(got[-1]) % width) == row.got_features
            want = right[0, h, row.row]  # the correct split, independently
            assert {int(v) // width for v in want} == {row.want_token}
            assert (int(want[0]) % width, int(want[-1]) % width) == row.want_features
            assert max(row.want_features) < width  # never a feature that does not exist


def test_fused_qkv_gap_is_zero_and_detects_a_wrong_fusion():
    x = rand(1, 5, 6, seed=2)
    W_q, W_k, W_v = rand(6, 6, seed=3), rand(6, 6, seed=4), rand(6, 6, seed=5)
    assert core.mechanism.multihead.fused_qkv_gap(x, W_q, W_k, W_v) < 1e-12
    Q, K, V = core.fused_qkv(x, torch.cat([W_k, W_q, W_v], dim=-1))  # columns in the wrong order
    assert (Q - x @ W_q).abs().max() > 1e-3


def test_paper_check_agrees_with_torch_multihead_attention_without_scale():
    d, H, n = 6, 2, 4
    X = rand(n, d, seed=11)
    W = {k: rand(d, d, seed=s) for s, k in enumerate(("W_q", "W_k", "W_v", "W_o"), start=20)}
    chk = lab.paper_check(X, n_heads=H, **W)
    mha = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True).double()
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([W["W_q"].T * (d // H) ** 0.5, W["W_k"].T, W["W_v"].T]))  # undo its 1/√d_k
        mha.out_proj.weight.copy_(W["W_o"].T)
    ref = mha(X[None], X[None], X[None], need_weights=False)[0][0]  # (n, d)
    torch.testing.assert_close(chk.mha_columns, ref.T)
    torch.testing.assert_close(chk.attended, ref.T)
    assert chk.gap < 1e-9


def test_top_keys_names_every_tie_as_in_c18():
    X = core.tokens.c18_embedding()
    tr = core.attention(X, X, X, scale=3 ** -0.5)
    w = torch.softmax(X @ X.T / 3 ** 0.5, dim=-1)  # by hand
    for q in range(4):
        want = [j for j in range(4) if abs(float(w[q, j]) - float(w[q].max())) < 1e-6]
        assert lab.top_keys(tr, q) == want
    assert len(lab.top_keys(tr, 0)) == 2  # 나는 → 나는 and 나는 → 먹었다 (0.320 each)
    col = core.attention(X.T, X.T, X.T, convention="column", scale=3 ** -0.5)
    assert lab.top_keys(col, 0) == lab.top_keys(tr, 0)
    masked = core.attention(X, X, X, mask=torch.tensor([[False] * 4] + [[True] * 4] * 3))
    assert lab.top_keys(masked, 0) == []


def test_step_facts_name_the_largest_entries_and_the_masked_pairs():
    X = core.tokens.c18_embedding()
    m = torch.tensor([[True, False, True, True], [True] * 4, [True] * 4, [False] * 4])
    tr = core.attention(X, X, X, mask=m, temperature=2.0)
    f = lab.step_facts(tr)
    S = (X @ X.T).numpy()  # by hand
    i, j = np.unravel_index(np.argmax(S), S.shape)
    assert f.top_score == (float(S[i, j]), int(i), int(j))
    assert f.masked == 5 and f.pairs == 16 and f.fully_masked == 1
    assert abs(f.scale - 3 ** -0.5) < 1e-7 and f.temperature == 2.0
    w = tr.weights.numpy()
    assert f.top_weight[0] == float(w.max()) and f.n_q == f.n_k == 4 and f.d_v == 3
    col = core.attention(X.T, X.T, X.T, convention="column", mask=m.T, temperature=2.0)
    assert lab.step_facts(col).top_weight[1:] == f.top_weight[1:]


@pytest.mark.parametrize(("score", "scale", "T", "spread"), [
    ("scaled_dot", None, 1.0, "smaller"),  # 1/√3
    ("dot", None, 1.0, "same"), ("additive", None, 1.0, "same"), ("cosine", None, 1.0, "same"),
    ("scaled_dot", None, 0.5, "larger"),  # (1/√3) / 0.5 ≈ 1.15
    ("dot", None, 2.0, "smaller"), ("dot", None, 0.5, "larger"), ("scaled_dot", 1.0, 1.0, "same"),
])
def test_step_facts_say_how_the_scaling_changed_the_spread(score, scale, T, spread):
    X = core.tokens.c18_embedding()
    g = torch.Generator().manual_seed(0)
    params = {"W_a": torch.randn(4, 3, generator=g), "U_a": torch.randn(4, 3, generator=g),
              "w_a": torch.randn(4, generator=g)} if score == "additive" else None
    tr = core.attention(X, X, X, score=score, scale=scale, temperature=T, params=params)
    f = lab.step_facts(tr)
    assert f.spread == spread and f.factor == pytest.approx(tr.scale / T)
    spread_before = float(tr.scores.max(-1).values.sub(tr.scores.min(-1).values).max())
    spread_after = float(tr.scaled.max(-1).values.sub(tr.scaled.min(-1).values).max())  # the scaled scores, by the trace
    assert spread_after == pytest.approx(f.factor * spread_before, rel=1e-5)
    assert f.dot_products == (score in ("dot", "scaled_dot")) and f.score == score
    assert torch.equal(tr.scores.argsort(-1), tr.scaled.argsort(-1))  # the same order


def test_step_facts_know_the_notation_and_the_queries_that_see_nothing():
    X = core.tokens.c18_embedding()
    m = torch.tensor([[False] * 4] + [[True] * 4] * 3)
    assert lab.step_facts(core.attention(X, X, X, mask=m)).convention == "row"
    col = lab.step_facts(core.attention(X.T, X.T, X.T, mask=m.T, convention="column"))
    assert col.convention == "column" and col.fully_masked == 1
