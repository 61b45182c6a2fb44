"""AppTest: every Playground control drives core; the numbers on screen equal core's own."""

from __future__ import annotations

import base64

import numpy as np
import pytest
import torch

import core
from core import masks, tokens
from ui import state

from .helpers import (
    PG_WEIGHTS,
    bar_totals,
    bars,
    chosen_query,
    click,
    close,
    edit,
    heat,
    no_errors,
    open_tab,
    open_x_editor,
    page,
    panels,
    pg_map,
    pick_query,
    spec,
    texts,
    ticks,
    warnings,
)

C18_X = tokens.c18_embedding().numpy()


def c18_trace(**kw):
    return core.attention(C18_X, C18_X, C18_X, **kw)


# ---------------------------------------------------------------- defaults
def test_defaults_show_the_c18_example_computed_by_core():
    at = page()
    no_errors(at)
    ref = c18_trace()
    close(heat(at, pg_map("scores")), ref.scores)
    close(heat(at, pg_map("scaled")), ref.scaled)
    close(heat(at, PG_WEIGHTS), ref.weights)
    close(heat(at, pg_map("output")), ref.output)
    assert ticks(at, PG_WEIGHTS, "x") == ["0 나는", "1 오늘", "2 사과를", "3 먹었다"]
    # row sums beside the weights
    assert spec(at, PG_WEIGHTS)["side"] == ["Σ 1.000000"] * 4
    assert "Q (4×3) · Kᵀ (3×4) → (4×4)" in texts(at)


# ---------------------------------------------------------------- tokens and presets
def test_typing_tokens_recomputes_with_per_token_embeddings():
    at = page()
    at.radio(key=state.SCENARIO.embedding).set_value("random").run()
    at.slider(key=state.SCENARIO.d_model).set_value(5).run()
    at.text_input(key=state.SCENARIO.tokens).input("the cat sat on the mat").run()
    no_errors(at)
    toks = "the cat sat on the mat".split()
    X = tokens.embed(toks, 5, seed=0)
    ref = core.attention(X, X, X)
    close(heat(at, PG_WEIGHTS), ref.weights)
    close(heat(at, pg_map("output")), ref.output)
    assert ticks(at, PG_WEIGHTS, "y")[4] == "4 the"  # a repeated token keeps its own row


@pytest.mark.parametrize("preset, text", [("c19", "when you play the game of thrones"), ("c11", "attention is very"),
                                          ("c18", "나는 오늘 사과를 먹었다")])
def test_presets_load_their_sentences(preset, text):
    at = page()
    at.selectbox(key=state.item(state.SCENARIO.preset, "en")).set_value(preset).run()
    no_errors(at)
    assert at.text_input(key=state.SCENARIO.tokens).value == text
    assert at.selectbox(key=state.item(state.SCENARIO.preset, "en")).value == ""  # the menu is ready for the next example
    n = len(text.split())
    assert heat(at, PG_WEIGHTS).shape == (n, n)
    if preset == "c11":  # the causal example
        W = heat(at, PG_WEIGHTS)
        assert np.all(W[np.triu_indices(n, 1)] == 0)


def test_seed_setting_changes_random_embeddings_reproducibly():
    at = page()
    at.radio(key=state.SCENARIO.embedding).set_value("random").run()
    first = heat(at, PG_WEIGHTS)
    at.number_input(key=state.setting_widget("seed")).set_value(7).run()
    X = tokens.embed(tokens.C18_TOKENS, 3, seed=7)
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X).weights)
    assert not np.allclose(first, heat(at, PG_WEIGHTS))


def test_precision_setting_rounds_the_display():
    at = page(precision=2)
    z = heat(at, PG_WEIGHTS)
    close(z, np.round(c18_trace().weights.double().numpy(), 2), tol=1e-9)
    assert spec(at, PG_WEIGHTS)["text"][0][0] == "0.32"


# ---------------------------------------------------------------- embeddings
def test_one_hot_embedding():
    at = page()
    at.radio(key=state.SCENARIO.embedding).set_value("onehot").run()
    X = tokens.one_hot(tokens.C18_TOKENS)
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X).weights)


def test_editing_a_cell_of_x_changes_every_step():
    at = page()
    edit(at, "X", {0: {"d1": 2.5}})
    no_errors(at)
    X = C18_X.copy()
    X[0, 1] = 2.5
    ref = core.attention(X, X, X)
    close(heat(at, pg_map("scores")), ref.scores)
    close(heat(at, PG_WEIGHTS), ref.weights)


