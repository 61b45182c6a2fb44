r"""The guided tutorial: lessons, exercises and the checks that grade them — pure Python/PyTorch.

Eleven lessons follow the self-study path (weighted average → scores → softmax and temperature →
output → masks → projections → multi-head → position → cross attention → the KV cache with
grouped-query attention → RoPE). Each :class:`Lesson`
names a scenario (a dict in the format of ``ui.scenario.DEFAULTS``; only what differs from the
defaults), the live panel it wants (:data:`PANELS`) and its exercises.

Every :class:`Exercise` is graded by a function of its own that recomputes the truth with core
(:func:`scenario_trace` → :func:`core.lab.playground`, :func:`core.multi_head_attention`,
:func:`core.lab.permutation_check`, …), never by comparing text. ``exercise.check(answer)``
always returns a :class:`Feedback` — never raises — whatever the answer is:

* ``number``     answer: str | int | float (the learner's text; "0,21" is read as 0.21)
* ``predict``    answer: int key index (0-based; a digit string or the key's token also works)
* ``choice``     answer: str option id (one of ``exercise.options``)
* ``make_it_so`` answer: a mapping, the state of the live panel — the scenario values
  (``ui.scenario_state.values()``), ``"matrices"`` (the learner's edited matrices by name, as the share
  link carries them), ``"seed"`` (the settings seed) and the panel keys listed in
  ``exercise.needs`` that are not scenario names (:data:`MH_D_MODEL`, :data:`MH_HEADS`, :data:`PS_D_KEY`,
  :data:`PS_PERM`: the multi-head and position controls). ``needs`` names what the learner is meant
  to change; ``"matrices.K"`` means the K matrix. A state that changed anything else is answered ``common.changed_other``.

Text lives in ``assets/lessons``: ``<lesson-id>.<lang>.md`` and ``exercises.<lang>.json``
(prompts, hints, feedback; ``{placeholders}`` take the Feedback's ``values`` through
``str.format``). :func:`text` looks a key up with a fallback to English.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import re
import string
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

import torch

from . import masks as _masks
from . import positional as _positional
from . import tokens as _tokens
from ._paths import ASSETS as _ASSETS
from .attention import SCORE_FUNCTIONS, attention
from .experiments import scaling_experiment
from .kv_cache import MODEL_PRESETS, cached_decode, kv_cache_bytes
from .lab import QKV_MODES, PlaygroundTrace, c18_lookup, gap_text, permutation_check, playground, within_rounding
from .multihead import kv_head_map, multi_head_attention
from .pitfalls import head_layouts, mask_after_softmax

KINDS = ("number", "predict", "choice", "make_it_so")
# The live panel a lesson wants; the page maps each to building blocks:
#   weights   the weight heatmap of the scenario (hidden while a predict question is open)
#   pipeline  the five steps scores → scaled → masked → weights → output, with the matrix editors,
#             score function, scale and temperature controls
#   inspector one query's α bars and its output built as Σ αᵢ vᵢ (with the Q/K/V editors)
#   masks     the mask controls (causal, padding, clicked cells) with logits and weights
#   multihead the multi-head panel (d_model, H, every head's weights, the shapes)
#   position  the permutation experiment with and without positions, the positional table
PANELS = ("weights", "pipeline", "inspector", "masks", "multihead", "position")
LANGS = ("en", "ko")
ASSETS = _ASSETS / "lessons"

# A copy of ui.scenario.DEFAULTS (core may not import ui); tests keep the two equal.
SCENARIO_DEFAULTS: Mapping[str, Any] = MappingProxyType({
    "tokens": "나는 오늘 사과를 먹었다", "source": "We see the sky", "mode": "self", "embedding": "c18",
    "d_model": 3, "qkv": "identity", "d_k": 3, "d_v": 3, "score": "scaled_dot", "d_a": 4, "scale": "auto",
    "temperature": 1.0, "causal": False, "pad": (), "blocked": (), "convention": "row", "query": 0,
})
_MAX_DIM = 16
_MAX_TOKENS = 512
TEMPERATURE_GRID = tuple(round(0.1 * i, 1) for i in range(1, 51))  # the Playground's slider: 0.1 … 5.0
_TIE = 1e-6  # weights closer than this count as tied
# Panel keys a make_it_so state may carry besides the scenario: the names of the multi-head and position
# pages' controls in ui.state (MULTI_HEAD.d_model, MULTI_HEAD.heads, POSITION.d, POSITION.perm; a test
# keeps them equal — core may not import ui).
MH_D_MODEL, MH_HEADS = "multi_head.d_model", "multi_head.heads"
PS_D_KEY, PS_PERM = "position.d", "position.perm"


# --------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Feedback:
    """The verdict on one answer. ``message_key`` names a string of the exercises json;
    ``values`` fill its placeholders; ``hint_key`` is set after a wrong try."""

    ok: bool
    message_key: str
    values: dict = field(default_factory=dict)
    hint_key: str | None = None


@dataclass(frozen=True)
class Reveal:
    """The right answer and its derivation: ``answer`` is the number, the key index, the option
    id, or for make_it_so an example of the state changes that solve it (``{"temperature": 0.1}``,
    ``{"matrices": {"K": [[…]]}}``, ``{MH_HEADS: 4}``)."""

    answer: Any
    message_key: str
    values: dict = field(default_factory=dict)


class _BadState(ValueError):
    """A panel state that cannot be turned into numbers."""


# --------------------------------------------------------------------------- the scenario → core
def _freeze(x):
    if isinstance(x, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return tuple(_freeze(v) for v in x)
    return x


def _thaw(x):
    if isinstance(x, Mapping):
        return {k: _thaw(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_thaw(v) for v in x]
    return x


def _int(v, lo: int, hi: int, name: str) -> int:
    if isinstance(v, bool):
        raise _BadState(name)
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise _BadState(name) from None
    if not math.isfinite(f) or f != int(f) or not lo <= int(f) <= hi:
        raise _BadState(name)
    return int(f)


def _choice(v, options, name: str) -> str:
    if not isinstance(v, str) or v not in options:
        raise _BadState(name)
    return v


def _flag(v, name: str) -> bool:
    if isinstance(v, bool):
        return v
    if v in (0, 1, "0", "1", "true", "false", "True", "False"):
        return v in (1, "1", "true", "True")
    raise _BadState(name)


def _get(state: Mapping, name: str):
    return state[name] if name in state else SCENARIO_DEFAULTS[name]


def _token_list(text, name: str) -> list[str]:
    if not isinstance(text, str) or len(text) > 20_000:
        raise _BadState(name)
    toks = _tokens.tokenize(text)
    if not toks or len(toks) > _MAX_TOKENS:
        raise _BadState(name)
    return toks


def _matrix(state: Mapping, name: str, generated: torch.Tensor) -> torch.Tensor:
    """The learner's matrix ``name`` when it has the generated one's shape, else the generated one
    (as ui.scenario_state.editable: a vector counts as a column; a matrix of another shape is dropped)."""
    mats = state.get("matrices") or {}
    if not isinstance(mats, Mapping) or mats.get(name) is None:
        return generated
    raw = mats[name]
    try:
        m = raw.detach().to(torch.float32) if isinstance(raw, torch.Tensor) else torch.as_tensor(_thaw(raw), dtype=torch.float32)
    except (TypeError, ValueError, RuntimeError):
        raise _BadState(f"matrices.{name}") from None
    if not bool(torch.isfinite(m).all()):
        raise _BadState(f"matrices.{name}")
    ov = m if m.dim() == 2 else m.reshape(-1, 1)
    if tuple(ov.shape) != tuple(generated.reshape(generated.shape[0], -1).shape):
        return generated
    return ov.reshape(generated.shape)


@dataclass(frozen=True, eq=False)
class LessonTrace:
    """A scenario's numbers: the Playground's trace (always row convention: weights[query, key])
    and the query/key tokens."""

    trace: PlaygroundTrace
    q_tokens: tuple[str, ...]
    k_tokens: tuple[str, ...]

    @property
    def weights(self) -> torch.Tensor:
        return self.trace.attn.weights

    @property
    def scores(self) -> torch.Tensor:
        return self.trace.attn.scores


def scenario_trace(state: Mapping, *, seed: int | None = None) -> LessonTrace:
    """The numbers of a scenario state, built as the Playground builds them (ui.inputs.inputs and
    ui.scenario_state.run): tokens → embedding (C18 table, seeded per-token random, one-hot) → the
    learner's matrices → Q/K/V (identity, projection W, direct) → score parameters → scale,
    temperature → causal & padding & clicked-cell mask → core.lab.playground, in row convention.

    Raises ValueError when the state cannot be read."""
    if not isinstance(state, Mapping):
        raise _BadState("state")
    seed = _int(state.get("seed", 0) if seed is None else seed, 0, 2**31 - 1, "seed")
    mode = _choice(_get(state, "mode"), ("self", "cross"), "mode")
    tq = _token_list(_get(state, "tokens"), "tokens")
    tk = _token_list(_get(state, "source"), "source") if mode == "cross" else tq
    emb = _choice(_get(state, "embedding"), ("c18", "random", "onehot"), "embedding")
    all_tokens = tuple(tq) + (tuple(tk) if mode == "cross" else ())
    if emb == "c18":
        X_all = c18_lookup(all_tokens, fallback_seed=seed)[0]
    elif emb == "onehot":
        X_all = _tokens.one_hot(all_tokens)
    else:
        X_all = _tokens.embed(all_tokens, _int(_get(state, "d_model"), 1, _MAX_DIM, "d_model"), seed=seed)
    X_all = X_all.to(torch.float32)
    n_q = len(tq)
    X_q = _matrix(state, "X", X_all[:n_q])
    X_kv = _matrix(state, "X_src", X_all[n_q:]) if mode == "cross" else X_q
    d_model = X_all.shape[1]

    qkv = _choice(_get(state, "qkv"), QKV_MODES, "qkv")
    W = {"W_q": None, "W_k": None, "W_v": None}
    Q = K = V = None
    if qkv == "projection":
        d_k = _int(_get(state, "d_k"), 1, _MAX_DIM, "d_k")
        d_v = _int(_get(state, "d_v"), 1, _MAX_DIM, "d_v")
        for name, d_out in (("W_q", d_k), ("W_k", d_k), ("W_v", d_v)):
            W[name] = _matrix(state, name, _tokens.projection(d_model, d_out, seed=seed, name=name))
    elif qkv == "direct":
        d_k = d_model
        Q, K, V = _matrix(state, "Q", X_q), _matrix(state, "K", X_kv), _matrix(state, "V", X_kv)
    else:
        d_k = d_model

    score = _choice(_get(state, "score"), SCORE_FUNCTIONS, "score")
    params = {}
    if score == "general":
        params["W"] = _matrix(state, "W", _tokens.projection(d_k, d_k, seed=seed, name="W").T)
    elif score == "additive":
        d_a = _int(_get(state, "d_a"), 1, _MAX_DIM, "d_a")
        params["W_a"] = _matrix(state, "W_a", _tokens.projection(d_k, d_a, seed=seed, name="W_a").T)
        params["U_a"] = _matrix(state, "U_a", _tokens.projection(d_k, d_a, seed=seed, name="U_a").T)
        params["w_a"] = _matrix(state, "w_a", _tokens.projection(d_a, 1, seed=seed, name="w_a")[:, 0])

    scale_mode = _choice(_get(state, "scale"), ("auto", "sqrt_dk", "none"), "scale")
    scale = None if scale_mode == "auto" else (1.0 / math.sqrt(d_k) if scale_mode == "sqrt_dk" else 1.0)
    try:
        temperature = float(_get(state, "temperature"))
    except (TypeError, ValueError):
        raise _BadState("temperature") from None
    if isinstance(_get(state, "temperature"), bool) or not (math.isfinite(temperature) and temperature > 0):
        raise _BadState("temperature")

    n_k = len(tk)
    causal = _flag(_get(state, "causal"), "causal")
    pad_raw, blocked_raw = _get(state, "pad"), _get(state, "blocked")
    if not isinstance(pad_raw, (list, tuple)) or not isinstance(blocked_raw, (list, tuple)):
        raise _BadState("mask")
    pad = {_int(i, 0, _MAX_TOKENS - 1, "pad") for i in pad_raw}
    blocked = []
    for c in blocked_raw:
        if not isinstance(c, (list, tuple)) or len(c) != 2:
            raise _BadState("blocked")
        blocked.append((_int(c[0], 0, _MAX_TOKENS - 1, "blocked"), _int(c[1], 0, _MAX_TOKENS - 1, "blocked")))
    mask = None
    pad = {i for i in pad if i < n_k}
    blocked = [(i, j) for i, j in blocked if i < n_q and j < n_k]
    if causal or pad or blocked:
        mask = _masks.none(n_q, n_k)
        if causal:
            mask = mask & _masks.causal(n_q, n_k)
        if pad:
            mask = mask & _masks.padding([i not in pad for i in range(n_k)], n_q)
        for i, j in blocked:
            mask[i, j] = False
    tr = playground(X_q, X_kv, qkv=qkv, W_q=W["W_q"], W_k=W["W_k"], W_v=W["W_v"], Q=Q, K=K, V=V, score=score,
                    params=params or None, scale=scale, temperature=temperature, mask=mask, convention="row",
                    dtype=torch.float32)
    return LessonTrace(trace=tr, q_tokens=tuple(tq), k_tokens=tuple(tk))


def _same_numbers(a: LessonTrace, b: LessonTrace) -> bool:
    """Whether two scenario traces compute the same thing (inputs, Q/K/V, score, scale, T, mask)."""
    ta, tb = a.trace, b.trace
    if a.q_tokens != b.q_tokens or a.k_tokens != b.k_tokens:
        return False
    for x, y in ((ta.X_q, tb.X_q), (ta.X_kv, tb.X_kv), (ta.Q, tb.Q), (ta.K, tb.K), (ta.V, tb.V)):
        if x.shape != y.shape or not torch.allclose(x, y, atol=1e-6, rtol=0):
            return False
    aa, ab = ta.attn, tb.attn
    if (aa.score, aa.scale, aa.temperature) != (ab.score, ab.scale, ab.temperature):
        return False
    if set(aa.params) != set(ab.params) or any(not torch.allclose(aa.params[k], ab.params[k]) for k in aa.params):
        return False
    ma = torch.ones_like(aa.weights, dtype=torch.bool) if aa.mask is None else aa.mask
    mb = torch.ones_like(ab.weights, dtype=torch.bool) if ab.mask is None else ab.mask
    return bool(torch.equal(ma, mb))


def _with_needs(base: Mapping, state: Mapping, needs: Sequence[str]) -> dict:
    """``base`` with the names in ``needs`` taken from ``state`` (what the learner may change)."""
    out = _thaw(base)
    mats = dict(out.get("matrices") or {})
    smats = state.get("matrices") or {}
    for name in needs:
        if name.startswith("matrices."):
            m = name.split(".", 1)[1]
            if isinstance(smats, Mapping) and m in smats:
                mats[m] = smats[m]
            else:
                mats.pop(m, None)
        elif name in state:
            out[name] = state[name]
        else:
            out.pop(name, None)
    out["matrices"] = mats
    if "seed" in state:
        out["seed"] = state["seed"]
    return out


# --------------------------------------------------------------------------- input parsing
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _short(answer) -> str:
    s = str(answer)
    return s if len(s) <= 24 else s[:23] + "…"


def _is_bool(x) -> bool:
    return isinstance(x, bool) or type(x).__name__ in ("bool", "bool_")  # numpy's bool has __float__ too


def parse_number(answer) -> float | Feedback:
    """The learner's number, or a Feedback saying why it is not one. Accepts ints, floats and
    text; full-width digits and a Unicode minus are normalised; a lone comma is a decimal
    separator ("0,21" → 0.21; Korean and European keyboards). Refuses empty text, NaN, ±inf,
    percentages (with a message that gives the decimal) and anything else."""
    if answer is None:
        return Feedback(False, "common.empty")
    if _is_bool(answer):
        return Feedback(False, "common.not_number", {"answer": _short(answer)})
    if isinstance(answer, (int, float)) or (hasattr(answer, "__float__") and not isinstance(answer, str)):
        try:
            x = float(answer)
        except (TypeError, ValueError, OverflowError):
            return Feedback(False, "common.not_number", {"answer": _short(answer)})
        return x if math.isfinite(x) else Feedback(False, "common.not_finite", {"answer": _short(answer)})
    if not isinstance(answer, str):
        return Feedback(False, "common.not_number", {"answer": _short(answer)})
    text = unicodedata.normalize("NFKC", answer).strip().replace("−", "-")
    if not text:
        return Feedback(False, "common.empty")
    if len(text) > 40:
        return Feedback(False, "common.not_number", {"answer": _short(text)})
    if text.lower().lstrip("+-") in ("nan", "inf", "infinity", "∞"):
        return Feedback(False, "common.not_finite", {"answer": _short(text)})
    percent = text.endswith("%")
    body = text[:-1] if percent else text
    if body.count(",") == 1 and "." not in body:
        body = body.replace(",", ".")
    if not _NUMBER.fullmatch(body):
        return Feedback(False, "common.not_number", {"answer": _short(text)})
    x = float(body)
    if not math.isfinite(x):
        return Feedback(False, "common.not_finite", {"answer": _short(text)})
    if percent:
        return Feedback(False, "common.percent", {"answer": _short(text), "value": x / 100})
    return x


def parse_index(answer, labels: Sequence[str]) -> int | Feedback:
    """A 0-based key index (int, integral float, digit text, or the key's token), or a Feedback."""
    n = len(labels)
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return Feedback(False, "common.empty")
    if _is_bool(answer):
        return Feedback(False, "common.not_index", {"answer": _short(answer)})
    if isinstance(answer, str):
        text = unicodedata.normalize("NFKC", answer).strip()
        if text in labels:
            return list(labels).index(text)
        if not re.fullmatch(r"[+-]?\d{1,9}", text):
            return Feedback(False, "common.not_index", {"answer": _short(text)})
        i = int(text)
    else:
        try:
            f = float(answer)
        except (TypeError, ValueError, OverflowError):
            return Feedback(False, "common.not_index", {"answer": _short(answer)})
        if not math.isfinite(f) or f != int(f):
            return Feedback(False, "common.not_index", {"answer": _short(answer)})
        i = int(f)
    if not 0 <= i < n:
        return Feedback(False, "common.index_range", {"answer": i, "last": n - 1})
    return i


# --------------------------------------------------------------------------- exercises and lessons
@dataclass(frozen=True, eq=False)
class Exercise:
    """One exercise, graded by ``check(answer)``: a number (text or float), a key index, an option
    id or a panel state, by ``kind`` (see the module docstring). Text keys: ``prompt_key``,
    ``hint_key``, ``reveal_key`` and for a choice ``option_key(o)``; ``prompt_values`` fill the
    placeholders of the prompt, the hint and the options (and are in every Feedback's values). ``scenario`` holds the
    changes to the lesson's scenario that the question is about (e.g. ``{"scale": "none"}``),
    ``query`` the query row it asks about (predict: the page hides the weights until answered
    when ``hide_weights``), ``tolerance`` the accepted error of a number, ``needs`` the state
    names a make_it_so task lets the learner change. ``message_keys`` lists every exercise
    key (besides ``common.*``) that check/reveal may return. ``concepts`` names what the learner
    must already know to answer (ids of :data:`CONCEPTS`): each is taught by this lesson or an
    earlier one (a test holds the order)."""

    id: str
    kind: str
    checker: Callable[[Any], Feedback] = field(repr=False)
    revealer: Callable[[], Reveal] = field(repr=False)
    message_keys: tuple[str, ...] = ()
    prompt_values: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    scenario: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    tolerance: float | None = None
    options: tuple[str, ...] = ()
    query: int | None = None
    needs: tuple[str, ...] = ()
    hide_weights: bool = False
    concepts: tuple[str, ...] = ()

    @property
    def prompt_key(self) -> str:
        return f"{self.id}.prompt"

    @property
    def hint_key(self) -> str:
        return f"{self.id}.hint"

    @property
    def reveal_key(self) -> str:
        return f"{self.id}.reveal"

    def option_key(self, option: str) -> str:
        return f"{self.id}.opt.{option}"

    def check(self, answer) -> Feedback:
        """Grade an answer; never raises (an unexpected failure is ``common.internal``)."""
        try:
            fb = self.checker(answer)
        except ValueError:  # a state core cannot compute (core raises ValueError on malformed input)
            fb = Feedback(False, "common.bad_state")
        except Exception:  # noqa: BLE001 — a learner's answer must never crash the page
            fb = Feedback(False, "common.internal")
        values = {**self.prompt_values, **fb.values}  # the prompt's names are there for every message
        return Feedback(fb.ok, fb.message_key, values, None if fb.ok else (fb.hint_key or self.hint_key))

    def reveal(self) -> Reveal:
        """The right answer with its derivation (``reveal_key`` takes ``values``)."""
        r = self.revealer()
        return Reveal(r.answer, r.message_key, {**self.prompt_values, **r.values})


@dataclass(frozen=True, eq=False)
class Lesson:
    """One lesson: ``id`` (a stable slug, also the name of its markdown files), ``panel`` (one of
    :data:`PANELS`), ``scenario`` (frozen; only the values that differ from the defaults, plus
    ``matrices`` where the lesson fixes numbers), its exercises and the concepts its text
    ``teaches`` (ids of :data:`CONCEPTS`). An exercise's id keeps the lesson it was written for
    (its text keys and progress bit); :func:`lesson_of` says where it is asked now."""

    id: str
    panel: str
    scenario: Mapping[str, Any]
    exercises: tuple[Exercise, ...]
    teaches: tuple[str, ...] = ()

    def scenario_dict(self, exercise: Exercise | None = None) -> dict:
        """A fresh plain dict (lists, not tuples) for ui.scenario.validate: the lesson's scenario,
        with an exercise's own changes on top."""
        out = _thaw(self.scenario)
        if exercise is not None:
            extra = _thaw(exercise.scenario)
            mats = {**out.get("matrices", {}), **extra.pop("matrices", {})}
            out.update(extra)
            if mats:
                out["matrices"] = mats
        return out

    def exercise(self, exercise_id: str) -> Exercise:
        for ex in self.exercises:
            if ex.id == exercise_id:
                return ex
        raise KeyError(exercise_id)


def _fb(ok: bool, message_key: str, /, **values) -> Feedback:
    return Feedback(ok, message_key, values)


def _ties(row: torch.Tensor) -> list[int]:
    return [int(i) for i in torch.nonzero(row >= row.max() - _TIE).flatten()]


def _names(labels: Sequence[str], idx: Sequence[int]) -> str:
    return ", ".join(labels[i] for i in idx)


def _number(ex_id: str, truth: Callable[[], tuple[float, dict, dict]], *, tolerance: float, lo: float | None = None,
            hi: float | None = None, integer: bool = False, range_key: str = "common.out_of_range",
            diagnoses: tuple[str, ...] = (), decimals: int = 2, **kw) -> Exercise:
    """A number exercise. ``truth()`` → (value, derivation values, {diagnosis slug: the number
    that mistake gives}). An answer within ``tolerance`` of the truth is right; one within it of
    a diagnosed mistake (and not of the truth) gets that mistake's message ``<id>.<slug>``; then
    a non-integer (for ``integer``) and an answer outside [lo, hi] (the derivation values "lo" and
    "hi" override the static bounds) are refused with their own messages."""
    truth = cache(truth)  # the lesson's numbers do not change between answers

    def check(answer) -> Feedback:
        x = parse_number(answer)
        if isinstance(x, Feedback):
            return x
        value, values, wrong = truth()
        vals = {**values, "answer": x, "truth": value, "tol": tolerance}
        if abs(x - value) <= tolerance + 1e-9:
            return Feedback(True, f"{ex_id}.ok", vals)
        for slug in diagnoses:
            if abs(x - wrong[slug]) <= tolerance + 1e-9:
                return Feedback(False, f"{ex_id}.{slug}", {**vals, "mistake": wrong[slug]})
        if integer and x != int(x):
            return Feedback(False, "common.not_integer", {"answer": x})
        low, high = values.get("lo", lo), values.get("hi", hi)
        if (low is not None and x < low) or (high is not None and x > high):
            return Feedback(False, range_key, {**vals, "lo": low, "hi": high})
        return Feedback(False, f"{ex_id}.wrong", vals)

    def reveal() -> Reveal:
        value, values, _ = truth()
        answer = int(round(value)) if integer else round(value, decimals)
        return Reveal(answer, f"{ex_id}.reveal", {**values, "truth": value, "tol": tolerance})

    keys = (f"{ex_id}.ok", f"{ex_id}.wrong", *(f"{ex_id}.{s}" for s in diagnoses))
    if range_key != "common.out_of_range":
        keys += (range_key,)
    return Exercise(ex_id, "number", check, reveal, message_keys=keys, tolerance=tolerance, **kw)


def _predict(ex_id: str, scenario: Mapping, query: int, **kw) -> Exercise:
    """Which key does ``query`` attend to most? Any of tied keys is right."""

    @cache
    def truth():
        lt = scenario_trace(scenario)
        row = lt.weights[query]
        return lt, row, _ties(row)

    def check(answer) -> Feedback:
        lt, row, top = truth()
        i = parse_index(answer, lt.k_tokens)
        if isinstance(i, Feedback):
            return i
        scores = lt.scores[query]
        vals = {"query": lt.q_tokens[query], "chosen": lt.k_tokens[i], "chosen_w": float(row[i]),
                "chosen_s": float(scores[i]), "top": _names(lt.k_tokens, top), "top_w": float(row[top[0]]),
                "top_s": float(scores[top[0]])}
        if i in top:
            return Feedback(True, f"{ex_id}.ok_tie" if len(top) > 1 else f"{ex_id}.ok", vals)
        return Feedback(False, f"{ex_id}.wrong", vals)

    def reveal() -> Reveal:
        lt, row, top = truth()
        return Reveal(top[0], f"{ex_id}.reveal", {"query": lt.q_tokens[query], "top": _names(lt.k_tokens, top),
                                                  "top_w": float(row[top[0]]), "top_s": float(lt.scores[query][top[0]])})

    return Exercise(ex_id, "predict", check, reveal, message_keys=(f"{ex_id}.ok", f"{ex_id}.ok_tie", f"{ex_id}.wrong"),
                    query=query, hide_weights=True, **kw)


def _choice_ex(ex_id: str, options: tuple[str, ...], truth: Callable[[], tuple[str, dict]], **kw) -> Exercise:
    """Multiple choice; ``truth()`` → (the right option id, computed from core; values). A wrong
    option gets its own explanation ``<id>.why.<option>``."""
    truth = cache(truth)

    def check(answer) -> Feedback:
        if answer is None or (isinstance(answer, str) and not answer.strip()):
            return Feedback(False, "common.empty")
        if not isinstance(answer, str) or answer not in options:
            return Feedback(False, "common.unknown_option", {"answer": _short(answer)})
        right, values = truth()
        if answer == right:
            return Feedback(True, f"{ex_id}.ok", dict(values))
        return Feedback(False, f"{ex_id}.why.{answer}", dict(values))

    def reveal() -> Reveal:
        right, values = truth()
        return Reveal(right, f"{ex_id}.reveal", dict(values))

    keys = (f"{ex_id}.ok", *(f"{ex_id}.why.{o}" for o in options), *(f"{ex_id}.opt.{o}" for o in options))
    return Exercise(ex_id, "choice", check, reveal, message_keys=keys, options=options, **kw)


def _make_it_so(ex_id: str, lesson_scenario: Mapping, needs: tuple[str, ...], judge: Callable[[Mapping, LessonTrace], Feedback],
                example: Callable[[], tuple[dict, dict]], slugs: tuple[str, ...], *, check_tokens: bool = True,
                compare: bool = True, **kw) -> Exercise:
    """A task on the live panel. The state must be readable, keep the lesson's tokens
    (``check_tokens``) and compute the same numbers as the lesson's scenario with only ``needs``
    taken from the state (``compare``; off where the task is about panel keys outside the
    scenario); then ``judge(state, trace)`` decides. ``example()`` → (state changes that solve it,
    values) for the reveal."""

    def check(state) -> Feedback:
        if not isinstance(state, Mapping):
            return Feedback(False, "common.bad_state")
        base_tokens = _cached_trace(lesson_scenario)
        lt = scenario_trace(state)  # a state that cannot be read is refused, whatever the task reads
        if check_tokens and (lt.q_tokens != base_tokens.q_tokens or lt.k_tokens != base_tokens.k_tokens):
            return Feedback(False, "common.wrong_tokens", {"sentence": " ".join(base_tokens.q_tokens)})
        if compare and not _same_numbers(lt, scenario_trace(_with_needs(lesson_scenario, state, needs))):
            return Feedback(False, "common.changed_other", {"changed": tuple(_changed(lesson_scenario, state, needs))})
        return judge(state, lt)

    def reveal() -> Reveal:
        changes, values = example()
        return Reveal(changes, f"{ex_id}.reveal", values)

    keys = tuple(f"{ex_id}.{s}" for s in ("ok", *slugs))
    return Exercise(ex_id, "make_it_so", check, reveal, message_keys=keys, needs=needs, **kw)


def _changed(lesson_scenario: Mapping, state: Mapping, needs: Sequence[str]) -> list[str]:
    """The state names outside ``needs`` that change the numbers: each one, taken from ``state``
    on top of the lesson's scenario (with ``needs`` from the state), gives other numbers."""
    base = scenario_trace(_with_needs(lesson_scenario, state, needs))
    mats = state.get("matrices") or {}
    names = [n for n in SCENARIO_DEFAULTS if n not in needs and n in state]
    names += [f"matrices.{m}" for m in (mats if isinstance(mats, Mapping) else ()) if f"matrices.{m}" not in needs]
    out = []
    for name in names:
        try:
            lt = scenario_trace(_with_needs(lesson_scenario, state, (*needs, name)))
        except ValueError:
            out.append(name)
            continue
        if not _same_numbers(lt, base):
            out.append(name)
    return out


def _cached_trace(scenario: Mapping) -> LessonTrace:
    key = json.dumps(_thaw(scenario), sort_keys=True, ensure_ascii=False)
    if key not in _TRACES:
        _TRACES[key] = scenario_trace(scenario)
    return _TRACES[key]


_TRACES: dict[str, LessonTrace] = {}


def _state(scenario: Mapping, **changes) -> dict:
    """A full panel state: the scenario with changes on top (matrices merged)."""
    out = _thaw(scenario)
    mats = {**out.get("matrices", {}), **changes.pop("matrices", {})}
    out.update(changes)
    out["matrices"] = mats
    return out


# =========================================================================== the lessons
C18 = _tokens.C18_TOKENS  # 나는 오늘 사과를 먹었다
N, O, S, M = 0, 1, 2, 3  # 나는, 오늘, 사과를, 먹었다


def _exp_row(lt: LessonTrace, q: int) -> tuple[list[float], float]:
    logits = lt.trace.attn.logits[q]
    e = [math.exp(float(v)) if math.isfinite(float(v)) else 0.0 for v in logits]
    return e, sum(e)


# ---- 1. attention as a weighted average -------------------------------------------------
L1 = {"query": M}


def _l1_weight():
    lt = scenario_trace(L1)
    e, total = _exp_row(lt, M)
    raw = torch.softmax(lt.scores[M], -1)  # the same row without 1/√d_k
    vals = {"query": C18[M], "key": C18[S], "score": float(lt.scores[M, S]), "scaled": float(lt.trace.attn.scaled[M, S]),
            "e": e[S], "total": total, "w": float(lt.weights[M, S]), "d_k": lt.trace.K.shape[1]}
    wrong = {"no_sum": e[S], "score": vals["score"], "scaled": vals["scaled"], "no_scale": float(raw[S]),
             "uniform": 1 / len(e), "self": float(lt.weights[M, M])}
    return vals["w"], vals, wrong


def _l1_rowsum():
    lt = scenario_trace(L1)
    sums = lt.trace.attn.weight_sums
    w = lt.weights[M]
    right = "one" if bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-5)) else "depends"
    return right, {"w0": float(w[0]), "w1": float(w[1]), "w2": float(w[2]), "w3": float(w[3]), "total": float(w.sum()),
                   "n": len(C18)}


