"""bench.live_class on a real server, small: five students join, follow the teacher, answer at once; every page went
where the teacher sent it, every answer was kept and counted on the dashboard, with no error."""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor

from bench import live_class

STUDENTS = 5


def test_a_small_class_follows_answers_and_is_counted():
    with ThreadPoolExecutor(1) as pool:  # its own event loop (another test's Playwright may hold one here)
        c = pool.submit(lambda: asyncio.run(live_class.one_class(STUDENTS, 2.0, 300.0))).result(timeout=900)
    assert c["errors"] == []
    assert c["answers"] == STUDENTS
    assert len(c["follow"]) == STUDENTS and not any(math.isnan(x) for x in c["follow"])  # every page followed
    assert len(c["counted"]) == STUDENTS and not any(math.isnan(x) for x in c["counted"])  # every answer counted
