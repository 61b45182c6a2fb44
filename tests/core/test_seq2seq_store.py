"""core.seq2seq_store: checkpoints (round trip, refusal of malformed files), the shipped models and
curves against fresh measurements, the reference answers against hand-written ones, and the
training queue (one training at a time, joining, LRU, bounds, progress) with a fake trainer plus
one real short ``seq2seq.train``."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest
import torch

from core import seq2seq
from core import seq2seq_store as store

TINY = seq2seq.Config(emb=8, hidden=16, d_a=8, steps=3, batch=8)


@pytest.fixture(scope="module")
def tiny() -> seq2seq.Trained:
    return seq2seq.train(dataclasses.replace(TINY, task="reverse", attention="additive"), seed=3, eval_batch=16)


# ---------------------------------------------------------------- checkpoints
def test_round_trip_gives_identical_model_and_predictions(tiny, tmp_path):
    path = store.save(tiny, tmp_path / "m.pt", seed=3)
    back = store.load(path)
    assert back.cfg == tiny.cfg and back.losses == tiny.losses
    assert back.accuracy == tiny.accuracy and back.seconds == tiny.seconds
    assert set(back.params) == set(tiny.params)
    for k, v in tiny.params.items():
        assert torch.equal(back.params[k], v), k
    assert store.load_seed(path) == 3
    src, tgt = seq2seq.make_batch(seq2seq.get_task("reverse"), 32, (2, 9), torch.Generator().manual_seed(99))
    a = seq2seq.greedy_decode(tiny.params, tiny.cfg, src, tgt.shape[1])
    b = seq2seq.greedy_decode(back.params, back.cfg, src, tgt.shape[1])
    assert torch.equal(a.predictions, b.predictions)
    assert torch.equal(a.attention_map, b.attention_map)


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        store.load(tmp_path / "nope.pt")


@pytest.mark.parametrize("content", [b"", b"not a torch file at all", b"PK\x03\x04 truncated zip"])
def test_garbage_bytes_are_refused(tmp_path, content):
    path = tmp_path / "bad.pt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="not a valid seq2seq checkpoint"):
        store.load(path)


def test_truncated_checkpoint_is_refused(tiny, tmp_path):
    data = store.save(tiny, tmp_path / "m.pt").read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        store.load(cut)


class _Touch:
    """A pickle that, when unpickled without weights_only, creates a file: arbitrary code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (self.path,))


def test_arbitrary_pickle_is_refused_and_never_run(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"format": store.FORMAT, "params": _Touch(marker)}, path)
    with pytest.raises(ValueError):
        store.load(path)
    assert not marker.exists()
    torch.load(path, weights_only=False)  # control: the file really does run code when trusted
    assert marker.exists()


def _mutations():
    """name → f(payload) → the mutated payload."""
    def edit(fn):
        def apply(d):
            fn(d)
            return d
        return apply

    def set_(key, value):
        return edit(lambda d: d.__setitem__(key, value))

    def param(name, fn):
        return edit(lambda d: d["params"].__setitem__(name, fn(d["params"][name])))

    return {
        "not a dict": lambda d: [1, 2, 3],
        "missing key": edit(lambda d: d.pop("losses")),
        "extra key": set_("extra", 1),
        "wrong format": set_("format", "something/else"),
        "wrong version": set_("version", 99),
        "negative seed": set_("seed", -1),
        "unknown task": edit(lambda d: d["config"].__setitem__("task", "poetry")),
        "hidden as text": edit(lambda d: d["config"].__setitem__("hidden", "64")),
        "missing config field": edit(lambda d: d["config"].pop("lr")),
        "param wrong shape": param("W_out", lambda v: v[:, :-1].clone()),
        "param missing": edit(lambda d: d["params"].pop("w_a")),
        "param integer": param("b_out", lambda v: v.long()),
        "param nan": param("enc.b", lambda v: v.clone().fill_(float("nan"))),
        "param not tensor": param("enc.c", lambda v: v.tolist()),
        "losses too short": edit(lambda d: d.__setitem__("losses", d["losses"][:-1])),
        "loss infinite": edit(lambda d: d.__setitem__("losses", [float("inf")] + d["losses"][1:])),
        "accuracy > 1": set_("accuracy", 1.5),
        "seconds negative": set_("seconds", -1.0),
    }


@pytest.mark.parametrize("name", list(_mutations()))
def test_malformed_payload_is_refused(tiny, tmp_path, name):
    good = store.save(tiny, tmp_path / "good.pt")
    data = torch.load(good, weights_only=True)
    bad = tmp_path / "bad.pt"
    torch.save(_mutations()[name](data), bad)
    with pytest.raises(ValueError):
        store.load(bad)
    store.load(good)  # the unmutated file is fine, so the mutation is what was refused


