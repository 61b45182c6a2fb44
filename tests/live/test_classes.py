"""A live class without a browser: codes and keys, nicknames, questions graded from core's numbers, the
last answer counting, the rate limit, tallies, the exercise grid, the export, and ending a class."""

from __future__ import annotations

import csv
import io

import pytest
import torch

from attention_lab import tutorial
from attention_lab.live import classes as cl
from attention_lab.live.store import SQLiteStore

T0 = 1_900_000_000.0  # a fixed "now" (the class lives 12 h from it)


@pytest.fixture
def store(tmp_path):
    return SQLiteStore(tmp_path / "classes.sqlite3")


@pytest.fixture
def lt():
    return tutorial.scenario_trace({}, seed=0)  # the default scenario's numbers, as the Playground draws them


def _class(store) -> tuple[str, str]:
    return cl.start(store, T0)


def test_a_join_code_has_six_characters_without_look_alikes(store):
    assert not set("ILO01") & set(cl.CODE_ALPHABET)
    code, key = _class(store)
    assert len(code) == 6 and set(code) <= set(cl.CODE_ALPHABET)
    assert len(key) >= 22  # 16 random bytes, URL-safe base64: 128 bits
    assert cl.read_code(code.lower()[:3] + " - " + code[3:]) == code
    assert [cl.read_code(x) for x in ("ABC23", "ABC2345", "ABCD1O", "", None, "<b>AB</b>")] == [None] * 6


def test_only_the_teacher_key_opens_the_dashboard(store):
    code, key = _class(store)
    assert cl.is_teacher(store, code, key, T0)
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert not any(cl.is_teacher(store, code, k, T0) for k in (tampered, "", None, key * 3, "x" * 22))
    other, _ = _class(store)
    assert not cl.is_teacher(store, other, key, T0)  # one class's key opens no other
    assert not cl.is_teacher(store, code, key, T0 + cl.ttl_s() + 1)  # nor a class past its time


def test_nicknames_are_kept_as_text_and_bounded():
    assert cl.read_nickname("  <img src=x onerror=1> ") == "<img src=x onerror=1>"
    assert cl.read_nickname("Ada\u0000\u200b Lovelace\n") == "Ada Lovelace"
    assert cl.read_nickname("김" * 24) == "김" * 24
    for bad, reason in (("", "nick_empty"), ("   ", "nick_empty"), (None, "nick_empty"), ("x" * 25, "nick_long")):
        with pytest.raises(cl.Refused) as e:
            cl.read_nickname(bad)
        assert e.value.reason == reason


def test_a_student_who_comes_back_is_the_same_student(store, lt):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    cl.ask(store, code, cl.question("q1", "top", lt, 0), T0)
    cl.submit(store, code, "student-0001", 1, T0 + 1)
    cl.join(store, code, "student-0001", "Ada L.", T0 + 60)  # a reload: the same id from the browser
    students = store.students(code)
    assert list(students) == ["student-0001"] and students["student-0001"]["name"] == "Ada L."
    assert students["student-0001"]["joined"] == T0 and len(store.answers(code)) == 1


def test_a_code_that_does_not_exist_or_a_class_that_ended_is_refused(store):
    with pytest.raises(cl.Refused, match="no_class"):
        cl.join(store, "ABC234", "student-0001", "Ada", T0)
    code, _ = _class(store)
    cl.end(store, code)
    with pytest.raises(cl.Refused, match="no_class"):
        cl.join(store, code, "student-0001", "Ada", T0)


def test_a_full_class_takes_no_new_student_but_keeps_its_own(store, monkeypatch):
    monkeypatch.setattr(cl, "MAX_STUDENTS", 2)
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "A", T0)
    cl.join(store, code, "student-0002", "B", T0)
    with pytest.raises(cl.Refused, match="class_full"):
        cl.join(store, code, "student-0003", "C", T0)
    cl.join(store, code, "student-0002", "B again", T0)  # one already in comes back


