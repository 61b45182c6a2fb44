"""bench.lm_class on a real server: forty students press "Write" at once on the language-model page (Streamlit's
websocket protocol, no browser). Every one gets its text written, with no error; they were written in shared
batches; the text grew on their pages as it was written; and what a student reads is what the model writes for its
prompt alone."""

from __future__ import annotations

import asyncio
import importlib.util
from concurrent.futures import ThreadPoolExecutor

import pytest

from bench import lm_class
from core import decoder, pretrained

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
