"""The server's one-at-a-time seq2seq training queue (the app side of the seq2seq page).

A class of 40 on one server must not train 40 GRUs at once, nor keep every model anyone ever
trained. ``TrainingQueue`` runs at most one ``seq2seq.train`` at a time (a
``concurrent.futures.ThreadPoolExecutor`` with one worker), lets equal requests join one job,
bounds the waiting line and keeps the most recent results in a bounded LRU. The app holds one
queue per process (``ui.compute``'s ``seq2seq_queue``, an ``st.cache_resource``).

No streamlit import: the tests drive a queue directly.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from core import seq2seq, seq2seq_store

Key = tuple[str, str, int]  # (task, attention, seed)
TrainFn = Callable[..., seq2seq.Trained]  # train(cfg, seed, *, callback=(step, loss) → None) → Trained
THREAD_NAME = "seq2seq-training"


class QueueFull(RuntimeError):
    """Raised by ``TrainingQueue.submit`` when the waiting line is full."""


@dataclass(frozen=True)
class Progress:
    """A snapshot of one training: ``step`` steps done of ``total``; ``loss`` the last one (None
    before the first step); ``losses`` the curve so far."""

    step: int
    total: int
    loss: float | None
    losses: tuple[float, ...]

    @property
    def fraction(self) -> float:
        return self.step / self.total if self.total else 1.0


@dataclass(frozen=True)
class QueueStats:
    """What a queue holds now: the running key, the waiting keys in order, the cached keys (oldest first)."""

    running: Key | None
    waiting: tuple[Key, ...]
    cached: tuple[Key, ...]


class TrainingHandle:
    """One training job as a caller sees it (a ``Future`` with its loss curve and its place in the
    line). Every caller asking for the same key while it waits or runs gets this same object."""

    def __init__(self, queue: TrainingQueue, key: Key, cfg: seq2seq.Config, future: Future | None = None) -> None:
        self._queue = queue
        self.key: Key = key
        self.cfg = cfg
        self.future: Future = future if future is not None else Future()
        self._losses: list[float] = []

    @property
    def position(self) -> int | None:
        """0 while training, k ≥ 1 while k−1 jobs are ahead in the waiting line, None when done."""
        return self._queue._position(self)

    @property
    def progress(self) -> Progress:
        with self._queue._lock:
            losses = tuple(self._losses)
        return Progress(step=len(losses), total=self.cfg.steps, loss=losses[-1] if losses else None, losses=losses)

    @property
    def done(self) -> bool:
        return self.future.done()

    @property
    def result(self) -> seq2seq.Trained | None:
        """The trained model once done without error, else None."""
        return self.future.result() if self.done and self.future.exception() is None else None

    @property
    def error(self) -> BaseException | None:
        """The exception the training raised, once done; None otherwise."""
        return self.future.exception() if self.done else None

    def wait(self, timeout: float | None = None) -> seq2seq.Trained:
        """Block until done; returns the model, re-raises the training's error, TimeoutError on timeout."""
        try:
            return self.future.result(timeout)
        except FutureTimeout:
            raise TimeoutError(f"training {self.key} not done after {timeout} s") from None

    def __repr__(self) -> str:
        return f"TrainingHandle({self.key}, {'done' if self.done else f'position {self.position}'})"


