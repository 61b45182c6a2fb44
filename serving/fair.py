"""A fair share of the server per session (issue 27): one student's heavy reruns cannot slow the class.

One server runs every session's reruns on the same cores (2 in a classroom). A client that sends the
largest scenario (512 tokens) again as soon as the last one is drawn kept a core busy, and the other
students' p95 grew several times over (BENCHMARKS.md, "Figures behind the code"). Here each session's
reruns are timed in CPU seconds of the thread that ran them; a session that spent more than SHARE of one
core over the last WINDOW seconds waits, before its next run, until it is back under its share (it
sleeps in its own thread: the others' reruns go on meanwhile) — but only while another session is at
work: its run is in progress or ended less than RECENT seconds ago (in a class of 20 thinking 1–3 s
between actions some run ends every fraction of a second). A learner alone on the server never waits, nor
does the language model's writing part: its heavy work is the server's one decoding batch, shared out there
(``page.boundary(..., queued=True)``; held back here, 40 students pressing Write right after drawing their own
prompts waited up to MAX_WAIT each before joining the batch).
Checking only for a run in progress at that instant let a heavy run start in the gap between two
students' runs about half the time, and then slow every student who arrived during it (BENCHMARKS.md,
"A hostile client"). No streamlit import: the app hands each run's session id and its window of CPU spent
(kept in the session's state) to :func:`metered` (``ui.page.boundary``).
SHARE is a tenth of a core: 2–3 changes of a 512-token scenario per WINDOW while others are at work, some 30 of
an 8-token one; a larger share let a client that sends 512-token changes back to back keep the other students' p95
above twice its value without it.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .log import server_log

# of one core, per session, averaged over WINDOW; ATTN_LAB_FAIR_SHARE=off serves without the limit (to measure it)
SHARE = float("inf") if os.environ.get("ATTN_LAB_FAIR_SHARE") == "off" else float(os.environ.get("ATTN_LAB_FAIR_SHARE", 0.1))
WINDOW = 10.0  # seconds
MAX_WAIT = 5.0  # a run never waits longer than this
RECENT = 0.5  # seconds: a session whose run ended this recently is still at work
_depth = threading.local()  # runs nest (the frame, a page's fragment, a fragment inside it): time the outermost
_at_work: dict[str, float] = {}  # session id → when its last metered run ended (inf while one runs); RECENT bounds it
_lock = threading.Lock()

# one line in the server's log each time a session is held back (bench.classroom counts them)
_log = server_log("attention_lab.fair", "fair share")


def wait_needed(spent: deque, now: float) -> float:
    """Seconds until the CPU spent in the window (entries (end, cpu)) is back under SHARE × WINDOW."""
    while spent and spent[0][0] <= now - WINDOW:
        spent.popleft()
    over = sum(cpu for _, cpu in spent) - SHARE * WINDOW
    if over <= 0:
        return 0.0
    # the oldest entries leave the window first: wait until enough of them have
    freed, wait = 0.0, 0.0
    for end, cpu in spent:
        freed += cpu
        wait = end + WINDOW - now
        if freed >= over:
            break
    return min(MAX_WAIT, max(0.0, wait))


def others_at_work(me: str, now: float) -> bool:
    """Whether another session's run is in progress or ended less than RECENT seconds ago (and forget
    the sessions that have been idle longer: the map holds only the sessions at work)."""
    with _lock:
        for sid in [sid for sid, end in _at_work.items() if now - end >= RECENT]:
            del _at_work[sid]
        return any(sid != me for sid in _at_work)


def inside() -> bool:
    """Whether a metered render is running on this thread (a fragment inside the frame's boundary)."""
    return bool(getattr(_depth, "n", 0))


def metered(render: Callable[[], None], spent: Callable[[], deque], session: Callable[[], str], *,
            wait: bool = True) -> None:
    """``render()`` within the session's share: wait first if the session is over it while others are at
    work (unless ``wait`` is False), and count its CPU. ``spent()``: the session's (end, cpu) entries (the app keeps
    them in the session's state); ``session()``: its id. Inside a metered run (a fragment of the frame) it only renders."""
    if getattr(_depth, "n", 0):
        render()
        return
    spent, me = spent(), session()
    pause = wait_needed(spent, time.monotonic()) if wait and others_at_work(me, time.monotonic()) else 0.0
    if pause > 0:
        _log.info("a session waited %.2f s (%.2f CPU-s in the last %.0f s, share %.2f of a core)", pause,
                  sum(cpu for _, cpu in spent), WINDOW, SHARE)
        time.sleep(pause)  # throttling this session's own thread while others run, not a test's synchronisation
    with _lock:
        _at_work[me] = float("inf")
    _depth.n = 1
    t0 = time.thread_time()
    try:
        render()
    finally:
        _depth.n = 0
        end = time.monotonic()
        with _lock:
            _at_work[me] = end
        spent.append((end, time.thread_time() - t0))


class Turns:
    """At most ``n`` sessions at once inside ``with turns.turn(...)``; the others wait their turn in their own thread.

    For a part of a page whose working memory is large while it runs (the language-model page holds its prompt's trace
    and draws the model view's 270 maps): forty students opening it at once held all forty pages' at the same moment.
    ``waiting``: how many wait now."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._free = threading.BoundedSemaphore(n)
        self._lock = threading.Lock()
        self.waiting = 0

    @contextmanager
    def turn(self, on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
        """Inside once a turn is free; ``on_wait()`` first when none is (the page says why it waits)."""
        if not self._free.acquire(blocking=False):
            on_wait()
            with self._lock:
                self.waiting += 1
            try:
                self._free.acquire()
            finally:
                with self._lock:
                    self.waiting -= 1
        try:
            yield
        finally:
            self._free.release()
