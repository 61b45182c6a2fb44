r"""A live class: join codes and teacher keys, students, the teacher's questions and their answers, the
tutorial's exercises answered in class, and the tallies and export of it all. No Streamlit; kept in a
:mod:`.store` (a class's record is a JSON object, see :func:`blank_record`).

The right answer to a question is computed once, when the teacher asks it, from the scenario on the
teacher's screen, by core (``attention_lab.tutorial.scenario_trace``: ``scenario.build`` →
``core.lab.playground``): the weights row α_q· = softmax(score(q, k_·)/scale) of the query asked about.

* ``top``: which key gets the most weight from query q? (answer: a key index; right: one of the largest)
* ``alpha``: estimate α_qk (answer: a number in [0, 1]; right: within :data:`ALPHA_TOLERANCE`)
* ``row``: spread 1.0 over the keys of query q (answer: one number ≥ 0 per key, scaled to sum to 1;
  right: every key within :data:`ROW_TOLERANCE` of the model's weight)

A student's **work** is the scenario on their Playground (its link's parameters and the seed), kept with the
student as they change it (:func:`save_work`). The teacher looks at it and may **show** a copy of it to the class
(:func:`show_work`): the copy is frozen at that moment and carries no name.
"""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import math
import os
import secrets
import unicodedata
from collections import Counter
from datetime import UTC, datetime

from core import tolerances

from ..strings import translate

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no I, L, O, 0, 1: nothing to misread on a projector
CODE_LENGTH = 6
KEY_BYTES = 16  # the teacher key: 128 random bits
NICK_MAX = 24
MAX_STUDENTS = 100  # per class
MAX_CLASSES = 50  # live classes per store
MAX_QUESTIONS = 200  # questions a class keeps (for its export)
TTL_ENV = "ATTN_LAB_CLASS_TTL_H"
DEFAULT_TTL_H = 12.0
RATE_WINDOW_S, RATE_MAX = 1.0, 2  # at most 2 answers a second from one student
ALPHA_TOLERANCE = tolerances.CLASS_ALPHA
ROW_TOLERANCE = tolerances.CLASS_ROW
KINDS = ("top", "alpha", "row")
WORK_MAX_BYTES = 8_000  # a student's scenario as kept: a link's parameters (scenario.LINK_BYTES) and a little more
EXERCISE_PREFIX = "ex:"


class Refused(ValueError):
    """What a class cannot take, by reason: a key of the ``live.err.<reason>`` strings."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def ttl_s() -> float:
    """A class's time to live, in seconds (``ATTN_LAB_CLASS_TTL_H`` hours, 12 unless set; 5 min to 7 days)."""
    try:
        hours = float(os.environ.get(TTL_ENV, DEFAULT_TTL_H))
    except ValueError:
        hours = DEFAULT_TTL_H
    hours = DEFAULT_TTL_H if not math.isfinite(hours) else min(max(hours, 1 / 12), 24 * 7)
    return hours * 3600


# ---------------------------------------------------------------------------- codes, keys, names
def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def read_code(text) -> str | None:
    """A join code as typed ("abc 234", "ABC-234") → "ABC234", or None when it cannot be one."""
    if not isinstance(text, str):
        return None
    code = "".join(ch for ch in text.upper() if ch not in " -")[:64]
    return code if len(code) == CODE_LENGTH and all(ch in CODE_ALPHABET for ch in code) else None


