"""AppTest: the Tutorial page. Every lesson opens in both languages; every exercise is answered
through the page (right answers computed here with numpy, wrong and malformed ones refused with
a message); every make-it-so task is solved by driving the live panel as a learner would; hints,
reveals, progress in the URL; the copy-as-code snippets print the weights the page shows."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from urllib.parse import parse_qs

import numpy as np
import pytest

import core
from attention_lab import codegen, scenario
from attention_lab import tutorial as tut
from attention_lab.tutorial.lessons import MEOK, NANEUN, ONEUL, SAGWA  # the example sentence's tokens
from core import pretrained
from core import tokens as core_tokens
from ui import state
from ui.i18n import table
from ui.text import fill, md

from .helpers import ROOT, edit, heat, no_errors, page, spec

KEYS = state.TUTORIAL
TUTORIAL = "app_pages/tutorial.py"
X = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=float)  # 나는 오늘 사과를 먹었다
L6_W = {name: np.array(m, dtype=float) for name, m in tut.L6["matrices"].items()}
L9_X, L9_SRC = (np.array(tut.L9["matrices"][name], dtype=float) for name in ("X", "X_src"))


def softmax(z, axis=-1):
    z = np.asarray(z, dtype=float)
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def weights(Q, K_, *, T=1.0, scale=None, mask=None):
    s = np.asarray(Q, float) @ np.asarray(K_, float).T * ((1 / math.sqrt(np.shape(K_)[1])) if scale is None else scale) / T
    return softmax(np.where(mask, s, -np.inf) if mask is not None else s)


CAUSAL = np.tril(np.ones((4, 4), dtype=bool))
# the right answers, computed here from the lessons' numbers
def _rot(x: np.ndarray, m: float) -> np.ndarray:
    """RoPE in numpy: each pair (2i, 2i + 1) turned by m · 10000^(−2i/d)."""
    theta = 10000.0 ** (-np.arange(0, len(x), 2) / len(x))
    c, s = np.cos(m * theta), np.sin(m * theta)
    out = x.copy()
    out[0::2], out[1::2] = x[0::2] * c - x[1::2] * s, x[0::2] * s + x[1::2] * c
    return out


_ROPE_Q, _ROPE_K = (core_tokens.projection(1, 8, seed=0, name=f"lp.{n}")[0].numpy().astype(np.float64) for n in "qk")


def _previous_share() -> float:
    """The last token's weight (%) on the token before it in the model's strongest previous-token head."""
    A = pretrained.smollm2().trace(tut.L12_PROMPT).attentions.numpy()  # (30, 9, n, n)
    n = A.shape[-1]
    previous = np.stack([A[:, :, i, i - 1] for i in range(1, n)], -1).mean(-1)
    l, h = np.unravel_index(np.argmax(previous), previous.shape)
    return round(100 * float(A[l, h, -1, -2]), 2)


def _delta_v1() -> float:
    """v₁'s first number on the delta-rule lesson's panel (seed 0, d_model 8, d_v 4)."""
    X = core_tokens.embed(list(core_tokens.C18_TOKENS), 8, seed=0).numpy().astype(np.float64)
    return float((X @ core_tokens.projection(8, 4, seed=0, name="dr.W_v").numpy())[1, 0])


NUMBERS = {
    "weighted-average.weight": weights(X, X)[MEOK, SAGWA],
    "dot-product.score": X[MEOK] @ X[NANEUN],
    "softmax-temperature.no-scale": weights(X, X, scale=1.0)[MEOK, MEOK],
    "weighted-sum.output": weights(X, X)[MEOK] @ X[:, 0],
    "masks.weight": weights(X, X, mask=CAUSAL)[ONEUL, NANEUN],
    "projections.score": (X[SAGWA] @ L6_W["W_q"]) @ (X[MEOK] @ L6_W["W_k"]),
    "multi-head.d-head": 8 / 2,
    "position.pe-value": math.sin(1.0),
    "cross-attention.outputs": L9_X.shape[0],
    "kv-cache.bytes": 2 * 32 * 8 * 128 * 2 / 1024,  # Llama-3-8B, bfloat16: KiB per token
    "kv-cache.keys": 3,  # token 2 (counted from 0) attends to tokens 0 … 2, itself included
    "rope.angle": 10000 ** (-2 * 1 / 8),
    "model-writing.paris": round(100 * float(pretrained.smollm2().next_token(tut.L12_PROMPT).top_probs[0]), 2),
    "rope.shift-score": float(_rot(np.array([1.0, 0.0]), 12) @ _rot(np.array([2.0, 0.0]), 10)),  # one pair: θ₀ = 1
    "rope.length-value": float(np.linalg.norm([2.0, 1.0, 2.0, 4.0])),  # a rotation keeps the length
    "model-writing.previous": _previous_share(),
    "mla-cache.mha": 2 * 128 * 128,  # DeepSeek-V3 as multi-head attention: a key and a value per head
    "mla-cache.ratio": round(2 * 128 * 128 / (512 + 64), 1),  # against the latent and the rotary key
    "delta-rule.state": 32 * 128 * 128,  # Qwen3-Next: one 128 × 128 state per value head
    "delta-rule.read": 2 + 0.5 * (6 - 2),  # v₁ = 2 written with β = 1, then v₂ = 6 with β = ½: the delta rule
    "kv-cache.size": 2 * 3 * 1 * (8 // 2),  # after token 2: keys and values of 3 tokens, one K/V head of d_head 4
    "mla-cache.absorbed-width": 576 - 64,  # the latent's width d_c: the cache row without the rotary key
    "mla-cache.panel": 2 * (4 + 2) / (4 + 2),  # the panel's keys, H·(d_h + d_R), over d_c + d_R
    "delta-rule.erase": _delta_v1(),  # with β = 1 the delta rule leaves S₁ᵀk₁ = v₁
    "kept-per-token.csa": 512 / 4 + 128 / 4,  # DeepSeek-V4-Flash's CSA: an entry of d = 512 and a key of d_I = 128 per 4 tokens
    "kept-per-token.head-state": 128 * 128,  # Qwen3.5-27B: one d_k × d_v state per value head
}
PREDICT_ROWS = {  # (the weights row of the query asked about, the key tokens)
    "weighted-average.top": weights(X, X)[NANEUN],
    "dot-product.top-score": weights(X, X)[MEOK],
    "projections.top": weights(X @ L6_W["W_q"], X @ L6_W["W_k"])[MEOK],
    "cross-attention.cielo": weights(L9_X, L9_SRC)[2],
    "cross-attention.vediamo": weights(L9_X, L9_SRC)[0],
}
_COLD = weights(X, X, T=0.01)[NANEUN]
CHOICES = {
    "weighted-average.row-sum": "one" if np.allclose(weights(X, X).sum(1), 1) else "depends",
    "softmax-temperature.tie": "half" if np.isclose(np.sort(_COLD)[-1], 0.5, atol=1e-3) else "one",
    "softmax-temperature.sqrt-dk": "variance",  # Var(q·k) = d_k for unit-variance entries (the scores spread as d_k grows)
    "weighted-sum.convex": "no",  # weights ≥ 0 summing to 1: a convex combination stays within [min v, max v]
    "masks.order": "before",
    "projections.k-shape": "x".join(map(str, (X @ L6_W["W_k"]).shape)),
    "multi-head.weights-shape": "1x2x4x4",  # (B, H, n, n)
    "position.shuffle": "same",  # permutation equivariance: the token's output only moves
    "cross-attention.shape": "x".join(map(str, weights(L9_X, L9_SRC).shape)),
    "kv-cache.group": str(5 // (8 // 2)),  # H = 8, G = 2: groups of 4 consecutive query heads
    "model-writing.temperature": "no",  # softmax(z / T) keeps the order of z for every T > 0
    "delta-rule.special": "linear",  # Sᵀk = 0 for a new orthonormal key: the update is k vᵀ
    "kept-per-token.flat": "mamba2",  # only states in every layer; the others have global, MLA or pooled layers
}
EXERCISES = [(lesson, ex) for lesson in tut.LESSONS for ex in lesson.exercises]


# ------------------------------------------------------------------ driving the page
def open_lesson(lesson_id: str, lang: str = "en"):
    at = page(TUTORIAL, query={"lesson": lesson_id, "lang": lang})
    no_errors(at)
    assert at.session_state[KEYS.lesson] == lesson_id
    return at


def answer_key(ex) -> str:
    return state.item(KEYS.answer, ex.id)


def check(at, ex, answer=None):
    """Give an answer (typed, picked or chosen) and press Check, as one browser message does."""
    if ex.kind == "number":
        at.text_input(key=answer_key(ex)).input("" if answer is None else str(answer))
    elif ex.kind in ("predict", "choice"):
        at.radio(key=answer_key(ex)).set_value(answer)
    at.button(key=state.item(KEYS.check, ex.id)).click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at.session_state[state.item(KEYS.feedback, ex.id)]


def shown(at, kind: str) -> list[str]:
    return [e.value for e in getattr(at, kind)]


def shown_values(values: dict, lang: str = "en") -> dict:
    """A message's values as the page fills them in: text escaped, changed controls by their labels."""
    out = {k: md(v) if isinstance(v, str) else v for k, v in values.items()}
    if "changed" in values:
        out["changed"] = ", ".join(table(lang)[f"tu.control.{name}"] for name in values["changed"]) or "—"
    return out