def test_save_refuses_a_model_that_does_not_match_its_config(tiny, tmp_path):
    broken = dataclasses.replace(tiny, params={k: v for k, v in tiny.params.items() if k != "W_a"})
    with pytest.raises(ValueError, match="params"):
        store.save(broken, tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


# ---------------------------------------------------------------- shipped checkpoints
PAIRS = [(t, a) for t in seq2seq.TASKS for a in seq2seq.ATTENTIONS]


def _fresh_accuracy(m: seq2seq.Trained, lengths: tuple[int, int], seed: int, n: int = 128) -> float:
    src, tgt = seq2seq.make_batch(seq2seq.get_task(m.cfg.task), n, lengths, torch.Generator().manual_seed(seed))
    return seq2seq.token_accuracy(m.params, m.cfg, src, tgt)


@pytest.mark.parametrize("task,att", PAIRS)
def test_shipped_checkpoint_loads_small_and_reaches_its_claimed_accuracy(task, att):
    path = store.checkpoint_path(task, att)
    assert path.is_file(), f"run scripts/train_seq2seq.py: {path} is missing"
    assert path.stat().st_size < 300 * 1024
    m = store.shipped(task, att)
    assert m is not None, "the shipped file is stale (not seed 0 with today's default Config)"
    assert m.cfg == seq2seq.Config(task=task, attention=att)
    assert store.load_seed(path) == 0
    assert len(m.losses) == m.cfg.steps and m.losses[-1] < m.losses[0]
    assert m.seconds > 0
    fresh = _fresh_accuracy(m, (m.cfg.min_len, m.cfg.max_len), seed=12345)  # train uses seeds 1 and 2
    assert fresh >= m.accuracy - 0.05, (fresh, m.accuracy)
    assert store.shipped(task, att) is m  # cached


def test_attention_beats_no_attention_on_long_copies():
    acc = {att: _fresh_accuracy(store.shipped("copy", att), (8, 8), seed=4242) for att in seq2seq.ATTENTIONS}
    assert acc["additive"] > acc["none"] + 0.2, acc
    assert acc["dot"] > acc["none"] + 0.2, acc


@pytest.mark.parametrize("task", store.CURVE_TASKS)
def test_shipped_curves_match_a_fresh_measurement(task):
    curves = store.shipped_curves(task)
    assert curves is not None and curves.lengths == tuple(range(2, 13))
    for att in store.CURVE_ATTENTIONS:
        m = store.shipped(task, att)
        for L in (2, 8, 12):  # accuracy_by_length seeds each length's batch on its own: a subset reproduces it
            assert curves[att][curves.lengths.index(L)] == pytest.approx(seq2seq.accuracy_by_length(m, [L])[0], abs=0.01)
        # and on a batch the curve never saw (another seed), within sampling noise
        other = seq2seq.accuracy_by_length(m, [8], seed=1000)[0]
        assert curves[att][curves.lengths.index(8)] == pytest.approx(other, abs=0.1), att
    # the bottleneck: at the longest trained length (8) the fixed-size summary falls clearly behind
    i8 = curves.lengths.index(8)
    assert curves["additive"][i8] > curves["none"][i8] + 0.2
    assert curves["none"][-1] < curves["none"][0] - 0.4  # and decays with length


def test_shipped_rejects_unknown_names():
    with pytest.raises(ValueError):
        store.shipped("poetry", "none")
    with pytest.raises(ValueError):
        store.shipped("copy", "psychic")
    with pytest.raises(ValueError, match="copy, reverse"):
        store.shipped_curves("translate")


def test_curves_file_round_trip_and_refusals(tmp_path):
    c = store.LengthCurves("copy", store.CURVE_LENGTHS, none=tuple([0.5] * 11), additive=tuple([1.0] * 11))
    path = store.write_curves([c], tmp_path / "c.json")
    assert store.read_curves(path, "copy") == c
    with pytest.raises(ValueError):
        store.read_curves(path, "reverse")  # not in the file
    path.write_text('{"format": "attention-lab/seq2seq-curves", "version": 1, "lengths": [1, 2]}')
    with pytest.raises(ValueError):
        store.read_curves(path, "copy")
    path.write_text("{not json")
    with pytest.raises(ValueError):
        store.read_curves(path, "copy")


# ---------------------------------------------------------------- reference answers
def test_reference_copy_and_reverse_by_hand():
    assert store.reference("copy", ["a", "b", "c", "l"]) == ["a", "b", "c", "l"]
    assert store.reference("reverse", ["a", "b", "c", "l"]) == ["l", "c", "b", "a"]
    assert store.reference(seq2seq.get_task("reverse"), ("k",)) == ["k"]
    assert store.reference("copy", []) == []


def test_reference_translate_by_hand():
    assert store.reference("translate", "the red car sees the dog".split()) == "le voiture rouge voit le chien".split()
    assert store.reference("translate", "the big house of the dog likes the blue car".split()) == \
        "le grand maison du chien aime le voiture bleu".split()
    assert store.reference("translate", "the dog of the red house sees the car".split()) == \
        "le chien du maison rouge voit le voiture".split()


@pytest.mark.parametrize("task", seq2seq.TASKS)
def test_reference_matches_the_training_targets(task):
    t = seq2seq.get_task(task)
    src, tgt = seq2seq.make_batch(t, 50, (1, 12), torch.Generator().manual_seed(5))
    for s, y in zip(src.tolist(), tgt.tolist(), strict=True):
        words = [t.src_vocab[i] for i in s if i != seq2seq.PAD]
        assert store.reference(task, words) == t.tgt_words([i for i in y if i != seq2seq.PAD])


@pytest.mark.parametrize("task,words", [("copy", ["a", "z"]), ("reverse", ["the"]), ("translate", ["a"]),
                                         ("translate", "the car of dog sees the dog".split()),
                                         ("translate", "the car sees the dog of".split())])
def test_reference_refuses_words_it_cannot_answer(task, words):
    with pytest.raises(ValueError):
        store.reference(task, words)


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
    q = store.TrainingQueue(trainer, base=FAST)
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
    q = store.TrainingQueue(trainer, base=FAST)
    ha = q.submit(*A)
    trainer.wait_started(A)
    hb, hc = q.submit(*B), q.submit(*C)
    assert (ha.position, hb.position, hc.position) == (0, 1, 2)
    assert q.stats() == store.QueueStats(running=A, waiting=(B, C), cached=())
    assert trainer.calls == [A] and not hb.done and hb.progress.step == 0 and hb.result is None
    trainer.release(A)
    rb, rc = hb.wait(10), hc.wait(10)
    assert (ha.position, hb.position, hc.position) == (None, None, None)
    assert trainer.calls == [A, B, C] and trainer.never_overlapped()
    assert rb.cfg == dataclasses.replace(FAST, task="reverse", attention="dot") and rc.accuracy == 0.05
    eventually(lambda: q._worker is None)  # the worker thread ends when the line is empty


def test_many_callers_many_keys_one_training_at_a_time():
    trainer = FakeTrainer()
    q = store.TrainingQueue(trainer, base=FAST, max_waiting=8)
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
    q = store.TrainingQueue(trainer, base=FAST)
    first = q.submit(*D).wait(10)
    again = q.submit(*D)
    assert again.done and again.position is None and again.result is first
    assert again.progress.step == again.progress.total == 4 and again.progress.losses == first.losses
    assert q.find(*D).result is first and q.cached(*D) is first
    assert trainer.calls == [D]


def test_lru_keeps_at_most_max_results():
    trainer = FakeTrainer()
    q = store.TrainingQueue(trainer, base=FAST, max_results=3)
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
    q = store.TrainingQueue(trainer, base=FAST, max_waiting=2)
    ha = q.submit(*A)
    trainer.wait_started(A)
    hb, hc = q.submit(*B), q.submit(*C)
    with pytest.raises(store.QueueFull, match="at most 2"):
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
    q = store.TrainingQueue(trainer, base=FAST)
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
    q = store.TrainingQueue(trainer, base=FAST)
    h = q.submit(*A)
    with pytest.raises(RuntimeError, match="boom"):
        h.wait(10)
    assert isinstance(h.error, RuntimeError) and h.result is None and h.done
    assert q.cached(*A) is None
    assert q.submit(*B).wait(10).cfg.task == "reverse"  # the worker still serves
    with pytest.raises(RuntimeError):
        q.submit(*A).wait(10)
    assert trainer.calls == [A, B, A]


def test_submit_validates_its_arguments():
    q = store.TrainingQueue(FakeTrainer(), base=FAST)
    for bad in (("poetry", "none", 0), ("copy", "psychic", 0), ("copy", "none", -1), ("copy", "none", True),
                ("copy", "none", 1.5)):
        with pytest.raises(ValueError):
            q.submit(*bad)
    for bounds in ({"max_results": 0}, {"max_waiting": 0}):
        with pytest.raises(ValueError):
            store.TrainingQueue(FakeTrainer(), **bounds)
    with pytest.raises(TimeoutError):
        trainer = FakeTrainer()
        trainer.hold(A)
        q2 = store.TrainingQueue(trainer, base=FAST)
        try:
            q2.submit(*A).wait(0.01)
        finally:
            trainer.release(A)


def test_real_training_through_the_queue():
    q = store.TrainingQueue(base=TINY)  # the default trainer: seq2seq.train
    h = q.submit("reverse", "dot", 1)
    r = h.wait(120)
    cfg = dataclasses.replace(TINY, task="reverse", attention="dot")
    direct = seq2seq.train(cfg, seed=1)
    assert r.cfg == cfg and len(r.losses) == 3
    assert r.losses == direct.losses and all(torch.equal(r.params[k], direct.params[k]) for k in direct.params)
    assert h.progress.losses == r.losses and h.progress.step == 3
    assert q.submit("reverse", "dot", 1).result is r
