"""The tutorial's words and the learner's progress: exercise strings (``assets/lessons/exercises.<lang>.json``),
lesson markdown (``assets/lessons/<lesson-id>.<lang>.md``) and the progress code of a link."""

from __future__ import annotations

import base64
import json
import re
import string
from functools import cache

from core.models.paths import ASSETS as _ASSETS

from ..korean import names
from .lessons import BY_ID

LANGS = ("en", "ko")
ASSETS = _ASSETS / "lessons"


# --------------------------------------------------------------------------- text
@cache
def _table(lang: str) -> dict[str, str]:
    with open(ASSETS / f"exercises.{lang}.json", encoding="utf-8") as f:
        return json.load(f)


def text(key: str, lang: str = "en", /, **values) -> str:
    """An exercise string in ``lang`` (English fallback, then the key itself), formatted with
    ``values``; a string whose placeholders do not fit the values comes back unformatted. A two-way
    particle after a name with a digit ("SmolLM2이(가)") is chosen from the name (:func:`attention_lab.korean.names`)."""
    lang = lang if lang in LANGS else "en"
    s = names(_table(lang).get(key) or _table("en").get(key) or key)
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
    """The lesson's text (``assets/lessons/<id>.<lang>.md``; English if the translation is missing), with the particles
    after Latin names with a digit chosen (:func:`attention_lab.korean.names`: "Qwen3-Next이(가)" → "Qwen3-Next가")."""
    if lesson_id not in BY_ID:
        raise KeyError(lesson_id)
    for candidate in (lang if lang in LANGS else "en", "en"):
        path = ASSETS / f"{lesson_id}.{candidate}.md"
        if path.exists():  # a particle after a name with a digit, written two-way, chosen by how the name reads
            return names(path.read_text(encoding="utf-8"))
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
    # issue 34: predictions and a measurement replace rope.shift, rope.length and model-writing.sink, whose
    # answers the lesson text gave; those three keep their places above (RETIRED), so old links still decode
    "rope.shift-score", "rope.length-value", "model-writing.previous",
    # issue 33: two lessons at the end (MLA's cache; the delta rule)
    "mla-cache", "mla-cache.mha", "mla-cache.ratio", "mla-cache.absorbed",
    "delta-rule", "delta-rule.state", "delta-rule.read", "delta-rule.special",
    # issue 56: each of the four lessons' panel has an exercise; the absorbed up-projection, whose answer the lesson
    # text gave, becomes a number (mla-cache.absorbed is RETIRED and keeps its place)
    "kv-cache.size", "mla-cache.absorbed-width", "mla-cache.panel", "delta-rule.erase",
    # issue 55: a lesson at the end (what a 2026 model keeps per token, on the KV-sharing page's chart)
    "kept-per-token", "kept-per-token.csa", "kept-per-token.flat", "kept-per-token.head-state",
)
RETIRED: frozenset[str] = frozenset({"rope.shift", "rope.length", "model-writing.sink", "mla-cache.absorbed"})
_PROGRESS_VERSION = "1"
MAX_PROGRESS_CHARS = 64


def encode_progress(done) -> str:
    """A short URL-safe code for the finished lesson and exercise ids ("" for none); unknown
    ids are dropped. Format: "1" + base64url (no padding) of a little-endian bit set over
    :data:`PROGRESS_ORDER`."""
    bits = 0
    for i, name in enumerate(PROGRESS_ORDER):
        if name in done and name not in RETIRED:
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
    return {name for i, name in enumerate(PROGRESS_ORDER) if bits >> i & 1 and name not in RETIRED}
