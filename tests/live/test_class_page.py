"""The class page through AppTest: a teacher and students, each a session of its own, sharing one SQLite file (as
sessions on one server, or replicas on one machine, do). Start, join, a tampered teacher key, ask, answer (the last
answer counts), reveal, anonymise, pause, follow me, an exercise checked in class, end (the rows gone)."""

from __future__ import annotations

import pytest

from attention_lab import tutorial
from attention_lab.live import classes
from tests.app import helpers as h
from ui import compute, state

PAGE = "app_pages/live_class.py"
KEYS = state.LIVE
SHOWN_TOL = 1e-6 + 5e-7  # a map's values rounded to 6 decimals: one unit of the last place, plus float noise


@pytest.fixture(autouse=True)
def class_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_LAB_STORE", str(tmp_path / "classes.sqlite3"))
    compute.class_store.clear()  # the server's one store, opened on the file of this test
    yield
    compute.class_store.clear()


def texts(at) -> str:
    """Every text the page shows (markdown, captions, messages, labels), as one string."""
    parts = [str(x.value) for kind in ("markdown", "caption", "subheader", "info", "success", "warning", "error", "metric")
             for x in at.get(kind)]
    parts += [str(w.label) for kind in ("button", "radio", "selectbox", "text_input", "toggle") for w in at.get(kind)]
    return "\n".join(parts)


def teacher():
    at = h.page(PAGE)
    at.button(key=KEYS.start).click().run()
    h.no_errors(at)
    return at, at.query_params["class"][0] if isinstance(at.query_params["class"], list) else at.query_params["class"]


def param(at, name: str) -> str:
    v = at.query_params[name]
    return v[0] if isinstance(v, list) else v


def student(code: str, nick: str):
    at = h.page(PAGE, query={"class": code})
    assert at.text_input(key=KEYS.code).value == code.upper()  # the student link fills in the code
    at.text_input(key=KEYS.nick).input(nick)
    at.button(key=KEYS.send).click().run()
    h.no_errors(at)
    return at


def test_a_teacher_starts_a_class_and_students_join_it():
    t, code = teacher()
    key = param(t, "key")
    assert classes.read_code(code) == code and len(key) >= 22
    assert f"<p class='al-join-code'>{code}</p>" in texts(t)  # the join code, large
    a = student(code, "<b>Ada</b>")
    assert "<b>Ada</b>" in h.shown(texts(a)) and code in texts(a)
    student(code.lower(), "Bo")  # typed in lower case: the same class
    t.run()
    assert t.metric[0].value == "2"
    assert "Ada" in texts(t) and "Bo" in texts(t)
    assert "Bo" not in texts(a)  # a student never sees the other students


def test_a_tampered_teacher_key_gets_a_message_never_the_dashboard():
    t, code = teacher()
    key = param(t, "key")
    for wrong in (key[:-2] + "xx", "", "x" * 200, key + "A"):
        at = h.page(PAGE, query={"class": code, "key": wrong})
        assert not at.exception
        assert any("not valid" in e.value for e in at.error), wrong
        assert not [b for b in at.button if b.key == KEYS.ask]  # no controls
    ok = h.page(PAGE, query={"class": code, "key": key})  # the teacher's own link, in a new session
    assert [b for b in ok.button if b.key == KEYS.ask]


def test_bad_codes_and_nicknames_get_a_message_and_the_page_goes_on():
    t, code = teacher()
    at = h.page(PAGE, query={"class": "<script>"})
    assert any("6 letters" in e.value for e in at.error)
    at.text_input(key=KEYS.code).input("ZZZZZZ")
    at.text_input(key=KEYS.nick).input("Ada")
    at.button(key=KEYS.send).click().run()
    assert any("no class with this code" in e.value for e in at.error)
    at.text_input(key=KEYS.code).input(code)
    at.text_input(key=KEYS.nick).input("   ")
    at.button(key=KEYS.send).click().run()
    assert any("type a nickname" in e.value for e in at.error)
    at.text_input(key=KEYS.nick).input("Ada")
    at.button(key=KEYS.send).click().run()
    h.no_errors(at)
    assert "Ada" in texts(at)


def ask(t, kind: str = "top", query: int = 0):
    t.radio(key=KEYS.kind).set_value(kind).run()
    t.selectbox(key=KEYS.query).set_value(query).run()
    t.button(key=KEYS.ask).click().run()
    h.no_errors(t)


