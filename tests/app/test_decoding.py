"""The server's decode scheduler (serving.decoding): requests written in one batch get exactly the tokens they get
alone (SmolLM2.generate: greedy and seeded sampling), whoever they share a step with, joining late or leaving
early; the line, the cache and the results are bounded; a request nobody asks about any more frees its slot."""

from __future__ import annotations

import importlib.util
import threading
import time

import pytest

from core import pretrained
from core.models import decoder
from core.models.decoder_batch import BatchCache
from serving.decoding import PAGE, QueueFull, Request, Scheduler

if importlib.util.find_spec(decoder.MODULE) is None:
    pytest.skip(f"the model package '{decoder.PACKAGE}' is not installed ({decoder.INSTALL_HINT})", allow_module_level=True)

PROMPTS = ["The capital of France is", "def add(a, b):\n    return", "나는 오늘 사과를", "1, 2, 3, 4,"]
EOS_EARLY = "<|im_start|>user\nWhat is 2+2? Answer with one number.<|im_end|>\n<|im_start|>assistant\n"  # ends after 6
CAPACITY = 96
WAIT = 600  # seconds: a bound for a hung thread, never a pace (each wait returns when its writing is done)
# Every scheduler here but the one of the abandonment test (a clock of its own) keeps a writing nobody asks about
# for WAIT seconds, not 30: with both cores busy, 40 tokens took more than 30 s, and the writing left mid-way.


@pytest.fixture(scope="module")
def model():
    return pretrained.smollm2()


@pytest.fixture
def scheduler(model):
    s = Scheduler(model, cache_bytes=pages(model, 36), capacity=CAPACITY, abandoned_after=WAIT)
    yield s
    s.close()


def pages(model, n: int) -> int:
    """The bytes of n pages of the batch cache."""
    return n * BatchCache.bytes_per_page(model.config, PAGE)


def request(model, text: str, n: int, **sampling) -> Request:
    return Request(ids=tuple(model.encode(text)), n_new=n, **sampling)


def alone(model, text: str, n: int, temperature=0.0, top_k=None, top_p=None, seed=0):
    return model.generate(text, n, temperature, top_k, top_p, seed)


def same_as_alone(model, w, text: str, n: int, **sampling) -> None:
    want = alone(model, text, n, **sampling)
    assert [s.token_id for s in w.steps] == want.token_ids
    assert w.stopped == want.stopped
    for got, exp in zip(w.steps, want.steps, strict=True):
        assert abs(got.chosen_prob - exp.chosen_prob) < 1e-4
        assert got.cache_positions == exp.cache_positions and got.cache_bytes == exp.cache_bytes
    last, exp = w.steps[-1].attention, want.steps[-1].attention  # (L, H, c): the page draws the newest step's
    assert last.shape == exp.shape and float((last - exp).abs().max()) < 1e-4


def test_four_requests_written_together_equal_each_alone(model, scheduler):
    sampling = [{}, {"temperature": 0.8, "seed": 3}, {"temperature": 1.0, "top_k": 20, "seed": 7},
                {"temperature": 0.7, "top_p": 0.9, "seed": 11}]
    ws = scheduler.submit_many([request(model, p, 6, **s) for p, s in zip(PROMPTS, sampling, strict=True)])
    assert all(w.wait(WAIT) for w in ws)
    assert max(w.batch for w in ws) == 4  # they did share steps
    for w, p, s in zip(ws, PROMPTS, sampling, strict=True):
        same_as_alone(model, w, p, 6, **s)


def test_joining_a_running_batch_and_leaving_it_at_the_end_token(model, scheduler):
    first = scheduler.submit_many([request(model, PROMPTS[0], 40), request(model, EOS_EARLY, 12)])
    deadline = time.monotonic() + WAIT
    while len(first[0].steps) < 3:  # the batch is running (37 steps to go): join it now
        assert time.monotonic() < deadline and not first[0].done
        time.sleep(0.01)
    late = scheduler.submit(request(model, PROMPTS[2], 5))
    assert all(w.wait(WAIT) for w in (*first, late))
    same_as_alone(model, first[0], PROMPTS[0], 40)
    same_as_alone(model, first[1], EOS_EARLY, 12)
    same_as_alone(model, late, PROMPTS[2], 5)
    assert first[1].stopped == "eos" and len(first[1].steps) < 12 and late.batch >= 2


def test_warming_up_leaves_the_cache_empty_and_the_writing_as_alone(model):
    s = Scheduler(model, cache_bytes=pages(model, 36), capacity=CAPACITY, autostart=False, abandoned_after=WAIT)
    try:
        waiting = s.submit(request(model, PROMPTS[1], 4))  # submitted before the warm-up: it waits, untouched
        s.warm()
        assert s.free_pages == 36 and not s.batches and waiting.position == 1 and not waiting.steps
        assert s._cache is not None and s._cache.lengths == {}  # its own sequence left
        threading.Thread(target=s.run, daemon=True).start()  # run() warms again, then writes
        assert waiting.wait(WAIT)
        same_as_alone(model, waiting, PROMPTS[1], 4)
        assert s.free_pages == 36 and list(s.batches) == [1] * 4  # only the request's own passes were counted
    finally:
        s.close()


