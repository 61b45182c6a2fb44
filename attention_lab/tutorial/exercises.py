r"""Exercises and lessons as data, the parsing of answers, and the path from a panel state to its
numbers (:func:`scenario_trace`: ``attention_lab.scenario.build`` → ``core.lab.playground``, the same
pieces the Playground composes). See :mod:`attention_lab.tutorial` for the kinds of answers."""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

import torch

from core import tolerances
from core.playground.lab import PlaygroundTrace, playground

from .. import scenario as _scenario

KINDS = ("number", "predict", "choice", "make_it_so")
# The live panel a lesson wants; the page maps each to building blocks:
#   weights   the weight heatmap of the scenario (hidden while a predict question is open)
#   pipeline  the five steps scores → scaled → masked → weights → output, with the matrix editors,
#             score function, scale and temperature controls
#   inspector one query's α bars and its output built as Σ αᵢ vᵢ (with the Q/K/V editors)
#   masks     the mask controls (causal, padding, clicked cells) with logits and weights
#   multihead the multi-head panel (d_model, H, every head's weights, the shapes)
#   position  the permutation experiment with and without positions, the positional table
#   rope      RoPE: one pair of a query turning with its position, the score against the relative distance
#   cache     the KV cache growing step by step: the new token's row over the cache, the cached keys and values
#   model     a real model's heads (SmolLM2 on the lesson's prompt): every head at once, one head's map
#   latent    MLA: the cached latent and rotary key beside every head's explicit keys
#   state     the delta rule: the state matrix written and erased token by token
#   kept      what a 2026 model keeps per token: the KV-sharing page's chart (issue 55)
PANELS = ("weights", "pipeline", "inspector", "masks", "multihead", "position", "rope", "cache", "model", "latent", "state",
          "kept")
TEMPERATURE_GRID = _scenario.TEMPERATURES  # the Playground's slider: 0.1 … 5.0
_TIE = tolerances.ANSWER_TIE  # weights closer than this count as tied (core.tolerances)
# What a lesson's state may carry besides the scenario: the multi-head panel's d_model and H, the position
# panel's width and order (the tutorial page maps each to its own widget: app_pages/tutorial.PANEL_WIDGETS).
MH_D_MODEL, MH_HEADS = "mh_d_model", "mh_heads"
PS_D_KEY, PS_PERM = "ps_d", "ps_perm"



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


# --------------------------------------------------------------------------- the scenario → core
def freeze(x):
    if isinstance(x, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in x.items()})
    if isinstance(x, (list, tuple)):
        return tuple(freeze(v) for v in x)
    return x


def _thaw(x):
    if isinstance(x, Mapping):
        return {k: _thaw(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_thaw(v) for v in x]
    return x


def bounded_int(v, lo: int, hi: int, name: str) -> int:
    """An integer panel value in [lo, hi] (raises a ValueError naming it)."""
    i = _scenario._int_in(lo, hi)(v)
    if i is None:
        raise _scenario.BadScenario(name)
    return i


def tokens_of(state: Mapping) -> list[str]:
    return _scenario.token_list(state.get("tokens", _scenario.DEFAULTS["tokens"]), "tokens")


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
    """The numbers of a scenario state as the page draws them: ``attention_lab.scenario.build`` (the
    pieces the Playground composes with its editors) → ``core.lab.playground``, in row convention.

    Raises ValueError when the state cannot be read."""
    args, tq, tk = _scenario.build(state, seed=seed)
    tr = playground(**(args | {"params": args["params"] or None}), dtype=torch.float32)
    return LessonTrace(trace=tr, q_tokens=tq, k_tokens=tk)


def _same_numbers(a: LessonTrace, b: LessonTrace) -> bool:
    """Whether two scenario traces compute the same thing (inputs, Q/K/V, score, scale, T, mask)."""
    ta, tb = a.trace, b.trace
    if a.q_tokens != b.q_tokens or a.k_tokens != b.k_tokens:
        return False
    for x, y in ((ta.X_q, tb.X_q), (ta.X_kv, tb.X_kv), (ta.Q, tb.Q), (ta.K, tb.K), (ta.V, tb.V)):
        if x.shape != y.shape or not torch.allclose(x, y, atol=tolerances.SAME_NUMBERS, rtol=0):
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
        """A fresh plain dict (lists, not tuples) for attention_lab.scenario.validate: the lesson's scenario,
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


def feedback_of(ok: bool, message_key: str, /, **values) -> Feedback:
    return Feedback(ok, message_key, values)


def ties(row: torch.Tensor) -> list[int]:
    return [int(i) for i in torch.nonzero(row >= row.max() - _TIE).flatten()]


def names_at(labels: Sequence[str], idx: Sequence[int]) -> str:
    return ", ".join(labels[i] for i in idx)


def number_ex(ex_id: str, truth: Callable[[], tuple[float, dict, dict]], *, tolerance: float, lo: float | None = None,
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
        if abs(x - value) <= tolerance + tolerances.SLACK:
            return Feedback(True, f"{ex_id}.ok", vals)
        for slug in diagnoses:
            if abs(x - wrong[slug]) <= tolerance + tolerances.SLACK:
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


def predict_ex(ex_id: str, scenario: Mapping, query: int, **kw) -> Exercise:
    """Which key does ``query`` attend to most? Any of tied keys is right."""

    @cache
    def truth():
        lt = scenario_trace(scenario)
        row = lt.weights[query]
        return lt, row, ties(row)

    def check(answer) -> Feedback:
        lt, row, top = truth()
        i = parse_index(answer, lt.k_tokens)
        if isinstance(i, Feedback):
            return i
        scores = lt.scores[query]
        vals = {"query": lt.q_tokens[query], "chosen": lt.k_tokens[i], "chosen_w": float(row[i]),
                "chosen_s": float(scores[i]), "top": names_at(lt.k_tokens, top), "top_w": float(row[top[0]]),
                "top_s": float(scores[top[0]])}
        if i in top:
            return Feedback(True, f"{ex_id}.ok_tie" if len(top) > 1 else f"{ex_id}.ok", vals)
        return Feedback(False, f"{ex_id}.wrong", vals)

    def reveal() -> Reveal:
        lt, row, top = truth()
        return Reveal(top[0], f"{ex_id}.reveal", {"query": lt.q_tokens[query], "top": names_at(lt.k_tokens, top),
                                                  "top_w": float(row[top[0]]), "top_s": float(lt.scores[query][top[0]])})

    return Exercise(ex_id, "predict", check, reveal, message_keys=(f"{ex_id}.ok", f"{ex_id}.ok_tie", f"{ex_id}.wrong"),
                    query=query, hide_weights=True, **kw)


def choice_ex(ex_id: str, options: tuple[str, ...], truth: Callable[[], tuple[str, dict]], **kw) -> Exercise:
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


def make_it_so(ex_id: str, lesson_scenario: Mapping, needs: tuple[str, ...], judge: Callable[[Mapping, LessonTrace], Feedback],
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
    names = [n for n in _scenario.DEFAULTS if n not in needs and n in state]
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


def lesson_state(scenario: Mapping, **changes) -> dict:
    """A full panel state: the scenario with changes on top (matrices merged)."""
    out = _thaw(scenario)
    mats = {**out.get("matrices", {}), **changes.pop("matrices", {})}
    out.update(changes)
    out["matrices"] = mats
    return out