# ---- 2. scores and the dot product -------------------------------------------------------
L2 = {"qkv": "direct", "query": S}


def _l2_score():
    lt = scenario_trace(L2)
    q, k = lt.trace.Q[M], lt.trace.K[N]
    vals = {"query": C18[M], "key": C18[N], "q0": float(q[0]), "q1": float(q[1]), "q2": float(q[2]),
            "k0": float(k[0]), "k1": float(k[1]), "k2": float(k[2]), "s": float(lt.scores[M, N]),
            "qn": float(q.norm()), "kn": float(k.norm())}
    vals |= {"lo": -vals["qn"] * vals["kn"], "hi": vals["qn"] * vals["kn"]}  # |q·k| ≤ ‖q‖‖k‖
    wrong = {"scaled": float(lt.trace.attn.scaled[M, N]), "weight": float(lt.weights[M, N]), "self": float(lt.scores[M, M])}
    return vals["s"], vals, wrong


def _l2_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    K0 = scenario_trace(L2).trace.K
    diff = (lt.trace.K - K0).abs() > 1e-9
    n = int(diff.sum())
    if n == 0:
        return _fb(False, "dot-product.edit-k.no_change")
    if n > 1:
        return _fb(False, "dot-product.edit-k.many_cells", n=n)
    row = lt.weights[S]
    top = _ties(row)
    (r, c), = [tuple(int(v) for v in rc) for rc in torch.nonzero(diff)]
    vals = {"query": C18[S], "key": C18[N], "w": float(row[N]), "s": float(lt.scores[S, N]), "top": _names(C18, top),
            "top_w": float(row[top[0]]), "top_s": float(lt.scores[S, top[0]]), "row": C18[r], "col": c,
            "old": float(K0[r, c]), "new": float(lt.trace.K[r, c])}
    if top == [N]:
        return Feedback(True, "dot-product.edit-k.ok", vals)
    if N in top:
        return Feedback(False, "dot-product.edit-k.tie", vals)
    return Feedback(False, "dot-product.edit-k.not_top", vals)