def test_a_finished_writing_is_reported_before_the_pass_of_the_others(model):
    """The server hears of a writing that is done as soon as its last token is chosen, not a pass later (a pass of
    40 sequences takes 0.2 s): a report of size 0 names it done, and the others' pass is reported after it."""
    seen = []
    s = Scheduler(model, cache_bytes=pages(model, 36), capacity=CAPACITY, abandoned_after=WAIT, autostart=False,
                  on_report=lambda ws, size: seen.append((size, {w.request.n_new: w.done for w in ws})))
    s.submit_many([request(model, PROMPTS[0], 2), request(model, PROMPTS[1], 5)])
    s.start()
    assert s.find(request(model, PROMPTS[1], 5)).wait(WAIT)
    s.close()
    told = next(i for i, (_, ws) in enumerate(seen) if ws.get(2))  # the first report that names the short one done
    assert seen[told][0] == 0 and seen[told + 1][0] == 1, seen
    assert [size for size, _ in seen if size] == [2, 2, 1, 1, 1]  # the passes: both prompts, both, then the long one


def test_more_requests_than_the_batch_holds_wait_their_turn(model):
    s = Scheduler(model, cache_bytes=pages(model, 36), capacity=CAPACITY, max_batch=2, autostart=False,
                  abandoned_after=WAIT)
    try:
        ws = s.submit_many([request(model, p, 3) for p in PROMPTS])
        assert [w.position for w in ws] == [1, 2, 3, 4] and s.stats() == (0, 4)  # all in the line
        s.start()
        assert all(w.wait(WAIT) for w in ws)
        assert max(s.batches) == 2
        for w, p in zip(ws, PROMPTS, strict=True):
            same_as_alone(model, w, p, 3)
    finally:
        s.close()


def test_a_request_waits_until_the_pages_for_all_its_tokens_are_free(model):
    """Each request takes the pages for its prompt and every new token when it joins: with pages for one of them
    only, the second waits in the line (no overtaking by a smaller one) and the first never runs out."""
    n = 40  # a prompt of 6 tokens + 40 = 46 positions: 3 pages of 16; the cache holds 4
    s = Scheduler(model, cache_bytes=pages(model, 4), capacity=64, autostart=False, abandoned_after=WAIT)
    try:
        ws = s.submit_many([request(model, PROMPTS[0], n), request(model, PROMPTS[3], n), request(model, "Hi", 2)])
        s.start()
        assert all(w.wait(WAIT) for w in ws)
        assert max(s.batches) == 1 and s.free_pages == 4
        same_as_alone(model, ws[0], PROMPTS[0], n)
        same_as_alone(model, ws[1], PROMPTS[3], n)
    finally:
        s.close()


def test_an_abandoned_request_leaves_and_frees_its_pages(model):
    now = [0.0]
    s = Scheduler(model, cache_bytes=pages(model, 6), capacity=CAPACITY,
                  abandoned_after=30.0, clock=lambda: now[0])
    try:
        w = s.submit(request(model, PROMPTS[0], 60))
        deadline = time.monotonic() + WAIT
        while not w.steps:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        now[0] = 31.0  # no session has asked about it for 31 s (a closed tab)
        assert w.wait(WAIT)
        assert w.stopped == "cancelled" and len(w.steps) < 60
        assert s.stats() == (0, 0) and s.find(w.request) is None  # gone, not kept among the results
        assert s.free_pages == 6
        nxt = s.submit(request(model, PROMPTS[1], 2))  # its pages are free again
        assert nxt.wait(WAIT) and nxt.stopped == "length"
    finally:
        s.close()


def test_equal_requests_share_one_writing_and_the_bounds_hold(model):
    s = Scheduler(model, cache_bytes=pages(model, 6), capacity=CAPACITY, max_batch=1, max_waiting=3, max_results=1,
                  autostart=False, abandoned_after=WAIT)
    try:
        a, b = s.submit_many([request(model, PROMPTS[0], 2), request(model, PROMPTS[0], 2)])
        assert a is b and s.stats() == (0, 1)
        with pytest.raises(QueueFull, match="3 requests are waiting"):
            s.submit_many([request(model, p, 2) for p in PROMPTS[1:]])
        s.start()
        with pytest.raises(ValueError, match="do not fit 96 positions"):
            s.submit(Request(ids=(1,) * 90, n_new=7))
        with pytest.raises(ValueError, match="do not hold one request"):
            Scheduler(model, cache_bytes=1000, capacity=CAPACITY)
        for w in (a, *[s.find(request(model, p, 2)) for p in PROMPTS[1:3]]):
            assert w is not None and w.wait(WAIT)
        assert s.find(request(model, PROMPTS[0], 2)) is None  # one result kept: the oldest went
    finally:
        s.close()


def test_the_allocator_gives_memory_back_once_each_time_the_writing_is_done(model, monkeypatch):
    """The passes' freed blocks go back to the system when the scheduler falls idle (a 40-writing class left Gemma 3's
    process 290 MB larger without it): once per idle spell, after every writing finished, never between passes."""
    import serving.decoding as decoding

    calls, called = [], threading.Event()

    def counted():
        calls.append([w.done for w in ws])
        called.set()

    monkeypatch.setattr(decoding, "give_back_memory", counted)
    s = Scheduler(model, cache_bytes=pages(model, 36), capacity=CAPACITY, abandoned_after=WAIT)
    try:
        ws = [s.submit(request(model, text, 6)) for text in PROMPTS[:2]]
        assert called.wait(WAIT) and all(w.wait(WAIT) for w in ws)
        assert calls == [[True, True]]  # once, with both done: none while a pass was due
        called.clear()
        ws = [s.submit(request(model, PROMPTS[2], 4))]
        assert called.wait(WAIT)
        assert calls == [[True, True], [True]]  # the next writing's idle spell: once more
    finally:
        s.close()