def message(fb, lang: str = "en") -> str:
    return fill(tut.text(fb.message_key, lang), **shown_values(fb.values, lang))


def assert_right(at, ex, fb) -> None:
    assert fb.ok, (ex.id, fb)
    assert message(fb) in shown(at, "success")
    assert ex.id in at.session_state[KEYS.progress]
    assert any(m.startswith("**Exercise") and m.endswith("✓") for m in shown(at, "markdown"))


def assert_wrong(at, ex, fb, hint: bool = True, *, done_before: bool = False) -> bool:
    assert not fb.ok, (ex.id, fb)
    assert message(fb) in shown(at, "error")  # a message, never a traceback
    if hint:
        hint_text = fill(tut.text(fb.hint_key, "en"), **shown_values(fb.values))
        assert any(hint_text in i for i in shown(at, "info")), (ex.id, shown(at, "info"))
    if not done_before:  # a wrong try after a right one keeps the exercise done
        assert ex.id not in (at.session_state[KEYS.progress] if KEYS.progress in at.session_state else [])
    return True


# ------------------------------------------------------------------ every lesson opens
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_lesson_opens_without_error(lang):
    at = open_lesson(tut.LESSONS[0].id, lang)
    for i, lesson in enumerate(tut.LESSONS):
        if i:
            at.button(key=KEYS.next).click().run()
        no_errors(at)
        assert at.session_state[KEYS.lesson] == lesson.id
        assert at.subheader[0].value == f"{i + 1}. {tut.lesson_title(lesson.id, lang)}"
        body = tut.lesson_markdown(lesson.id, lang).split("\n", 1)[1].strip()
        assert any(m.strip() == body for m in shown(at, "markdown"))
        for ex in lesson.exercises:
            assert tut.text(ex.prompt_key, lang, **{k: md(v) if isinstance(v, str) else v
                                                    for k, v in ex.prompt_values.items()}) in shown(at, "markdown")
        assert at.button(key=KEYS.next).disabled == (i == len(tut.LESSONS) - 1)
        # the lesson's scenario is the shared scenario now, and the Playground link carries it
        link = at.get("page_link")[0].proto
        values, matrices, _ = scenario.validate(lesson.scenario_dict())
        carried = {k: v[0] for k, v in parse_qs(link.query_string).items()}
        assert "Playground" in link.page and scenario.to_query(values, matrices).items() <= carried.items()
    assert at.session_state[KEYS.lesson] == tut.LESSONS[-1].id