def _l2_example():
    K = [list(r) for r in _tokens.C18_EMBEDDING]
    K[N][1] = 2.0  # 나는's key (1, 0, 1) → (1, 2, 1): 사과를 (1, 1, 0) now scores 3 with it
    lt = scenario_trace(_state(L2, matrices={"K": K}))
    return {"matrices": {"K": K}}, {"row": C18[N], "col": 1, "old": 0.0, "new": 2.0, "s": float(lt.scores[S, N]),
                                    "w": float(lt.weights[S, N]), "query": C18[S], "key": C18[N]}


# ---- 3. softmax, temperature and √d_k ----------------------------------------------------
L3 = {"query": M}
L3_NO_SCALE = {"scale": "none"}
SHARP = 0.9


def _l3_no_scale():
    lt = scenario_trace({**L3, **L3_NO_SCALE})
    e, total = _exp_row(lt, M)
    vals = {"query": C18[M], "s": float(lt.scores[M, M]), "e": e[M], "total": total, "w": float(lt.weights[M, M])}
    wrong = {"kept_scale": float(scenario_trace(L3).weights[M, M]), "no_sum": e[M], "uniform": 1 / len(e),
             "score": vals["s"]}
    return vals["w"], vals, wrong


def _l3_sharp_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    w = float(lt.weights[M].max())
    vals = {"query": C18[M], "T": lt.trace.attn.temperature, "w": w, "target": SHARP}
    if w > SHARP:
        return Feedback(True, "softmax-temperature.sharp.ok", vals)
    if lt.trace.attn.temperature >= 1.0:
        return Feedback(False, "softmax-temperature.sharp.flatter", vals)
    return Feedback(False, "softmax-temperature.sharp.not_yet", vals)