def test_c18_embedding_with_unknown_tokens_is_explained():
    at = page()
    at.text_input(key=state.SCENARIO.tokens).input("나는 바나나를 먹었다").run()
    no_errors(at)
    assert "바나나를" in texts(at)
    X, unknown = core.lab.c18_lookup(["나는", "바나나를", "먹었다"], fallback_seed=0)
    assert unknown == ["바나나를"]
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X).weights)


# ---------------------------------------------------------------- Q, K, V
def test_projections_with_d_k_and_d_v_sliders():
    at = page()
    open_tab(at, "qkv")
    at.radio(key=state.SCENARIO.qkv).set_value("projection").run()
    at.slider(key=state.SCENARIO.d_k).set_value(2).run()
    at.slider(key=state.SCENARIO.d_v).set_value(4).run()
    no_errors(at)
    W_q, W_k, W_v = (tokens.projection(3, d, seed=0, name=n) for d, n in ((2, "W_q"), (2, "W_k"), (4, "W_v")))
    X = torch.tensor(C18_X)
    ref = core.attention(X @ W_q, X @ W_k, X @ W_v)
    close(heat(at, PG_WEIGHTS), ref.weights)
    close(heat(at, pg_map("output")), ref.output)
    assert heat(at, pg_map("output")).shape == (4, 4)
    shapes = texts(at)
    assert "Q = X·W_Q: (4×3)·(3×2) → (4×2)" in shapes and "V = X·W_V: (4×3)·(3×4) → (4×4)" in shapes


def test_editing_w_q():
    at = page()
    open_tab(at, "qkv")
    at.radio(key=state.SCENARIO.qkv).set_value("projection").run()
    edit(at, "W_q", {1: {"k0": -1.5}})
    no_errors(at)
    W_q, W_k, W_v = (tokens.projection(3, 3, seed=0, name=n) for n in ("W_q", "W_k", "W_v"))
    W_q[1, 0] = -1.5
    X = torch.tensor(C18_X)
    close(heat(at, PG_WEIGHTS), core.attention(X @ W_q, X @ W_k, X @ W_v).weights)


def test_editing_q_k_v_directly():
    at = page()
    open_tab(at, "qkv")
    at.radio(key=state.SCENARIO.qkv).set_value("direct").run()
    edit(at, "V", {2: {"d0": 4.0}})
    no_errors(at)
    V = C18_X.copy()
    V[2, 0] = 4.0
    close(heat(at, pg_map("output")), core.attention(C18_X, C18_X, V).output)


# ---------------------------------------------------------------- self vs cross
def test_cross_attention_uses_target_queries_and_source_keys():
    at = page()
    at.radio(key=state.SCENARIO.embedding).set_value("random").run()
    at.radio(key=state.SCENARIO.mode).set_value("cross").run()
    at.text_input(key=state.SCENARIO.tokens).input("vediamo il cielo").run()
    at.text_input(key=state.SCENARIO.source).input("We see the sky").run()
    no_errors(at)
    tgt, src = "vediamo il cielo".split(), "We see the sky".split()
    Xt, Xs = tokens.embed(tgt, 3, seed=0), tokens.embed(src, 3, seed=0)
    ref = core.attention(Xt, Xs, Xs)
    W = heat(at, PG_WEIGHTS)
    assert W.shape == (3, 4)
    close(W, ref.weights)
    close(heat(at, pg_map("output")), ref.output)
    assert ticks(at, PG_WEIGHTS, "x") == ["0 We", "1 see", "2 the", "3 sky"]


# ---------------------------------------------------------------- score functions, scale, temperature
@pytest.mark.parametrize("score", ["dot", "scaled_dot", "general", "additive", "cosine"])
def test_every_score_function(score):
    at = page()
    open_tab(at, "score")
    at.radio(key=state.SCENARIO.score).set_value(score).run()
    no_errors(at)
    params = None
    if score == "general":
        params = {"W": tokens.projection(3, 3, seed=0, name="W").T}
    if score == "additive":
        params = {"W_a": tokens.projection(3, 4, seed=0, name="W_a").T, "U_a": tokens.projection(3, 4, seed=0, name="U_a").T,
                  "w_a": tokens.projection(4, 1, seed=0, name="w_a")[:, 0]}
    ref = c18_trace(score=score, params=params)
    close(heat(at, pg_map("scores")), ref.scores)
    close(heat(at, PG_WEIGHTS), ref.weights)
    assert any("score" in str(l.value) for l in at.latex)