def test_the_model_writing_lesson_links_the_model_page_on_its_prompt():
    at = open_lesson("model-writing")
    links = [x.proto for x in at.get("page_link")]
    lm = next(link for link in links if "language_model" in link.page.lower())
    assert parse_qs(lm.query_string)["preset"] == [tut.L12_PRESET]  # the page loads it: test_language_model_page


def test_the_rope_lesson_links_the_positions_page():
    at = open_lesson("rope")
    assert any("llm_positions" in x.proto.page.lower() for x in at.get("page_link"))


def test_a_lesson_loads_its_scenario_into_the_shared_scenario():
    at = open_lesson("cross-attention")
    for ex in tut.lesson("cross-attention").exercises[1:3]:  # reveal the two predictions: the map shows
        at.button(key=state.item(KEYS.reveal, "button", ex.id)).click().run()
    np.testing.assert_allclose(heat(at, KEYS.weights), weights(L9_X, L9_SRC), atol=2e-6)
    at.selectbox(key=KEYS.pick).set_value("projections").run()
    no_errors(at)
    assert at.session_state[state.scenario_kept("qkv")] == "projection"
    assert at.session_state[state.scenario_kept("mode")] == "self"


# ------------------------------------------------------------------ every exercise through the page
@pytest.mark.parametrize("lesson", tut.LESSONS, ids=lambda x: x.id)
def test_every_question_accepts_the_right_answer_and_refuses_wrong_ones(lesson):
    at = open_lesson(lesson.id)
    for ex in lesson.exercises:
        if ex.kind == "number":
            number_exercise(at, ex)
        elif ex.kind == "predict":
            predict_exercise(at, ex)
        elif ex.kind == "choice":
            choice_exercise(at, ex)
    no_errors(at)


def number_exercise(at, ex) -> None:
    truth = NUMBERS[ex.id]
    # empty, not a number, NaN, out of range (the full list of malformed input: tests/core/test_tutorial.py)
    for bad, key in (("", "common.empty"), ("abc", "common.not_number"), ("NaN", "common.not_finite"), ("-1e6", None)):
        fb = check(at, ex, bad)
        assert_wrong(at, ex, fb)
        out_of_range = fb.message_key in ("common.out_of_range", "common.weight_range") or fb.message_key.endswith(".outside")
        assert fb.message_key == key if key else out_of_range, (bad, fb)
    fb = check(at, ex, f"{truth:.2f}" if ex.tolerance else f"{truth:g}")
    assert_right(at, ex, fb)
    assert fb.values["truth"] == pytest.approx(truth, abs=1e-5)


def predict_exercise(at, ex) -> None:
    row = PREDICT_ROWS[ex.id]
    top = [j for j in range(len(row)) if row[j] >= row.max() - 1e-6]
    assert any(table("en")["tu.hidden"].split("{")[0] in i for i in shown(at, "info"))  # the maps wait
    fb = check(at, ex, None)  # nothing picked
    assert_wrong(at, ex, fb) and fb.message_key == "common.empty"
    wrong = next(j for j in range(len(row)) if j not in top)
    fb = check(at, ex, wrong)
    assert_wrong(at, ex, fb)
    assert fb.values["chosen_w"] == pytest.approx(row[wrong], abs=1e-5)
    fb = check(at, ex, top[-1])
    assert_right(at, ex, fb)
    assert fb.values["top_w"] == pytest.approx(row.max(), abs=1e-5)


def choice_exercise(at, ex) -> None:
    right = CHOICES[ex.id]
    fb = check(at, ex, None)
    assert_wrong(at, ex, fb) and fb.message_key == "common.empty"
    for option in ex.options:
        if option != right:
            fb = check(at, ex, option)
            assert_wrong(at, ex, fb)
            assert fb.message_key == f"{ex.id}.why.{option}"  # each wrong option has its own explanation
    assert_right(at, ex, check(at, ex, right))