def _l3_sharp_example():
    for T in sorted(TEMPERATURE_GRID, reverse=True):  # the largest slider value that works
        lt = scenario_trace({**L3, "temperature": T})
        if float(lt.weights[M].max()) > SHARP:
            gap = float(lt.trace.attn.scaled[M, M] - lt.trace.attn.scaled[M, N])
            return {"temperature": T}, {"T": T, "w": float(lt.weights[M].max()), "gap": gap, "target": SHARP}
    raise AssertionError("no temperature on the slider makes the row sharp")  # pragma: no cover


def _l3_tie():
    w1 = float(scenario_trace(L3).weights[N].max())
    w_slider = float(scenario_trace({**L3, "temperature": 0.1}).weights[N].max())  # the slider's coldest
    cold = scenario_trace({**L3, "temperature": 0.01})  # colder than the slider goes
    w_cold = float(cold.weights[N].max())
    tied = _ties(cold.weights[N])
    right = "half" if len(tied) == 2 and abs(w_cold - 0.5) < 1e-3 else ("one" if w_cold > 0.99 else "quarter")
    return right, {"w1": w1, "w_slider": w_slider, "w_cold": w_cold, "T": 0.1, "keys": _names(C18, tied)}


def _l3_sqrt_dk():
    ex = scaling_experiment(dims=(4, 64), n_keys=16, n_samples=2000, n_trials=100, seed=0)
    vals = {"var4": float(ex.var_dot[0]), "var64": float(ex.var_dot[1]), "mw64": float(ex.max_weight[1]),
            "mw64s": float(ex.max_weight_scaled[1])}
    grows = vals["var64"] > 4 * vals["var4"] and vals["mw64"] > vals["mw64s"]
    return ("variance" if grows else "sum"), vals


