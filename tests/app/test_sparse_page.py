"""AppTest: the sparse top-k page against core — the scores that choose (the lightning indexer on the page's seeded
projections, or the attention's own scores), the top-k keys each query keeps (checked by hand: the k highest scores
among the keys it may see), the weights over those keys beside full attention, the weight they carry, the cost
figures; a tampered k gets a message and the default, k ≥ n says that sparse is full attention."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import tokens
from ui import compute, state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/sparse.py"
KEYS = state.SPARSE
C18 = list(tokens.C18_TOKENS)


def reference(k: int, chooser: str, seed: int = 0):
    """core on the page's seeded projections: d_model 16, 2 heads of 8; indexer 4 heads of 8, q latent of 8."""
    X = tokens.embed(C18, 16, seed=seed)[None]
    W = {w: tokens.projection(16, 16, seed=seed, name=f"sp.{w}") for w in ("W_q", "W_k", "W_v")}
    q, key, v = (core.split_heads(X @ W[w], 2) for w in ("W_q", "W_k", "W_v"))
    full = core.attention(q, key, v, mask=core.masks.causal(len(C18)))
    if chooser == "indexer":
        c_q = X @ tokens.projection(16, 8, seed=seed, name="sp.W_cq")
        index = core.lightning_indexer(X, c_q, W_Iq=tokens.projection(8, 32, seed=seed, name="sp.W_Iq"),
                                       W_Ik=tokens.projection(16, 8, seed=seed, name="sp.W_Ik"),
                                       W_w=tokens.projection(16, 4, seed=seed, name="sp.W_w"), n_index_heads=4).scores
    else:
        index = full.scores.masked_fill(~full.mask, float("-inf")).mean(-3)
    return index[0], core.sparse_topk_attention(q, key, v, index_scores=index, top_k=k), full


def run(**values):
    at = page(PAGE, run=False)
    for name, value in values.items():
        at.session_state[getattr(KEYS, name)] = value
    return at.run()


@pytest.mark.parametrize(("k", "chooser", "head"), [(2, "indexer", 0), (1, "oracle", 1), (3, "indexer", 1)])
def test_the_maps_are_cores_and_each_query_keeps_its_k_best_keys(k, chooser, head):
    at = run(top_k=k, chooser=chooser, head=head)
    no_errors(at)
    index, tr, full = reference(k, chooser)
    n = len(C18)
    shown = heat(at, KEYS.index)
    allowed = np.tril(np.ones((n, n), dtype=bool))
    close(shown[allowed], index.numpy()[allowed])
    assert np.isnan(shown[~allowed]).all()  # after the query: the causal mask, drawn as masked
    for i in range(n):  # by hand: the k highest scores among the keys 0 … i
        best = set(np.argsort(-index.numpy()[i, : i + 1], kind="stable")[: min(k, i + 1)].tolist())
        assert set(np.flatnonzero(tr.chosen[0, i].numpy())) == best
    chosen = tr.chosen[0].numpy()
    logits = heat(at, KEYS.logits)  # the top-k mask on the scaled scores: −∞ (drawn masked) off the chosen keys
    close(logits[chosen], tr.attention.scaled[0, head].numpy()[chosen])
    assert np.isnan(logits[~chosen]).all()
    sparse = heat(at, KEYS.sparse)
    close(sparse, tr.attention.weights[0, head].numpy())
    assert (sparse[~chosen] == 0).all() and np.allclose(sparse.sum(-1), 1, atol=1e-5)
    close(heat(at, KEYS.full), full.weights[0, head].numpy())
    carried = (full.weights[0, head] * tr.chosen[0]).sum(-1).numpy()
    assert f"carry on average **{100 * carried.mean():.1f}%**" in texts(at)
    assert f"**{100 * carried.min():.1f}%**" in texts(at)
    gap = core.max_abs_diff(tr.output, full.output)
    assert f"max |sparse − full| over the outputs = {core.lab.gap_text(gap)}" in texts(at)


def test_k_at_least_n_is_full_attention_and_says_so():
    at = run(top_k=len(C18))
    no_errors(at)
    _, tr, full = reference(len(C18), "indexer")
    assert core.lab.within_rounding(core.max_abs_diff(tr.output, full.output))
    assert f"k = {len(C18)} is at least the number of tokens ({len(C18)})" in texts(at)
    assert "equal up to rounding" in texts(at)


@pytest.mark.parametrize("bad", [0, 99, "3", 2.5, True])
def test_a_tampered_k_gets_a_message_and_the_default(bad):
    at = run(top_k=bad)
    assert not at.exception
    assert any("cannot be used: it must be a whole number from 1 to 16" in e.value for e in at.error)
    assert at.session_state[KEYS.top_k] == 2