# ------------------------------------------------------------------ make it so: the live panel
def _sharp_temperature() -> float:
    grid = [round(0.1 * i, 1) for i in range(1, 51)]
    return max(T for T in grid if weights(X, X, T=T)[MEOK].max() > 0.9)


def test_make_it_so_edit_one_cell_of_k():
    at = open_lesson("dot-product")
    ex = tut.exercise("dot-product.edit-k")
    fb = check(at, ex)
    assert_wrong(at, ex, fb) and fb.message_key == "dot-product.edit-k.no_change"
    edit(at, "K", {NANEUN: {"d1": 2.0}})  # 나는's key (1, 0, 1) → (1, 2, 1)
    K_ = X.copy()
    K_[NANEUN, 1] = 2.0
    assert np.argmax(weights(X, K_)[SAGWA]) == NANEUN and np.sort(weights(X, K_)[SAGWA])[-2] < weights(X, K_)[SAGWA, NANEUN]
    fb = check(at, ex)
    assert_right(at, ex, fb)
    assert fb.values["w"] == pytest.approx(weights(X, K_)[SAGWA, NANEUN], abs=1e-5)


def test_make_it_so_temperature_and_the_exercise_setup_button():
    at = open_lesson("softmax-temperature")
    ex = tut.exercise("softmax-temperature.sharp")
    at.slider(key=state.SCENARIO.temperature).set_value(2.0).run()
    assert_wrong(at, ex, check(at, ex))
    T = _sharp_temperature()
    at.slider(key=state.SCENARIO.temperature).set_value(T).run()
    fb = check(at, ex)
    assert_right(at, ex, fb)
    assert fb.values["w"] == pytest.approx(weights(X, X, T=T)[MEOK].max(), abs=1e-5)
    # the no-scale question sets its panel up: scale none, and its weight map shows the answer
    at.button(key=state.item(KEYS.setup, "softmax-temperature.no-scale")).click().run()
    assert at.session_state[state.scenario_kept("scale")] == "none"
    np.testing.assert_allclose(heat(at, state.item(KEYS.pipeline, "weights")), weights(X, X, scale=1.0), atol=2e-6)
    fb = check(at, ex)  # the scale changed too: the temperature task says so, and names it
    assert_wrong(at, ex, fb, done_before=True) and fb.message_key == "common.changed_other"
    assert fb.values["changed"] == ("scale",)
    assert any(table("en")["tu.control.scale"] in e for e in shown(at, "error"))


def test_make_it_so_edit_v():
    at = open_lesson("weighted-sum")
    ex = tut.exercise("weighted-sum.edit-v")
    assert_wrong(at, ex, check(at, ex))
    edit(at, "V", {MEOK: {"d0": 5.0}})
    V = X.copy()
    V[MEOK, 0] = 5.0
    fb = check(at, ex)
    assert_right(at, ex, fb)
    assert fb.values["out"] == pytest.approx(weights(X, X)[MEOK] @ V[:, 0], abs=1e-5) and fb.values["out"] > 2


def test_make_it_so_causal_mask_by_the_checkbox_or_by_clicks():
    at = open_lesson("masks")
    ex = tut.exercise("masks.causal")
    fb = check(at, ex)
    assert_wrong(at, ex, fb) and fb.message_key == "masks.causal.future"
    at.checkbox(key=state.SCENARIO.causal).check().run()
    np.testing.assert_allclose(heat(at, KEYS.weights), weights(X, X, mask=CAUSAL), atol=2e-6)
    assert_right(at, ex, check(at, ex))
    # the same mask by clicking the six cells above the diagonal
    at = open_lesson("masks")
    for i, j in zip(*np.triu_indices(4, 1), strict=True):
        at.session_state[KEYS.clicks] = [(KEYS.mask_chart, (int(i), int(j)))]
        at.run()
    assert sorted(map(tuple, at.session_state[state.scenario_kept("blocked")])) == list(zip(*np.triu_indices(4, 1), strict=True))
    assert_right(at, ex, check(at, ex))


def test_make_it_so_symmetric_scores_by_editing_w_k():
    at = open_lesson("projections")
    ex = tut.exercise("projections.symmetric")
    fb = check(at, ex)
    assert_wrong(at, ex, fb) and fb.message_key == "projections.symmetric.asymmetric"
    Wq = L6_W["W_q"]
    edit(at, "W_k", {r: {f"k{c}": float(Wq[r, c]) for c in range(2)} for r in range(3)})
    scores = (X @ Wq) @ (X @ Wq).T
    assert np.allclose(scores, scores.T) and np.ptp(scores) > 0
    assert_right(at, ex, check(at, ex))


def test_make_it_so_heads():
    at = open_lesson("multi-head")
    ex = tut.exercise("multi-head.heads")
    fb = check(at, ex)  # H = 2: d_k = 4
    assert_wrong(at, ex, fb) and fb.message_key == "multi-head.heads.wrong_dk"
    at.select_slider(key=state.item(KEYS.panel, "heads")).set_value(4).run()  # H = 4: d_k = 8 / 4 = 2
    assert_right(at, ex, check(at, ex))
    assert spec(at, state.item(KEYS.heads, 3))["z"]  # one map per head
    assert any("H = 4" in m and "d_k = d_model / H = 2" in m for m in shown(at, "markdown"))