class TrainingQueue:
    """Trains seq2seq models one at a time.

    ``submit(task, attention, seed)`` returns a ``TrainingHandle``:

    * the key was trained recently → a handle that is already done (from an LRU of at most
      ``max_results`` models; no training);
    * the key is waiting or training → the existing job's handle (joined, not duplicated);
    * otherwise a new job joins the end of the line; ``QueueFull`` when ``max_waiting`` jobs
      already wait.

    The model trained is ``train(dataclasses.replace(base, task=task, attention=attention), seed,
    callback=...)``; ``train`` defaults to ``seq2seq.train``. Failed trainings are not cached: the
    next submit tries again. ``shutdown()`` ends the worker thread (after the running job).
    """

    def __init__(self, train: TrainFn = seq2seq.train, *, base: seq2seq.Config | None = None,
                 max_waiting: int = 8, max_results: int = 8) -> None:
        if max_waiting < 1 or max_results < 1:
            raise ValueError("max_waiting and max_results must be ≥ 1")
        self._train = train
        self.base = base if base is not None else seq2seq.Config()
        self.max_waiting = max_waiting
        self.max_results = max_results
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD_NAME)
        self._waiting: deque[TrainingHandle] = deque()
        self._running: TrainingHandle | None = None
        self._results: OrderedDict[Key, seq2seq.Trained] = OrderedDict()
        self._closed = False

    def submit(self, task: str, attention: str, seed: int = 0) -> TrainingHandle:
        """Ask for the model (task, attention, seed); see the class docstring."""
        key = _key(task, attention, seed)
        with self._lock:
            if self._closed:
                raise RuntimeError("the training queue was shut down")
            found = self._find(key)
            if found is not None:
                return found
            if len(self._waiting) >= self.max_waiting:
                raise QueueFull(f"{len(self._waiting)} trainings are already waiting (at most {self.max_waiting}); "
                                f"try again in a minute")
            job = TrainingHandle(self, key, dataclasses.replace(self.base, task=task, attention=attention))
            self._waiting.append(job)
            # submitted under the lock: the worker's _run waits for it, so job.future is set first
            job.future = self._pool.submit(self._run, job)
        return job

    def find(self, task: str, attention: str, seed: int = 0) -> TrainingHandle | None:
        """Like ``submit`` but never starts a training: the cached, running or waiting job, else None."""
        with self._lock:
            return self._find(_key(task, attention, seed))

    def cached(self, task: str, attention: str, seed: int = 0) -> seq2seq.Trained | None:
        """The recently trained model for this key, or None."""
        handle = self.find(task, attention, seed)
        return handle.result if handle is not None else None

    def stats(self) -> QueueStats:
        with self._lock:
            return QueueStats(running=self._running.key if self._running else None,
                              waiting=tuple(j.key for j in self._waiting), cached=tuple(self._results))

    def shutdown(self, wait: bool = True) -> None:
        """Cancel what waits and end the worker once the running training is over."""
        with self._lock:
            self._closed = True
        self._pool.shutdown(wait=wait, cancel_futures=True)
        with self._lock:
            self._waiting.clear()

    # -- internals (called with the lock held, except _run)
    def _find(self, key: Key) -> TrainingHandle | None:
        cached = self._results.get(key)
        if cached is not None:
            self._results.move_to_end(key)
            done: Future = Future()
            done.set_result(cached)
            handle = TrainingHandle(self, key, cached.cfg, done)
            handle._losses = list(cached.losses)
            return handle
        if self._running is not None and self._running.key == key:
            return self._running
        return next((j for j in self._waiting if j.key == key), None)

    def _position(self, job: TrainingHandle) -> int | None:
        with self._lock:
            if job.done:
                return None
            if job is self._running:
                return 0
            return next((i + 1 for i, j in enumerate(self._waiting) if j is job), None)

    def _run(self, job: TrainingHandle) -> seq2seq.Trained:
        """The worker: one training; its curve, then its result, recorded under the lock."""
        with self._lock:
            self._waiting.remove(job)
            self._running = job

        def callback(step: int, loss: float) -> None:
            with self._lock:
                job._losses.append(float(loss))

        try:
            result = self._train(job.cfg, job.key[2], callback=callback)
        except BaseException:
            with self._lock:
                self._running = None
            raise
        with self._lock:
            job._losses = list(result.losses)
            self._results[job.key] = result
            while len(self._results) > self.max_results:
                self._results.popitem(last=False)
            self._running = None
        return result


def _key(task: str, attention: str, seed: int) -> Key:
    seq2seq_store.check_names(task, attention)
    if not (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**62):
        raise ValueError(f"seed must be an int in [0, 2**62), got {seed!r}")
    return (task, attention, int(seed))

