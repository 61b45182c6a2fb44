"""bench.live_class on real servers, small: five students join, follow the teacher, answer at once; every page went
where the teacher sent it, every answer was kept and counted on the dashboard, with no error. On one server (a SQLite
file) and on two replicas sharing a real redis-server, the teacher on one and the students on both. The teacher
reveals the answer: every phone draws it, in one run of its page."""

from __future__ import annotations

import asyncio
import math
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import live_class

STUDENTS = 5


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_small_class_follows_answers_and_is_counted(replicas):
    if replicas > 1 and shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/test.sh installs it with apt-get as root)")
    with ThreadPoolExecutor(1) as pool:  # its own event loop (another test's Playwright may hold one here)
        c = pool.submit(lambda: asyncio.run(live_class.one_class(STUDENTS, 2.0, 300.0, replicas))).result(timeout=900)
    assert c["errors"] == []
    assert c["answers"] == STUDENTS
    assert len(c["rss"]) == len(c["idle_cpu"]) == replicas
    assert len(c["follow"]) == STUDENTS and not any(math.isnan(x) for x in c["follow"])  # every page followed
    assert len(c["counted"]) == STUDENTS and not any(math.isnan(x) for x in c["counted"])  # every answer counted
    assert len(c["revealed"]) == STUDENTS and not any(math.isnan(x) for x in c["revealed"])  # every phone got the answer
    # a phone already on the class page draws the revealed answer in one run of its page: no second run to "follow"
    # to the page it is on (the first, cut at the frame, then started the page again: two runs per phone)
    assert c["reveal_runs"] == [1] * STUDENTS