def test_the_cost_sentence_is_cores_count():
    at = run()
    no_errors(at)
    last = core.sparse_topk_macs(131072, 2048, n_heads=128, d_k=192, d_v=128, n_index_heads=64, d_index=128)
    assert f"at n = 131,072 tokens, full attention needs **{last.full / last.sparse:.1f}×**" in texts(at)
    costs = compute.sparse_costs((1024, 2048, 4096), 2048)
    assert costs["sparse"][0] > costs["full"][0] and costs["sparse"][2] < costs["full"][2]
    assert "Sparse is cheaper from n = 4,096 on the chart" in texts(at)


def test_korean_page_has_no_errors_and_its_own_words():
    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    assert "라이트닝 인덱서" in texts(at)


@pytest.mark.parametrize(("path", "limit"), [(PAGE, 64), ("app_pages/diff.py", 64), ("app_pages/llm_positions.py", 32)])
def test_more_tokens_than_a_page_draws_are_cut_with_a_message(path, limit):
    """The shared token box takes up to 512 tokens; a page that draws fewer says how many it uses (no silent cut)."""
    at = page(path, run=False)
    at.session_state[state.scenario_kept("tokens")] = " ".join(f"w{i}" for i in range(100))
    at.run()
    assert not at.exception and not at.error
    assert any(f"100 tokens: this page draws at most {limit}, so it uses the first {limit}." in w.value
               for w in at.warning)


def test_the_indexer_grows_at_the_same_rate_so_the_saving_tends_to_a_limit():
    """The indexer's n² term grows as fast as full attention's, only cheaper per pair (64·128 against 128·(192 + 128)):
    full / sparse rises towards that ratio, 5, and never reaches it; the caption says so with core's numbers."""
    shapes = {"n_heads": 128, "d_k": 192, "d_v": 128, "n_index_heads": 64, "d_index": 128}
    one = core.sparse_topk_macs(1, 1, **shapes)
    limit = one.full / one.indexer
    assert (one.full, one.indexer, limit) == (128 * (192 + 128), 64 * 128, 5.0)
    ratios = [c.full / c.sparse for c in (core.sparse_topk_macs(n, 2048, **shapes) for n in (4096, 65536, 10**6, 10**9))]
    assert ratios == sorted(ratios) and all(r < limit for r in ratios) and limit - ratios[-1] < 1e-4
    at = run()
    no_errors(at)
    said = texts(at)
    assert "at a smaller rate" not in said
    assert "H_I·d_I = 8,192 multiply-adds against H·(d_k + d_v) = 40,960" in said
    assert "at most 5× cheaper than full attention, and the ratio tends to 5" in said


# ---------------------------------------------------------------- blocks and a shared choice (issue 55)
def _blk(name: str, *parts) -> str:
    return state.item(state.SPARSE.index, name, *parts)


@pytest.mark.parametrize(("c", "k", "pattern"), [(2, 1, "FSSF"), (1, 2, "FSFS")])
def test_each_layers_choice_equals_core_and_shared_layers_copy_it(c, k, pattern):
    from core.variants import layer_demos

    at = page(PAGE, run=False)
    at.session_state[_blk("block")] = c
    at.session_state[_blk("keep")] = k
    at.session_state[_blk("pattern")] = pattern
    at.run()
    no_errors(at)
    r = layer_demos.shared_blocks_demo(list(tokens.C18_TOKENS), 0, c, k, pattern)
    text = " ".join(m.value for m in at.markdown)
    for layer, src in enumerate(r.source):
        np.testing.assert_array_equal(heat(at, _blk("layer", layer)), r.chosen[layer].numpy().astype(float))
        assert (f"layer {layer} · its own indexer" if src == layer else f"layer {layer} · shared: copies layer {src}'s") in text
        if src != layer:
            np.testing.assert_array_equal(heat(at, _blk("layer", layer)), heat(at, _blk("layer", src)))
    assert "#kept-2026" in text


@pytest.mark.parametrize(("name", "value", "message"), [
    ("keep", 9, "is more than 4 tokens close"),  # top-k over the number of blocks (4 tokens, c = 2: 2 blocks)
    ("block", 0, "is not a block size"),
    ("pattern", "SFFF", "is not a layer stack this page offers"),  # a shared layer with no full layer before it
])
def test_bad_block_settings_are_named_not_a_traceback(name, value, message):
    at = page(PAGE, run=False)
    at.session_state[_blk(name)] = value
    at.run()
    assert not at.exception
    assert any(message in e.value for e in at.error), [e.value for e in at.error]
    heat(at, _blk("layer", 0))  # still drawn with the defaults


def test_a_tampered_block_pattern_in_the_link_is_refused():
    at = page(PAGE, query={"blk_p": "SSSS", "lang": "ko"})
    assert not at.exception and any("blk_p" in w.value for w in at.warning)
