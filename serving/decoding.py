"""The server's one decode scheduler for the language-model page: continuous batching (the app side of
``core.models.decoder_batch``).

A class presses "Write" at once. Decoded one session at a time, every step of every student reads all the
weights again for one token. Here every request joins one running batch at the next step: one forward pass
writes the next token of every sequence in it (``core.models.decoder_batch.extend_batch``), finished sequences leave
and waiting ones take their pages; a joining prompt is prefilled in the same pass. Each request keeps
its own random generator, seeded as alone, and chooses its tokens with ``SmolLM2.choose`` as ``generate`` does,
so it writes what it writes alone (``tests/app/test_decoding.py``).

Bounds: the keys and values of every sequence at most ``cache_bytes`` (allocated once, in pages of 16 positions;
a request joins when the pages for its prompt and all its new tokens are free, so a batch never runs out of them);
at most ``max_batch`` sequences in a step; at most ``max_waiting`` requests waiting; the ``max_results`` most recent
results kept; a request whose session has not asked about it for ``abandoned_after`` seconds (a closed tab) leaves
and frees its pages.
Equal requests share one :class:`Writing`. The app holds one scheduler per process (``ui.compute``'s
``lm_scheduler``, made by ``serving.scheduler.make``); sessions reach it through ``serving.scheduler.DecodeScheduler``.
No streamlit import: the tests drive a scheduler directly.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

import torch

from core.models.decoder import Step
from core.models.decoder_batch import BatchCache, extend_batch
from core.models.plumbing import give_back_memory

from .log import server_log

log = logging.getLogger(__name__)
_said = server_log("attention_lab.decoding", "decoding")  # one line per writing that leaves unasked (a closed tab)
THREAD_NAME = "lm-decoding"
PAGE = 16  # positions per page of the batch cache
NO_ROW = torch.zeros(0)  # an older step's attention row, dropped


class QueueFull(RuntimeError):
    """Raised by :meth:`Scheduler.submit` when the waiting line is full."""


@dataclass(frozen=True)
class Request:
    """What a session asks for: ``n_new`` tokens after the prompt's token ids, chosen as ``SmolLM2.generate`` would."""

    ids: tuple[int, ...]
    n_new: int
    temperature: float = 0.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int = 0
    stop_at_eos: bool = True


class Writing:
    """One request as its sessions see it: the steps written so far, its place in the line, the batch it ran in."""

    def __init__(self, request: Request, now: float) -> None:
        self.request = request
        self.seen = now  # when a session last asked about it
        self.steps: list[Step] = []
        self.stopped: str | None = None  # "length", "eos", "cancelled", or "error"
        self.batch = 0  # the largest batch it was written in
        self.position: int | None = None  # 0 writing, k ≥ 1 with k − 1 ahead in the line, None when done
        self.finished = threading.Event()
        # the scheduler's own (its thread only)
        self._seq: int | None = None  # its sequence in the batch cache
        self._gen = torch.Generator(device="cpu").manual_seed(int(request.seed))
        self._logits: torch.Tensor | None = None  # (vocab,): the next token's
        self._attention: torch.Tensor | None = None  # (L, H, c): the row that predicted it

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)


