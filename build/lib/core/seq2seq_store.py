r"""Shipped seq2seq checkpoints, the reference answers, and a one-at-a-time training queue (C25–C27).

A classroom of 40 visitors on one server must not train 40 GRUs at once, nor keep every model
anyone ever trained. Three pieces make the seq2seq page cheap to serve:

* **checkpoints** — ``save`` / ``load`` a ``seq2seq.Trained`` as a small ``torch.save`` file of
  plain tensors, lists and numbers only (read back with ``weights_only=True``: no arbitrary
  pickles). ``shipped(task, attention)`` returns the model trained ahead of time by
  ``scripts/train_seq2seq.py`` (seed 0, default ``Config``); ``shipped_curves(task)`` the
  accuracy-by-length curves of the bottleneck chart (C25).
* ``reference(task, words)`` — the correct output y* for an input x (copy: y* = x, reverse:
  y*_t = x_{N+1−t}, translate: the toy rule of ``seq2seq.translate_words``).
* ``TrainingQueue`` — at most one ``seq2seq.train`` at a time per queue (the app holds one per
  process); equal requests join one job; recent results are kept in a bounded LRU; the waiting
  line is bounded too.

Pure PyTorch: nothing here imports streamlit.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from . import seq2seq
from ._paths import ASSETS

FORMAT = "attention-lab/seq2seq-checkpoint"
CURVES_FORMAT = "attention-lab/seq2seq-curves"
VERSION = 1
CHECKPOINT_DIR = ASSETS / "checkpoints" / "seq2seq"
CURVES_FILE = "curves.json"
CURVE_TASKS = ("copy", "reverse")  # length is a free parameter only for these (translate draws sentences)
CURVE_ATTENTIONS = ("none", "additive")
CURVE_LENGTHS = tuple(range(2, 13))
SHIPPED_SEED = 0
MAX_FILE_BYTES = 8 * 2**20  # a shipped checkpoint is ~250 KB; refuse anything far larger before reading it
_MAX_WIDTH = 512  # emb, hidden, d_a of a checkpoint's Config
_KEYS = {"format", "version", "seed", "config", "params", "losses", "accuracy", "seconds"}

Key = tuple[str, str, int]  # (task, attention, seed)
TrainFn = Callable[..., seq2seq.Trained]  # train(cfg, seed, *, callback=(step, loss) → None) → Trained


# ----------------------------------------------------------------------------- checkpoints
def checkpoint_path(task: str, attention: str, directory: str | os.PathLike | None = None) -> Path:
    """``<directory>/<task>-<attention>.pt`` (default directory: assets/checkpoints/seq2seq)."""
    _check_names(task, attention)
    return Path(CHECKPOINT_DIR if directory is None else directory) / f"{task}-{attention}.pt"


def save(trained: seq2seq.Trained, path: str | os.PathLike, *, seed: int = SHIPPED_SEED) -> Path:
    """Write ``trained`` to ``path`` as float32 tensors + plain numbers (atomically: temp file, then rename).

    Stored: the Config's fields, every parameter (shapes as in ``seq2seq.init_params``), the loss
    curve (cfg.steps floats), the held-out token accuracy, the training seconds and the seed.
    """
    path = Path(path)
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "seed": int(seed),
        "config": dataclasses.asdict(trained.cfg),
        # clone: a view would drag its whole storage into the file
        "params": {k: v.detach().to("cpu", torch.float32).contiguous().clone() for k, v in sorted(trained.params.items())},
        "losses": [float(x) for x in trained.losses],
        "accuracy": float(trained.accuracy),
        "seconds": float(trained.seconds),
    }
    _validate(payload, path)  # never write a file that load() would refuse
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def load(path: str | os.PathLike) -> seq2seq.Trained:
    """Read a checkpoint written by ``save``.

    Raises FileNotFoundError when ``path`` does not exist and ValueError when it is not a valid
    checkpoint: not a torch file, a pickle of anything but tensors / dicts / lists / numbers /
    strings (``weights_only=True`` refuses to build other objects), or fields, shapes or values
    that do not match the stored Config.
    """
    return _validate(_read(path), Path(path))[0]


def load_seed(path: str | os.PathLike) -> int:
    """The training seed a checkpoint records (validated like ``load``)."""
    return _validate(_read(path), Path(path))[1]


@functools.lru_cache(maxsize=len(seq2seq.TASKS) * len(seq2seq.ATTENTIONS))
def shipped(task: str, attention: str) -> seq2seq.Trained | None:
    """The model shipped for (task, attention) — seed 0, ``seq2seq.Config(task=task, attention=attention)``.

    None when the file is absent, or stale (trained with another Config than today's default, or
    another seed): the caller then trains on demand. A present but malformed file raises ValueError.
    Cached (one entry per pair); the returned object is shared — do not modify its params.
    """
    path = checkpoint_path(task, attention)
    if not path.is_file():
        return None
    trained, seed = _validate(_read(path), path)
    if seed != SHIPPED_SEED or trained.cfg != seq2seq.Config(task=task, attention=attention):
        return None
    return trained


@dataclass(frozen=True)
class LengthCurves:
    """Token accuracy against input length (the bottleneck, C25) for one task:
    ``lengths`` (L,), ``none`` (L,) without attention, ``additive`` (L,) with additive attention."""

    task: str
    lengths: tuple[int, ...]
    none: tuple[float, ...]
    additive: tuple[float, ...]

    def __getitem__(self, attention: str) -> tuple[float, ...]:
        if attention not in CURVE_ATTENTIONS:
            raise KeyError(attention)
        return getattr(self, attention)


def curves_payload(curves: Sequence[LengthCurves], *, seed: int = SHIPPED_SEED) -> dict:
    """The JSON object ``write_curves`` stores (exposed for the training script's --check)."""
    return {"format": CURVES_FORMAT, "version": VERSION, "seed": int(seed),
            "lengths": list(CURVE_LENGTHS),
            "curves": {c.task: {att: [float(a) for a in c[att]] for att in CURVE_ATTENTIONS} for c in curves}}


def write_curves(curves: Sequence[LengthCurves], path: str | os.PathLike, *, seed: int = SHIPPED_SEED) -> Path:
    """Write the curves of ``CURVE_TASKS`` as a small JSON file."""
    path = Path(path)
    for c in curves:
        if c.lengths != CURVE_LENGTHS:
            raise ValueError(f"curves must cover lengths {CURVE_LENGTHS[0]}..{CURVE_LENGTHS[-1]}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(curves_payload(curves, seed=seed), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def read_curves(path: str | os.PathLike, task: str) -> LengthCurves:
    """One task's curves from a JSON file written by ``write_curves``; ValueError if malformed."""
    path = Path(path)
    if task not in CURVE_TASKS:
        raise ValueError(f"length curves exist for {', '.join(CURVE_TASKS)} only (translate's inputs are "
                         f"sentences of the toy grammar, not a chosen length); got '{task}'")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a curves file ({e})") from e
    if not isinstance(data, dict) or data.get("format") != CURVES_FORMAT or data.get("version") != VERSION:
        raise ValueError(f"{path}: not a {CURVES_FORMAT} v{VERSION} file")
    if data.get("lengths") != list(CURVE_LENGTHS):
        raise ValueError(f"{path}: lengths must be {list(CURVE_LENGTHS)}")
    entry = data.get("curves", {}).get(task) if isinstance(data.get("curves"), dict) else None
    if not isinstance(entry, dict):
        raise ValueError(f"{path}: no curves for task '{task}'")
    out = {}
    for att in CURVE_ATTENTIONS:
        ys = entry.get(att)
        if not (isinstance(ys, list) and len(ys) == len(CURVE_LENGTHS)
                and all(_is_number(y) and 0.0 <= y <= 1.0 for y in ys)):
            raise ValueError(f"{path}: curve '{task}/{att}' must be {len(CURVE_LENGTHS)} accuracies in [0, 1]")
        out[att] = tuple(float(y) for y in ys)
    return LengthCurves(task=task, lengths=CURVE_LENGTHS, **out)


@functools.lru_cache(maxsize=len(CURVE_TASKS))
def shipped_curves(task: str) -> LengthCurves | None:
    """The shipped bottleneck curves of ``task`` ('copy' or 'reverse'; ValueError for others),
    None when curves.json is absent."""
    path = CHECKPOINT_DIR / CURVES_FILE
    if task in CURVE_TASKS and not path.is_file():
        return None
    return read_curves(path, task)


def _read(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no seq2seq checkpoint at {path}")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{path}: {size} bytes is too large for a seq2seq checkpoint (at most {MAX_FILE_BYTES})")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # UnpicklingError, RuntimeError (not a zip), EOFError, …: all mean "not ours"
        first_line = (str(e).splitlines() or [""])[0][:200]
        raise ValueError(f"{path}: not a valid seq2seq checkpoint ({type(e).__name__}: {first_line})") from e
    return data


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _validate(data, path: Path) -> tuple[seq2seq.Trained, int]:
    """Check every field of a checkpoint payload; returns (Trained, seed) or raises ValueError."""
    def bad(msg: str) -> ValueError:
        return ValueError(f"{path}: {msg}")

    if not isinstance(data, dict) or set(data) != _KEYS:
        got = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise bad(f"expected a dict with keys {sorted(_KEYS)}, got {got}")
    if data["format"] != FORMAT or data["version"] != VERSION:
        raise bad(f"format {data['format']!r} v{data['version']!r} is not {FORMAT!r} v{VERSION}")
    seed = data["seed"]
    if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        raise bad("seed must be a non-negative int")

    raw = data["config"]
    fields = {f.name: f for f in dataclasses.fields(seq2seq.Config)}
    if not isinstance(raw, dict) or set(raw) != set(fields):
        raise bad(f"config must have exactly the fields {sorted(fields)}")
    for name, value in raw.items():
        want = type(getattr(seq2seq.Config(), name))  # str, int or float
        ok = isinstance(value, str) if want is str else (_is_number(value) and (want is float or isinstance(value, int)))
        if not ok:
            raise bad(f"config.{name} must be a {want.__name__}, got {value!r}")
    default = seq2seq.Config()
    cfg = seq2seq.Config(**{k: float(v) if isinstance(getattr(default, k), float) else v for k, v in raw.items()})
    if cfg.task not in seq2seq.TASKS or cfg.attention not in seq2seq.ATTENTIONS:
        raise bad(f"unknown task/attention {cfg.task!r}/{cfg.attention!r}")
    if not all(1 <= w <= _MAX_WIDTH for w in (cfg.emb, cfg.hidden, cfg.d_a)) or not 1 <= cfg.steps <= 10**6:
        raise bad("config sizes out of range")

    params = data["params"]
    expected = {k: tuple(v.shape) for k, v in seq2seq.init_params(cfg, 0).items()}
    if not isinstance(params, dict) or set(params) != set(expected):
        raise bad(f"params must be exactly {sorted(expected)}")
    out = {}
    for k, shape in expected.items():
        v = params[k]
        if not isinstance(v, torch.Tensor) or not v.is_floating_point() or tuple(v.shape) != shape:
            raise bad(f"param {k} must be a float tensor of shape {shape}")
        if not torch.isfinite(v).all():
            raise bad(f"param {k} has non-finite values")
        out[k] = v.to(torch.float32).contiguous()

    losses = data["losses"]
    if not (isinstance(losses, list) and len(losses) == cfg.steps and all(_is_number(x) for x in losses)):
        raise bad(f"losses must be a list of {cfg.steps} finite numbers")
    acc, secs = data["accuracy"], data["seconds"]
    if not (_is_number(acc) and 0.0 <= acc <= 1.0):
        raise bad("accuracy must be a number in [0, 1]")
    if not (_is_number(secs) and secs >= 0):
        raise bad("seconds must be a non-negative number")
    trained = seq2seq.Trained(cfg=cfg, params=out, losses=tuple(float(x) for x in losses), accuracy=float(acc),
                              seconds=float(secs))
    return trained, seed


def _check_names(task: str, attention: str) -> None:
    if task not in seq2seq.TASKS:
        raise ValueError(f"unknown task '{task}'; choose one of {', '.join(seq2seq.TASKS)}")
    if attention not in seq2seq.ATTENTIONS:
        raise ValueError(f"unknown attention '{attention}'; choose one of {', '.join(seq2seq.ATTENTIONS)}")


# ----------------------------------------------------------------------------- reference answers
def reference(task: str | seq2seq.Task, words: Sequence[str]) -> list[str]:
    """The correct output y* for the input words x_1 … x_N.

    copy: y* = x; reverse: y*_t = x_{N+1−t}; translate: the toy rule (colour + noun swap, 'of the'
    → 'du'). ValueError for a word outside the task's source vocabulary, or a translate input the
    rule cannot translate (an 'of' not followed by 'the').
    """
    t = task if isinstance(task, seq2seq.Task) else seq2seq.get_task(task)
    words = list(words)
    vocab = t.src_vocab[2:]  # without <pad>, <bos>
    unknown = [w for w in words if w not in vocab]
    if unknown:
        raise ValueError(f"not in the {t.name} vocabulary: {', '.join(map(repr, unknown[:5]))}")
    if t.name == "copy":
        return words
    if t.name == "reverse":
        return words[::-1]
    for i, w in enumerate(words):
        if w == "of" and (i + 1 == len(words) or words[i + 1] != "the"):
            raise ValueError("'of' must be followed by 'the' (the toy translation turns 'of the' into 'du')")
    return seq2seq.translate_words(words)


# ----------------------------------------------------------------------------- training queue
class QueueFull(RuntimeError):
    """Raised by ``TrainingQueue.submit`` when the waiting line is full."""


@dataclass(frozen=True)
class Progress:
    """A snapshot of one training: ``step`` steps done of ``total``; ``loss`` the last one (None
    before the first step); ``losses`` (step,) the curve so far."""

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
    """One training job as a caller sees it. Every caller that asks for the same key while the
    job is waiting or running gets this same object. Read-only from outside; thread-safe."""

    def __init__(self, queue: TrainingQueue, key: Key, cfg: seq2seq.Config) -> None:
        self._queue = queue
        self.key: Key = key
        self.cfg = cfg
        self._losses: list[float] = []
        self._result: seq2seq.Trained | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()

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
        return self._done.is_set()

    @property
    def result(self) -> seq2seq.Trained | None:
        """The trained model once done without error, else None."""
        return self._result if self._done.is_set() else None

    @property
    def error(self) -> BaseException | None:
        """The exception the training raised, once done; None otherwise."""
        return self._error if self._done.is_set() else None

    def wait(self, timeout: float | None = None) -> seq2seq.Trained:
        """Block until done; returns the model, re-raises the training's error, TimeoutError on timeout."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"training {self.key} not done after {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result

    def __repr__(self) -> str:
        state = "done" if self.done else f"position {self.position}"
        return f"TrainingHandle({self.key}, {state})"


class TrainingQueue:
    """Trains seq2seq models one at a time on a single lazily started daemon thread.

    ``submit(task, attention, seed)`` returns a ``TrainingHandle``:

    * the key was trained recently → a handle that is already done (from an LRU of at most
      ``max_results`` models; no training);
    * the key is waiting or training → the existing job's handle (joined, not duplicated);
    * otherwise a new job joins the end of the line; ``QueueFull`` when ``max_waiting`` jobs
      already wait.

    The model trained is ``train(dataclasses.replace(base, task=task, attention=attention), seed,
    callback=...)``; ``train`` defaults to ``seq2seq.train``. One queue guarantees one training at
    a time; the app holds one queue per process (``st.cache_resource``). Failed trainings are not
    cached: the next submit tries again.
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
        self._waiting: deque[TrainingHandle] = deque()
        self._running: TrainingHandle | None = None
        self._results: OrderedDict[Key, seq2seq.Trained] = OrderedDict()
        self._worker: threading.Thread | None = None

    # -- public
    def submit(self, task: str, attention: str, seed: int = 0) -> TrainingHandle:
        """Ask for the model (task, attention, seed); see the class docstring."""
        key = self._key(task, attention, seed)
        with self._lock:
            cached = self._results.get(key)
            if cached is not None:
                self._results.move_to_end(key)
                return self._finished(key, cached)
            job = self._job(key)
            if job is not None:
                return job
            if len(self._waiting) >= self.max_waiting:
                raise QueueFull(f"{len(self._waiting)} trainings are already waiting (at most {self.max_waiting}); "
                                f"try again in a minute")
            job = TrainingHandle(self, key, dataclasses.replace(self.base, task=task, attention=attention))
            self._waiting.append(job)
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="seq2seq-training", daemon=True)
                self._worker.start()
            return job

    def find(self, task: str, attention: str, seed: int = 0) -> TrainingHandle | None:
        """Like ``submit`` but never starts a training: the cached, running or waiting job, else None."""
        key = self._key(task, attention, seed)
        with self._lock:
            cached = self._results.get(key)
            if cached is not None:
                self._results.move_to_end(key)
                return self._finished(key, cached)
            return self._job(key)

    def cached(self, task: str, attention: str, seed: int = 0) -> seq2seq.Trained | None:
        """The recently trained model for this key, or None."""
        handle = self.find(task, attention, seed)
        return handle.result if handle is not None else None

    def stats(self) -> QueueStats:
        with self._lock:
            return QueueStats(running=self._running.key if self._running else None,
                              waiting=tuple(j.key for j in self._waiting), cached=tuple(self._results))

    # -- internals
    def _key(self, task: str, attention: str, seed: int) -> Key:
        _check_names(task, attention)
        if not (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed < 2**62):
            raise ValueError(f"seed must be an int in [0, 2**62), got {seed!r}")
        return (task, attention, int(seed))

    def _job(self, key: Key) -> TrainingHandle | None:
        if self._running is not None and self._running.key == key:
            return self._running
        return next((j for j in self._waiting if j.key == key), None)

    def _finished(self, key: Key, trained: seq2seq.Trained) -> TrainingHandle:
        h = TrainingHandle(self, key, trained.cfg)
        h._losses = list(trained.losses)
        h._result = trained
        h._done.set()
        return h

    def _position(self, job: TrainingHandle) -> int | None:
        with self._lock:
            if job.done:
                return None
            if job is self._running:
                return 0
            for i, j in enumerate(self._waiting):
                if j is job:
                    return i + 1
            return None

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._waiting:
                    self._worker = None  # the next submit starts a new worker; this one ends
                    return
                job = self._running = self._waiting.popleft()

            def callback(step: int, loss: float, job: TrainingHandle = job) -> None:
                with self._lock:
                    job._losses.append(float(loss))

            result, error = None, None
            try:
                result = self._train(job.cfg, job.key[2], callback=callback)
            except BaseException as e:  # the worker must survive any training failure
                error = e
            with self._lock:
                if error is None:
                    job._result = result
                    job._losses = list(result.losses)
                    self._results[job.key] = result
                    self._results.move_to_end(job.key)
                    while len(self._results) > self.max_results:
                        self._results.popitem(last=False)
                else:
                    job._error = error
                self._running = None
                job._done.set()
