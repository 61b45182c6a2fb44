r"""Shipped seq2seq checkpoints, the reference answers, and their accuracy curves (C25–C27).

Two pieces make the seq2seq page cheap to serve:

* **checkpoints** — ``save`` / ``load`` a ``seq2seq.Trained`` as a small ``torch.save`` file of
  plain tensors, lists and numbers only (read back with ``weights_only=True``: no arbitrary
  pickles). ``shipped(task, attention)`` returns the model trained ahead of time by
  ``scripts/train_seq2seq.py`` (seed 0, default ``Config``); ``shipped_curves(task)`` the
  accuracy-by-length curves of the bottleneck chart (C25).
* ``reference(task, words)`` — the correct output y* for an input x (copy: y* = x, reverse:
  y*_t = x_{N+1−t}, translate: the toy rule of ``seq2seq.translate_words``).

The one-at-a-time training queue the page uses is the server's: ``serving/training.py``.

Pure PyTorch: nothing here imports streamlit.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from core.models import seq2seq
from core.models.paths import ASSETS

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



# ----------------------------------------------------------------------------- checkpoints
def checkpoint_path(task: str, attention: str, directory: str | os.PathLike | None = None) -> Path:
    """``<directory>/<task>-<attention>.pt`` (default directory: assets/checkpoints/seq2seq)."""
    check_names(task, attention)
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


def check_names(task: str, attention: str) -> None:
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


# ---------------------------------------------------------------------------- facts the page states in words
@dataclass(frozen=True)
class CurveFacts:
    """What a task's bottleneck curves show, region by region (lengths below, inside and above
    the trained range [min_len, max_len]): the mean accuracy of each model (None where the
    region has no length), the longest length and both accuracies there, and the shortest."""

    task: str
    trained: tuple[float, float]  # (with attention, without) mean over the trained lengths
    longer: tuple[float, float] | None  # mean over the lengths above the trained range
    shorter: tuple[float, float] | None  # mean over the lengths below it
    last: tuple[int, float, float]  # (longest length, with, without)
    first: tuple[int, float, float]  # (shortest length, with, without)


def curve_facts(curves: LengthCurves, min_len: int, max_len: int) -> CurveFacts:
    """The facts of :class:`CurveFacts` from shipped or measured curves (additive vs none)."""
    L = list(curves.lengths)
    att, none = list(curves["additive"]), list(curves["none"])

    def mean(pick) -> tuple[float, float] | None:
        idx = [i for i, n in enumerate(L) if pick(n)]
        if not idx:
            return None
        return (sum(att[i] for i in idx) / len(idx), sum(none[i] for i in idx) / len(idx))

    return CurveFacts(task=curves.task, trained=mean(lambda n: min_len <= n <= max_len) or (float("nan"),) * 2,
                      longer=mean(lambda n: n > max_len), shorter=mean(lambda n: n < min_len),
                      last=(L[-1], att[-1], none[-1]), first=(L[0], att[0], none[0]))


SAME = 0.02  # accuracies this close count as equal in a sentence


def compare(with_att: float, without: float) -> str:
    """'better', 'same' or 'worse': the model with attention against the one without."""
    if abs(with_att - without) <= SAME:
        return "same"
    return "better" if with_att > without else "worse"


@dataclass(frozen=True)
class MapFacts:
    """What one attention map A (m outputs × n inputs) shows: the share of weight on the diagonal
    (output t → input t) and on the anti-diagonal (t → n−1−t), both over min(m, n) steps, and the
    output step whose weight is most spread (the lowest largest weight) with its two strongest inputs."""

    diagonal: float
    anti_diagonal: float
    spread_step: int
    spread_inputs: tuple[tuple[int, float], ...]


def map_facts(A) -> MapFacts:
    """:class:`MapFacts` of an attention map A (m, n) (rows: output steps, summing to 1)."""
    import torch

    a = torch.as_tensor(A, dtype=torch.float64)
    m, n = a.shape
    k = min(m, n)
    diag = float(sum(a[t, t] for t in range(k))) / k
    anti = float(sum(a[t, n - 1 - t] for t in range(k))) / k
    t = int(torch.argmin(a.max(dim=1).values))
    top = torch.topk(a[t], min(2, n))
    return MapFacts(diagonal=diag, anti_diagonal=anti, spread_step=t,
                    spread_inputs=tuple((int(i), float(w)) for w, i in zip(top.values, top.indices, strict=True)))