def test_the_right_answers_are_the_weights_the_model_computes(lt):
    """The question's truth is the row of weights core computes for the scenario on the teacher's screen."""
    for q in range(len(lt.q_tokens)):
        row = lt.weights[q]
        top = cl.question("q", "top", lt, q)
        assert top["row"] == pytest.approx(row.tolist(), abs=0) and sum(top["row"]) == pytest.approx(1.0, abs=1e-6)
        assert top["top"] == [i for i, w in enumerate(row.tolist()) if w >= float(row.max()) - 1e-6]  # ties: each is right
        assert int(torch.argmax(row)) in top["top"]
        assert cl.question("q", "alpha", lt, q, 2)["alpha"] == pytest.approx(float(row[2]), abs=0)
    with pytest.raises(cl.Refused):
        cl.question("q", "alpha", lt, 0, len(lt.k_tokens))
    with pytest.raises(cl.Refused):
        cl.question("q", "guess", lt, 0)
    with pytest.raises(cl.Refused):  # the scenario changed under the teacher's choice
        cl.question("q", "top", lt, len(lt.q_tokens))


def test_answers_are_graded_against_the_model(lt):
    top, alpha, row = (cl.question("q", k, lt, 1, 2) for k in cl.KINDS)
    best = top["top"][0]
    assert cl.grade(top, best) == (best, True) and cl.grade(top, (best + 1) % 4)[1] is False
    a = alpha["alpha"]
    assert cl.grade(alpha, a + 0.04)[1] and not cl.grade(alpha, min(1.0, a + 0.06) if a < 0.9 else a - 0.06)[1]
    assert cl.grade(row, [w * 10 for w in row["row"]])[1]  # any scale: spread to sum 1
    spread, right = cl.grade(row, [1, 0, 0, 0])
    assert spread == [1.0, 0.0, 0.0, 0.0] and right is (max(abs(x - y) for x, y in zip(spread, row["row"], strict=True)) <= 0.1)
    for q, bad in ((top, 4), (top, -1), (top, True), (top, 1.5), (top, "x"), (alpha, float("nan")), (alpha, 1.2),
                   (alpha, "inf"), (row, [0, 0, 0, 0]), (row, [1, 1]), (row, [1, -1, 1, 1]), (row, "1234")):
        with pytest.raises(cl.Refused, match="bad_answer"):
            cl.grade(q, bad)
    with pytest.raises(cl.Refused, match="no_answer"):  # sent before choosing
        cl.grade(top, None)


def test_the_last_answer_counts_and_a_closed_question_takes_none(store, lt):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    with pytest.raises(cl.Refused, match="closed"):
        cl.submit(store, code, "student-0001", 0, T0)  # no question yet
    q = cl.question("q1", "top", lt, 0)
    cl.ask(store, code, q, T0)
    wrong = next(i for i in range(4) if i not in q["top"])
    assert cl.submit(store, code, "student-0001", wrong, T0 + 1) is False
    assert cl.submit(store, code, "student-0001", q["top"][0], T0 + 2) is True
    rows = store.answers(code)
    assert len(rows) == 1 and rows[0]["value"] == q["top"][0] and rows[0]["right"]
    record = store.record(code)
    store.put_record(code, record | {"revealed": True})
    with pytest.raises(cl.Refused, match="closed"):
        cl.submit(store, code, "student-0001", wrong, T0 + 3)
    assert store.answers(code)[0]["value"] == q["top"][0]
    with pytest.raises(cl.Refused, match="not_joined"):
        store.put_record(code, record)
        cl.submit(store, code, "student-9999", 0, T0 + 4)


def test_more_than_two_answers_a_second_are_refused(store, lt):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    cl.ask(store, code, cl.question("q1", "alpha", lt, 0, 1), T0)
    cl.submit(store, code, "student-0001", 0.1, T0 + 0.1)
    cl.submit(store, code, "student-0001", 0.2, T0 + 0.5)
    with pytest.raises(cl.Refused, match="too_fast"):
        cl.submit(store, code, "student-0001", 0.3, T0 + 0.9)
    assert store.answers(code)[0]["value"] == 0.2  # the refused one changed nothing
    cl.submit(store, code, "student-0001", 0.4, T0 + 1.2)  # a second after the first: taken again