def test_make_it_so_order_of_the_words():
    at = open_lesson("position")
    ex = tut.exercise("position.move")
    fb = check(at, ex)  # the original order: nothing moves
    assert_wrong(at, ex, fb) and fb.message_key == "position.move.same"
    at.text_input(key=state.item(KEYS.panel, "perm")).input("2 1").run()
    assert any("0 … 3" in e for e in shown(at, "error"))  # not an order: a message, and the original order
    assert_wrong(at, ex, check(at, ex))
    at.text_input(key=state.item(KEYS.panel, "perm")).input("3 0 1 2").run()
    assert_right(at, ex, check(at, ex))


# ------------------------------------------------------------------ hints, reveal, apply
def test_reveal_shows_the_answer_and_a_revealed_solution_can_be_put_on_the_panel():
    at = open_lesson("softmax-temperature")  # where α is computed (after the dot product and softmax)
    ex = tut.exercise("weighted-average.weight")
    at.button(key=state.item(KEYS.reveal, "button", ex.id)).click().run()
    r = ex.reveal()
    assert r.answer == pytest.approx(round(NUMBERS[ex.id], 2))
    assert any(f"**{r.answer:g}**" in i for i in shown(at, "info"))
    assert ex.id not in (at.session_state[KEYS.progress] if KEYS.progress in at.session_state else [])  # revealed ≠ done
    # the prediction: revealing it shows the maps
    at.selectbox(key=KEYS.pick).set_value("weighted-average").run()
    pred = tut.exercise("weighted-average.top")
    at.button(key=state.item(KEYS.reveal, "button", pred.id)).click().run()
    np.testing.assert_allclose(heat(at, KEYS.weights), weights(X, X), atol=2e-6)
    # every make-it-so solution from a reveal, put on the panel, passes the check
    for lesson, task in EXERCISES:
        if task.kind == "make_it_so":
            at.selectbox(key=KEYS.pick).set_value(lesson.id).run()
            at.button(key=state.item(KEYS.reveal, "button", task.id)).click().run()
            assert tut.text(task.reveal().message_key, "en", **{k: md(v) if isinstance(v, str) else v
                                                                for k, v in task.reveal().values.items()}) in \
                "\n".join(shown(at, "info"))
            at.button(key=state.item(KEYS.apply, task.id)).click().run()
            assert_right(at, task, check(at, task))


# ------------------------------------------------------------------ progress in the URL
def test_progress_in_the_url_round_trips():
    at = open_lesson("masks")
    for ex in tut.lesson("masks").exercises:
        if ex.kind == "make_it_so":
            at.checkbox(key=state.SCENARIO.causal).check().run()
            assert check(at, ex).ok
        elif ex.kind == "number":
            assert check(at, ex, f"{NUMBERS[ex.id]:.3f}").ok
        else:
            assert check(at, ex, CHOICES[ex.id]).ok
    assert any(table("en")["tu.lesson_done"] == s for s in shown(at, "success"))
    link = {k: at.query_params[k] for k in at.query_params}
    link = {k: v[0] if isinstance(v, list) else v for k, v in link.items()}
    assert link["lesson"] == "masks" and tut.decode_progress(link["done"]) >= {"masks", "masks.causal", "masks.order"}
    later = page(TUTORIAL, query=link)  # a new session from the link
    no_errors(later)
    assert not later.warning
    assert later.session_state[KEYS.lesson] == "masks"
    options = later.selectbox(key=KEYS.pick).options
    assert [o.endswith("✓") for o in options] == [lesson.id == "masks" for lesson in tut.LESSONS]
    assert sum(m.startswith("**Exercise") and m.endswith("✓") for m in shown(later, "markdown")) == 3
    n_ex = sum(len(lesson.exercises) for lesson in tut.LESSONS)  # 36 since the KV-cache and RoPE lessons
    bars = [p.proto.text for p in later.get("progress")]
    assert f"3 of {n_ex} exercises done · 1 of {len(tut.LESSONS)} lessons complete" in bars


@pytest.mark.parametrize("done", ["1zzzz!", "2AQ", "1" + "A" * 70, "1" + "_" * 12])
def test_a_tampered_link_gives_a_message_and_the_start(done):
    at = page(TUTORIAL, query={"lesson": "masks", "done": done})
    assert not at.exception
    assert table("en")["tu.url.done"] in shown(at, "warning")
    assert at.session_state[KEYS.lesson] == "masks"
    assert not at.session_state[KEYS.progress] if KEYS.progress in at.session_state else True
    assert not any(o.endswith("✓") for o in at.selectbox(key=KEYS.pick).options)
    assert "done" not in at.query_params  # the default view: nothing done


def test_an_unknown_lesson_gives_a_message_and_the_first_lesson():
    at = page(TUTORIAL, query={"lesson": "<script>alert(1)</script>"})
    assert not at.exception
    assert any("first lesson" in w and "<script>" not in w for w in shown(at, "warning"))
    assert at.session_state[KEYS.lesson] == tut.LESSONS[0].id


def test_korean_feedback_and_hint():
    at = open_lesson("softmax-temperature", "ko")
    ex = tut.exercise("weighted-average.weight")
    fb = check(at, ex, "0.25")
    assert message(fb, "ko") in shown(at, "error") and "0.25" in message(fb, "ko")
    assert any(table("ko")["tu.hint"] in i for i in shown(at, "info"))
    assert check(at, ex, "0,21").ok  # a Korean keyboard's decimal comma