# ---- 4. the output Σ αᵢ vᵢ ----------------------------------------------------------------
L4 = {"qkv": "direct", "query": M}
OUTPUT_TARGET = 2.0


def _l4_output():
    lt = scenario_trace(L4)
    w, v = lt.weights[M], lt.trace.V[:, 0]
    vals = {"query": C18[M], **{f"a{i}": float(w[i]) for i in range(4)}, **{f"v{i}": float(v[i]) for i in range(4)},
            "out": float(lt.trace.attn.output[M, 0]), "lo": float(v.min()), "hi": float(v.max())}
    wrong = {"mean": float(v.mean()), "sum_v": float(v.sum()), "only_self": float(w[M] * v[M]), "sum_w": float(w.sum())}
    return vals["out"], vals, wrong


def _l4_convex():
    # the first output entry over many weightings of the same V: never above max v, never below min v
    base = scenario_trace(L4)
    V = base.trace.V
    outs = [base.trace.attn.output[:, 0]]
    for T in (0.1, 0.5, 2.0, 5.0):
        for score in ("dot", "cosine"):
            outs.append(attention(base.trace.Q, base.trace.K, V, score=score, temperature=T).output[:, 0])
    top = max(float(o.max()) for o in outs)
    right = "no" if top <= float(V[:, 0].max()) + 1e-6 else "yes-sharp"
    return right, {"vmax": float(V[:, 0].max()), "vmin": float(V[:, 0].min()), "out": float(base.trace.attn.output[M, 0]),
                   "top": top}


def _l4_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    V0 = scenario_trace(L4).trace.V
    out = float(lt.trace.attn.output[M, 0])
    vals = {"query": C18[M], "out": out, "vmax": float(lt.trace.V[:, 0].max()), "target": OUTPUT_TARGET}
    if torch.equal(lt.trace.V, V0):
        return Feedback(False, "weighted-sum.edit-v.no_change", vals)
    if out > OUTPUT_TARGET:
        return Feedback(True, "weighted-sum.edit-v.ok", vals)
    return Feedback(False, "weighted-sum.edit-v.not_yet", vals)


def _l4_example():
    V = [list(r) for r in _tokens.C18_EMBEDDING]
    V[M][0] = 5.0
    lt = scenario_trace(_state(L4, matrices={"V": V}))
    w = lt.weights[M]
    return {"matrices": {"V": V}}, {"query": C18[M], "out": float(lt.trace.attn.output[M, 0]), "a3": float(w[M]),
                                    "new": 5.0, "target": OUTPUT_TARGET}


# ---- 5. masks ------------------------------------------------------------------------------
L5 = {"query": O}
L5_CAUSAL = {"causal": True}


def _l5_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    w = lt.weights
    n = w.shape[0]
    for i in range(n):
        for j in range(n):
            if j > i and float(w[i, j]) > 0:
                return _fb(False, "masks.causal.future", query=C18[i], key=C18[j], w=float(w[i, j]))
    for i in range(n):
        for j in range(i + 1):
            if float(w[i, j]) == 0:
                return _fb(False, "masks.causal.past", query=C18[i], key=C18[j])
    return _fb(True, "masks.causal.ok", zeros=int((w == 0).sum()), w=float(w[O, N]), query=C18[O], key=C18[N])


def _l5_example():
    lt = scenario_trace({**L5, **L5_CAUSAL})
    return {"causal": True}, {"zeros": int((lt.weights == 0).sum())}


def _l5_weight():
    lt = scenario_trace({**L5, **L5_CAUSAL})
    e, total = _exp_row(lt, O)
    plain = scenario_trace(L5)
    after = mask_after_softmax(plain.trace.attn.scaled, lt.trace.attn.mask)
    vals = {"query": C18[O], "key": C18[N], "e0": e[N], "e1": e[O], "total": total, "w": float(lt.weights[O, N]),
            "after_sum": float(after.sums_per_query[O])}
    wrong = {"unmasked": float(plain.weights[O, N]), "half": 0.5, "self": float(lt.weights[O, O])}
    return vals["w"], vals, wrong


def _l5_order():
    lt = scenario_trace({**L5, **L5_CAUSAL})
    m, scaled = lt.trace.attn.mask, lt.trace.attn.scaled
    recipes = {
        "before": lt.weights,
        "after": mask_after_softmax(scaled, m).weights,
        "zero": torch.softmax(scaled.masked_fill(~m, 0.0), dim=-1),
    }
    good = [name for name, w in recipes.items()
            if torch.allclose(w.sum(-1), torch.ones(w.shape[0]), atol=1e-5) and bool((w[~m] == 0).all())]
    return good[0], {"after_sum": float(recipes["after"][O].sum()), "zero_w": float(recipes["zero"][O, S]),
                     "query": C18[O], "key": C18[S]}