def test_a_refused_answer_leaves_the_previous_one_and_the_message_says_so(store, lt):
    """Too fast: the refused answer is never stored, the previous one stands, and the student is told exactly that
    (the old message said "your last answer counts", which reads as the refused one)."""
    import json
    from pathlib import Path

    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    cl.ask(store, code, cl.question("q1", "alpha", lt, 0, 1), T0)
    cl.submit(store, code, "student-0001", 0.1, T0 + 0.1)
    cl.submit(store, code, "student-0001", 0.2, T0 + 0.5)
    with pytest.raises(cl.Refused, match="too_fast"):
        cl.submit(store, code, "student-0001", 0.9, T0 + 0.6)
    assert [a["value"] for a in store.answers(code)] == [0.2]
    i18n = Path(__file__).resolve().parents[2] / "assets" / "i18n"
    en, ko = (json.loads((i18n / f"{lang}.live.json").read_text(encoding="utf-8"))["live.err.too_fast"] for lang in ("en", "ko"))
    assert "not recorded" in en and "previous answer stands" in en and "last answer counts" not in en
    assert "기록되지 않았고" in ko and "앞서 보낸 답이 그대로" in ko and "마지막 답이 기록됩니다" not in ko


def test_the_tally_counts_the_class(store, lt):
    code, _ = _class(store)
    sids = [f"student-{i:04d}" for i in range(5)]
    for s in sids:
        cl.join(store, code, s, s, T0)
    top = cl.question("q1", "top", lt, 0)
    cl.ask(store, code, top, T0)
    for s, v in zip(sids, (0, 1, 1, 3, 1), strict=True):
        cl.submit(store, code, s, v, T0 + 1)
    t = cl.tally(top, store.answers(code))
    assert t["counts"] == [1, 3, 0, 1] and t["n"] == 5
    assert t["right"] == sum(c for i, c in enumerate(t["counts"]) if i in top["top"])
    alpha = cl.question("q2", "alpha", lt, 0, 1)
    cl.ask(store, code, alpha, T0 + 10)
    for s, v in zip(sids, (0.05, 0.15, 0.2, 0.99, 1.0), strict=True):
        cl.submit(store, code, s, v, T0 + 11)
    t = cl.tally(alpha, store.answers(code))
    assert t["bins"] == [1, 1, 1, 0, 0, 0, 0, 0, 0, 2] and t["median"] == 0.2 and t["least"] == 0.05
    assert t["mean"] == pytest.approx((0.05 + 0.15 + 0.2 + 0.99 + 1.0) / 5)
    row = cl.question("q3", "row", lt, 0)
    cl.ask(store, code, row, T0 + 20)
    cl.submit(store, code, sids[0], [1, 0, 0, 0], T0 + 21)
    cl.submit(store, code, sids[1], [0, 1, 0, 1], T0 + 21)
    assert cl.tally(row, store.answers(code))["mean_row"] == pytest.approx([0.5, 0.25, 0.0, 0.25])


def test_anonymous_names_follow_the_order_of_joining(store):
    code, _ = _class(store)
    cl.join(store, code, "student-0002", "Bo", T0 + 1)
    cl.join(store, code, "student-0001", "Ada", T0)
    students = store.students(code)
    assert cl.names(students, False, "en") == {"student-0001": "Ada", "student-0002": "Bo"}
    assert cl.names(students, True, "en") == {"student-0001": "Student 1", "student-0002": "Student 2"}
    assert cl.names(students, True, "ko")["student-0002"] == "학생 2"


def test_exercises_answered_in_class_make_the_grid_and_the_common_mistakes(store):
    code, _ = _class(store)
    for s in ("student-0001", "student-0002", "student-0003"):
        cl.join(store, code, s, s, T0)
    cl.report_exercise(store, code, "student-0001", "l3.sqrt_dk", False, "l3.sqrt_dk.divided_by_d", "2", T0)
    cl.report_exercise(store, code, "student-0002", "l3.sqrt_dk", False, "l3.sqrt_dk.divided_by_d", "2", T0 + 0.5)
    cl.report_exercise(store, code, "student-0003", "l1.weight", True, "common.right", "0.3", T0 + 1)
    cl.report_exercise(store, code, "student-0001", "l3.sqrt_dk", True, "common.right", "4", T0 + 2)
    ids, grid, wrong = cl.exercise_grid(store.answers(code))
    assert ids == ["l3.sqrt_dk", "l1.weight"]
    assert grid == {"student-0001": {"l3.sqrt_dk": True}, "student-0002": {"l3.sqrt_dk": False},
                    "student-0003": {"l1.weight": True}}
    # the diagnoses of the wrong answers kept (the last answer counts: student 1's was replaced by a right one)
    assert wrong == [("l3.sqrt_dk|l3.sqrt_dk.divided_by_d", 1)]


