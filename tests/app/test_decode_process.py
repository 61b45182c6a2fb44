"""The decode scheduler in a process of its own (serving.decode_process): what a session reads is what the model writes
alone, whoever shares the batch; the child maps the server's weights (its memory file), it does not copy them; a
child that dies fails what it was writing and the next request starts another; the child ends with the server;
the line is bounded; a cancelled writing leaves and frees its pages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from serving import decode_process
from serving.decode_process import CHILD_ENV, ProcessScheduler
from serving.decoding import QueueFull, Request

from .test_decoding import CAPACITY, EOS_EARLY, PROMPTS, WAIT, model, pages, request, same_as_alone  # noqa: F401

if not decode_process.AVAILABLE:
    pytest.skip("the decoding process shares the weights through a Linux memory file (memfd)", allow_module_level=True)


def scheduler(model, **bounds) -> ProcessScheduler:  # noqa: F811 (model: the fixture's value)
    """With this process's torch threads: the same arithmetic as the reference written here alone (another thread
    count sums in another order, and a near tie may then choose another token)."""
    return ProcessScheduler(model, **({"cache_bytes": pages(model, 36), "capacity": CAPACITY, "abandoned_after": WAIT,
                                       "threads": torch.get_num_threads()} | bounds))


def until(fact, what: str) -> None:
    """Wait for ``fact()`` (a bound for a hung child, never a pace)."""
    deadline = time.monotonic() + WAIT
    while not fact():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_requests_written_in_the_process_equal_each_alone_joining_and_leaving(model):  # noqa: F811
    s = scheduler(model)
    try:
        sampling = [{}, {"temperature": 0.8, "seed": 3}, {"temperature": 1.0, "top_k": 20, "seed": 7}]
        lengths = (40, 6, 6)  # the first keeps the batch running while the late one joins (37 steps to go)
        ws = s.submit_many([request(model, p, n, **x) for p, n, x in zip(PROMPTS, lengths, sampling, strict=False)]
                           + [request(model, EOS_EARLY, 12)])  # one message: they start in the same step
        assert all(w.position in (0, 1) or w.done for w in ws)  # next in the line, or writing: never "no place"
        until(lambda: len(ws[0].steps) >= 3, "the batch writes")
        late = s.submit(request(model, PROMPTS[3], 5))  # joins the running batch
        assert all(w.wait(WAIT) for w in (*ws, late))
        for w, p, n, x in zip(ws, PROMPTS, lengths, sampling, strict=False):
            same_as_alone(model, w, p, n, **x)
        same_as_alone(model, ws[3], EOS_EARLY, 12)
        same_as_alone(model, late, PROMPTS[3], 5)
        assert ws[3].stopped == "eos" and min(w.batch for w in ws) >= 4 and late.batch >= 2  # shared steps
        assert s.submit(request(model, PROMPTS[0], 40)) is ws[0]  # a result kept: the same writing, not written again
        assert s.stats() == (0, 0) and s.free_pages == 36
    finally:
        s.close()


def test_the_child_maps_the_servers_weights_and_ends_when_closed(model):  # noqa: F811
    s = scheduler(model)
    pid = s.pid
    try:
        assert s.submit(request(model, PROMPTS[0], 2)).wait(WAIT)
        maps = open(f"/proc/{pid}/maps").read()
        assert "memfd:attention-lab-weights" in maps  # the server's memory file, mapped: not a copy
        with open(f"/proc/{pid}/environ", "rb") as f:  # its malloc gives large blocks back (decode_process.CHILD_ENV)
            env = dict(item.split(b"=", 1) for item in f.read().split(b"\0") if b"=" in item)
        for name, value in CHILD_ENV.items():
            assert env[name.encode()] == os.environ.get(name, value).encode()
    finally:
        s.close()
    assert s.pid is None and not os.path.exists(f"/proc/{pid}")  # it left when asked, and close() reaped it


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/status") as f:
        return next(line for line in f if line.startswith("State:"))


def test_a_child_that_dies_fails_its_writings_and_the_next_request_starts_another(model):  # noqa: F811
    s = scheduler(model)
    try:
        w = s.submit(request(model, PROMPTS[0], 60))
        until(lambda: w.steps, "the child writes")
        first = s.pid
        os.kill(first, signal.SIGKILL)
        assert w.wait(WAIT) and w.stopped == "error"
        nxt = s.submit(request(model, PROMPTS[1], 4))
        assert nxt.wait(WAIT) and s.pid != first
        same_as_alone(model, nxt, PROMPTS[1], 4)
    finally:
        s.close()


def test_the_child_ends_with_the_server():
    """A server killed outright (SIGKILL: no clean-up runs) leaves no decoding process behind."""
    code = ("import sys, time; from core import pretrained; from serving.decode_process import ProcessScheduler\n"
            "m = pretrained.smollm2()\n"
            "s = ProcessScheduler(m, cache_bytes=64 * 2**20, capacity=96)\n"
            "print(s.pid, flush=True); time.sleep(600)\n")
    server = subprocess.Popen([sys.executable, "-c", code], cwd=decode_process.ROOT, stdout=subprocess.PIPE, text=True)
    try:
        child = int(server.stdout.readline())
        server.kill()
        server.wait(WAIT)
        until(lambda: not os.path.exists(f"/proc/{child}/status") or "Z" in _state(child), "the child ends")
    finally:
        server.kill()


def test_the_line_is_bounded_and_a_cancelled_writing_frees_its_pages(model):  # noqa: F811
    """(A writing nobody asks about leaves the same way, after abandoned_after: tests/app/test_decoding.py with a
    clock of its own, and the real server's test of a student who closes the tab.)"""
    s = scheduler(model, max_batch=1, max_waiting=1)
    try:
        first = s.submit(request(model, PROMPTS[0], 64))
        second = s.submit(request(model, PROMPTS[1], 64))  # waits behind it (a batch of one)
        with pytest.raises(QueueFull, match="1 requests are waiting"):
            s.submit(request(model, PROMPTS[2], 2))
        s.cancel(first)
        s.cancel(second)
        assert first.wait(WAIT) and second.wait(WAIT)
        assert first.stopped == second.stopped == "cancelled" and len(first.steps) < 64
        until(lambda: s.stats() == (0, 0), "the line empties")
        assert s.free_pages == 36 and s.find(first.request) is None
        with pytest.raises(ValueError, match="do not fit 96 positions"):
            s.submit(Request(ids=(1,) * 90, n_new=7))
    finally:
        s.close()