# ---- 6. learned projections W_Q, W_K, W_V --------------------------------------------------
L6 = {"qkv": "projection", "d_k": 2, "d_v": 2, "query": M, "matrices": {
    "W_q": [[0.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
    "W_k": [[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]],
    "W_v": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
}}


def _l6_score():
    lt = scenario_trace(L6)
    q, k = lt.trace.Q[S], lt.trace.K[M]
    X = lt.trace.X_q
    vals = {"query": C18[S], "key": C18[M], "q0": float(q[0]), "q1": float(q[1]), "k0": float(k[0]), "k1": float(k[1]),
            "s": float(lt.scores[S, M]), "qn": float(q.norm()), "kn": float(k.norm())}
    vals |= {"lo": -vals["qn"] * vals["kn"], "hi": vals["qn"] * vals["kn"]}  # |q·k| ≤ ‖q‖‖k‖
    wrong = {"raw": float(X[S] @ X[M]), "scaled": float(lt.trace.attn.scaled[S, M])}
    return vals["s"], vals, wrong


def _l6_shape():
    lt = scenario_trace(L6)
    n, d_k = lt.trace.K.shape
    return f"{n}x{d_k}", {"n": n, "d_model": lt.trace.X_q.shape[1], "d_k": d_k}


def _l6_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    s = lt.scores
    if float(s.max() - s.min()) < 1e-6:
        return _fb(False, "projections.symmetric.flat", s=float(s[0, 0]))
    gap = (s - s.T).abs()
    if float(gap.max()) > 1e-5:
        i, j = (int(v) for v in torch.nonzero(gap == gap.max())[0])
        return _fb(False, "projections.symmetric.asymmetric", a=C18[i], b=C18[j], s_ab=float(s[i, j]), s_ba=float(s[j, i]))
    return _fb(True, "projections.symmetric.ok", s_ab=float(s[M, S]), a=C18[M], b=C18[S])


def _l6_example():
    W_q = [list(r) for r in L6["matrices"]["W_q"]]
    lt = scenario_trace(_state(L6, matrices={"W_k": W_q}))
    return {"matrices": {"W_k": W_q}}, {"s_ab": float(lt.scores[M, S]), "a": C18[M], "b": C18[S]}


# ---- 7. multi-head attention and its shapes ------------------------------------------------
L7: dict = {}
MH_D, MH_H, MH_TARGET = 8, 2, 2


def _mh(state: Mapping, d: int, H: int):
    """The multi-head panel's numbers: seeded random embeddings and seeded W_q, W_k, W_v, W_o (d × d)."""
    seed = _int(state.get("seed", 0), 0, 2**31 - 1, "seed")
    toks = _token_list(_get(state, "tokens"), "tokens")
    X = _tokens.embed(toks, d, seed=seed)[None]  # (1, n, d)
    W = {name: _tokens.projection(d, d, seed=seed, name=f"mh.{name}") for name in ("W_q", "W_k", "W_v", "W_o")}
    return multi_head_attention(X, n_heads=H, **W)


def _l7_dhead():
    tr = _mh(L7, MH_D, MH_H)
    d_k = tr.q.shape[-1]
    return float(d_k), {"d": MH_D, "H": MH_H, "d_k": d_k}, {"times": float(MH_D * MH_H), "d_model": float(MH_D),
                                                             "heads": float(MH_H)}


def _shape_text(t: torch.Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _l7_shape():
    tr = _mh(L7, MH_D, MH_H)
    B, H, n_q, n_k = tr.weights.shape
    seed = 0
    X = _tokens.embed(_token_list(_get(L7, "tokens"), "tokens"), MH_D, seed=seed)[None]
    W = {name: _tokens.projection(MH_D, MH_D, seed=seed, name=f"mh.{name}") for name in ("W_q", "W_k")}
    lay = head_layouts(X, W["W_q"], W["W_k"], MH_H)  # what each wrong option is (or is not) made by
    return "x".join(str(s) for s in tr.weights.shape), {
        "B": B, "H": H, "n": n_q, "d_k": tr.q.shape[-1], "heads_last": _shape_text(lay.heads_last),
        "no_transpose": _shape_text(lay.no_transpose), "averaged": _shape_text(lay.averaged),
        "view_only": _shape_text(lay.view_only), "view_gap": lay.view_gap}


def _l7_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    d = _int(state.get(MH_D_MODEL, MH_D), 1, 64, MH_D_MODEL)
    H = _int(state.get(MH_HEADS, MH_H), 1, 64, MH_HEADS)
    if d % H:
        return Feedback(False, "common.bad_state")
    tr = _mh(state, d, H)
    vals = {"d": d, "H": H, "d_k": tr.q.shape[-1], "target": MH_TARGET, "want_d": MH_D}
    if d != MH_D:
        return Feedback(False, "multi-head.heads.keep_d", vals)
    if tr.q.shape[-1] == MH_TARGET and tr.weights.shape[1] == H:
        return Feedback(True, "multi-head.heads.ok", vals)
    return Feedback(False, "multi-head.heads.wrong_dk", vals)


def _l7_example():
    H = next(h for h in range(1, MH_D + 1) if MH_D % h == 0 and _mh(L7, MH_D, h).q.shape[-1] == MH_TARGET)
    return {MH_D_MODEL: MH_D, MH_HEADS: H}, {"d": MH_D, "H": H, "d_k": MH_TARGET}


# ---- 8. order and position -----------------------------------------------------------------
L8: dict = {}
PS_D = 8


def _ps(state: Mapping, perm: tuple[int, ...], d: int, with_pe: bool):
    """The position panel's numbers for one order (as app_pages/position.py builds them)."""
    seed = _int(state.get("seed", 0), 0, 2**31 - 1, "seed")
    toks = _token_list(_get(state, "tokens"), "tokens")
    X = _tokens.embed(toks, d, seed=seed)
    W = {w: _tokens.projection(d, d, seed=seed, name=f"ps.{w}") for w in ("W_q", "W_k", "W_v")}
    pe = _positional.sinusoidal(len(toks), d) if with_pe else None
    return permutation_check(X, perm, positions=pe, **W)


def _token_diff(c, token: int) -> float:
    r = c.perm.tolist().index(token)  # the slot where the token now sits
    return float((c.sa_px[r] - c.p_sa_x[r]).abs().max())


def _l8_shuffle():
    perm = (3, 2, 1, 0)
    diff = _token_diff(_ps(L8, perm, PS_D, False), M)
    diff_pe = _token_diff(_ps(L8, perm, PS_D, True), M)
    return ("same" if within_rounding(diff) else "changes"), {"diff": diff, "diff_pe": diff_pe, "token": C18[M],
                                                             "gap": gap_text(diff), "gap_pe": gap_text(diff_pe)}


def _l8_pe():
    pe = _positional.sinusoidal(2, PS_D)
    vals = {"pos": 1, "dim": 0, "pe": float(pe[1, 0])}
    wrong = {"degrees": math.sin(math.radians(1.0)), "cosine": float(pe[1, 1]), "pos0": float(pe[0, 0])}
    return vals["pe"], vals, wrong


def _parse_perm(text, n: int) -> tuple[int, ...] | None:
    if not isinstance(text, str) or len(text) > 4000:
        return None
    try:
        perm = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        return None
    return perm if sorted(perm) == list(range(n)) else None


def _l8_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    n = len(lt.q_tokens)
    d = _int(state.get(PS_D_KEY, PS_D), 1, 64, PS_D_KEY)
    perm = _parse_perm(state.get(PS_PERM, ""), n)
    if perm is None:
        return _fb(False, "position.move.bad_perm", last=n - 1)
    diff = _token_diff(_ps(state, perm, d, False), M)
    diff_pe = _token_diff(_ps(state, perm, d, True), M)
    vals = {"token": C18[M], "diff": diff, "diff_pe": diff_pe, "order": " ".join(C18[i] for i in perm),
            "gap": gap_text(diff), "gap_pe": gap_text(diff_pe)}
    if within_rounding(diff_pe):
        return Feedback(False, "position.move.same", vals)
    if within_rounding(diff):
        return Feedback(True, "position.move.ok", vals)
    return Feedback(False, "position.move.no_set", vals)  # pragma: no cover — self-attention is permutation-equivariant


def _l8_example():
    perm = (3, 0, 1, 2)
    diff = _token_diff(_ps(L8, perm, PS_D, False), M)
    diff_pe = _token_diff(_ps(L8, perm, PS_D, True), M)
    return {PS_PERM: "3 0 1 2", PS_D_KEY: PS_D}, {"token": C18[M], "diff": diff, "diff_pe": diff_pe,
                                                  "order": " ".join(C18[i] for i in perm), "gap": gap_text(diff),
                                                  "gap_pe": gap_text(diff_pe)}


# ---- 9. cross attention --------------------------------------------------------------------
L9 = {"mode": "cross", "tokens": "vediamo il cielo", "embedding": "random", "d_model": 4,  # source: "We see the sky"
      "matrices": {
          # vediamo = "we see" looks at both We and see; il ↔ the; cielo ↔ sky
          "X": [[1.5, 1.5, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0], [0.0, 0.0, 0.0, 2.0]],
          "X_src": [[1.0, 0.25, 0.0, 0.0], [0.25, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.25], [0.0, 0.0, 0.25, 1.0]],
      }}


L9_TARGET = tuple(L9["tokens"].split())


def _l9_shape():
    lt = scenario_trace(L9)
    n_q, n_k = lt.weights.shape
    return f"{n_q}x{n_k}", {"n_q": n_q, "n_k": n_k}


def _l9_outputs():
    lt = scenario_trace(L9)
    n_q, n_k = lt.weights.shape
    return float(lt.trace.attn.output.shape[0]), {"n_q": n_q, "n_k": n_k}, {"keys": float(n_k), "pairs": float(n_q * n_k)}


# ---- 10. writing one token at a time: the KV cache with grouped-query attention ---------------
L10 = {"causal": True}  # the masks panel with the causal mask: row t is what step t computes with the cache
KV_MODEL = "llama-3-8b"
KV_H, KV_G, KV_HEAD = 8, 2, 5  # the group question: which K/V head does query head 5 read?


def _l10_bytes():
    """KiB of Llama-3-8B's cache per token in bfloat16 (2 bytes), from its published shape."""
    p = MODEL_PRESETS[KV_MODEL]

    def kib(G: int, bytes_per_value: float = 2) -> float:
        return kv_cache_bytes(layers=p.layers, n_kv_heads=G, d_head=p.d_head, tokens=1,
                              bytes_per_value=bytes_per_value) / 1024

    truth = kib(p.n_kv_heads)
    vals = {"model": p.name, "L": p.layers, "H": p.n_heads, "G": p.n_kv_heads, "d_head": p.d_head}
    return truth, vals, {"mha": kib(p.n_heads), "keys_only": truth / 2, "fp32": kib(p.n_kv_heads, 4)}


def _l10_group():
    head = kv_head_map(KV_H, KV_G)[KV_HEAD]
    return str(head), {"H": KV_H, "G": KV_G, "h": KV_HEAD, "size": KV_H // KV_G, "g": head}


def _l10_keys():
    """How many keys the 3rd token's query attends to when the sentence is decoded with a cache."""
    toks = list(C18)
    X = _tokens.embed(toks, 8, seed=0)
    W = {n: _tokens.projection(8, w, seed=0, name=f"kv.{n}") for n, w in
         (("W_q", 8), ("W_k", 4), ("W_v", 4), ("W_o", 8))}
    step = cached_decode(X, n_heads=2, n_kv_heads=1, **W).steps[S]
    return float(step.cache_length), {"token": C18[S], "t": S + 1}, {"all": float(len(toks)), "before": float(S)}


# ---- 11. RoPE: positions as rotations of q and k ------------------------------------------------
L11: dict = {}
ROPE_D, ROPE_BASE, ROPE_PAIR = 8, 10000.0, 1


def _l11_shift():
    """Move the query and the key by 10 positions together: does their score change?"""
    q = _tokens.projection(1, ROPE_D, seed=0, name="lp.q")[0]
    k = _tokens.projection(1, ROPE_D, seed=0, name="lp.k")[0]
    before = _positional.rope_scores_by_offset(q, k, [3], base=ROPE_BASE, start=2.0)
    after = _positional.rope_scores_by_offset(q, k, [3], base=ROPE_BASE, start=12.0)
    gap = float((before - after).abs().max())
    return ("same" if gap < 1e-4 else "changes"), {"before": float(before[0]), "after": float(after[0]), "gap": gap}


def _l11_angle():
    theta = _positional.rope_frequencies(ROPE_D, base=ROPE_BASE)
    vals = {"i": ROPE_PAIR, "d": ROPE_D, "base": int(ROPE_BASE)}
    wrong = {"pair0": float(theta[0]), "odd": ROPE_BASE ** (-ROPE_PAIR / ROPE_D), "last": float(theta[-1])}
    return float(theta[ROPE_PAIR]), vals, wrong


def _l11_length():
    x = _tokens.projection(16, ROPE_D, seed=0, name="lp.x")  # (16, d): 16 positions
    rotated = _positional.rope(x, base=ROPE_BASE)
    gap = float((rotated.norm(dim=-1) - x.norm(dim=-1)).abs().max())
    return ("same" if gap < 1e-5 else "grows"), {"gap": gap}


# ---- 12. a real language model writing (SmolLM2-135M, core.decoder) -------------------------------
# The panel shows the causal mask on the worked example; the exercises are checked against the real model.
L12 = {"causal": True, "query": O}
L12_PROMPT = "The capital of France is"


def _lm():
    from .pretrained import smollm2  # loaded once per process; imported here so the other lessons never need it

    return smollm2()


def _l12_paris():
    """p(next token) of the model's top guess after L12_PROMPT, in percent."""
    m = _lm()
    nt = m.next_token(L12_PROMPT)
    # rounded to 0.01 %: the model's float32 sums differ in the last bits between thread counts
    return round(100.0 * float(nt.top_probs[0]), 2), {"token": nt.top_tokens[0], "prompt": L12_PROMPT, "lo": 0.0,
                                                       "hi": 100.0}, {}


def _l12_temperature():
    """Does temperature alone change the most likely token? Checked on the model's logits over the Playground's grid."""
    from .decoder import next_token_probs

    m = _lm()
    logits = torch.log(m.next_token(L12_PROMPT).probs)
    tops = {int(next_token_probs(logits, T).argmax()) for T in TEMPERATURE_GRID}
    top = m.token_text(int(logits.argmax()))
    cold = float(next_token_probs(logits, 0.1).max())
    hot = float(next_token_probs(logits, 5.0).max())
    return ("no" if len(tops) == 1 else "yes"), {"token": top, "cold": cold, "hot": hot}


def _l12_sink():
    """Where the last token of L12_PROMPT looks in the model's strongest sink head (largest share on the first token)."""
    from .decoder import head_stats

    tr = _lm().trace(L12_PROMPT)
    hs = head_stats(tr.attentions)
    l, h = divmod(int(hs.sink.argmax()), hs.sink.shape[1])
    row = tr.attentions[l, h, -1]  # (n,): the last query's weights
    n = row.shape[0]
    j = int(row.argmax())
    where = "first" if j == 0 else "itself" if j == n - 1 else "previous" if j == n - 2 else "other"
    return where, {"l": l, "h": h, "share": float(row[0]), "first": tr.tokens[0], "last": tr.tokens[-1]}


# --------------------------------------------------------------------------- the registry
# What each lesson's text teaches, in the tutorial's order; exercises declare what they need.
CONCEPTS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "weighted-average": ("weighted_average", "weights", "weights_sum_to_one", "query_key_value"),
    "dot-product": ("dot_product", "score_matrix"),
    "softmax-temperature": ("softmax", "scale_sqrt_dk", "temperature"),
    "weighted-sum": ("output", "convex_combination"),
    "masks": ("causal_mask", "padding_mask", "mask_before_softmax"),
    "projections": ("projections", "matrix_shapes"),
    "multi-head": ("heads", "head_width", "head_shapes"),
    "position": ("permutation", "positional_encoding"),
    "cross-attention": ("cross_attention",),
    "kv-cache": ("kv_cache", "grouped_query"),
    "rope": ("rope",),
    "model-writing": ("next_token", "attention_sink"),
})


# The curriculum concepts (../shared/CURRICULUM.md) each lesson's text and exercises cover: the
# teachers' table on Home lists their union for the Tutorial.
CURRICULUM: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "weighted-average": ("C2", "C4", "C15", "C18"),
    "dot-product": ("C3", "C5"),
    "softmax-temperature": ("C6", "C10"),
    "weighted-sum": ("C4",),
    "masks": ("C11", "C12"),
    "projections": ("C13",),
    "multi-head": ("C20", "C21", "C36"),
    "position": ("C23", "C24"),
    "cross-attention": ("C16", "C27"),
    "kv-cache": ("C11", "C20", "C21"),
    "rope": ("C23", "C24"),
    "model-writing": ("C11", "C20"),
})


