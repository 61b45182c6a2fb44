"""serving.training: the server's seq2seq training queue — one training at a time, joining, LRU,
bounds, progress, shutdown — with a recording trainer plus one real short ``seq2seq.train``."""

from __future__ import annotations

import dataclasses
import re
import threading
import time

import pytest
import torch

from core import seq2seq
from serving import training
from serving.training import TrainingQueue

TINY = seq2seq.Config(emb=8, hidden=16, d_a=8, steps=3, batch=8)


# ---------------------------------------------------------------- training queue
FAST = seq2seq.Config(steps=4)
A, B, C, D = ("copy", "none", 0), ("reverse", "dot", 0), ("translate", "additive", 5), ("copy", "dot", 1)


class FakeTrainer:
    """Records calls and start/end order; ``hold(key)`` makes that training pause after step 2
    until ``release(key)``."""

    def __init__(self, fail: set | None = None) -> None:
        self.lock = threading.Lock()
        self.calls: list = []
        self.log: list = []
        self.active = self.max_active = 0
        self.gates: dict = {}
        self.started: dict = {}
        self.fail = fail or set()

    def hold(self, key) -> None:
        self.gates[key] = threading.Event()

    def release(self, key) -> None:
        self.gates[key].set()

    def wait_started(self, key) -> None:
        assert self.started.setdefault(key, threading.Event()).wait(10), f"{key} never started"

    def __call__(self, cfg, seed, *, callback=None):
        key = (cfg.task, cfg.attention, seed)
        with self.lock:
            self.calls.append(key)
            self.log.append(("start", key))
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.started.setdefault(key, threading.Event()).set()
        losses = []
        try:
            for step in range(cfg.steps):
                losses.append(1.0 / (step + 1 + seed))
                callback(step, losses[-1])
                if step == 1 and key in self.gates:
                    assert self.gates[key].wait(10), "test forgot to release"
            if key in self.fail:
                raise RuntimeError(f"boom {key}")
        finally:
            with self.lock:
                self.active -= 1
                self.log.append(("end", key))
        return seq2seq.Trained(cfg=cfg, params={}, losses=tuple(losses), accuracy=seed / 100, seconds=0.0)

    def never_overlapped(self) -> bool:
        starts, ends = self.log[0::2], self.log[1::2]
        return (self.max_active == 1 and all(s[0] == "start" for s in starts) and all(e[0] == "end" for e in ends)
                and [s[1] for s in starts] == [e[1] for e in ends])


def eventually(pred, timeout=10.0) -> None:
    """Poll until pred() (a guard against hangs, not a timing assertion)."""
    end = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > end:
            raise AssertionError("condition not reached")
        time.sleep(0.002)


def test_same_key_at_once_trains_once_and_shares_the_result():
    trainer = FakeTrainer()
    trainer.hold(A)
    q = TrainingQueue(trainer, base=FAST)
    n = 6
    barrier, handles = threading.Barrier(n), [None] * n

    def ask(i):
        barrier.wait()
        handles[i] = q.submit(*A)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    assert all(h is handles[0] for h in handles)
    trainer.release(A)
    results = [h.wait(10) for h in handles]
    assert all(r is results[0] for r in results)
    assert trainer.calls == [A]


def test_different_keys_wait_their_turn_and_never_overlap():
    trainer = FakeTrainer()
    trainer.hold(A)
    q = TrainingQueue(trainer, base=FAST)
    ha = q.submit(*A)
    trainer.wait_started(A)
    hb, hc = q.submit(*B), q.submit(*C)
    assert (ha.position, hb.position, hc.position) == (0, 1, 2)
    assert q.stats() == training.QueueStats(running=A, waiting=(B, C), cached=())
    assert trainer.calls == [A] and not hb.done and hb.progress.step == 0 and hb.result is None
    trainer.release(A)
    rb, rc = hb.wait(10), hc.wait(10)
    assert (ha.position, hb.position, hc.position) == (None, None, None)
    assert trainer.calls == [A, B, C] and trainer.never_overlapped()
    assert rb.cfg == dataclasses.replace(FAST, task="reverse", attention="dot") and rc.accuracy == 0.05


def test_many_callers_many_keys_one_training_at_a_time():
    trainer = FakeTrainer()
    q = TrainingQueue(trainer, base=FAST, max_waiting=8)
    keys = [(t, a, s) for s in range(2) for t, a in (("copy", "none"), ("reverse", "dot"), ("translate", "additive"))]
    handles: list = []
    lock = threading.Lock()

    def ask(k):
        h = q.submit(*k)
        with lock:
            handles.append(h)

    threads = [threading.Thread(target=ask, args=(k,)) for k in keys * 3]
    for th in threads:
        th.start()
    for th in threads:
        th.join(10)
    for h in handles:
        h.wait(10)
    assert sorted(trainer.calls) == sorted(keys)  # each key trained exactly once
    assert trainer.never_overlapped()


def test_finished_key_is_served_from_the_lru_without_training():
    trainer = FakeTrainer()
    q = TrainingQueue(trainer, base=FAST)
    first = q.submit(*D).wait(10)
    again = q.submit(*D)
    assert again.done and again.position is None and again.result is first
    assert again.progress.step == again.progress.total == 4 and again.progress.losses == first.losses
    assert q.find(*D).result is first and q.cached(*D) is first
    assert trainer.calls == [D]


