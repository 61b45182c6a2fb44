"""bench.classroom on a real server: a 10-second lesson of 3 sessions (Streamlit's websocket protocol, no
browser) in which no action is skipped, every change it can check holds the value sent, and nothing
fails. The bench once went on silently while every action after a token change was skipped."""

from __future__ import annotations

import asyncio
import random
from concurrent.futures import ThreadPoolExecutor

import pytest
from streamlit.proto.Checkbox_pb2 import Checkbox

from bench import classroom

SESSIONS = 3


def lesson(argv: list[str]) -> dict:
    """One bench run; its event loop in a thread of its own (another test's Playwright may hold one here)."""
    args = classroom.parse(argv)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(classroom.classroom(args))).result(timeout=600)


@pytest.mark.slow
def test_a_short_lesson_of_three_sessions_skips_nothing_and_every_change_is_applied():
    r = lesson(["--sessions", str(SESSIONS), "--duration", "10", "--actions", "50", "--think", "0.2", "1.0",
                "--ramp", "1", "--linger", "1"])
    assert classroom.problems(r) == [], classroom.problems(r)
    assert r["applied"].get("open") == SESSIONS  # every session reached the Playground
    assert r["applied"].get("burst") == SESSIONS  # and its tokens were shown back after the burst
    during = {a: n for a, n in r["applied"].items() if a not in ("open", "burst")}
    assert sum(during.values()) >= SESSIONS, r["applied"]  # the lesson's own actions were checked too
    assert r["metrics_after"].get("active_sessions") == 0, r["metrics_after"]


def test_a_change_the_run_did_not_apply_is_counted_and_fails_the_run():
    rec = classroom.Recorder()
    student = classroom.Student(0, "ws://127.0.0.1:1/_stcore/stream", classroom.parse([]), rec, random.Random(0))
    box = classroom.Widget("$$ID-abc-scenario.causal", "scenario.causal", "checkbox", Checkbox(set_value=True, value=False), "")
    student.client.last_run = {box.id: box}
    student.check_value("causal", box, True)  # sent True, the run drew it unticked
    student.check_value("causal", box, False)
    assert rec.unapplied == {"causal": 1} and rec.applied == {"causal": 1}
    unset = classroom.Widget(box.id, box.key, "checkbox", Checkbox(), "")
    student.client.last_run = {box.id: unset}  # drawn as the browser holds it: nothing to check
    student.check_value("causal", box, True)
    assert rec.unchecked == {"causal": 1}
    result = {"skipped": {"score: widget not found": 2}, "unapplied": dict(rec.unapplied), "errors_total": 0,
              "error_samples": [], "server_log_tracebacks": 0, "sessions_alive_at_end": 3, "sessions": 3,
              "unresolved_refs": 0}
    assert classroom.problems(result) == ["skipped: score: widget not found ×2", "unapplied: causal ×1"]