class Scheduler:
    """Continuous batching over one :class:`core.models.decoder_batch.BatchCache` (module docstring); ``capacity``: the
    most positions one request may take (prompt + new tokens)."""

    def __init__(self, model, *, cache_bytes: int, capacity: int, max_batch: int = 64, max_waiting: int = 64,
                 max_results: int = 64, abandoned_after: float = 30.0, clock: Callable[[], float] = time.monotonic,
                 device: str = "cpu", autostart: bool = True,
                 on_report: Callable[[list[Writing], int], None] | None = None) -> None:
        pages = cache_bytes // BatchCache.bytes_per_page(model.config, PAGE)
        if pages * PAGE < capacity:
            raise ValueError(f"{cache_bytes} bytes do not hold one request of {capacity} positions")
        self.model, self.capacity, self.pages, self.max_batch = model, capacity, int(pages), max_batch
        self.max_waiting, self.max_results, self.abandoned_after = max_waiting, max_results, abandoned_after
        self._clock, self._device = clock, device
        self._cache: BatchCache | None = None  # made by the thread on its first request
        self._lock = threading.Condition()
        self._waiting: deque[Writing] = deque()
        self._running: list[Writing] = []
        self._results: OrderedDict[Request, Writing] = OrderedDict()
        self._thread: threading.Thread | None = None
        self._autostart = autostart  # False: the line fills until start() (the tests see it whole)
        self._closed = False
        self._on_report = on_report  # under the lock, after every step (the writings it touched, the batch's size) and
        # as soon as writings finish, before the pass of the others (those, 0)
        self._left: list[Writing] = []  # the writings that left since the last report
        self.batches: deque[int] = deque(maxlen=1000)  # the size of each recent step's batch (benchmarks)

    # -- what sessions call
    def submit(self, request: Request) -> Writing:
        """The writing for ``request``: the one already waiting, running or done, or a new one in the line."""
        if len(request.ids) + request.n_new > self.capacity or not request.ids or request.n_new < 1:
            raise ValueError(f"{len(request.ids)} + {request.n_new} tokens do not fit {self.capacity} positions")
        with self._lock:
            found = self._find(request)
            if found is not None:
                found.seen = self._clock()
                return found
            if len(self._waiting) >= self.max_waiting:
                raise QueueFull(f"{len(self._waiting)} requests are waiting")
            w = Writing(request, self._clock())
            self._waiting.append(w)
            self._positions()
            if self._autostart:
                self.start()
            self._lock.notify_all()
            return w

    def run(self) -> None:
        """Write in the calling thread until :meth:`close` (a process of its own: ``serving.decode_process``); made with
        ``autostart=False``, so that no other thread starts. It warms up first (:meth:`warm`)."""
        self.warm()
        self._loop()

    def warm(self) -> None:
        """One pass of two tokens and one step, on a sequence of its own that then leaves. The first pass of a fresh
        process is slow: it is the first to touch the weights' pages and every buffer. One prompt's took 0.56 s cold
        and 0.11–0.16 s after this (BENCHMARKS.md, "A warmed first pass"). Requests submitted meanwhile wait in
        the line. Leaves every page free and records no batch."""
        P, c = self.model.weights_on(self._device), self.model.config
        with self._lock:
            cache = self._make_cache()
            seq = cache.open(3)
        if seq is None:
            return
        try:
            with torch.no_grad():
                extend_batch([torch.arange(2)], [seq], cache, P, c)  # a prompt of two tokens: prefill
                extend_batch([torch.arange(1)], [seq], cache, P, c)  # one more: a decoding step
        finally:
            with self._lock:
                cache.release(seq)

    def start(self) -> None:
        """Start writing in a thread of its own (the first request does, unless made with ``autostart=False``)."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=THREAD_NAME, daemon=True)
                self._thread.start()

    def submit_many(self, requests: list[Request]) -> list[Writing]:
        """:meth:`submit` each, all in the line before the next step begins (a class pressing at once)."""
        with self._lock:  # re-entrant: the thread cannot take the line in between
            return [self.submit(r) for r in requests]

    def between_steps(self) -> threading.Condition:
        """The scheduler's re-entrant lock: ``with s.between_steps():`` makes several calls with no step begun in
        between (``serving.decode_process`` applies each of the server's messages whole)."""
        return self._lock

    def find(self, request: Request) -> Writing | None:
        """The writing for ``request`` if one is waiting, running or kept; asking counts as being seen."""
        with self._lock:
            w = self._find(request)
            if w is not None:
                w.seen = self._clock()
            return w

    def cancel(self, writing: Writing) -> None:
        """Stop ``writing`` (it leaves the line or the batch at the next step)."""
        with self._lock:
            writing.seen = -float("inf")
            self._lock.notify_all()

    @property
    def free_pages(self) -> int:
        """Pages of the batch cache no sequence holds."""
        with self._lock:
            return self.pages if self._cache is None else self._cache.pool.free

    def stats(self) -> tuple[int, int]:
        """(writing now, waiting)."""
        with self._lock:
            return len(self._running), len(self._waiting)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=60)

    # -- the thread
    def _find(self, request: Request) -> Writing | None:
        for w in (*self._running, *self._waiting):
            if w.request == request:
                return w
        w = self._results.get(request)
        if w is not None:
            self._results.move_to_end(request)
        return w

    def _positions(self) -> None:
        for w in self._running:
            w.position = 0
        for i, w in enumerate(self._waiting):
            w.position = i + 1

    def _finish(self, w: Writing, stopped: str) -> None:
        """Under the lock: ``w`` leaves (its pages freed); kept among the results unless cancelled."""
        w.stopped, w.position = stopped, None
        if w._seq is not None and self._cache is not None:
            self._cache.release(w._seq)
        w._seq, w._logits, w._attention = None, None, None
        if w in self._running:
            self._running.remove(w)
        self._left.append(w)
        if stopped in ("length", "eos"):
            self._results[w.request] = w
            while len(self._results) > self.max_results:
                self._results.popitem(last=False)
        w.finished.set()

    def _make_cache(self) -> BatchCache:
        """Under the lock: the batch cache, made once (its bytes are the bound; memory is touched as pages are written)."""
        if self._cache is None:
            P = self.model.weights_on(self._device)
            self._cache = BatchCache(self.model.config, self.pages, PAGE, device=P.device, dtype=P.dtype)
        return self._cache

    def _admit(self) -> list[Writing]:
        """Under the lock: drop the abandoned, then move waiting requests, in their order, into the batch while it
        has room and their pages are free → the ones to prefill."""
        now = self._clock()
        for w in [*self._running, *self._waiting]:
            if now - w.seen > self.abandoned_after:
                if w in self._waiting:
                    self._waiting.remove(w)
                self._finish(w, "cancelled")
                _said.info("a writing nobody asked about for %.1f s left after %d of %d tokens; %d of %d pages free",
                           now - w.seen, len(w.steps), w.request.n_new, self.free_pages, self.pages)
        if self._cache is None and self._waiting:
            self._make_cache()
        joining = []
        while self._waiting and len(self._running) < self.max_batch:
            r = self._waiting[0].request
            seq = self._cache.open(len(r.ids) + r.n_new)  # None: the first in line waits for pages (no overtaking)
            if seq is None:
                break
            w = self._waiting.popleft()
            w._seq = seq  # its prompt goes into the next pass (outside the lock)
            self._running.append(w)
            joining.append(w)
        self._positions()
        return joining

    def _loop(self) -> None:
        P, c = self.model.weights_on(self._device), self.model.config
        ran = False  # a pass ran since the allocator last gave memory back
        while True:
            with self._lock:
                idle = ran and not self._running and not self._waiting
            if idle:  # the class's writing is done: the passes' freed blocks back to the system, outside the lock
                give_back_memory()  # (Gemma 3's process after 40 writings: 544 → 253 MB anonymous, BENCHMARKS.md)
                ran = False
            with self._lock:
                while not self._closed and not self._running and not self._waiting:
                    self._lock.wait(timeout=5.0)
                if self._closed:
                    return
                joining = self._admit()
                running = list(self._running)
            size = 0
            try:
                with torch.no_grad():
                    size = self._step(joining, running, P, c)
                ran = True
            except Exception:  # a failed step fails its requests, never the thread
                log.exception("decoding step failed")
                with self._lock:
                    for w in running:
                        if not w.done:  # those that finished before the failure keep their result
                            self._finish(w, "error")
            with self._lock:
                self._report([*self._running, *self._waiting], size)

    def _report(self, writings: list[Writing], size: int) -> None:
        """Under the lock: ``writings`` and those that left since the last report, to ``on_report``."""
        left, self._left = self._left, []
        if self._on_report is not None:
            self._on_report([*writings, *left], size)

    def _step(self, joining: list[Writing], running: list[Writing], P, c) -> int:
        """Choose every decoding sequence's next token, then one pass: those tokens and the joining prompts → the
        pass's batch size (0: none ran)."""
        new = {id(w) for w in joining}
        going, chunks = [], []
        for w in running:
            if id(w) in new:  # its prompt goes into this pass; its first token comes from the pass's logits
                continue
            r = w.request
            step = self.model.choose(w._logits, w._attention, len(r.ids) + len(w.steps), r.temperature, r.top_k, r.top_p,
                                     w._gen, stop_at_eos=r.stop_at_eos)
            with self._lock:
                if step is None:
                    self._finish(w, "eos")
                    continue
                if w.steps:  # only the newest step keeps its attention row (L, H, c): the page shows that one
                    w.steps[-1] = dataclasses.replace(w.steps[-1], attention=NO_ROW)
                w.steps.append(step)
                if len(w.steps) == r.n_new:
                    self._finish(w, "length")
                    continue
            going.append(w)
            chunks.append(torch.tensor([step.token_id]))
        with self._lock:
            if self._left:  # those that finished are told now, not after the pass (a pass of 40 takes 0.2 s)
                self._report([], 0)
        for w in joining:
            going.append(w)
            chunks.append(torch.tensor(w.request.ids))
        if not going:
            return 0
        batch = extend_batch(chunks, [w._seq for w in going], self._cache, P, c)
        self.batches.append(len(going))
        for b, w in enumerate(going):
            w.batch = max(w.batch, len(going))
            w._logits, w._attention = batch.logits[b].clone(), batch.attentions[:, b, :, : batch.positions[b] + 1].clone()
        return len(going)