def _hash(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()


def new_sid() -> str:
    return secrets.token_urlsafe(12)


def read_sid(text) -> str | None:
    ok = isinstance(text, str) and 8 <= len(text) <= 32 and all(ch.isalnum() or ch in "-_" for ch in text)
    return text if ok else None


def read_nickname(text) -> str:
    """A nickname as it will be shown: control characters dropped, spaces collapsed; 1–24 characters
    (raises :class:`Refused` ``nick_empty`` / ``nick_long``). Markup stays text: pages escape it."""
    if not isinstance(text, str):
        raise Refused("nick_empty")
    clean = "".join(ch for ch in unicodedata.normalize("NFC", text) if unicodedata.category(ch)[0] != "C")
    clean = " ".join(clean.split())
    if not clean:
        raise Refused("nick_empty")
    if len(clean) > NICK_MAX:
        raise Refused("nick_long")
    return clean


# ---------------------------------------------------------------------------- a class
def blank_record(teacher_key: str, now: float, expires: float) -> dict:
    """A new class's record: the teacher key's hash, when it started and ends, the pacing (paused,
    ``follow``: None for free, ``{"page": "tutorial", "lesson": id}`` or ``{"page": "playground", "query": {…}}``),
    the question on screen (None or a question, :func:`question`), whether its answer is revealed, whether
    the projector shows names, every question asked (for the export), and the student work shown to the class
    (None or a nameless copy, :func:`show_work`)."""
    return {"teacher": _hash(teacher_key), "created": now, "expires": expires, "paused": False, "follow": None,
            "question": None, "revealed": False, "anonymous": False, "asked": [], "shown": None}


def start(store, now: float) -> tuple[str, str]:
    """A new class → (join code, teacher key). Refused ``too_many_classes`` past :data:`MAX_CLASSES`."""
    store.sweep(now)
    if len(store.codes(now)) >= MAX_CLASSES:
        raise Refused("too_many_classes")
    key = secrets.token_urlsafe(KEY_BYTES)
    for _ in range(50):
        code = new_code()
        if store.create(code, blank_record(key, now, now + ttl_s()), now + ttl_s()):
            return code, key
    raise Refused("too_many_classes")  # 31⁶ ≈ 8.9e8 codes: 50 collisions in a row do not happen


def live_record(store, code: str, now: float) -> dict:
    """The class's record, or Refused ``no_class`` (no such code, ended, or past its time)."""
    record = store.record(code) if code else None
    if record is None or record["expires"] <= now:
        raise Refused("no_class")
    return record


def is_teacher(store, code: str, key, now: float) -> bool:
    """Whether ``key`` opens the class's dashboard (a constant-time comparison of hashes)."""
    if not isinstance(key, str) or not 8 <= len(key) <= 64:
        return False
    try:
        record = live_record(store, code, now)
    except Refused:
        return False
    return hmac.compare_digest(record["teacher"], _hash(key))


def join(store, code: str, sid: str, nickname: str, now: float) -> str:
    """A student joins (or comes back: the same id keeps its answers) → the nickname as it will be shown."""
    live_record(store, code, now)
    name = read_nickname(nickname)
    students = store.students(code)
    if sid not in students and len(students) >= MAX_STUDENTS:
        raise Refused("class_full")
    before = students.get(sid, {})
    store.join(code, sid, before | {"name": name, "joined": before.get("joined", now), "stamps": before.get("stamps", [])})
    return name


def end(store, code: str) -> None:
    """End a class: its record, students and answers are deleted."""
    store.delete(code)


# ---------------------------------------------------------------------------- questions
def question(qid: str, kind: str, lt, query: int, key: int = 0) -> dict:
    """A question about query ``query`` of a scenario's numbers ``lt`` (a ``LessonTrace``: weights (n_q, n_k),
    row convention), with its right answer: the keys of the largest weight (``top``), α_qk (``alpha``),
    the whole row (``row``)."""
    if kind not in KINDS or not 0 <= query < lt.weights.shape[0] or not 0 <= key < lt.weights.shape[1]:
        raise Refused("bad_question")
    row = [float(w) for w in lt.weights[query].tolist()]  # (n_k,)
    best = max(row)
    return {"id": qid, "kind": kind, "query": int(query), "key": int(key), "q_token": lt.q_tokens[query],
            "q_tokens": list(lt.q_tokens),
            "k_tokens": list(lt.k_tokens), "row": row, "top": [i for i, w in enumerate(row) if best - w < tolerances.ANSWER_TIE],
            "alpha": row[key]}


def to_the_question(now: float) -> dict:
    """Follow me to the class page, new at ``now``: every student's page that is elsewhere goes there at its next
    check (a place equal to the last one would take nobody anywhere)."""
    return {"page": "live_class", "at": now}


def ask(store, code: str, q: dict, now: float) -> None:
    """Put a question on every student's screen (the previous one closes), and take every student to it."""
    record = live_record(store, code, now)
    record["asked"] = ([a for a in record["asked"] if a["id"] != q["id"]] + [q | {"at": now}])[-MAX_QUESTIONS:]
    record.update(question=q | {"at": now}, revealed=False, follow=to_the_question(now))
    store.put_record(code, record)


def reveal(store, code: str, now: float) -> None:
    """Reveal the answer to the question on screen: the same one write of the record a question is, taking every
    student to it the same way. Refused ``closed`` with no question."""
    record = live_record(store, code, now)
    if record["question"] is None:
        raise Refused("closed")
    store.put_record(code, record | {"revealed": True, "follow": to_the_question(now)})


def grade(q: dict, value) -> tuple[object, bool]:
    """A student's answer to ``q`` → (the answer as kept, right?). Refused ``bad_answer`` when it is not one."""
    if value is None:
        raise Refused("no_answer")
    try:
        if q["kind"] == "top":
            i = int(value)
            if isinstance(value, bool) or i != value or not 0 <= i < len(q["row"]):
                raise ValueError
            return i, i in q["top"]
        if q["kind"] == "alpha":
            x = float(value)
            if not (math.isfinite(x) and 0 <= x <= 1):
                raise ValueError
            return round(x, 4), abs(x - q["alpha"]) <= ALPHA_TOLERANCE + tolerances.SLACK
        if not isinstance(value, (list, tuple)):
            raise ValueError
        xs = [float(v) for v in value]
        total = sum(xs)
        if len(xs) != len(q["row"]) or not all(math.isfinite(x) and x >= 0 for x in xs) or not total > 0:
            raise ValueError
        spread = [round(x / total, 4) for x in xs]
        return spread, max(abs(a - b) for a, b in zip(spread, q["row"], strict=True)) <= ROW_TOLERANCE + tolerances.SLACK
    except (TypeError, ValueError, OverflowError):
        raise Refused("bad_answer") from None


def _stamp(store, code: str, sid: str, now: float) -> dict:
    """The student's record with this answer's time; Refused ``not_joined`` / ``too_fast`` (more than
    :data:`RATE_MAX` answers in :data:`RATE_WINDOW_S`)."""
    student = store.students(code).get(sid)
    if student is None:
        raise Refused("not_joined")
    recent = [s for s in student.get("stamps", []) if now - s < RATE_WINDOW_S]
    if len(recent) >= RATE_MAX:
        raise Refused("too_fast")
    return student | {"stamps": (recent + [now])[-RATE_MAX:]}


def submit(store, code: str, sid: str, value, now: float) -> bool:
    """A student's answer to the question on screen → right? The last answer counts; after the reveal
    (or with no question) Refused ``closed``."""
    record = live_record(store, code, now)
    q = record["question"]
    if q is None or record["revealed"]:
        raise Refused("closed")
    kept, right = grade(q, value)
    student = _stamp(store, code, sid, now)
    store.join(code, sid, student)
    store.answer(code, q["id"], sid, {"value": kept, "right": right, "at": now})
    return right


def report_exercise(store, code: str, sid: str, exercise_id: str, ok: bool, why: str, shown: str, now: float) -> None:
    """A tutorial exercise the student checked in class: right or wrong, the checker's diagnosis (the
    message key) and the answer as the student wrote it (at most 80 characters)."""
    live_record(store, code, now)
    student = _stamp(store, code, sid, now)
    store.join(code, sid, student)
    store.answer(code, EXERCISE_PREFIX + exercise_id, sid, {"value": str(shown)[:80], "right": bool(ok),
                                                          "why": str(why)[:80], "at": now})


# ---------------------------------------------------------------------------- a student's work
def read_work(query, seed) -> dict | None:
    """A scenario as kept: its link's parameters (names and values: short strings) and its seed, or None when
    it is not one or is over :data:`WORK_MAX_BYTES` (the store keeps nothing a link could not carry)."""
    if not isinstance(query, dict) or isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in query.items()):
        return None
    if sum(len(k) + len(v) + 2 for k, v in query.items()) > WORK_MAX_BYTES:
        return None
    return {"query": dict(query), "seed": seed}


