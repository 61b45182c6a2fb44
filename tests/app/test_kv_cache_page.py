"""AppTest: the KV-cache page (one token at a time) against core and against attention computed by hand in torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/kv_cache.py"
KEYS = state.KV_CACHE
C18 = list(tokens.C18_TOKENS)


def weights(d: int, H: int, G: int, seed: int = 0) -> dict[str, torch.Tensor]:
    dh = d // H
    shapes = {"W_q": (d, d), "W_k": (d, G * dh), "W_v": (d, G * dh), "W_o": (d, d)}
    return {n: tokens.projection(*s, seed=seed, name=f"kv.{n}") for n, s in shapes.items()}


def causal_by_hand(words: list[str], d: int, H: int, G: int) -> torch.Tensor:
    """Full causal grouped-query weights (H, n, n), no RoPE: softmax(q kᵀ/√d_head + causal −∞), K repeated per group."""
    X = tokens.embed(words, d, seed=0)
    W = weights(d, H, G)
    dh = d // H
    q = (X @ W["W_q"]).view(-1, H, dh).transpose(0, 1)
    k = (X @ W["W_k"]).view(-1, G, dh).transpose(0, 1).repeat_interleave(H // G, dim=0)
    n = len(words)
    logits = q @ k.transpose(-1, -2) / dh ** 0.5 + torch.full((n, n), float("-inf")).triu(1)
    return torch.softmax(logits, dim=-1)


def at_step(step: int, *, H: int = 2, G: int = 1, rope: bool = False):
    at = page(PAGE, run=False)
    at.session_state[KEYS.heads] = H
    at.session_state[KEYS.kv_heads] = G
    at.session_state[KEYS.rope] = rope
    at.session_state[KEYS.step] = step
    return at.run()


@pytest.mark.parametrize(("H", "G"), [(2, 1), (4, 2), (4, 4)])
def test_each_new_row_is_a_row_of_the_full_causal_matrix(H, G):
    at = at_step(3, H=H, G=G)
    no_errors(at)
    full = causal_by_hand(C18, 8, H, G).numpy()
    close(heat(at, KEYS.new_row), full[:, 2, :3])
    close(heat(at, KEYS.full), full[0])
    assert "the same numbers" in texts(at)


def test_the_step_buttons_move_t_and_the_cache_grows():
    at = at_step(1)
    assert heat(at, KEYS.keys).shape == (1, 4)
    at.button(key=KEYS.step_next).click().run()
    at.button(key=KEYS.step_next).click().run()
    no_errors(at)
    assert at.session_state[KEYS.step] == 3 and heat(at, KEYS.keys).shape == (3, 4) and heat(at, KEYS.new_row).shape == (2, 3)
    at.button(key=KEYS.step_prev).click().run()
    assert at.session_state[KEYS.step] == 2 and heat(at, KEYS.values).shape == (2, 4)


def test_rope_rows_and_cache_equal_core():
    at = at_step(4, H=4, G=2, rope=True)
    no_errors(at)
    X = tokens.embed(C18, 8, seed=0)
    W = weights(8, 4, 2)
    tr = core.cached_decode(X, n_heads=4, n_kv_heads=2, rope_base=10000.0, **W)
    full = core.multi_head_attention(X[None], n_heads=4, n_kv_heads=2, rope_base=10000.0, mask=core.masks.causal(4), **W)
    close(heat(at, KEYS.new_row), full.weights[0][:, 3, :])
    close(heat(at, KEYS.keys), tr.cache.k.transpose(0, 1).reshape(4, -1))
    # with RoPE the rows differ from the unrotated ones (the rotation is really applied)
    assert not np.allclose(heat(at, KEYS.new_row), causal_by_hand(C18, 8, 4, 2)[:, 3, :].numpy(), atol=1e-3)


def test_the_cost_chart_holds_core_counts():
    import json

    at = at_step(2)
    X = tokens.embed(C18, 8, seed=0)
    tr = core.cached_decode(X, n_heads=2, n_kv_heads=1, **weights(8, 2, 1))
    fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(KEYS.cost))
    assert fig["data"][0]["y"] == np.cumsum([s.macs_cached for s in tr.steps]).tolist()
    assert fig["data"][1]["y"] == np.cumsum([s.macs_recompute for s in tr.steps]).tolist()
    assert f"{tr.steps[1].macs_cached:,}" in texts(at)


def test_a_cached_step_is_a_fixed_part_plus_a_part_per_key_as_the_page_says():
    """The sentence under the cost chart takes its numbers from core's counts: at the page's defaults (d_model 8,
    H = G = 2) a cached step costs 272, 288, 304, 320 (+16 a key) and recomputing 272, 576, 912, 1,280."""
    at = at_step(1, H=2, G=2)
    X = tokens.embed(C18, 8, seed=0)
    steps = core.cached_decode(X, n_heads=2, n_kv_heads=2, **weights(8, 2, 2)).steps
    cached, full = [s.macs_cached for s in steps], [s.macs_recompute for s in steps]
    assert cached == [272, 288, 304, 320] and full == [272, 576, 912, 1280]  # H·(d_k + d_v) = 2·(4 + 4) = 16 a key
    per_step = next(m.value for m in at.markdown if "for each cached key" in m.value)
    assert "**256**" in per_step and "**16**" in per_step  # 272 = 256 + 16 · 1 key
    assert "272, 288, 304, 320" in per_step and "272, 576, 912, 1,280" in per_step
    assert all(c == 256 + 16 * (t + 1) for t, c in enumerate(cached))


def test_bad_and_tampered_input_gets_a_message_and_no_traceback():
    at = at_step(2, H=4, G=3)  # 3 does not divide 4
    assert not at.exception
    assert any("does not divide" in e.value for e in at.error)
    assert at.session_state[KEYS.kv_heads] == 4
    close(heat(at, KEYS.full), causal_by_hand(C18, 8, 4, 4)[0].numpy())
    at = at_step(99)
    assert not at.exception and any("steps go from 0 to 3" in w.value for w in at.warning)
    assert at.session_state[KEYS.step] == 4


def test_more_tokens_than_the_page_decodes_are_cut_with_a_message():
    at = page(PAGE)
    at.text_input(key=state.SCENARIO.tokens).input(" ".join(f"w{i}" for i in range(600))).run()  # over the app's 512
    assert not at.exception and at.error  # the shared token box names the limit; the last valid tokens stay
    at.text_input(key=state.SCENARIO.tokens).input(" ".join(f"w{i}" for i in range(40))).run()
    assert not at.exception
    assert any("at most 32" in w.value for w in at.warning), [w.value for w in at.warning]
    assert heat(at, KEYS.full).shape == (32, 32)


def test_korean_page_has_no_error():
    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    assert "단계 t = 0** (단계 0 … 3)" in texts(at)