def test_additive_d_a_slider_and_w_a_edit():
    at = page()
    open_tab(at, "score")
    at.radio(key=state.SCENARIO.score).set_value("additive").run()
    at.slider(key=state.SCENARIO.d_a).set_value(2).run()
    edit(at, "w_a", {0: {"w_a": 3.0}})
    no_errors(at)
    w_a = tokens.projection(2, 1, seed=0, name="w_a")[:, 0]
    w_a[0] = 3.0
    params = {"W_a": tokens.projection(3, 2, seed=0, name="W_a").T, "U_a": tokens.projection(3, 2, seed=0, name="U_a").T,
              "w_a": w_a}
    close(heat(at, pg_map("scores")), c18_trace(score="additive", params=params).scores)


def test_general_w_edit():
    at = page()
    open_tab(at, "score")
    at.radio(key=state.SCENARIO.score).set_value("general").run()
    edit(at, "W", {0: {"k0": 2.0}})
    W = tokens.projection(3, 3, seed=0, name="W").T.clone()
    W[0, 0] = 2.0
    close(heat(at, pg_map("scores")), c18_trace(score="general", params={"W": W}).scores)


@pytest.mark.parametrize("mode, scale", [("none", 1.0), ("sqrt_dk", 3 ** -0.5)])
def test_scale_choice_and_temperature(mode, scale):
    at = page()
    open_tab(at, "score")
    at.radio(key=state.SCENARIO.score).set_value("dot").run()
    at.radio(key=state.SCENARIO.scale).set_value(mode).run()
    at.slider(key=state.SCENARIO.temperature).set_value(0.5).run()
    ref = c18_trace(score="dot", scale=scale, temperature=0.5)
    close(heat(at, pg_map("scaled")), ref.scaled)
    close(heat(at, PG_WEIGHTS), ref.weights)


# ---------------------------------------------------------------- masks
def test_causal_mask_zeroes_the_upper_triangle_and_shows_minus_infinity():
    at = page()
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    no_errors(at)
    ref = c18_trace(mask=masks.causal(4))
    W = heat(at, PG_WEIGHTS)
    close(W, ref.weights)
    assert np.all(W[np.triu_indices(4, 1)] == 0)
    logits = spec(at, pg_map("masked"))
    assert logits["text"][0][1] == "−∞" and logits["text"][1][0] != "−∞"
    assert np.isnan(heat(at, pg_map("masked"))[0, 1])


def test_padding_mask():
    at = page()
    open_tab(at, "mask")
    at.multiselect(key=state.scenario_picker("pad")).select("2 사과를").run()
    no_errors(at)
    ref = c18_trace(mask=masks.padding([1, 1, 0, 1], 4))
    close(heat(at, PG_WEIGHTS), ref.weights)
    assert np.all(heat(at, PG_WEIGHTS)[:, 2] == 0)


def test_clicking_mask_cells_toggles_them_and_masks_combine():
    at = page()
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    click(at, state.PLAYGROUND.chart_mask, 3, 0)
    no_errors(at)
    m = masks.causal(4).clone()
    m[3, 0] = False
    close(heat(at, PG_WEIGHTS), c18_trace(mask=m).weights)
    close(heat(at, state.PLAYGROUND.chart_mask), m.float())


def test_fully_masked_row_is_explained_not_hidden():
    at = page()
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    at.multiselect(key=state.scenario_picker("pad")).select("0 나는").run()
    no_errors(at)
    W = heat(at, PG_WEIGHTS)
    assert np.all(W[0] == 0) and np.all(heat(at, pg_map("output"))[0] == 0)
    assert any("0 나는" in w and "weights 0" in w for w in warnings(at))
    notes = spec(at, PG_WEIGHTS)["side"]
    assert notes[0] == "all masked" and notes[1] == "Σ 1.000000"


# ---------------------------------------------------------------- notation
def test_column_notation_shows_every_matrix_transposed():
    at = page()
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    row = {k: heat(at, k) for k in (pg_map("scores"), pg_map("scaled"), PG_WEIGHTS, pg_map("output"))}
    at.radio(key=state.SCENARIO.convention).set_value("column").run()
    no_errors(at)
    col = core.attention(C18_X.T, C18_X.T, C18_X.T, mask=masks.causal(4, convention="column"), convention="column")
    close(heat(at, PG_WEIGHTS), col.weights)
    close(heat(at, pg_map("output")), col.output)
    for k, v in row.items():
        close(heat(at, k), v.T)
    # the scores panel's formula: Kᵀ before Q
    assert "<msup><mi>K</mi><mo>⊤</mo></msup><mi>Q</mi>" in panels(at)[pg_map("scores")]["mathml"]