def save_work(store, code: str, sid: str, query: dict, seed: int, now: float) -> None:
    """Keep the student's current scenario (the Playground's) with the student. Refused ``not_joined``, ``no_class``,
    ``work_big`` (not a scenario, or too large to keep)."""
    live_record(store, code, now)
    work = read_work(query, seed)
    if work is None:
        raise Refused("work_big")
    student = store.students(code).get(sid)
    if student is None:
        raise Refused("not_joined")
    store.join(code, sid, student | {"work": work | {"at": now}})


def show_work(store, code: str, sid: str | None, now: float) -> None:
    """Show a copy of a student's work to the class, frozen now and without the student's name (None: show
    nothing). Refused ``no_work`` when the student has none."""
    record = live_record(store, code, now)
    if sid is None:
        shown = None
    else:
        work = store.students(code).get(sid, {}).get("work")
        if work is None:
            raise Refused("no_work")
        shown = {"query": work["query"], "seed": work["seed"], "at": now}
    store.put_record(code, record | {"shown": shown})


# ---------------------------------------------------------------------------- what the projector shows
def tally(q: dict, rows: list[dict]) -> dict:
    """The class's answers to ``q``: how many; per key how many chose it (``top``); the estimates' mean,
    median, least and most and their count in ten bins of 0.1 (``alpha``); the mean row (``row``)."""
    values = [r["value"] for r in rows if r["qid"] == q["id"]]
    out: dict = {"n": len(values), "right": sum(1 for r in rows if r["qid"] == q["id"] and r["right"])}
    n_k = len(q["row"])
    if q["kind"] == "top":
        counts = Counter(values)
        out["counts"] = [counts.get(i, 0) for i in range(n_k)]
    elif q["kind"] == "alpha":
        xs = sorted(float(v) for v in values)
        out["bins"] = [sum(1 for x in xs if min(int(x * 10), 9) == b) for b in range(10)]
        if xs:
            mid = len(xs) // 2
            out |= {"mean": sum(xs) / len(xs), "median": xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2,
                    "least": xs[0], "most": xs[-1]}
    else:
        out["mean_row"] = [sum(v[i] for v in values) / len(values) for i in range(n_k)] if values else []
    return out