def test_ask_answer_reveal_the_last_answer_counts():
    t, code = teacher()
    a, b = student(code, "Ada"), student(code, "Bo")
    ask(t, "top", 0)
    record = compute.class_store().record(code)
    q = record["question"]
    assert q["row"] == pytest.approx(tutorial.scenario_trace({}, seed=0).weights[0].tolist(), abs=1e-7)  # the Playground's
    wrong = next(i for i in range(len(q["row"])) if i not in q["top"])
    for at, choice in ((a, wrong), (b, q["top"][0])):
        at.run()
        at.radio(key=state.item(KEYS.answer, q["id"])).set_value(choice)
        at.button[[x.label for x in at.button].index("Send")].click().run()
        h.no_errors(at)
        assert "Your answer is in." in texts(at)
    t.run()
    assert "2 of 2 students answered." in texts(t)
    rows = compute.class_store().answers(code)
    assert sorted(r["right"] for r in rows) == [False, True]
    t.button(key=KEYS.reveal).click().run()
    assert "1 of 2 answers were right." in texts(t)
    a.run()
    assert "Not this key: the model gives the most weight to" in texts(a)  # a pick-a-key verdict: no tolerance
    assert "The model: a tie." in texts(a)  # the model's answer, on the student's screen


def test_anonymised_names_leave_the_projector():
    t, code = teacher()
    student(code, "Ada"), student(code, "Bo")
    t.toggle(key=KEYS.anonymous).set_value(True).run()
    shown = texts(t)
    assert "Student 1" in shown and "Student 2" in shown
    assert "Ada" not in shown and "Bo" not in shown


def test_pause_freezes_the_students_screens():
    t, code = teacher()
    a = student(code, "Ada")
    ask(t)
    t.toggle(key=KEYS.pause).set_value(True).run()
    a.run()
    assert any("paused" in i.value for i in a.info)
    question = state.item(KEYS.answer, compute.class_store().record(code)["question"]["id"])
    assert not [r for r in a.radio if r.key == question]  # the question waits
    t.toggle(key=KEYS.pause).set_value(False).run()
    a.run()
    assert [r for r in a.radio if r.key == question]


def test_follow_me_takes_every_student_to_the_lesson_and_exercises_reach_the_dashboard():
    t, code = teacher()
    a = student(code, "Ada")
    t.selectbox(key=KEYS.target).set_value("weighted-average").run()
    t.button(key=KEYS.follow).click().run()
    a.run()
    h.no_errors(a)
    assert a.session_state[state.TUTORIAL.lesson] == "weighted-average"
    choice = a.radio(key=state.item(state.TUTORIAL.answer, "weighted-average.row-sum"))
    choice.set_value(tutorial.exercise("weighted-average.row-sum").options[0])
    a.button(key=state.item(state.TUTORIAL.check, "weighted-average.row-sum")).click().run()
    t.run()
    assert "The tutorial's exercises in class" in texts(t)
    rows = [r for r in compute.class_store().answers(code) if r["qid"].startswith("ex:")]
    assert [r["qid"] for r in rows] == ["ex:weighted-average.row-sum"]


def test_ending_the_class_deletes_it_and_sends_the_students_home():
    t, code = teacher()
    a = student(code, "Ada")
    ask(t)
    t.checkbox(key=KEYS.end_sure).check().run()
    t.button(key=KEYS.end).click().run()
    h.no_errors(t)
    s = compute.class_store()
    assert [s.count(p, code) for p in ("classes", "students", "answers")] == [0, 0, 0]
    a.run()
    assert any("no class with this code" in i.value for i in a.info)
    assert [b for b in a.button if b.key == KEYS.send]  # the join form again


def test_an_estimate_and_a_spread_row_are_answered_on_the_phone():
    t, code = teacher()
    a = student(code, "Ada")
    t.radio(key=KEYS.kind).set_value("alpha").run()
    t.selectbox(key=KEYS.key).set_value(2).run()
    ask(t, "alpha", 1)
    a.run()
    a.slider(key=state.item(KEYS.answer, "q1")).set_value(0.25)
    a.button[[x.label for x in a.button].index("Send")].click().run()
    h.no_errors(a)
    ask(t, "row", 0)
    a.run()
    for i, v in enumerate((2.0, 1.0, 1.0, 0.0)):
        a.number_input(key=state.item(KEYS.answer, "q2", i)).set_value(v)
    a.button[[x.label for x in a.button].index("Send")].click().run()
    h.no_errors(a)
    rows = {r["qid"]: r["value"] for r in compute.class_store().answers(code)}
    assert rows == {"q1": 0.25, "q2": [0.5, 0.25, 0.25, 0.0]}
    q1 = compute.class_store().record(code)["asked"][0]
    assert (q1["query"], q1["key"]) == (1, 2)