# ---------------------------------------------------------------- query inspector
def test_inspector_follows_the_selected_query():
    at = page()
    pick_query(at, 3)
    assert chosen_query(at) == "3 먹었다"
    ref = c18_trace()
    close(bars(at, state.PLAYGROUND.fig_alpha)[0], ref.weights[3])
    close(bars(at, state.PLAYGROUND.fig_contrib), ref.contributions(3))  # (n_k, d_v): one segment per key and dimension
    close(bar_totals(at, state.PLAYGROUND.fig_contrib), ref.output[3])


def test_clicking_a_weights_cell_selects_its_query():
    at = page()
    click(at, PG_WEIGHTS, 2, 1)
    no_errors(at)
    assert chosen_query(at) == "2 사과를"
    close(bars(at, state.PLAYGROUND.fig_alpha)[0], c18_trace().weights[2])
    assert spec(at, PG_WEIGHTS)["highlight_row"] == 2


# ---------------------------------------------------------------- language
def test_korean_language_everywhere_on_the_page():
    at = page()
    at.radio(key=state.setting_widget("lang")).set_value("ko").run()
    no_errors(at)
    assert at.title[0].value.endswith("어텐션 놀이터")
    assert at.text_input(key=state.SCENARIO.tokens).label.startswith("토큰")
    assert at.session_state[state.setting("lang")] == "ko"


def test_column_notation_shapes_are_written_the_other_way_round():
    at = page()
    open_tab(at, "qkv")
    at.radio(key=state.SCENARIO.qkv).set_value("projection").run()
    at.slider(key=state.SCENARIO.d_k).set_value(2).run()
    at.radio(key=state.SCENARIO.convention).set_value("column").run()
    no_errors(at)
    shapes = texts(at)
    assert "Q = W^Q·X: (2×3)·(3×4) → (2×4)" in shapes
    assert "Kᵀ (4×2) · Q (2×4) → (4×4)" in shapes
    assert "V (3×4) · α (4×4) → (3×4)" in shapes


def test_only_the_open_setup_tab_is_drawn_and_closed_tabs_still_apply():
    at = page()
    # the embedding tab is open first, its X editor folded (not drawn until unfolded); no mask controls
    assert not at.dataframe and not at.checkbox
    # the fold's title names no token count (a token change need not redraw it); open, it shows X's shape
    assert [e.label for e in at.expander if e.label.startswith("Edit the embeddings X")] == ["Edit the embeddings X"]
    assert not [m for m in at.markdown if "X 4×3" in m.value]
    open_x_editor(at)
    assert at.dataframe and not at.checkbox
    assert [m for m in at.markdown if "X 4×3" in m.value]
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    assert not at.dataframe and at.checkbox(key=state.SCENARIO.causal).value is True
    open_tab(at, "score")  # the mask tab is closed now, the mask still applies
    no_errors(at)
    close(heat(at, PG_WEIGHTS), c18_trace(mask=masks.causal(4)).weights)
    at.radio(key=state.setting_widget("lang")).set_value("ko").run()  # the open tab survives a language switch
    assert at.radio(key=state.SCENARIO.score).label == "점수 함수 f(q, k)"


def test_maps_past_16_tokens_send_colours_and_masked_cells_instead_of_cell_text():
    toks = " ".join(f"t{i}" for i in range(20))
    at = page(query={"emb": "random", "causal": "1", "tok": toks})
    no_errors(at)
    s = spec(at, pg_map("masked"))
    assert s["text"] is None and len(base64.b64decode(s["rgb"])) == 20 * 20 * 3  # r, g, b bytes per cell
    allowed = masks.causal(20).numpy()
    assert list(base64.b64decode(s["masked"])) == (~allowed).astype(int).ravel().tolist()
    X = tokens.embed(toks.split(), 3, seed=0)
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X, mask=masks.causal(20)).weights)


def test_the_cross_attention_example_asks_in_italian_and_reads_the_english():
    at = page()
    at.selectbox(key=state.item(state.SCENARIO.preset, "en")).set_value("c26").run()
    no_errors(at)
    assert at.radio(key=state.SCENARIO.mode).value == "cross"
    assert at.text_input(key=state.SCENARIO.tokens).value == "vediamo il cielo"
    assert at.text_input(key=state.SCENARIO.source).value == "We see the sky"
    Xt, Xs = tokens.embed(["vediamo", "il", "cielo"], 3, seed=0), tokens.embed(["We", "see", "the", "sky"], 3, seed=0)
    close(heat(at, PG_WEIGHTS), core.attention(Xt, Xs, Xs).weights)  # queries from the target, keys/values from the source
    assert ticks(at, PG_WEIGHTS, "x") == ["0 We", "1 see", "2 the", "3 sky"]
