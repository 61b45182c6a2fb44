"""AppTest: sentences the pages choose from computed facts (issue 21) — the step-through's sentences,
what each page says its weights are, the tutorial's labels, feedback that does not give the next
answer away, and where progress is kept."""

from __future__ import annotations

import pytest

import core
from attention_lab import tutorial as tut
from core import lab, tokens
from ui import state
from ui.i18n import table

from .helpers import no_errors, page

KEYS = state.PLAYGROUND
EN = table("en")


def step_sentence(query: dict) -> str:
    at = page(query=query)
    no_errors(at)
    return next(i.value for i in at.info if i.value.startswith("**Step"))


@pytest.mark.parametrize(("query", "key"), [
    ({"step": "1"}, "pg.steps.say.scores.dot"),
    ({"step": "1", "score": "cosine"}, "pg.steps.say.scores"),
    ({"step": "2"}, "pg.steps.say.scaled.smaller"),  # 1/√3
    ({"step": "2", "score": "dot"}, "pg.steps.say.scaled.same"),  # s/T = 1
    ({"step": "2", "score": "cosine"}, "pg.steps.say.scaled.same"),
    ({"step": "2", "T": "0.5"}, "pg.steps.say.scaled.larger"),  # (1/√3) / 0.5 > 1
    ({"step": "4"}, "pg.steps.say.weights.row"),
    ({"step": "4", "conv": "column"}, "pg.steps.say.weights.column"),
    ({"step": "5", "conv": "column"}, "pg.steps.say.output.column"),
])
def test_the_step_sentence_is_chosen_from_the_numbers(query, key):
    sentence = step_sentence(query)
    assert EN[key].split("{")[0] in sentence, (key, sentence)
    if key.startswith("pg.steps.say.scores") and key.endswith("scores"):
        assert "dot product" not in sentence
    if key.endswith("same"):
        assert "smaller spread" not in sentence


def test_a_query_that_sees_nothing_is_named_in_the_weights_and_output_sentences():
    X = tokens.c18_embedding()
    f = lab.step_facts(core.attention(X, X, X, mask=core.masks.padding([False] * 4, 4)))
    assert f.fully_masked == 4  # every key padded: no query sees anything
    for step, key in (("4", "pg.steps.say.weights.fully_masked"), ("5", "pg.steps.say.output.fully_masked")):
        sentence = step_sentence({"step": step, "pad": "[0,1,2,3]"})
        assert EN[key].format(none=f.fully_masked) in sentence, sentence
    assert EN["pg.steps.say.weights.fully_masked"].format(none=4) not in step_sentence({"step": "4"})


def test_the_pages_say_what_their_weights_are():
    ko, en = table("ko"), table("en")
    assert "untrained" not in en["page.vision_transformer.blurb"] and "학습되지 않은" not in ko["page.vision_transformer.blurb"]
    assert "Every other page" not in en["tm.intro"] and "다른 페이지는 작은 무작위" not in ko["tm.intro"]
    home = page("app.py")
    no_errors(home)
    text = "\n".join(m.value for m in home.markdown)
    assert "**Tutorial**" in text and "**A trained model**" in text and "They all use the sentence" not in text


def test_the_tutorial_labels_its_random_heads_and_says_where_progress_is_kept():
    at = page("app_pages/tutorial.py", query={"lesson": "multi-head"})
    no_errors(at)
    assert EN["mh.random"] in [c.value for c in at.caption]
    assert EN["tu.progress.where"] in [c.value for c in at.caption]
    ko = page("app_pages/tutorial.py", query={"lesson": "multi-head", "lang": "ko"})
    shapes = [m.value for m in ko.markdown if "→ α" in m.value]
    assert shapes and not any("output" in s for s in shapes) and any("출력" in s for s in shapes)


@pytest.mark.parametrize("ex_id", [e.id for lesson in tut.LESSONS for e in lesson.exercises if e.kind == "predict"])
def test_a_wrong_prediction_does_not_name_the_winner(ex_id):
    ex = tut.exercise(ex_id)
    right = ex.reveal().answer
    wrong = next(i for i in range(4) if ex.check(i).message_key.endswith(".wrong"))
    fb = ex.check(wrong)
    for lang in ("en", "ko"):
        text = tut.text(fb.message_key, lang, **fb.values)
        assert f"{fb.values['top_w']:.3f}" not in text, text
        assert right != wrong


def test_the_masks_success_message_does_not_give_the_next_answer():
    ok = tut.exercise("masks.causal").check(tut.exercises.lesson_state(tut.L5, causal=True))
    nxt = tut.exercise("masks.weight").reveal().answer
    assert ok.ok
    for lang in ("en", "ko"):
        assert f"{nxt:.3f}"[:4] not in tut.text(ok.message_key, lang, **ok.values)