def _lesson(lesson_id: str, panel: str, scenario: Mapping, exercises: list[Exercise]) -> Lesson:
    return Lesson(lesson_id, panel, _freeze(scenario), tuple(exercises), CONCEPTS[lesson_id])


def _needs(ex: Exercise, *concepts: str) -> Exercise:
    """``ex`` with the concepts it needs declared."""
    return dataclasses.replace(ex, concepts=tuple(concepts))


def _pv(**values) -> Mapping:
    return MappingProxyType(values)


def _build() -> tuple[Lesson, ...]:
    weight = "common.weight_range"
    N_ = _needs
    return (
        _lesson("weighted-average", "inspector", L1, [
            # the prediction first: its map stays hidden until it is answered, so the text's "look at the panel" follows it
            N_(_predict("weighted-average.top", L1, N, prompt_values=_pv(query=C18[N])), "weights", "query_key_value"),
            N_(_choice_ex("weighted-average.row-sum", ("one", "tokens", "depends"), _l1_rowsum,
                          prompt_values=_pv(query=C18[M]), query=M), "weights", "weights_sum_to_one"),
        ]),
        _lesson("dot-product", "pipeline", L2, [
            N_(_number("dot-product.score", _l2_score, tolerance=0.01, range_key="dot-product.score.outside",
                       diagnoses=("scaled", "weight", "self"),
                       prompt_values=_pv(query=C18[M], key=C18[N], tol=0.01), query=M), "dot_product"),
            N_(_predict("dot-product.top-score", L2, M, prompt_values=_pv(query=C18[M])), "dot_product", "weights"),
            N_(_make_it_so("dot-product.edit-k", L2, ("matrices.K",), _l2_judge, _l2_example,
                           ("no_change", "many_cells", "tie", "not_top"), prompt_values=_pv(query=C18[S], key=C18[N]),
                           query=S), "dot_product", "score_matrix"),
        ]),
        _lesson("softmax-temperature", "pipeline", L3, [
            # asked here, not in lesson 1: computing α needs the dot product, √d_k and softmax (L1 = L3's scenario)
            N_(_number("weighted-average.weight", _l1_weight, tolerance=0.01, lo=0.0, hi=1.0, range_key=weight,
                       diagnoses=("no_sum", "score", "scaled", "no_scale", "uniform", "self"),
                       prompt_values=_pv(query=C18[M], key=C18[S], tol=0.01), query=M),
               "dot_product", "scale_sqrt_dk", "softmax"),
            N_(_number("softmax-temperature.no-scale", _l3_no_scale, tolerance=0.01, lo=0.0, hi=1.0, range_key=weight,
                       diagnoses=("kept_scale", "no_sum", "uniform", "score"), scenario=_freeze(L3_NO_SCALE),
                       prompt_values=_pv(query=C18[M], tol=0.01), query=M), "softmax", "scale_sqrt_dk"),
            N_(_make_it_so("softmax-temperature.sharp", L3, ("temperature",), _l3_sharp_judge, _l3_sharp_example,
                           ("flatter", "not_yet"), prompt_values=_pv(query=C18[M], target=SHARP), query=M), "temperature"),
            N_(_choice_ex("softmax-temperature.tie", ("half", "one", "quarter"), _l3_tie,
                          prompt_values=_pv(query=C18[N], key=C18[M]), query=N), "temperature", "softmax"),
            N_(_choice_ex("softmax-temperature.sqrt-dk", ("variance", "sum", "length"), _l3_sqrt_dk), "scale_sqrt_dk"),
        ]),
        _lesson("weighted-sum", "inspector", L4, [
            N_(_number("weighted-sum.output", _l4_output, tolerance=0.01, lo=0.0, hi=1.0,
                       range_key="weighted-sum.output.outside", diagnoses=("mean", "sum_v", "only_self", "sum_w"),
                       prompt_values=_pv(query=C18[M], tol=0.01), query=M), "output"),
            N_(_choice_ex("weighted-sum.convex", ("no", "yes-sharp", "yes-negative"), _l4_convex,
                          prompt_values=_pv(query=C18[M]), query=M), "convex_combination", "softmax"),
            N_(_make_it_so("weighted-sum.edit-v", L4, ("matrices.V",), _l4_judge, _l4_example, ("no_change", "not_yet"),
                           prompt_values=_pv(query=C18[M], target=OUTPUT_TARGET), query=M), "output"),
        ]),
        _lesson("masks", "masks", L5, [
            N_(_make_it_so("masks.causal", L5, ("causal", "pad", "blocked"), _l5_judge, _l5_example, ("future", "past")),
               "causal_mask"),
            N_(_number("masks.weight", _l5_weight, tolerance=0.01, lo=0.0, hi=1.0, range_key=weight,
                       diagnoses=("unmasked", "half", "self"), scenario=_freeze(L5_CAUSAL),
                       prompt_values=_pv(query=C18[O], key=C18[N], tol=0.01), query=O),
               "causal_mask", "softmax", "scale_sqrt_dk", "dot_product"),
            N_(_choice_ex("masks.order", ("before", "after", "zero"), _l5_order), "mask_before_softmax", "softmax"),
        ]),
        _lesson("projections", "pipeline", L6, [
            N_(_number("projections.score", _l6_score, tolerance=0.01, range_key="projections.score.outside",
                       diagnoses=("raw", "scaled"),
                       prompt_values=_pv(query=C18[S], key=C18[M], tol=0.01), query=S), "projections", "dot_product"),
            N_(_predict("projections.top", L6, M, prompt_values=_pv(query=C18[M])), "projections", "dot_product"),
            N_(_choice_ex("projections.k-shape", ("4x2", "3x2", "4x3", "2x4"), _l6_shape), "matrix_shapes"),
            N_(_make_it_so("projections.symmetric", L6, ("matrices.W_q", "matrices.W_k", "matrices.W_v"), _l6_judge,
                           _l6_example, ("flat", "asymmetric")), "projections", "score_matrix"),
        ]),
        _lesson("multi-head", "multihead", L7, [
            N_(_number("multi-head.d-head", _l7_dhead, tolerance=0.0, lo=1, hi=MH_D, integer=True, decimals=0,
                       diagnoses=("times", "d_model", "heads"), prompt_values=_pv(d=MH_D, H=MH_H)), "head_width"),
            N_(_choice_ex("multi-head.weights-shape", ("1x2x4x4", "1x4x4", "1x4x2x4", "2x4x4x1"), _l7_shape,
                          prompt_values=_pv(H=MH_H, n=len(C18))), "head_shapes"),
            N_(_make_it_so("multi-head.heads", L7, (MH_D_MODEL, MH_HEADS), _l7_judge, _l7_example, ("keep_d", "wrong_dk"),
                           check_tokens=False, compare=False, prompt_values=_pv(d=MH_D, target=MH_TARGET)), "head_width"),
        ]),
        _lesson("position", "position", L8, [
            N_(_choice_ex("position.shuffle", ("same", "changes", "zero"), _l8_shuffle, prompt_values=_pv(token=C18[M])),
               "permutation"),
            N_(_number("position.pe-value", _l8_pe, tolerance=0.01, lo=-1.0, hi=1.0, range_key="position.pe-value.outside",
                       diagnoses=("degrees", "cosine", "pos0"), prompt_values=_pv(pos=1, dim=0, tol=0.01)),
               "positional_encoding"),
            N_(_make_it_so("position.move", L8, (PS_PERM, PS_D_KEY), _l8_judge, _l8_example, ("bad_perm", "same", "no_set"),
                           compare=False, prompt_values=_pv(token=C18[M])), "permutation", "positional_encoding"),
        ]),
        _lesson("cross-attention", "weights", L9, [
            N_(_choice_ex("cross-attention.shape", ("3x4", "4x3", "4x4", "3x3"), _l9_shape), "cross_attention"),
            N_(_predict("cross-attention.cielo", L9, 2, prompt_values=_pv(query=L9_TARGET[2])), "cross_attention",
               "dot_product"),
            N_(_predict("cross-attention.vediamo", L9, 0, prompt_values=_pv(query=L9_TARGET[0])), "cross_attention",
               "dot_product"),
            N_(_number("cross-attention.outputs", _l9_outputs, tolerance=0.0, lo=1, hi=_MAX_TOKENS, integer=True, decimals=0,
                       diagnoses=("keys", "pairs")), "cross_attention", "output"),
        ]),
        _lesson("kv-cache", "masks", L10, [
            N_(_number("kv-cache.bytes", _l10_bytes, tolerance=0.5, lo=0.0, hi=1e6, diagnoses=("mha", "keys_only", "fp32"),
                       decimals=0, prompt_values=_pv(model=MODEL_PRESETS[KV_MODEL].name, L=MODEL_PRESETS[KV_MODEL].layers,
                                                     G=MODEL_PRESETS[KV_MODEL].n_kv_heads,
                                                     d_head=MODEL_PRESETS[KV_MODEL].d_head)), "kv_cache", "grouped_query"),
            N_(_choice_ex("kv-cache.group", ("0", "1", "2", "5"), _l10_group, prompt_values=_pv(H=KV_H, G=KV_G, h=KV_HEAD)),
               "grouped_query", "heads"),
            N_(_number("kv-cache.keys", _l10_keys, tolerance=0.0, lo=1, hi=_MAX_TOKENS, integer=True, decimals=0,
                       diagnoses=("all", "before"), prompt_values=_pv(token=C18[S], t=S + 1)), "kv_cache", "causal_mask"),
        ]),
        _lesson("rope", "position", L11, [
            N_(_choice_ex("rope.shift", ("same", "changes", "grows"), _l11_shift), "rope", "dot_product"),
            N_(_number("rope.angle", _l11_angle, tolerance=0.005, lo=0.0, hi=1.0, diagnoses=("pair0", "odd", "last"),
                       decimals=3, prompt_values=_pv(i=ROPE_PAIR, d=ROPE_D, base=int(ROPE_BASE), tol=0.005)), "rope"),
            N_(_choice_ex("rope.length", ("same", "grows", "shrinks"), _l11_length), "rope"),
        ]),
        _lesson("model-writing", "masks", L12, [
            N_(_number("model-writing.paris", _l12_paris, tolerance=3.0, lo=0.0, hi=100.0, decimals=1,
                       prompt_values=_pv(prompt=L12_PROMPT, tol=3)), "next_token", "softmax"),
            N_(_choice_ex("model-writing.temperature", ("no", "yes"), _l12_temperature, prompt_values=_pv(prompt=L12_PROMPT)),
               "temperature", "next_token"),
            N_(_choice_ex("model-writing.sink", ("first", "previous", "itself", "other"), _l12_sink,
                          prompt_values=_pv(prompt=L12_PROMPT)), "attention_sink", "heads", "causal_mask"),
        ]),
    )