# ------------------------------------------------------------------ copy as code: the page's snippets run
RUNNER = """
import contextlib, io, json, sys
out = []
for code in json.load(sys.stdin):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "<snippet>", "exec"), {"__name__": "__main__"})  # a fresh namespace per snippet
    out.append(buf.getvalue())
print(json.dumps(out))
"""


def _snippets(at) -> list[str]:
    codes = [c.value for c in at.code]
    core_code = next(c for c in codes if "recomputed with the `core` package" in c.splitlines()[0])
    torch_code = next(c for c in codes if "plain PyTorch" in c.splitlines()[0])
    return [core_code, torch_code]


def _reveal_predictions(at, lesson_id: str) -> None:
    for ex in tut.lesson(lesson_id).exercises:
        if ex.kind == "predict":
            at.button(key=state.item(KEYS.reveal, "button", ex.id)).click().run()


def _panel_state(at) -> dict:
    """The live panel as the page hands it to a make-it-so checker (app_pages/tutorial.panel_state)."""
    try:
        changed = dict(at.session_state[state.SCENARIO.changed])
    except KeyError:
        changed = {}
    return {name: at.session_state[state.scenario_kept(name)] for name in scenario.DEFAULTS} | {
        "matrices": changed, "seed": 0}


def _drawn_weights(at) -> np.ndarray:
    for key in (state.item(KEYS.pipeline, "weights"), KEYS.weights):
        try:
            return heat(at, key)
        except (KeyError, LookupError, AssertionError):
            continue
    raise AssertionError("no weights map")


def _step_to(at, name: str, token: int):
    """Press ▶ until the lesson panel ``name`` ("kv", "dr") shows token ``token`` (counted from 0)."""
    for _ in range(token):
        at.button(key=state.item(KEYS.step_next, name)).click().run()
    assert at.session_state[state.item(KEYS.step, name)] == token + 1
    return at


def _cache_panel(at) -> None:
    """The KV-cache panel at token 2 (SAGWA): its query's row has 3 columns (kv-cache.keys) and the cache 3 keys and
    3 values of G·d_head numbers (kv-cache.size), the very ones core.cached_decode keeps."""
    _step_to(at, "kv", SAGWA)
    keys, values = heat(at, KEYS.cache_keys), heat(at, KEYS.cache_values)
    assert heat(at, KEYS.new_row).shape[1] == NUMBERS["kv-cache.keys"]
    assert keys.size + values.size == NUMBERS["kv-cache.size"]
    cache = tut.lessons._kv_trace().cache  # (G, n, d_head)
    np.testing.assert_allclose(keys, cache.k.transpose(0, 1).reshape(4, -1)[: SAGWA + 1].numpy(), atol=2e-6)
    np.testing.assert_allclose(values, cache.v.transpose(0, 1).reshape(4, -1)[: SAGWA + 1].numpy(), atol=2e-6)


def _latent_panel(at) -> None:
    """The MLA panel: the latent and the rotary key (6 numbers a token) above every head's explicit key (12): the ratio
    mla-cache.panel asks for, and the keys core.mla expands."""
    cached = heat(at, KEYS.latent).shape[1] + heat(at, KEYS.rope_key).shape[1]
    keys = np.concatenate([heat(at, state.item(KEYS.full_keys, h)) for h in range(tut.MLA_PANEL["heads"])], axis=1)
    assert keys.shape[1] / cached == NUMBERS["mla-cache.panel"]
    p = tut.MLA_PANEL
    k = tut.lessons._mla_small(p["d_model"], p["heads"], p["d_c"], p["d_r"]).k  # (H, n, d_h + d_R)
    np.testing.assert_allclose(keys, k.transpose(0, 1).reshape(k.shape[1], -1).numpy(), atol=2e-6)


def _state_panel(at) -> None:
    """The delta-rule panel at token 1: v₁ on the right map is delta-rule.erase's answer, and S₁ is core's state."""
    _step_to(at, "dr", ONEUL)
    assert abs(heat(at, KEYS.write)[1, 0] - NUMBERS["delta-rule.erase"]) < 2e-6  # the rows: k, v, prediction, …
    np.testing.assert_allclose(heat(at, KEYS.state), tut.lessons._dr_panel().states[ONEUL].numpy(), atol=2e-6)


def _model_panel(at) -> None:
    """The model panel names the strongest previous-token head; opened, its map's last row gives model-writing.previous."""
    if not _model_installed():
        pytest.skip("SmolLM2 is not installed")
    named = next(m for m in shown(at, "markdown") if "strongest previous-token head" in m)
    layer, head = (int(x) for x in __import__("re").search(r"block (\d+), head (\d+)", named).groups())
    at.selectbox(key=KEYS.lm_layer).set_value(layer)
    at.selectbox(key=KEYS.lm_head).set_value(head).run()
    A = heat(at, KEYS.lm_map)
    assert abs(100 * A[-1, -2] - NUMBERS["model-writing.previous"]) < 0.01


def _model_installed() -> bool:
    try:
        pretrained.smollm2()
    except Exception:  # noqa: BLE001 — any reason it cannot load: the test says so
        return False
    return True


