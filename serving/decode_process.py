"""The decode scheduler in a process of its own: the server's continuous batching (``serving.decoding``) without its GIL.

A decoding step is about 2,100 torch operations, and each gives Python's GIL back and takes it again. In the
server's process, beside a class whose Playground reruns are mostly Python, every step waited for the GIL: a step of
40 took 0.19 s alone and 1.6 s beside the class (BENCHMARKS.md). Here the scheduler runs in the main thread of a
child process (``python -m serving.decode_process``), with a GIL of its own:

- the weights are not copied: the server moves them once into a memory file (``SmolLM2.share_memory``, a Linux
  memfd) whose descriptor the child inherits and maps: the same pages;
- the keys and values of the batch live in the child only;
- sessions talk to a :class:`ProcessScheduler` in the server, which has the interface of ``Scheduler``: it mirrors
  every writing (its steps, its place in the line, its batch) from the reports the child sends after each step, and
  tells the child what the sessions submit and which writings they still ask about.

Messages are length-prefixed pickles over a socket pair (tensors as numpy arrays). A step's attention row
(L, H, c) travels only with the writing's last step, the one the page draws. The child exits when the server's end
closes (the server stopped, killed or not) and is started again by the next request when it died.

Not ``multiprocessing``: its spawn and forkserver children import the parent's ``__main__`` again, which in a
Streamlit server is the app script itself. No streamlit import.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import socket
import struct
import subprocess
import sys
import threading
from collections import OrderedDict, deque
from pathlib import Path

import numpy as np
import torch

from core.models.decoder import SmolLM2, Step

from .decoding import NO_ROW, QueueFull, Request, Scheduler, Writing

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]  # where ``python -m serving.decode_process`` finds serving and core
HEADER = struct.Struct("!Q")
AVAILABLE = hasattr(os, "memfd_create")  # the shared weights need a Linux memory file
# glibc's malloc in the decoding process: a block of 4 MiB or more (a step's logits, (B, 49152) float32: 7.9 MB at
# 40) is mapped for itself and given back when freed; by default the threshold rises to each such block freed (up to
# 32 MiB) and they were kept in the heap. A fixed threshold also fixes the heap's trim threshold, at 128 KiB: every
# step then gave back and faulted in again the widened weights (≤ 3.5 MB, reused from the heap every step), 10–20 %
# slower; past 8 MiB, steps are as fast as by default. The process's own memory at the end of 40 writings beside the
# Playground class: 349–371 MB, by default 338–474 (BENCHMARKS.md, "Forty pages opening in turns"). The server's
# environment wins.
CHILD_ENV = {"MALLOC_MMAP_THRESHOLD_": str(4 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(8 * 2**20)}


# ----------------------------------------------------------------------------- framed pickles
def send(sock: socket.socket, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(HEADER.pack(len(data)) + data)


def receive(stream):
    """The next message from ``stream`` (a socket's ``makefile("rb")``); EOFError when the other end closed."""
    head = stream.read(HEADER.size)
    if len(head) < HEADER.size:
        raise EOFError
    n = HEADER.unpack(head)[0]
    data = stream.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


# ----------------------------------------------------------------------------- steps over the pipe
def pack(step: Step, *, attention: bool) -> dict:
    """``step`` as plain values (tensors → numpy); its attention row only when ``attention``."""
    out = {}
    for f in dataclasses.fields(Step):
        v = getattr(step, f.name)
        if f.name == "attention" and not attention:
            v = NO_ROW
        out[f.name] = v.numpy() if isinstance(v, torch.Tensor) else v
    return out


def unpack(values: dict) -> Step:
    return Step(**{k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in values.items()})


# ----------------------------------------------------------------------------- the child
class _Child:
    """The child's side: a ``Scheduler`` run in the main thread; a reader thread takes the server's messages."""

    def __init__(self, sock: socket.socket, model, options: dict) -> None:
        self.sock, self.send_lock = sock, threading.Lock()
        self.sent: dict[Request, int] = {}  # steps already reported, per writing not yet finished
        self.scheduler = Scheduler(model, autostart=False, on_report=self.report, **options)

    def send(self, message) -> None:
        with self.send_lock:
            send(self.sock, message)

    def state(self, w: Writing) -> tuple:
        """What the server's mirror of ``w`` lacks: (request, steps it has, new steps, position, batch, stopped)."""
        have = self.sent.get(w.request, 0)
        new = [pack(s, attention=w.done and i == len(w.steps) - 1) for i, s in enumerate(w.steps) if i >= have]
        if w.done:
            self.sent.pop(w.request, None)
            if w.steps and have == len(w.steps):  # the last step went without its row: send it again, with it
                have, new = have - 1, [pack(w.steps[-1], attention=True)]
        else:
            self.sent[w.request] = len(w.steps)
        return w.request, have, new, w.position, w.batch, w.stopped

    def report(self, writings: list[Writing], size: int) -> None:
        """After a step (under the scheduler's lock): every writing it touched, and the counts."""
        s = self.scheduler
        self.send(("report", [self.state(w) for w in writings], size, s.stats(), s.free_pages))

    def submitted(self, request: Request) -> None:
        s = self.scheduler
        try:
            w = s.submit(request)
        except QueueFull:  # the server's mirror keeps the line shorter; this is the child's own bound
            self.send(("report", [(request, 0, [], None, 0, "full")], 0, s.stats(), s.free_pages))
            return
        with s.between_steps():  # a result already written, sent whole
            if w.done:
                self.sent.pop(request, None)
                self.send(("report", [self.state(w)], 0, s.stats(), s.free_pages))

    def read(self, stream) -> None:
        """Until the server's end closes or it says "close": submit / seen / cancel."""
        s = self.scheduler
        try:
            while True:
                kind, requests = receive(stream)
                if kind == "close":
                    return
                with s.between_steps():  # all of them before the next step
                    for r in requests:
                        if kind == "submit":
                            self.submitted(r)
                        elif kind == "seen":
                            s.find(r)
                        elif kind == "cancel" and (w := s.find(r)) is not None:
                            s.cancel(w)
        except (EOFError, OSError):
            pass
        finally:
            s.close()


def main(sock_fd: int, weights_fd: int) -> None:
    """The child process: the model from the server's memory file, then write until the server's end closes."""
    sock = socket.socket(fileno=sock_fd)
    stream = sock.makefile("rb")
    layout, parts, options, threads = receive(stream)
    torch.set_num_threads(threads)
    child = _Child(sock, SmolLM2.from_shared(weights_fd, layout, *parts), options)
    threading.Thread(target=child.read, args=(stream,), name="lm-decoding-reader", daemon=True).start()
    child.scheduler.run()
    os._exit(0)  # the reader may still be blocked on the socket; nothing else is left to do


# ----------------------------------------------------------------------------- the server's side
class ProcessScheduler:
    """``serving.scheduler.DecodeScheduler`` as ``serving.decoding.Scheduler`` implements it, the writing done in a
    child process (module docstring). ``model``'s weights are moved into a memory file (``SmolLM2.share_memory``;
    before other threads use them, so make it early); ``threads``: the child's torch threads."""

    def __init__(self, model, *, cache_bytes: int, capacity: int, max_batch: int = 64, max_waiting: int = 64,
                 max_results: int = 64, abandoned_after: float = 30.0, threads: int = 1) -> None:
        Scheduler(model, cache_bytes=cache_bytes, capacity=capacity, autostart=False)  # its checks, in this process
        self.model, self.capacity, self.max_batch, self.max_waiting = model, capacity, max_batch, max_waiting
        self.max_results, self._threads = max_results, threads
        self._options = {"cache_bytes": cache_bytes, "capacity": capacity, "max_batch": max_batch,
                         "max_results": max_results, "abandoned_after": abandoned_after,
                         "max_waiting": max_waiting + max_batch}  # our bound counts the unadmitted ones: theirs may not
        self._lock = threading.Lock()
        self._live: dict[Request, Writing] = {}  # submitted, not finished
        self._results: OrderedDict[Request, Writing] = OrderedDict()  # finished ("length", "eos"), the newest last
        self._counts = (0, 0, None)  # (writing, waiting, free pages) as last reported
        self.batches: deque[int] = deque(maxlen=1000)
        self._sock: socket.socket | None = None
        self._process: subprocess.Popen | None = None
        self._closed = False
        with self._lock:
            self._start()

    # -- the child
    def _start(self) -> None:
        """Under the lock: a child and the thread that reads its reports (what a child that died was writing fails)."""
        for w in list(self._live.values()):
            self._done(w, "error")
        fd, layout = self.model.share_memory()
        ours, theirs = socket.socketpair()
        with theirs:
            self._process = subprocess.Popen([sys.executable, "-m", "serving.decode_process", str(theirs.fileno()), str(fd)],
                                             pass_fds=(theirs.fileno(), fd), cwd=ROOT, stdin=subprocess.DEVNULL,
                                             env={**CHILD_ENV, **os.environ})
        self._sock = ours
        send(ours, (layout, self.model.parts(), self._options, self._threads))
        threading.Thread(target=self._read, args=(ours,), name="lm-decoding-reports", daemon=True).start()

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _send(self, kind: str, requests: tuple[Request, ...]) -> None:
        """Under the lock."""
        if not self._alive():
            self._start()
        send(self._sock, (kind, requests))

    def _read(self, sock: socket.socket) -> None:
        stream = sock.makefile("rb")
        try:
            while True:
                message = receive(stream)
                with self._lock:
                    self._apply(*message[1:])
        except (EOFError, OSError):
            pass
        with self._lock:  # the child is gone: what it was writing fails; the next request starts another
            if sock is self._sock:
                if not self._closed:
                    log.error("the decoding process ended (exit code %s)", self._process.wait())
                for w in list(self._live.values()):
                    self._done(w, "error")
                self._process = None

    def _apply(self, states: list[tuple], size: int, stats: tuple[int, int], free: int) -> None:
        """Under the lock: a report."""
        if size:
            self.batches.append(size)
        self._counts = (*stats, free)
        for request, have, new, position, batch, stopped in states:
            w = self._live.get(request)
            if w is None:
                continue
            del w.steps[have:]
            w.steps.extend(unpack(v) for v in new)
            w.position, w.batch = position, batch
            if stopped is not None:
                self._done(w, stopped)

    def _done(self, w: Writing, stopped: str) -> None:
        w.stopped, w.position = stopped, None
        self._live.pop(w.request, None)
        if stopped in ("length", "eos"):
            self._results[w.request] = w
            while len(self._results) > self.max_results:
                self._results.popitem(last=False)
        w.finished.set()

    # -- what sessions call (as Scheduler)
    def submit(self, request: Request) -> Writing:
        return self.submit_many([request])[0]

    def submit_many(self, requests: list[Request]) -> list[Writing]:
        """Each request's writing; the new ones reach the child in one message, so they join the same step."""
        for r in requests:
            if len(r.ids) + r.n_new > self.capacity or not r.ids or r.n_new < 1:
                raise ValueError(f"{len(r.ids)} + {r.n_new} tokens do not fit {self.capacity} positions")
        with self._lock:
            out, new = [], {}
            for r in requests:
                found = self._find(r) or new.get(r)
                if found is None:
                    waiting = max(0, len(self._live) + len(new) - self.max_batch)  # at least these wait
                    if waiting >= self.max_waiting:  # (the child's own bound answers "full")
                        raise QueueFull(f"{waiting} requests are waiting")
                    found = new[r] = Writing(r, 0.0)
                    found.position = waiting + 1  # in the line until the child's first report places it
                elif not found.done and r not in new:
                    self._send("seen", (r,))
                out.append(found)
            if new:
                self._send("submit", tuple(new))  # (a child started here fails what the one before wrote: not these)
                self._live.update(new)
            return out

    def _find(self, request: Request) -> Writing | None:
        w = self._live.get(request)
        if w is None and (w := self._results.get(request)) is not None:
            self._results.move_to_end(request)
        return w

    def find(self, request: Request) -> Writing | None:
        with self._lock:
            w = self._find(request)
            if w is not None and not w.done:
                self._send("seen", (request,))
            return w

    def cancel(self, writing: Writing) -> None:
        with self._lock:
            self._send("cancel", (writing.request,))

    @property
    def free_pages(self) -> int | None:
        """Pages of the batch cache no sequence holds, as last reported (None before the first report)."""
        with self._lock:
            return self._counts[2]

    def stats(self) -> tuple[int, int]:
        """(writing now, waiting), as last reported."""
        with self._lock:
            return self._counts[:2]

    @property
    def pid(self) -> int | None:
        """The child's process id (None when none runs)."""
        with self._lock:
            return None if self._process is None else self._process.pid

    def close(self) -> None:
        """Stop the child and wait for it (its reports' reader then sees the socket's end). The child is asked to
        leave: our reader is blocked on the socket, so closing our end would not reach it."""
        with self._lock:
            self._closed = True
            sock, process = self._sock, self._process
            if self._alive():
                send(sock, ("close", ()))
        if process is not None:
            process.wait(timeout=60)
        with self._lock:
            self._process = None
        if sock is not None:
            sock.close()


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
