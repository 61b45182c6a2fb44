"""AppTest for the multi-head, self-vs-cross and position pages (issue 5)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from core import lab, positional, tokens

from .helpers import close, heat, no_errors, page, texts

MULTI, SELFCROSS, POSITION = "pages/5_Multi-head.py", "pages/6_Self_vs_cross.py", "pages/7_Position.py"
C18 = list(tokens.C18_TOKENS)


def mha_inputs(d, seed=0):
    X = tokens.embed(C18, d, seed=seed)[None]
    W = {n: tokens.projection(d, d, seed=seed, name=f"mh.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    return X, W


def torch_mha(X, W, H):
    d = X.shape[-1]
    m = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True)
    with torch.no_grad():
        m.in_proj_weight.copy_(torch.cat([W["W_q"].T, W["W_k"].T, W["W_v"].T]))
        m.out_proj.weight.copy_(W["W_o"].T)
    return m(X, X, X, need_weights=True, average_attn_weights=False)


@pytest.mark.parametrize("d, H", [(8, 2), (8, 4), (6, 3)])
def test_every_head_on_screen_equals_torch_multihead_attention(d, H):
    at = page(MULTI, run=False)
    at.session_state["mh.d_model"] = d
    at.session_state["mh.heads"] = H
    at.run()
    no_errors(at)
    X, W = mha_inputs(d)
    _, ref_w = torch_mha(X, W, H)
    for h in range(H):
        close(heat(at, f"mh.grid.{h}"), np.round(ref_w[0, h].detach().numpy(), 2), tol=0.006)
    assert not np.allclose(heat(at, "mh.grid.0"), heat(at, "mh.grid.1"))  # heads differ
    assert at.select_slider(key="mh.heads").options == [str(h) for h in range(1, d + 1) if d % h == 0]


def test_one_head_in_detail_and_the_checks():
    at = page(MULTI)
    no_errors(at)
    X, W = mha_inputs(8)
    tr = core.multi_head_attention(X, n_heads=2, **W)
    close(heat(at, "mh.chart.weights"), tr.weights[0, 0])
    close(heat(at, "mh.fig.output"), tr.heads.output[0, 0])
    ok = " ".join(s.value for s in at.success)
    assert "(C17)" in ok and "(1, 4, 8)" in ok and "the two forms agree" in ok
    # the wrong transpose really changes the output
    wrong = core.pitfalls.multi_head_without_transpose(X, n_heads=2, **W)
    assert any(f"{core.max_abs_diff(wrong, tr.output):.3g}" in w.value for w in at.warning)
    close(heat(at, "mh.paper.out"), heat(at, "mh.paper.mha"), tol=2e-4)


def test_self_vs_cross_shapes_counts_and_lookup():
    at = page(SELFCROSS)
    no_errors(at)
    assert "4 queries and 4 keys" in texts(at)
    at.radio(key="pg.embedding").set_value("random").run()
    at.radio(key="pg.mode").set_value("cross").run()
    at.text_input(key="pg.tokens").input("vediamo il cielo").run()
    no_errors(at)
    tgt, src = "vediamo il cielo".split(), "We see the sky".split()
    Xt, Xs = tokens.embed(tgt, 3, seed=0), tokens.embed(src, 3, seed=0)
    ref = core.attention(Xt, Xs, Xs)
    close(heat(at, "sx.weights"), ref.weights)
    assert "Output: 3 vectors" in texts(at)
    table = at.dataframe[-1].value
    order = lab.rank_keys(ref, 0).tolist()
    assert list(table.iloc[:4, 1]) == [f"{i} {src[i]}" for i in order]
    assert float(table.iloc[4, 3]) == pytest.approx(1.0)


def test_permutation_identity_and_its_break():
    at = page(POSITION, run=False)
    at.session_state["ps.perm"] = "2 0 3 1"
    at.run()
    no_errors(at)
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    chk = lab.permutation_check(X, [2, 0, 3, 1], **W)
    close(heat(at, "ps.sa_px.False"), chk.sa_px)
    close(heat(at, "ps.sa_px.False"), heat(at, "ps.p_sa_x.False"), tol=1e-5)
    broken = lab.permutation_check(X, [2, 0, 3, 1], positions=positional.sinusoidal(4, 8), **W)
    close(heat(at, "ps.sa_px.True"), broken.sa_px)
    assert not np.allclose(heat(at, "ps.sa_px.True"), heat(at, "ps.p_sa_x.True"), atol=1e-3)
    close(heat(at, "ps.sin")[:4], positional.sinusoidal(16, 8)[:4], tol=0.006)
    same_x, same_xp = heat(at, "ps.same.x"), heat(at, "ps.same.xp")
    assert np.array_equal(same_x[0], same_x[1]) and not np.allclose(same_xp[0], same_xp[1])


def test_bad_permutation_is_refused_with_a_message():
    at = page(POSITION, run=False)
    at.session_state["ps.perm"] = "0 0 1 <b>x</b>"
    at.run()
    assert not at.exception
    assert any("not a permutation" in e.value for e in at.error)
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    close(heat(at, "ps.sa_px.False"), lab.permutation_check(X, [3, 2, 1, 0], **W).sa_px)


def test_shuffle_button_is_seeded():
    at = page(POSITION)
    at.button(key="ps.shuffle").click().run()
    first = at.text_input(key="ps.perm").value
    again = page(POSITION)
    again.button(key="ps.shuffle").click().run()
    assert again.text_input(key="ps.perm").value == first and sorted(first.split()) == ["0", "1", "2", "3"]


@pytest.mark.parametrize("path, title", [(MULTI, "멀티헤드 어텐션"), (SELFCROSS, "셀프 vs 크로스 어텐션"),
                                         (POSITION, "순서와 위치")])
def test_issue5_pages_in_korean(path, title):
    at = page(path)
    at.radio(key="_w.settings.lang").set_value("ko").run()
    no_errors(at)
    assert at.title[0].value.endswith(title)


@pytest.mark.parametrize("path", [MULTI, SELFCROSS, POSITION])
@pytest.mark.parametrize("text", ["", "<img src=x onerror=alert(1)>", " ".join(["w"] * 600), "solo"])
def test_issue5_pages_handle_bad_tokens(path, text):
    at = page(path)
    at.text_input(key="pg.tokens").input(text).run()
    assert not at.exception
    assert not any("Something went wrong" in e.value for e in at.error)
    if text in ("", " ".join(["w"] * 600)):
        assert at.error
