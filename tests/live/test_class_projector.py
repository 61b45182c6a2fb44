"""What the projector and the phones say about a question (issue 57, part 3), in both languages, through AppTest:
the empty dashboard points at the Ask panel where it is, a wrong key is told the model's key(s), a tie is named as
one with every tied key (Korean particles chosen from the keys), the chart marks the right bar and says so in its
text alternative, and a reveal takes a student who wandered off to it as a question does."""

from __future__ import annotations

import json

import pytest

from attention_lab.strings import translate
from tests.app import helpers as h
from ui import compute, state

from .test_class_page import PAGE, ask, param, student, texts

KEYS = state.LIVE
BLUE, ORANGE = "#2563eb", "#f97316"


@pytest.fixture(autouse=True)
def class_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_LAB_STORE", str(tmp_path / "classes.sqlite3"))
    compute.class_store.clear()
    yield
    compute.class_store.clear()


def teacher(lang: str):
    at = h.page(PAGE, query={"lang": lang})
    at.button(key=KEYS.start).click().run()
    h.no_errors(at)
    return at, param(at, "class")


def seated(code: str, nick: str, lang: str):
    at = student(code, nick)
    at.query_params["lang"] = lang
    at.session_state[state.setting("lang")] = lang
    return at.run()


def flat(node) -> list:
    """The page's elements in document order."""
    out = [node]
    for child in getattr(node, "children", {}).values():
        out += flat(child)
    return out


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_new_dashboard_points_at_the_ask_panel_where_it_is(lang):
    t, _ = teacher(lang)
    info = next(i for i in t.info if translate("live.ask", lang) in i.value)
    assert "left" not in info.value and "왼쪽" not in info.value
    order = flat(t.main)
    ask_panel = next(e for e in order if getattr(e, "type", "") == "expander"
                     and getattr(e, "label", "") == translate("live.ask", lang))
    assert KEYS.ask in [getattr(e, "key", None) for e in flat(ask_panel)]  # the panel named holds the Ask button
    assert order.index(ask_panel) > order.index(info)  # and it is below the sentence, as it says


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_a_tie_is_named_as_a_tie_with_every_key_and_a_wrong_key_is_told_the_models(lang):
    t, code = teacher(lang)
    a = seated(code, "Ada", lang)
    ask(t, "top", 0)  # the default scenario's first query: a tie between 나는 and 먹었다
    q = compute.class_store().record(code)["question"]
    assert [q["k_tokens"][i] for i in q["top"]] == ["나는", "먹었다"]
    wrong = next(i for i in range(len(q["row"])) if i not in q["top"])
    a.run()
    a.radio(key=state.item(KEYS.answer, q["id"])).set_value(wrong)
    a.button[[x.label for x in a.button].index(translate("live.send", lang))].click().run()
    t.button(key=KEYS.reveal).click().run()
    a.run()
    h.no_errors(a)
    said = {"en": ("The model: a tie. 나는 and 먹었다 get the same, largest weight",
                   "Not this key: the model gives the most weight to 나는 and 먹었다."),
            "ko": ("모델: 동점입니다. 나는과 먹었다가 똑같이 가장 많은 가중치를 받습니다",  # 나는 → 과, 먹었다 → 가
                   "이 키가 아닙니다. 모델은 나는과 먹었다에 가장 많은 가중치를 줍니다.")}[lang]
    for shown in (texts(t), texts(a)):
        assert said[0] in shown
    assert said[1] in texts(a)
    assert "tolerance" not in texts(a) and "허용 오차" not in texts(a)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_chart_marks_the_right_bar_with_its_text_alternative(lang):
    t, code = teacher(lang)
    seated(code, "Ada", lang)
    ask(t, "top", 0)
    q = compute.class_store().record(code)["question"]
    t.button(key=KEYS.reveal).click().run()
    _, chart = h.element_of(t, state.item(KEYS.answer, "chart"))
    spec = json.loads(chart.proto.spec)
    colours = spec["data"][0]["marker"]["color"]
    assert [i for i, c in enumerate(colours) if c == ORANGE] == q["top"]
    assert all(colours[i] == BLUE for i in range(len(colours)) if i not in q["top"])
    marks = spec["layout"]["annotations"]  # labelled on the chart, above each right column
    assert [a["x"] for a in marks] == q["top"] and all(translate("live.chart.right.mark", lang) in a["text"] for a in marks)
    marked = translate("live.chart.right", lang, k=translate("live.truth.and", lang, rest="나는", last="먹었다"))
    assert marked in chart.proto.alt  # and in words, for a screen reader


def test_a_reveal_takes_a_student_who_left_the_class_page_to_it_as_a_question_does():
    t, code = teacher("en")
    a = seated(code, "Ada", "en")
    ask(t, "top", 0)
    a.run()
    q = compute.class_store().record(code)["question"]
    a.radio(key=state.item(KEYS.answer, q["id"])).set_value(q["top"][0])
    a.button[[x.label for x in a.button].index("Send")].click().run()
    a.switch_page("app_pages/playground.py").run()  # the student wanders off after answering
    assert not [m for m in a.markdown if "Which key gets the most weight" in m.value]
    t.button(key=KEYS.reveal).click().run()
    a.run()  # the student's page runs again once its check sees the new record (one check, as for a question)
    h.no_errors(a)
    assert "Which key gets the most weight" in texts(a)  # back on the class page, with the answer revealed
    assert "The model:" in texts(a) and "Your answer was right." in texts(a)
