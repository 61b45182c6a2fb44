"""The decode scheduler as sessions see it: one interface (``DecodeScheduler``) that the scheduler in a thread
(``serving.decoding.Scheduler``) and in a process of its own (``serving.decode_process.ProcessScheduler``) both
implement, the factory that chooses between them, and the loops a session runs while its writing is made.

A writing nobody asks about for ``abandoned_after`` seconds leaves the batch (a closed tab): a session that waits
for its writing asks again every ``ask_s`` seconds (:func:`wait` and :func:`follow`); pages only submit and read.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Protocol, runtime_checkable

import torch

from . import decode_process, decoding
from .decoding import Request, Writing


@runtime_checkable
class DecodeScheduler(Protocol):
    """What sessions call: submit requests, find them again (asking keeps a writing alive), cancel, read the counts."""

    def submit(self, request: Request) -> Writing:
        """The writing for ``request``: the one already waiting, running or done, or a new one in the line
        (``decoding.QueueFull`` when the line is full; ValueError when it does not fit)."""
        ...

    def submit_many(self, requests: list[Request]) -> list[Writing]:
        """:meth:`submit` each, all in the line before the next step begins (a class pressing at once)."""
        ...

    def find(self, request: Request) -> Writing | None:
        """The writing for ``request`` if one is waiting, running or kept; asking counts as being seen."""
        ...

    def cancel(self, writing: Writing) -> None:
        """Stop ``writing`` (it leaves the line or the batch at the next step)."""
        ...

    @property
    def free_pages(self) -> int | None:
        """Pages of the batch cache no sequence holds (None before the first report of a process)."""
        ...

    def stats(self) -> tuple[int, int]:
        """(writing now, waiting)."""
        ...

    def close(self) -> None:
        """Stop writing (and the process, if it has one)."""
        ...


def make(model, device: str, *, threads: int, **bounds) -> DecodeScheduler:
    """The server's scheduler for ``device``: on the CPU in a process of its own (its steps never wait for the
    sessions' GIL; Linux: ``decode_process.AVAILABLE``) with ``threads`` torch threads; on a GPU in a thread of the
    server. ``bounds``: the schedulers' keyword bounds (cache_bytes, capacity, max_batch, abandoned_after, …)."""
    if torch.device(device).type == "cpu" and decode_process.AVAILABLE:
        return decode_process.ProcessScheduler(model, threads=threads, **bounds)
    return decoding.Scheduler(model, device=device, **bounds)


def wait(scheduler: DecodeScheduler, request: Request, ask_s: float) -> Writing:
    """Submit ``request`` and wait until its writing is done, submitting again every ``ask_s`` seconds (still
    wanted: asking keeps it in the batch; a writing that left meanwhile is put in the line again)."""
    w = scheduler.submit(request)
    while not w.wait(ask_s):
        w = scheduler.submit(request)
    return w


def follow(scheduler: DecodeScheduler, writing: Writing, *, redraw_s: float, ask_s: float,
           clock: Callable[[], float] = time.monotonic) -> Iterator[tuple[int | None, int]]:
    """While ``writing`` is made: (its place in the line, its steps so far) each time they change, looked at every
    ``redraw_s`` seconds; every ``ask_s`` seconds the scheduler is asked about it (``find``: it stays in the
    batch). Ends when the writing is done."""
    shown, asked = None, clock()
    while not writing.wait(redraw_s):
        now = (writing.position, len(writing.steps))
        if now != shown:
            shown = now
            yield now
        if clock() - asked > ask_s:
            asked = clock()
            scheduler.find(writing.request)