def test_a_store_that_cannot_be_opened_gets_a_message_not_a_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_LAB_STORE", str(tmp_path))  # a folder, not a file: SQLite cannot open it
    compute.class_store.clear()
    at = h.page(PAGE)
    at.button(key=KEYS.start).click().run()
    assert not at.exception
    assert any("cannot be reached" in e.value for e in at.error)
    assert [b for b in at.button if b.key == KEYS.start]  # the lobby stays


def follow(t, target: str, exercise: str | None = None):
    t.selectbox(key=KEYS.target).set_value(target).run()
    if exercise is not None:
        t.selectbox(key=KEYS.exercise).set_value(exercise).run()
    t.button(key=KEYS.follow).click().run()
    h.no_errors(t)


def test_a_students_playground_work_reaches_the_teacher_and_a_nameless_copy_the_class():
    t, code = teacher()
    a, b = student(code, "Ada"), student(code, "Bo")
    t.run()
    assert "No student has worked on the Playground yet." in texts(t)
    follow(t, "playground")
    a.run()  # Ada is taken to the Playground, and changes its tokens there
    h.no_errors(a)
    a.switch_page("app_pages/playground.py")  # (AppTest reruns the page it was told to, not the one switched to)
    a.text_input(key=state.SCENARIO.tokens).input("the cat sat down").run()
    h.no_errors(a)
    work = compute.class_store().students(code)
    sid = next(s for s, x in work.items() if x["name"] == "Ada")
    assert "work" in work[sid] and not any("work" in x for s, x in work.items() if s != sid)
    t.run()
    assert t.selectbox(key=state.item(KEYS.look, "named")).options == ["Ada"]  # only who has work (AppTest: labels)
    alone = tutorial.scenario_trace({"tokens": "the cat sat down"}, seed=0).weights.numpy()  # as the Playground has it
    assert alone.shape == (4, 4)
    shown = h.heat(t, state.item(KEYS.look, "map"))
    # the Playground's numbers, from core: both sides rounded to the 6 decimals the map keeps, so one unit of the last
    # place apart at most (two computations of the same weights differ in their last bits from CPU to CPU)
    assert shown == pytest.approx(alone.round(6), abs=SHOWN_TOL)
    assert h.ticks(t, state.item(KEYS.look, "map")) == ["0 the", "1 cat", "2 sat", "3 down"]
    t.button(key=KEYS.show).click().run()
    h.no_errors(t)
    shown_copy = compute.class_store().record(code)["shown"]
    assert shown_copy["query"] == work[sid]["work"]["query"] and "sid" not in shown_copy  # a copy, no name
    assert "A student's work" in texts(t)
    a.switch_page(PAGE).run()
    assert "A student's work" in texts(a) and "Ada" not in texts(a).replace("as **Ada**", "").replace("as Ada", "")
    b.run().switch_page(PAGE).run()  # a classmate's phone (on the class page) shows it, without the name
    h.no_errors(b)
    assert "A student's work" in texts(b) and "Ada" not in texts(b)
    assert h.heat(b, state.item(KEYS.show, "map")) == pytest.approx(alone.round(6), abs=SHOWN_TOL)
    a.switch_page("app_pages/playground.py").run()
    a.text_input(key=state.SCENARIO.tokens).input("a dog ran").run()  # the copy stays as it was shown
    assert compute.class_store().students(code)[sid]["work"]["query"] != shown_copy["query"]
    assert compute.class_store().record(code)["shown"]["query"] == shown_copy["query"]
    t.button(key=KEYS.hide).click().run()
    assert compute.class_store().record(code)["shown"] is None and "A student's work" not in texts(t)


def test_anonymised_the_work_picker_names_no_student():
    t, code = teacher()
    a = student(code, "Ada")
    follow(t, "playground")
    a.run().switch_page("app_pages/playground.py")
    a.text_input(key=state.SCENARIO.tokens).input("x y z").run()
    t.toggle(key=KEYS.anonymous).set_value(True).run()
    assert t.selectbox(key=state.item(KEYS.look, "anonymous")).options == ["Student 1"]  # (AppTest: the options as labelled)
    assert "Ada" not in texts(t)


def test_follow_me_to_one_exercise_says_which_on_the_students_lesson():
    t, code = teacher()
    a = student(code, "Ada")
    ex = tutorial.lesson("weighted-average").exercises[1]
    follow(t, "weighted-average", ex.id)
    assert "Exercise 2" in texts(t)  # where the class is now
    a.run()
    h.no_errors(a)
    asks = [i.value for i in a.info if "asks for" in i.value]
    assert asks == ["Your teacher asks for **exercise 2** of this lesson."]
    focus = [c for c in a.get("bidi_component") if c.key == state.item(state.TUTORIAL.panel, "focus")]
    assert len(focus) == 1 and ex.id in str(focus[0].proto)