def _kept_panel(at) -> None:
    """The 2026 chart: every line is core.kept over the registry (bfloat16), and the CSA exercise's answer is on it."""
    from core.shapes import MODELS
    from core.variants import kept_chart

    fig = spec(at, state.item(KEYS.panel, "kept"))
    for trace, (key, _) in zip(fig["data"], kept_chart.CHART_MODELS, strict=True):
        want = [core.kept(MODELS[key], n).total * 2 / 2**30 for n in kept_chart.CONTEXTS]
        np.testing.assert_allclose(trace["y"], want, rtol=1e-12)
    assert f"**{NUMBERS['kept-per-token.csa']:g}**" in " ".join(shown(at, "markdown"))


OWN_PANELS = {"cache": _cache_panel, "latent": _latent_panel, "state": _state_panel, "model": _model_panel,
              "kept": _kept_panel}


@pytest.mark.parametrize("lesson_id", ["kv-cache", "model-writing", "mla-cache", "delta-rule"])
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_each_decoder_lesson_shows_its_own_panel_not_the_masks(lesson_id, lang):
    """The four lessons on today's decoders draw the panel set up for their point (the cache growing, the model's
    heads, the latent beside the keys, the state written and erased), not the masks panel, and one exercise reads it."""
    at = open_lesson(lesson_id, lang)
    own = {"kv-cache": KEYS.cache_keys, "model-writing": KEYS.grid, "mla-cache": state.item(KEYS.full_keys, 0),
           "delta-rule": KEYS.state}[lesson_id]
    if lesson_id == "model-writing" and not _model_installed():
        assert any("SmolLM2" in e.value for e in at.error)  # the install message, in place of the heads
    else:
        spec(at, own)
    for masks_only in (KEYS.logits, KEYS.mask_chart):
        with pytest.raises(AssertionError):
            spec(at, masks_only)
    asked = {"kv-cache": "kv-cache.size", "model-writing": "model-writing.previous", "mla-cache": "mla-cache.panel",
             "delta-rule": "delta-rule.erase"}[lesson_id]
    assert asked in [ex.id for ex in tut.lesson(lesson_id).exercises]
    assert tut.lesson(lesson_id).panel in OWN_PANELS


@pytest.mark.parametrize("lesson", tut.LESSONS, ids=lambda x: x.id)
def test_the_checkers_grade_the_numbers_the_page_draws(lesson):
    """For every lesson, the trace a checker computes (attention_lab.tutorial.scenario_trace on the panel's
    state, through attention_lab.scenario.build) is the one the page draws (ui.inputs with its matrix editors
    calling attention_lab.scenario.numbers, then ui.scenario_state.run); the multi-head and position panels
    against their judges' numbers."""
    at = open_lesson(lesson.id)
    _reveal_predictions(at, lesson.id)
    no_errors(at)
    st_ = _panel_state(at)
    if lesson.panel == "multihead":
        tr = tut.lessons._mh(st_, tut.MH_D, tut.MH_H)
        for h in range(tut.MH_H):
            np.testing.assert_allclose(heat(at, state.item(KEYS.heads, h)), tr.weights[0, h].numpy(), atol=0.006)
    elif lesson.panel == "position":
        n = len(at.session_state[state.SCENARIO.last_tokens])
        perm = tuple(range(n))  # the panel starts at the identity order
        for with_pe in (False, True):
            c = tut.lessons._ps(st_, perm, tut.PS_D, with_pe)
            np.testing.assert_allclose(heat(at, state.item(KEYS.sa_px, with_pe)), c.sa_px.numpy(), atol=0.006)
            np.testing.assert_allclose(heat(at, state.item(KEYS.p_sa_x, with_pe)), c.p_sa_x.numpy(), atol=0.006)
    elif lesson.panel == "rope":
        # the RoPE panel draws the score against the distance for the very q and k the exercises ask about:
        # at distance q0 − k0 = 2 it reads the score the prediction is checked against
        fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(KEYS.rope_distance))
        for trace in fig["data"]:
            y_at = dict(zip(trace["x"], trace["y"], strict=True))
            assert abs(y_at[2] - float(_rot(_ROPE_Q, 5) @ _rot(_ROPE_K, 3))) < 1e-6
        assert any(c.proto.id.endswith(KEYS.rope_rotation) for c in at.get("plotly_chart"))
    elif lesson.panel in OWN_PANELS:
        OWN_PANELS[lesson.panel](at)
    else:
        np.testing.assert_allclose(_drawn_weights(at), tut.scenario_trace(st_).weights.numpy(), atol=2e-6)
        # the lesson's own scenario is the panel's state (the checkers' truths are computed on it)
        np.testing.assert_allclose(tut.scenario_trace(lesson.scenario_dict()).weights.numpy(),
                                   tut.scenario_trace(st_).weights.numpy(), atol=1e-6)


def test_the_checkers_grade_the_numbers_the_page_draws_after_edits():
    """Edited cells, a temperature and a mask on the panel: the checker's trace follows the page's."""
    at = open_lesson("dot-product")
    _reveal_predictions(at, "dot-product")
    edit(at, "K", {1: {"d0": -1.5}})
    at.slider(key=state.SCENARIO.temperature).set_value(0.5).run()
    no_errors(at)
    np.testing.assert_allclose(_drawn_weights(at), tut.scenario_trace(_panel_state(at)).weights.numpy(), atol=2e-6)
    at.selectbox(key=KEYS.pick).set_value("masks").run()
    at.checkbox(key=state.SCENARIO.causal).check().run()
    no_errors(at)
    np.testing.assert_allclose(_drawn_weights(at), tut.scenario_trace(_panel_state(at)).weights.numpy(), atol=2e-6)