def names(students: dict[str, dict], anonymous: bool, lang: str) -> dict[str, str]:
    """What the projector calls each student: the nickname, or "Student 3" (by join order) when anonymised."""
    order = sorted(students, key=lambda s: (students[s].get("joined", 0), s))
    return {sid: translate("live.anon", lang, n=i + 1) if anonymous else students[sid]["name"]
            for i, sid in enumerate(order)}


def exercise_grid(rows: list[dict]) -> tuple[list[str], dict[str, dict[str, bool]], list[tuple[str, int]]]:
    """The tutorial's exercises answered in class → (exercise ids, in the order first answered;
    student → exercise → right at the last try; the wrong answers' diagnoses, most common first)."""
    ids: list[str] = []
    grid: dict[str, dict[str, bool]] = {}
    wrong: Counter = Counter()
    for r in rows:
        if not r["qid"].startswith(EXERCISE_PREFIX):
            continue
        ex = r["qid"][len(EXERCISE_PREFIX):]
        if ex not in ids:
            ids.append(ex)
        grid.setdefault(r["sid"], {})[ex] = bool(r["right"])
        if not r["right"]:
            wrong[(ex, r.get("why", ""))] += 1
    return ids, grid, [(f"{ex}|{why}", n) for (ex, why), n in wrong.most_common()]


def export_csv(record: dict, students: dict[str, dict], rows: list[dict], lang: str) -> str:
    """The class's answers, a row per student and question: nickname, question, time (UTC), answer, right;
    headers and question words in ``lang``."""
    asked = {q["id"]: q for q in record.get("asked", [])}
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow([translate(f"live.csv.{c}", lang) for c in ("student", "question", "time", "answer", "right")])
    for r in rows:
        q = asked.get(r["qid"])
        if q is not None:
            what = translate(f"live.q.{q['kind']}.short", lang, q=q["q_token"], k=q["k_tokens"][q["key"]])
        else:
            what = r["qid"]
        stamp = datetime.fromtimestamp(r["at"], UTC).strftime("%Y-%m-%d %H:%M:%S")
        value = r["value"]
        if q is not None and q["kind"] == "top" and isinstance(value, int) and 0 <= value < len(q["k_tokens"]):
            value = q["k_tokens"][value]
        shown = " ".join(f"{v:.2f}" for v in value) if isinstance(value, list) else value
        w.writerow([_cell(students.get(r["sid"], {}).get("name", "?")), _cell(what), stamp, _cell(shown),
                    translate("live.csv.yes" if r["right"] else "live.csv.no", lang)])
    return out.getvalue()


def _cell(value) -> str:
    """A CSV cell a spreadsheet will not run as a formula (=, +, -, @ at the start)."""
    text = str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text
