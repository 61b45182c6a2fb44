"""Real browser: one tutorial lesson completed end to end in each language, through the real UI
(typing, picking, ticking the mask on the live panel, pressing Check), with screenshots."""

from __future__ import annotations

import json
import math
from pathlib import Path

import nbformat
import numpy as np
from playwright.sync_api import expect

from attention_lab import scenario
from attention_lab import tutorial as tut
from core.playground.tokens import tokenize
from ui import state
from ui.state import css_class as css

from .conftest import settled
from .helpers import download, shot, wait_z

KEYS = state.TUTORIAL
X = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=float)
LESSONS = Path(__file__).resolve().parents[2] / "assets" / "lessons"
I18N = Path(__file__).resolve().parents[2] / "assets" / "i18n"


def text(lang: str, key: str) -> str:
    return json.loads((LESSONS / f"exercises.{lang}.json").read_text(encoding="utf-8"))[key]


def ui_text(lang: str, key: str) -> str:
    return json.loads((I18N / f"{lang}.tutorial.json").read_text(encoding="utf-8"))[key]


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def press_check(page, exercise_id: str) -> None:
    page.locator(css(state.item(KEYS.check, exercise_id)) + " button").click()


def expect_done(page, exercise_id: str) -> None:
    box = page.locator(css(state.item(KEYS.panel, "exercise", exercise_id)))
    expect(box.locator("[data-testid=stAlertContentSuccess]")).to_be_visible(timeout=30_000)
    expect(box.get_by_text("✓").first).to_be_visible()


def pick(page, exercise_id: str, label: str) -> None:
    page.locator(css(state.item(KEYS.answer, exercise_id))).get_by_text(label, exact=True).click()


def type_answer(page, exercise_id: str, value: str) -> None:
    box = page.locator(css(state.item(KEYS.answer, exercise_id)) + " input")
    box.fill(value)
    box.press("Enter")


def test_masks_lesson_in_english(server_url, new_page):
    page = new_page(f"{server_url}/Tutorial?lesson=masks&lang=en")
    expect(page.get_by_text("5. Masks")).to_be_visible(timeout=30_000)
    # 1. make it so: hide future tokens on the live panel
    press_check(page, "masks.causal")  # nothing hidden yet: a message and a hint, no ✓
    expect(page.get_by_text(text("en", "masks.causal.hint"))).to_be_visible(timeout=30_000)
    page.locator(css(state.SCENARIO.causal) + " label").click()
    causal = np.tril(np.ones((4, 4), dtype=bool))
    want = softmax(np.where(causal, X @ X.T / math.sqrt(3), -np.inf))
    np.testing.assert_allclose(wait_z(page, KEYS.weights, "z[0][1] === 0"), want, atol=6e-4)
    press_check(page, "masks.causal")
    expect_done(page, "masks.causal")
    # 2. a number, computed here
    type_answer(page, "masks.weight", "abc")
    press_check(page, "masks.weight")
    expect(page.get_by_text("“abc” is not a number")).to_be_visible(timeout=30_000)
    type_answer(page, "masks.weight", f"{want[1, 0]:.2f}")
    press_check(page, "masks.weight")
    expect_done(page, "masks.weight")
    # 3. a choice
    pick(page, "masks.order", text("en", "masks.order.opt.before"))
    press_check(page, "masks.order")
    expect_done(page, "masks.order")
    expect(page.get_by_text(ui_text("en", "tu.lesson_done"))).to_be_visible(timeout=30_000)
    expect(page.locator(css(KEYS.pick) + " input")).to_have_value(f"5. {tut.lesson_title('masks', 'en')} ✓")
    assert "done=" in page.url and "lesson=masks" in page.url
    shot(page, "tutorial-en-masks-done")
    # the way out: the example as code, and as a notebook that nbformat accepts
    page.get_by_text(ui_text("en", "tu.code")).click()
    expect(page.get_by_text("mask = torch.tensor([").first).to_be_visible(timeout=30_000)
    settled(page)  # the code panel's run has ended and drawn, nothing still moving: its download button is the one that stays
    saved = download(page, css(state.item(state.CODE_EXPORT.download, state.item(KEYS.panel, "masks"))) + " button")
    nb = nbformat.reads(Path(saved.path()).read_text(encoding="utf-8"), as_version=4)
    nbformat.validate(nb)
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    assert "core.lab.playground(" in code and "mask = torch.tensor([" in code and "softmax" in code


def test_cross_attention_lesson_in_korean(server_url, new_page):
    page = new_page(f"{server_url}/Tutorial?lesson=cross-attention&lang=ko", locale="ko-KR")
    expect(page.get_by_text(f"9. {tut.lesson_title('cross-attention', 'ko')}")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("연습 문제 2에 답하기 전")).to_be_visible()  # the map waits for the prediction
    shot(page, "tutorial-ko-cross-start")
    Xq, Xs = (np.array(tut.L9["matrices"][n]) for n in ("X", "X_src"))
    w = softmax(Xq @ Xs.T / math.sqrt(Xq.shape[1]))
    sources = tokenize(scenario.DEFAULTS["source"])  # the lesson's English sentence: We see the sky
    pick(page, "cross-attention.shape", text("ko", "cross-attention.shape.opt.3x4"))
    press_check(page, "cross-attention.shape")
    expect_done(page, "cross-attention.shape")
    for ex_id, row in (("cross-attention.cielo", 2), ("cross-attention.vediamo", 0)):
        wrong = int(np.argmin(w[row]))
        pick(page, ex_id, sources[wrong])
        press_check(page, ex_id)
        expect(page.locator(css(state.item(KEYS.panel, "exercise", ex_id)) + " [data-testid=stAlertContentError]")).to_be_visible(
            timeout=30_000)
        pick(page, ex_id, sources[int(np.argmax(w[row]))])
        press_check(page, ex_id)
        expect_done(page, ex_id)
    np.testing.assert_allclose(wait_z(page, KEYS.weights, "z.length === 3"), w, atol=6e-4)  # answered: the map shows
    type_answer(page, "cross-attention.outputs", str(Xq.shape[0]))
    press_check(page, "cross-attention.outputs")
    expect_done(page, "cross-attention.outputs")
    expect(page.get_by_text(ui_text("ko", "tu.lesson_done"))).to_be_visible(timeout=30_000)
    expect(page.locator(css(KEYS.pick) + " input")).to_have_value(f"9. {tut.lesson_title('cross-attention', 'ko')} ✓")
    shot(page, "tutorial-ko-cross-done")