def test_the_snippets_on_the_page_print_the_weights_the_page_shows():
    cases = []  # (the page's weights, its snippets)
    at = open_lesson("weighted-average")  # the default sentence, Q = K = V = X
    _reveal_predictions(at, "weighted-average")
    cases.append((heat(at, KEYS.weights), _snippets(at)))
    at.selectbox(key=KEYS.pick).set_value("masks").run()  # causal
    at.checkbox(key=state.SCENARIO.causal).check().run()
    cases.append((heat(at, KEYS.weights), _snippets(at)))
    at.selectbox(key=KEYS.pick).set_value("cross-attention").run()  # cross attention, loaded matrices
    _reveal_predictions(at, "cross-attention")
    cases.append((heat(at, KEYS.weights), _snippets(at)))
    at.selectbox(key=KEYS.pick).set_value("dot-product").run()  # an edited cell of K
    _reveal_predictions(at, "dot-product")
    edit(at, "K", {1: {"d0": -1.5}})
    cases.append((heat(at, state.item(KEYS.pipeline, "weights")), _snippets(at)))
    no_errors(at)
    assert "mask = torch.tensor(" in cases[1][1][0] and "X_kv = torch.tensor(" in cases[2][1][0]
    assert "-1.5" in cases[3][1][0]
    codes = [code for _, pair in cases for code in pair]
    run = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(codes), capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    outputs = json.loads(run.stdout.strip().splitlines()[-1])
    for i, printed in enumerate(outputs):
        line = next(s for s in printed.splitlines() if s.startswith(codegen.WEIGHTS_PREFIX))
        np.testing.assert_allclose(json.loads(line[len(codegen.WEIGHTS_PREFIX):]), cases[i // 2][0], atol=1e-6,
                                   err_msg=f"scenario {i // 2}, {'core' if i % 2 == 0 else 'torch'} snippet")


def test_a_scenario_changed_elsewhere_asks_for_a_reload():
    at = open_lesson("softmax-temperature")
    at.switch_page("app_pages/playground.py").run()
    at.text_input(key=state.SCENARIO.tokens).input("a b c").run()
    at.switch_page(TUTORIAL).run()
    no_errors(at)
    assert table("en")["tu.drifted"] in shown(at, "warning")
    fb = check(at, tut.exercise("weighted-average.weight"), "0.21")  # a computed question still checks the lesson's numbers
    assert fb.ok
    at.button(key=KEYS.reload).click().run()
    assert at.session_state[state.scenario_kept("tokens")] == scenario.DEFAULTS["tokens"] and not at.warning


def _too_large_app():
    import numpy as np

    from ui.code_export import code_panel

    X = np.ones((70, 3), np.float32)
    code_panel({"X_q": X, "X_kv": X, "qkv": "identity", "W_q": None, "W_k": None, "W_v": None, "Q": None, "K": None,
                "V": None, "score": "dot", "params": {}, "scale": None, "temperature": 1.0, "mask": None,
                "convention": "row"}, title="big", key_prefix="test")


def test_code_panel_says_when_a_scenario_is_too_large_and_offers_the_notebook_otherwise():
    from streamlit.testing.v1 import AppTest

    big = AppTest.from_function(_too_large_app, default_timeout=30).run()
    assert not big.exception and not big.code
    assert big.info[0].value == table("en")["cx.too_large"].format(limit=codegen.MAX_CODE_TOKENS, dim=codegen.MAX_DIM)
    at = open_lesson("weighted-average")
    buttons = at.get("download_button")
    assert [b.proto.label for b in buttons] == [table("en")["cx.notebook"]]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_2026_lesson_draws_the_kv_sharing_pages_chart_and_grades_against_core(lang):
    """The last lesson's panel is the KV-sharing page's chart (one renderer), not the masks; its three exercises
    accept core's answers and name the diagnosed mistakes."""
    at = open_lesson("kept-per-token", lang)
    _kept_panel(at)
    for masks_only in (KEYS.logits, KEYS.mask_chart):
        with pytest.raises(AssertionError):
            spec(at, masks_only)
    ex = {e.id: e for e in tut.lesson("kept-per-token").exercises}
    assert ex["kept-per-token.csa"].check("160").ok and not ex["kept-per-token.csa"].check("128").ok
    assert ex["kept-per-token.csa"].check("128").message_key == "kept-per-token.csa.no_index"
    assert ex["kept-per-token.flat"].check("mamba2").ok and not ex["kept-per-token.flat"].check("qwen3.5-27b").ok
    assert ex["kept-per-token.head-state"].check("16384").ok
    assert ex["kept-per-token.head-state"].check("256").message_key == "kept-per-token.head-state.sum"


def test_the_2026_lesson_is_appended_and_old_progress_still_decodes():
    order = tut.PROGRESS_ORDER
    assert order[-4:] == ("kept-per-token", "kept-per-token.csa", "kept-per-token.flat", "kept-per-token.head-state")
    old = {"delta-rule", "delta-rule.erase", "mla-cache.panel"}
    assert tut.decode_progress(tut.encode_progress(old)) == old
