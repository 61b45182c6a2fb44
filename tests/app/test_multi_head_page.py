"""AppTest: the multi-head page against torch's nn.MultiheadAttention and core's checks."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import core
from core import tokens
from ui import state
from ui.i18n import table

from .helpers import close, heat, no_errors, page

GRID = lambda h: state.item(state.MULTI_HEAD.grid, h)  # noqa: E731

MULTI, SELFCROSS, POSITION = "app_pages/multi_head.py", "app_pages/self_vs_cross.py", "app_pages/position.py"
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
    at.session_state[state.MULTI_HEAD.d_model] = d
    at.session_state[state.MULTI_HEAD.heads] = H
    at.run()
    no_errors(at)
    X, W = mha_inputs(d)
    _, ref_w = torch_mha(X, W, H)
    for h in range(H):
        close(heat(at, state.item(state.MULTI_HEAD.grid, h)), np.round(ref_w[0, h].detach().numpy(), 2), tol=0.006)
    assert not np.allclose(heat(at, GRID(0)), heat(at, GRID(1)))  # heads differ
    assert at.select_slider(key=state.MULTI_HEAD.heads).options == [str(h) for h in range(1, d + 1) if d % h == 0]


def test_one_head_in_detail_and_the_checks():
    at = page(MULTI)
    no_errors(at)
    X, W = mha_inputs(8)
    tr = core.multi_head_attention(X, n_heads=2, **W)
    close(heat(at, state.item(state.MULTI_HEAD.pipeline, "weights")), tr.weights[0, 0])
    close(heat(at, state.item(state.MULTI_HEAD.pipeline, "output")), tr.heads.output[0, 0])
    ok = " ".join(s.value for s in at.success)
    fused_gap = core.mechanism.multihead.fused_qkv_gap(X, W["W_q"], W["W_k"], W["W_v"])
    # the page's own gap (its last bits depend on the CPU and on how the product was split: 0 on one machine, 6e-07
    # on another), printed as gap_text prints it, and within rounding, as the one computed here
    shown = re.search(r"max difference (\S+): the two forms agree", ok)
    assert shown and core.lab.within_rounding(float(shown.group(1))) and core.lab.within_rounding(fused_gap)
    assert "(1, 4, 8)" in ok and "the two forms agree" in ok
    # the wrong transpose really changes the output
    wrong = core.pitfalls.multi_head_without_transpose(X, n_heads=2, **W)
    assert any(core.lab.gap_text(core.max_abs_diff(wrong, tr.output)) in w.value for w in at.warning)
    close(heat(at, state.MULTI_HEAD.paper_out), heat(at, state.MULTI_HEAD.paper_mha), tol=2e-4)


def test_model_mode_shows_the_trained_models_heads_for_the_same_sentence():
    """Switched to the trained model: one layer's 12 heads of all-MiniLM-L6-v2 on the scenario's tokens
    joined as a sentence, and one of them through the pipeline; back to random weights as before."""
    from core import pretrained
    from ui.i18n import table

    try:
        model = pretrained.minilm()
    except pretrained.ModelNotInstalled:
        pytest.skip(f"the model package is not installed ({pretrained.INSTALL_HINT})")
    at = page(MULTI, run=False)
    at.session_state[state.scenario_kept("tokens")] = "when you play the game of thrones"
    at.run()
    random_head0 = heat(at, GRID(0))
    at.radio(key=state.MULTI_HEAD.source).set_value("model").run()
    at.select_slider(key=state.MULTI_HEAD.model_layer).set_value(3).run()
    at.selectbox(key=state.MULTI_HEAD.model_pick).set_value(5).run()
    no_errors(at)
    tr = model.trace("when you play the game of thrones")
    A = tr.attentions.numpy().astype(np.float64)
    for h in range(12):
        close(heat(at, state.item(state.MULTI_HEAD.model_grid, h)), np.round(A[3, h], 2), tol=1e-9)
    close(heat(at, state.item(state.MULTI_HEAD.pipeline, "weights")), A[3, 5], tol=2e-6)
    label = table("en")["mh.model.label"].format(model="all-MiniLM-L6-v2", l=3, sentence="when you play the game of thrones",
                                                 n=len(tr.tokens))
    assert label in [i.value for i in at.info] and "trained model: all-minilm-l6-v2, layer 3" in label.lower()
    assert table("en")["mh.model.korean"] not in [w.value for w in at.warning]  # English tokens: no jamo note
    at.radio(key=state.MULTI_HEAD.source).set_value("random").run()
    no_errors(at)
    close(heat(at, GRID(0)), random_head0)
    assert table("en")["mh.random"] in [c.value for c in at.caption]


def test_model_mode_with_korean_tokens_offers_an_english_sentence():
    from core import pretrained
    from ui.i18n import table

    try:
        model = pretrained.minilm()
    except pretrained.ModelNotInstalled:
        pytest.skip(f"the model package is not installed ({pretrained.INSTALL_HINT})")
    at = page(MULTI, query={"lang": "ko"}, run=False)
    at.session_state[state.MULTI_HEAD.source] = "model"
    at.run()  # the default tokens are C18's Korean sentence
    no_errors(at)
    ko = table("ko")
    assert ko["mh.model.korean"] in [w.value for w in at.warning]
    jamo = model.trace(" ".join(C18))
    close(heat(at, state.item(state.MULTI_HEAD.model_grid, 0)), np.round(jamo.attentions[0, 0].numpy().astype(float), 2),
          tol=1e-9)
    at.button(key=state.MULTI_HEAD.english).click().run()
    no_errors(at)
    english = model.trace("when you play the game of thrones")
    close(heat(at, state.item(state.MULTI_HEAD.model_grid, 0)),
          np.round(english.attentions[0, 0].numpy().astype(float), 2), tol=1e-9)
    assert ko["mh.model.korean"] not in [w.value for w in at.warning]


def test_with_trained_heads_the_labels_give_the_models_shape_and_the_sliders_say_what_they_set():
    from core import pretrained

    try:
        pretrained.model_zip_path()
    except pretrained.ModelNotInstalled:
        pytest.skip(f"the model package is not installed ({pretrained.INSTALL_HINT})")
    at = page(MULTI)
    at.radio(key=state.MULTI_HEAD.source).set_value("model").run()
    assert not at.exception
    badges = [m.value for m in at.markdown if "shape-badge" in m.value and "d_model =" in m.value]
    tr = pretrained.minilm().trace("when you play the game of thrones")
    L, H, _, _ = tr.attentions.shape
    d_k = tr.q.shape[-1]
    assert f"d_model = {H * d_k}, H = {H}, d_k = d_v = d_model / H = {d_k}" in badges[0]  # first: the heads drawn
    d, h = at.select_slider(key=state.MULTI_HEAD.d_model).value, at.select_slider(key=state.MULTI_HEAD.heads).value
    assert f"d_model = {d}, H = {h}," in badges[1]  # then the random part's, under its own heading
    assert table("en")["class.mh.random"] in [s.value for s in at.subheader]
