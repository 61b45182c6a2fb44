"""A class survives a server restart (SQLite): a student joins and answers on a real server, the server stops, a new
one starts on the same file, and the teacher's dashboard there counts the answer (websocket clients, no browser)."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from attention_lab import tutorial
from attention_lab.live import classes
from attention_lab.live.store import open_store
from bench import live_class, serve
from ui import state


async def _student_answers(url: str, code: str) -> list:
    s = await live_class.join(url, code, 0, 120.0)
    if s.find(state.item(state.LIVE.answer, "q1")) is None:  # the question drawn by the join's run
        raise AssertionError(f"no question on the student's page: {s.errors}")
    await live_class.answer(s, "q1", 1)
    await s.close()
    return s.errors


async def _teacher_counts(url: str, code: str, key: str) -> list[int]:
    t = live_class.Seat(url, 120.0)
    await t.connect()
    t.query_string = f"class={code}&key={key}&lang=en"
    run = await t.act(page=live_class.PAGE)
    await t.close()
    assert not run.errors, run.errors
    return [n for _, n in t.counts]


def test_a_class_and_its_answers_survive_a_server_restart(tmp_path):
    where = str(tmp_path / "classes.sqlite3")
    store = open_store(where)
    code, key = classes.start(store, time.time())
    classes.ask(store, code, classes.question("q1", "top", tutorial.scenario_trace({}, seed=0), 0), time.time())
    with ThreadPoolExecutor(1) as pool:  # an event loop of its own (another test's Playwright may hold this one)
        with serve.serve(env={"ATTN_LAB_STORE": where}, log=tmp_path / "before.log") as before:
            errors = pool.submit(lambda: asyncio.run(_student_answers(before.ws_url, code))).result(timeout=300)
        assert errors == []
        with serve.serve(env={"ATTN_LAB_STORE": where}, log=tmp_path / "after.log") as after:  # a new process
            counts = pool.submit(lambda: asyncio.run(_teacher_counts(after.ws_url, code, key))).result(timeout=300)
    assert counts == [1]  # "1 of 1 students answered." on the new server's dashboard
    assert [r["value"] for r in open_store(where).answers(code)] == [1]