def test_lru_keeps_at_most_max_results():
    trainer = FakeTrainer()
    q = TrainingQueue(trainer, base=FAST, max_results=3)
    for seed in range(6):
        q.submit("copy", "none", seed).wait(10)
    assert q.stats().cached == tuple(("copy", "none", s) for s in (3, 4, 5))
    assert q.cached("copy", "none", 0) is None and q.find("copy", "none", 0) is None
    q.cached("copy", "none", 3)  # touch 3: now 4 is the oldest
    q.submit("copy", "none", 0).wait(10)
    assert trainer.calls.count(("copy", "none", 0)) == 2
    assert q.stats().cached == (("copy", "none", 5), ("copy", "none", 3), ("copy", "none", 0))


def test_queue_overflow_is_refused_but_joining_is_not():
    trainer = FakeTrainer()
    trainer.hold(A)
    q = TrainingQueue(trainer, base=FAST, max_waiting=2)
    ha = q.submit(*A)
    trainer.wait_started(A)
    hb, hc = q.submit(*B), q.submit(*C)
    with pytest.raises(training.QueueFull, match="at most 2"):
        q.submit(*D)
    assert q.submit(*B) is hb and q.submit(*A) is ha  # joining adds nothing
    assert q.stats().waiting == (B, C)
    trainer.release(A)
    for h in (ha, hb, hc):
        h.wait(10)
    q.submit(*D).wait(10)  # room again
    assert trainer.calls == [A, B, C, D]


def test_progress_is_reported_while_training():
    trainer = FakeTrainer()
    trainer.hold(D)
    q = TrainingQueue(trainer, base=FAST)
    h = q.submit(*D)
    eventually(lambda: h.progress.step == 2)
    p = h.progress
    assert (p.step, p.total, p.losses, p.loss) == (2, 4, (1 / 2, 1 / 3), 1 / 3) and p.fraction == 0.5
    assert h.position == 0 and not h.done and h.result is None and h.error is None
    trainer.release(D)
    h.wait(10)
    assert h.progress.losses == (1 / 2, 1 / 3, 1 / 4, 1 / 5) and h.progress.fraction == 1.0


def test_failed_training_is_reported_not_cached_and_the_worker_survives():
    trainer = FakeTrainer(fail={A})
    q = TrainingQueue(trainer, base=FAST)
    h = q.submit(*A)
    with pytest.raises(RuntimeError, match="boom"):
        h.wait(10)
    assert isinstance(h.error, RuntimeError) and h.result is None and h.done
    assert q.cached(*A) is None
    assert q.submit(*B).wait(10).cfg.task == "reverse"  # the worker still serves
    with pytest.raises(RuntimeError, match=re.escape(f"boom {A}")):  # a new training, failed again
        q.submit(*A).wait(10)
    assert trainer.calls == [A, B, A]


def test_submit_validates_its_arguments():
    q = TrainingQueue(FakeTrainer(), base=FAST)
    for bad, message in ((("poetry", "none", 0), "unknown task 'poetry'; choose one of copy, reverse, translate"),
                         (("copy", "psychic", 0), "unknown attention 'psychic'; choose one of none, additive, dot"),
                         (("copy", "none", -1), "seed must be an int in [0, 2**62), got -1"),
                         (("copy", "none", True), "seed must be an int in [0, 2**62), got True"),
                         (("copy", "none", 1.5), "seed must be an int in [0, 2**62), got 1.5")):
        with pytest.raises(ValueError, match=re.escape(message)):
            q.submit(*bad)
    for bounds in ({"max_results": 0}, {"max_waiting": 0}):
        with pytest.raises(ValueError, match="max_waiting and max_results must be ≥ 1"):
            TrainingQueue(FakeTrainer(), **bounds)
    with pytest.raises(TimeoutError, match=re.escape(f"training {A} not done after 0.01 s")):
        trainer = FakeTrainer()
        trainer.hold(A)
        q2 = TrainingQueue(trainer, base=FAST)
        try:
            q2.submit(*A).wait(0.01)
        finally:
            trainer.release(A)


def test_real_training_through_the_queue():
    q = TrainingQueue(base=TINY)  # the default trainer: seq2seq.train
    h = q.submit("reverse", "dot", 1)
    r = h.wait(120)
    cfg = dataclasses.replace(TINY, task="reverse", attention="dot")
    direct = seq2seq.train(cfg, seed=1)
    assert r.cfg == cfg and len(r.losses) == 3
    assert r.losses == direct.losses and all(torch.equal(r.params[k], direct.params[k]) for k in direct.params)
    assert h.progress.losses == r.losses and h.progress.step == 3
    assert q.submit("reverse", "dot", 1).result is r


def test_shutdown_ends_the_worker_thread_and_refuses_new_work():
    seen = []

    def train(cfg, seed, *, callback=None):
        seen.append(threading.current_thread())
        return seq2seq.Trained(cfg=cfg, params={}, losses=(1.0,), accuracy=0.5, seconds=0.0)

    q = TrainingQueue(train, base=FAST)
    q.submit(*A).wait(10)
    assert seen and seen[0] is not threading.current_thread() and seen[0].is_alive()
    q.shutdown()
    assert not seen[0].is_alive()
    with pytest.raises(RuntimeError, match="shut down"):
        q.submit(*B)
    assert q.stats().waiting == ()