def test_the_export_has_a_row_per_student_and_question_in_the_teachers_language(store, lt):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "=HYPERLINK(\"x\")", T0)
    q = cl.question("q1", "top", lt, 0)
    cl.ask(store, code, q, T0)
    cl.submit(store, code, "student-0001", q["top"][0], T0 + 1)
    rows = list(csv.reader(io.StringIO(cl.export_csv(store.record(code), store.students(code), store.answers(code), "ko"))))
    assert rows[0] == ["학생", "질문", "시각 (UTC)", "답", "맞음"]
    name, question, when, answer, right = rows[1]
    assert name == "'=HYPERLINK(\"x\")"  # a spreadsheet shows it; it does not run it
    assert lt.q_tokens[0] in question and answer == lt.k_tokens[q["top"][0]] and right == "예"
    assert when == "2030-03-17 17:46:41"


def test_ending_a_class_deletes_it(store, lt):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    cl.ask(store, code, cl.question("q1", "top", lt, 0), T0)
    cl.submit(store, code, "student-0001", 0, T0 + 1)
    cl.end(store, code)
    assert [store.count(p, code) for p in ("classes", "students", "answers")] == [0, 0, 0]


def test_the_time_to_live_setting_is_bounded(monkeypatch):
    for value, hours in (("12", 12), ("0", 1 / 12), ("1e9", 168), ("nan", 12), ("soon", 12)):
        monkeypatch.setenv(cl.TTL_ENV, value)
        assert cl.ttl_s() == pytest.approx(hours * 3600)


def test_past_the_limit_no_new_class_starts(store, monkeypatch):
    monkeypatch.setattr(cl, "MAX_CLASSES", 2)
    _class(store), _class(store)
    with pytest.raises(cl.Refused, match="too_many_classes"):
        _class(store)


def test_a_students_work_is_kept_with_the_student_and_bounded(store):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    query = {"tokens": "the cat sat", "score": "scaled_dot"}
    cl.save_work(store, code, "student-0001", query, 7, T0 + 5)
    assert store.students(code)["student-0001"]["work"] == {"query": query, "seed": 7, "at": T0 + 5}
    cl.join(store, code, "student-0001", "Ada L.", T0 + 9)  # a reload keeps the work
    assert store.students(code)["student-0001"]["work"]["seed"] == 7
    for bad_query, bad_seed in ((query, -1), (query, True), (query, 2**31), ({"x": 1}, 0), ([], 0),
                                ({"x": "y" * cl.WORK_MAX_BYTES}, 0)):
        assert cl.read_work(bad_query, bad_seed) is None
        with pytest.raises(cl.Refused, match="work_big"):
            cl.save_work(store, code, "student-0001", bad_query, bad_seed, T0 + 10)
    with pytest.raises(cl.Refused, match="not_joined"):
        cl.save_work(store, code, "student-0002", query, 0, T0 + 10)
    with pytest.raises(cl.Refused, match="no_class"):
        cl.save_work(store, "ABC234", "student-0001", query, 0, T0 + 10)


def test_a_shown_work_is_a_nameless_copy_frozen_when_shown(store):
    code, _ = _class(store)
    cl.join(store, code, "student-0001", "Ada", T0)
    cl.join(store, code, "student-0002", "Grace", T0)
    with pytest.raises(cl.Refused, match="no_work"):
        cl.show_work(store, code, "student-0002", T0 + 1)
    cl.save_work(store, code, "student-0001", {"tokens": "a b"}, 3, T0 + 2)
    cl.show_work(store, code, "student-0001", T0 + 3)
    shown = store.record(code)["shown"]
    assert shown == {"query": {"tokens": "a b"}, "seed": 3, "at": T0 + 3}
    assert "Ada" not in repr(shown) and "student-0001" not in repr(shown)
    cl.save_work(store, code, "student-0001", {"tokens": "c d"}, 4, T0 + 4)  # the student goes on working
    assert store.record(code)["shown"]["query"] == {"tokens": "a b"}  # the class still sees the copy
    cl.show_work(store, code, None, T0 + 5)
    assert store.record(code)["shown"] is None