LESSONS: tuple[Lesson, ...] = _build()
_BY_ID: dict[str, Lesson] = {lesson.id: lesson for lesson in LESSONS}
_EX_BY_ID: dict[str, Exercise] = {ex.id: ex for lesson in LESSONS for ex in lesson.exercises}


_LESSON_OF: dict[str, Lesson] = {ex.id: lesson for lesson in LESSONS for ex in lesson.exercises}


def lesson(lesson_id: str) -> Lesson:
    """The lesson with this id (KeyError if none)."""
    return _BY_ID[lesson_id]


def lesson_of(exercise_id: str) -> Lesson:
    """The lesson that asks this exercise now (KeyError if none)."""
    return _LESSON_OF[exercise_id]


def exercise(exercise_id: str) -> Exercise:
    """The exercise with this id (KeyError if none)."""
    return _EX_BY_ID[exercise_id]


# --------------------------------------------------------------------------- text
@cache
def _table(lang: str) -> dict[str, str]:
    with open(ASSETS / f"exercises.{lang}.json", encoding="utf-8") as f:
        return json.load(f)


def text(key: str, lang: str = "en", /, **values) -> str:
    """An exercise string in ``lang`` (English fallback, then the key itself), formatted with
    ``values``; a string whose placeholders do not fit the values comes back unformatted."""
    lang = lang if lang in LANGS else "en"
    s = _table(lang).get(key) or _table("en").get(key) or key
    if not values:
        return s
    try:
        return s.format(**values)
    except (KeyError, IndexError, ValueError):
        return s


def placeholders(template: str) -> set[str]:
    """The placeholder names of a format string ("{w:.3f}" → {"w"})."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def lesson_markdown(lesson_id: str, lang: str = "en") -> str:
    """The lesson's text (``assets/lessons/<id>.<lang>.md``; English if the translation is missing)."""
    if lesson_id not in _BY_ID:
        raise KeyError(lesson_id)
    for candidate in (lang if lang in LANGS else "en", "en"):
        path = ASSETS / f"{lesson_id}.{candidate}.md"
        if path.exists():
            return path.read_text(encoding="utf-8")
    return ""


def lesson_title(lesson_id: str, lang: str = "en") -> str:
    """The first heading of the lesson's markdown, without the '#'."""
    for line in lesson_markdown(lesson_id, lang).splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return lesson_id


# --------------------------------------------------------------------------- progress in the URL
# Bit positions of the progress code. Append new ids at the end; never reorder or reuse a position.
PROGRESS_ORDER: tuple[str, ...] = (
    "weighted-average", "weighted-average.weight", "weighted-average.top", "weighted-average.row-sum",
    "dot-product", "dot-product.score", "dot-product.top-score", "dot-product.edit-k",
    "softmax-temperature", "softmax-temperature.no-scale", "softmax-temperature.sharp", "softmax-temperature.tie",
    "softmax-temperature.sqrt-dk",
    "weighted-sum", "weighted-sum.output", "weighted-sum.convex", "weighted-sum.edit-v",
    "masks", "masks.causal", "masks.weight", "masks.order",
    "projections", "projections.score", "projections.top", "projections.k-shape", "projections.symmetric",
    "multi-head", "multi-head.d-head", "multi-head.weights-shape", "multi-head.heads",
    "position", "position.shuffle", "position.pe-value", "position.move",
    "cross-attention", "cross-attention.shape", "cross-attention.cielo", "cross-attention.vediamo",
    "cross-attention.outputs",
    "kv-cache", "kv-cache.bytes", "kv-cache.group", "kv-cache.keys",
    "rope", "rope.shift", "rope.angle", "rope.length",
    "model-writing", "model-writing.paris", "model-writing.temperature", "model-writing.sink",
)
_PROGRESS_VERSION = "1"
MAX_PROGRESS_CHARS = 64


def encode_progress(done) -> str:
    """A short URL-safe code for the finished lesson and exercise ids ("" for none); unknown
    ids are dropped. Format: "1" + base64url (no padding) of a little-endian bit set over
    :data:`PROGRESS_ORDER`."""
    bits = 0
    for i, name in enumerate(PROGRESS_ORDER):
        if name in done:
            bits |= 1 << i
    if not bits:
        return ""
    raw = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    return _PROGRESS_VERSION + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_progress(code) -> set[str]:
    """The ids in a progress code; anything malformed (wrong type, too long, bad characters,
    another version) gives the empty set, bits past the known ids are ignored. Never raises."""
    if not isinstance(code, str) or not code or len(code) > MAX_PROGRESS_CHARS:
        return set()
    if code[0] != _PROGRESS_VERSION or not re.fullmatch(r"[A-Za-z0-9_-]*", code[1:]) or len(code[1:]) % 4 == 1:
        return set()
    body = code[1:]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (ValueError, TypeError):
        return set()
    bits = int.from_bytes(raw, "little")
    return {name for i, name in enumerate(PROGRESS_ORDER) if bits >> i & 1}
