"""The shared scenario as plain data — defaults, validation, URL and JSON forms — and the ONE path from
a scenario to its numbers (no Streamlit).

A scenario is a dict of simple values (see DEFAULTS) plus ``matrices``: learner edits as
full matrices keyed by name ("X", "W_q", …). It round-trips through query parameters (a
teacher's link) and through a JSON file. Every value from outside is validated; an invalid
value is replaced by its default and reported by name — never an exception.

From a scenario to ``core.lab.playground`` (the last section): :func:`numbers` is the one path, from the
values and tokens to :class:`Numbers` (whose ``args`` are the core call's). It calls :func:`embedding`,
:func:`qkv_matrices` and :func:`score_params` (which matrices each mode has and their seeded values; each
passes through an ``edit(name, generated)`` callback) and :func:`mask` (the only caller of
``core.masks.combine`` for the scenario). The Playground and every page sharing the scenario call it with
their matrix editors as the ``edit`` (``ui.inputs.inputs``); :func:`build` calls it with the stored edits
(:func:`fit`) for the tutorial's checkers, so a checker grades exactly what the page draws
(tests/app/test_tutorial_page.py holds them equal for every lesson).
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import numpy as np

from attention_lab.labels import indexed_labels
from core import lab as _lab
from core import masks as _masks
from core import tokens as _tokens
from core.mechanism.attention import SCORE_FUNCTIONS, default_scale
from core.playground.lab import QKV_MODES

MAX_TOKENS = 512
INTERACTIVE_TOKENS = 64
MAX_TOKEN_TEXT = 20_000
MAX_JSON_BYTES = 256 * 1024
MAX_DIM = 16

# the examples of the sources: what each sets (everything else goes back to its default below)
PRESETS: dict[str, dict[str, Any]] = {
    "c18": {"tokens": "나는 오늘 사과를 먹었다", "embedding": "c18"},
    "c19": {"tokens": "when you play the game of thrones"},
    "c11": {"tokens": "attention is very", "causal": True},
    # cross attention: the Italian target asks (queries), the English source answers (keys, values)
    "c26": {"mode": "cross", "tokens": "vediamo il cielo", "source": "We see the sky"},
}

EMBEDDINGS = ("c18", "random", "onehot")
SCALES = ("auto", "sqrt_dk", "none")
MODES = ("self", "cross")
CONVENTIONS = ("row", "column")
MATRIX_NAMES = ("X", "X_src", "W_q", "W_k", "W_v", "Q", "K", "V", "W", "W_a", "U_a", "w_a")

DEFAULTS: dict[str, Any] = {
    "tokens": PRESETS["c18"]["tokens"],
    "source": PRESETS["c26"]["source"],
    "mode": "self",
    "embedding": "c18",
    "d_model": 3,
    "qkv": "identity",
    "d_k": 3,
    "d_v": 3,
    "score": "scaled_dot",
    "d_a": 4,
    "scale": "auto",
    "temperature": 1.0,
    "causal": False,
    "pad": [],
    "blocked": [],
    "convention": "row",
    "query": 0,
}


def preset_values(name: str) -> dict[str, Any]:
    """The scenario values an example sets: its own, on top of a fresh start."""
    fresh = {"mode": "self", "embedding": "random", "causal": False, "query": 0, "blocked": [], "pad": []}
    return fresh | PRESETS[name]


# short names for the URL
URL_NAMES = {
    "tokens": "tok", "source": "src", "mode": "mode", "embedding": "emb", "d_model": "dm", "qkv": "qkv",
    "d_k": "dk", "d_v": "dv", "score": "score", "d_a": "da", "scale": "scale", "temperature": "T",
    "causal": "causal", "pad": "pad", "blocked": "blk", "convention": "conv", "query": "q",
}


def _int_in(lo: int, hi: int):
    def check(v):
        if isinstance(v, bool):
            return None
        try:
            f = float(v)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(f) or f != int(f):
            return None
        i = int(f)
        return i if lo <= i <= hi else None
    return check


def _choice(options):
    return lambda v: v if isinstance(v, str) and v in options else None


def _text(v):
    return v if isinstance(v, str) and len(v) <= MAX_TOKEN_TEXT else None


def _bool(v):
    if isinstance(v, bool):
        return v
    if v in ("1", "true", "True", 1):
        return True
    if v in ("0", "false", "False", 0):
        return False
    return None


TEMPERATURES = tuple(round(0.1 * i, 1) for i in range(1, 51))  # the temperature slider's values: 0.1 … 5.0


def _temperature(v):
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return round(f, 2) if math.isfinite(f) and TEMPERATURES[0] <= f <= TEMPERATURES[-1] else None


MAX_NUMBER_DIGITS = 40  # a number in a link or file: longer digit strings are refused before Python converts them
MAX_JSON_DEPTH = 64  # nesting of a scenario file (it needs 4: document, playground, matrices, rows)


class _TooDeep(ValueError):
    pass


class _TooLong(ValueError):
    pass


def _number(text: str, kind):
    if len(text.lstrip("-").replace(".", "").split("e")[0].split("E")[0]) > MAX_NUMBER_DIGITS:
        raise _TooLong(text[:20])
    return kind(text)


def _depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text (strings skipped), without parsing it."""
    depth = deepest = 0
    in_str = escaped = False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _no_constant(name: str):
    raise ValueError(f"{name} is not a number here")


def loads(text: str):
    """``json.loads`` for text from outside: nesting deeper than MAX_JSON_DEPTH and numbers longer than
    MAX_NUMBER_DIGITS digits are refused (``_TooDeep`` / ``_TooLong``, both ValueErrors) before the parser
    could recurse or build a huge integer; NaN and Infinity are refused too."""
    if _depth(text) > MAX_JSON_DEPTH:
        raise _TooDeep(str(MAX_JSON_DEPTH))
    return json.loads(text, parse_int=lambda x: _number(x, int), parse_float=lambda x: _number(x, float),
                      parse_constant=_no_constant)


def _int_list(v):
    if isinstance(v, str):
        try:
            v = loads(v) if v.strip().startswith("[") else [int(x) for x in v.split(",") if x.strip()]
        except (ValueError, TypeError):
            return None
    if not isinstance(v, list) or len(v) > MAX_TOKENS:
        return None
    out = []
    for x in v:
        i = _int_in(0, MAX_TOKENS - 1)(x)
        if i is None:
            return None
        out.append(i)
    return sorted(set(out))


def _cells(v):
    if isinstance(v, str):
        try:
            v = loads(v)
        except ValueError:
            return None
    if not isinstance(v, list) or len(v) > 4096:
        return None
    out = []
    for c in v:
        if not (isinstance(c, (list, tuple)) and len(c) == 2):
            return None
        i, j = _int_in(0, MAX_TOKENS - 1)(c[0]), _int_in(0, MAX_TOKENS - 1)(c[1])
        if i is None or j is None:
            return None
        out.append([i, j])
    return [list(c) for c in sorted({tuple(c) for c in out})]


VALIDATORS = {
    "tokens": _text, "source": _text, "mode": _choice(MODES), "embedding": _choice(EMBEDDINGS),
    "d_model": _int_in(1, MAX_DIM), "qkv": _choice(QKV_MODES), "d_k": _int_in(1, MAX_DIM),
    "d_v": _int_in(1, MAX_DIM), "score": _choice(SCORE_FUNCTIONS), "d_a": _int_in(1, MAX_DIM),
    "scale": _choice(SCALES), "temperature": _temperature, "causal": _bool, "pad": _int_list,
    "blocked": _cells, "convention": _choice(CONVENTIONS), "query": _int_in(0, MAX_TOKENS - 1),
}


def validate_matrix(v) -> list[list[float]] | None:
    """A rectangular list of finite numbers with at most MAX_TOKENS rows and MAX_TOKENS columns."""
    if isinstance(v, str):
        try:
            v = loads(v)
        except ValueError:
            return None
    if not isinstance(v, list) or not v or len(v) > MAX_TOKENS:
        return None
    if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        v = [[x] for x in v]  # a vector becomes a column
    rows = []
    width = None
    for row in v:
        if not isinstance(row, list) or not row or len(row) > MAX_TOKENS:
            return None
        if width is None:
            width = len(row)
        if len(row) != width:
            return None
        out_row = []
        for x in row:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or abs(x) > 1e6:
                return None
            out_row.append(float(x))
        rows.append(out_row)
    return rows


def validate(raw: dict) -> tuple[dict, dict, list[str]]:
    """(values, matrices, refused names) from a raw mapping; missing names take defaults silently."""
    values, refused = dict(DEFAULTS), []
    for name, check in VALIDATORS.items():
        if name in raw:
            val = check(raw[name])
            if val is None:
                refused.append(name)
            else:
                values[name] = val
    matrices = {}
    for name, m in (raw.get("matrices") or {}).items() if isinstance(raw.get("matrices"), dict) else []:
        if name not in MATRIX_NAMES:
            refused.append(f"matrices.{name}")
            continue
        mv = validate_matrix(m)
        if mv is None:
            refused.append(f"matrices.{name}")
        else:
            matrices[name] = mv
    if raw.get("matrices") is not None and not isinstance(raw.get("matrices"), dict):
        refused.append("matrices")
    return values, matrices, refused


# ------------------------------------------------------------------ URL form
# A link must pass every proxy on its way: nginx (deploy/nginx.conf, its default 8 KB request line) answers
# a longer one with "414". The scenario's part of a link is written plainly while it is short, and as ONE
# parameter ``z`` (zlib, then base64url) once it is longer than PLAIN_LINK_BYTES; a scenario whose packed
# form is still longer than LINK_BYTES leaves its edited matrices out of the link (``to_query`` says so).
PLAIN_LINK_BYTES = 1_500
LINK_BYTES = 7_000  # the scenario's part of a link at most: with the path, view and settings under nginx's 8 KB
PACKED = "z"
MAX_UNPACKED_BYTES = 4 * 1024 * 1024  # what ``z`` may inflate to (a link cannot make the server unpack more)


def _plain_query(values: dict, matrices: dict) -> dict[str, str]:
    q = {}
    for name, short in URL_NAMES.items():
        v = values.get(name, DEFAULTS[name])
        if v == DEFAULTS[name]:
            continue
        if isinstance(v, bool):
            q[short] = "1" if v else "0"
        elif isinstance(v, list):
            q[short] = json.dumps(v, separators=(",", ":"))
        else:
            q[short] = str(v)
    for name, m in matrices.items():
        q[f"m_{name}"] = json.dumps(m, separators=(",", ":"))
    return q


def _cells_to_deltas(text: str) -> str:
    """Clicked cells [[i, j], …] (sorted) as the gaps between their numbers i·512 + j: "0,1,1,…" packs small."""
    flat = [i * MAX_TOKENS + j for i, j in json.loads(text)]
    return ",".join(str(b - a) for a, b in zip([0, *flat], flat, strict=False))


def _deltas_to_cells(text: str) -> str:
    cells, at = [], 0
    for gap in text.split(",") if text else []:
        if not gap.isdigit() or len(gap) > 7 or len(cells) > 4096:
            raise ValueError("blkd")
        at += int(gap)
        cells.append([at // MAX_TOKENS, at % MAX_TOKENS])
    return json.dumps(cells, separators=(",", ":"))


def pack(q: dict[str, str]) -> str:
    """Query parameters as one URL-safe string: JSON (clicked cells as gaps), zlib (level 9), base64url
    without padding."""
    q = dict(q)
    if "blk" in q:
        q["blkd"] = _cells_to_deltas(q.pop("blk"))
    raw = json.dumps(q, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).rstrip(b"=").decode()


def unpack(text: str) -> dict[str, str] | None:
    """The parameters of a packed ``z``; None when it is not one (bounded: LINK_BYTES in, 4 MB out)."""
    if not isinstance(text, str) or len(text) > 4 * LINK_BYTES:
        return None
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), MAX_UNPACKED_BYTES)
        if inflater.unconsumed_tail or not inflater.eof:  # over 4 MB, or cut short
            return None
        q = loads(raw.decode("utf-8"))
        if not isinstance(q, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in q.items()):
            return None
        if "blkd" in q:
            q["blk"] = _deltas_to_cells(q.pop("blkd"))
    except (ValueError, zlib.error, UnicodeDecodeError):
        return None
    return q


def link_size(q: dict[str, str]) -> int:
    """Bytes of these parameters in a link (percent-encoded)."""
    return len(urlencode(q))


def to_query(values: dict, matrices: dict) -> dict[str, str]:
    """Query parameters for the values that differ from the defaults, plus the edited matrices: plainly
    while short, packed into ``z`` beyond PLAIN_LINK_BYTES; without the matrices (see
    :func:`link_fits`) when even the packed form is over LINK_BYTES."""
    q = _plain_query(values, matrices)
    if link_size(q) <= PLAIN_LINK_BYTES:
        return q
    packed = {PACKED: pack(q)}
    if link_size(packed) <= LINK_BYTES or not matrices:
        return packed  # (without matrices and still over: 20,000 characters of tokens; the share tab says so)
    return to_query(values, {})  # the matrices do not fit in a link: the file keeps them


def link_fits(values: dict, matrices: dict) -> bool:
    """Whether the whole scenario (its matrices included) fits in a link."""
    q = _plain_query(values, matrices)
    return link_size(q) <= PLAIN_LINK_BYTES or link_size({PACKED: pack(q)}) <= LINK_BYTES


def from_query(params: dict[str, str]) -> tuple[dict, dict, list[str]]:
    """The scenario of a link, plain or packed (old links, written before ``z``, read as they were)."""
    params = dict(params)
    refused = []
    if PACKED in params:
        inner = unpack(params.pop(PACKED))
        if inner is None:
            refused.append("z")
        else:
            params = inner | params
    raw: dict[str, Any] = {}
    for name, short in URL_NAMES.items():
        if short in params:
            raw[name] = params[short]
    mats = {k[2:]: v for k, v in params.items() if k.startswith("m_")}
    if mats:
        raw["matrices"] = mats
    values, matrices, bad = validate(raw)
    return values, matrices, refused + bad


def url_keys() -> set[str]:
    return set(URL_NAMES.values()) | {PACKED}


# ------------------------------------------------------------------ JSON form
def to_json(values: dict, matrices: dict, settings: dict) -> str:
    doc = {"app": "attention-lab", "kind": "playground-scenario", "version": 1, "settings": settings,
           "playground": {**values, "matrices": matrices}}
    return json.dumps(doc, ensure_ascii=False, indent=2)


class ScenarioError(ValueError):
    """A scenario file that cannot be used at all; ``key`` names the i18n message."""

    def __init__(self, key: str, **fmt):
        super().__init__(key)
        self.key, self.fmt = key, fmt


def from_json(data: bytes) -> tuple[dict, dict, dict, list[str]]:
    """(values, matrices, settings, refused) from an uploaded file; raises ScenarioError."""
    if len(data) > MAX_JSON_BYTES:
        raise ScenarioError("err.upload_size", limit=MAX_JSON_BYTES // 1024)
    try:
        doc = loads(data.decode("utf-8"))
    except _TooDeep:
        raise ScenarioError("err.upload_deep", limit=MAX_JSON_DEPTH) from None
    except _TooLong:
        raise ScenarioError("err.upload_number", limit=MAX_NUMBER_DIGITS) from None
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ScenarioError("err.upload_json") from None
    if not isinstance(doc, dict) or doc.get("app") != "attention-lab" or not isinstance(doc.get("playground"), dict):
        raise ScenarioError("err.upload_kind")
    values, matrices, refused = validate(doc["playground"])
    settings = doc.get("settings") if isinstance(doc.get("settings"), dict) else {}
    return values, matrices, settings, refused


# ------------------------------------------------------------------ the scenario → core.lab.playground
MAX_SEED = 2**31 - 1
SCORE_PARAMS = {"general": ("W",), "additive": ("W_a", "U_a", "w_a")}  # what each score function is given


class BadScenario(ValueError):
    """A scenario that cannot be turned into numbers; ``args[0]`` names the value."""


def token_list(text: str, name: str = "tokens") -> list[str]:
    """The tokens of a text box (raises BadScenario: empty, or more than MAX_TOKENS)."""
    toks = _tokens.tokenize(text) if isinstance(text, str) and len(text) <= MAX_TOKEN_TEXT else []
    if not toks or len(toks) > MAX_TOKENS:
        raise BadScenario(name)
    return toks


def embedding(kind: str, tokens: tuple[str, ...], d_model: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """X (n, d) for the tokens: the C18 table (unknown tokens seeded random), per-token seeded random
    vectors of width ``d_model``, or one-hot. Returns (X, the tokens not in the C18 table)."""
    if kind == "c18":
        X, unknown = _lab.c18_lookup(tokens, fallback_seed=seed)
        return X.numpy(), unknown
    if kind == "onehot":
        return _tokens.one_hot(tokens).numpy(), []
    return _tokens.embed(tokens, d_model, seed=seed).numpy(), []


def projection(d_in: int, d_out: int, seed: int, name: str) -> np.ndarray:
    """A seeded (d_in, d_out) projection, the same for every page that names it the same."""
    return _tokens.projection(d_in, d_out, seed=seed, name=name).numpy()


def multi_head_numbers(tokens, d: int, seed: int, *, embed=embedding, project=projection) -> tuple:
    """The multi-head panel's numbers (its page and its lesson): seeded random embeddings X (1, n, d) — one
    sentence — and seeded W_q, W_k, W_v, W_o (d × d) by name."""
    X = embed("random", tuple(tokens), d, seed)[0][None]  # (1, n, d)
    return X, {name: project(d, d, seed, f"mh.{name}") for name in ("W_q", "W_k", "W_v", "W_o")}


def permutation_numbers(tokens, d: int, seed: int, *, embed=embedding, project=projection) -> tuple:
    """The position panel's numbers (its page and its lesson): seeded random embeddings X (n, d) and seeded
    W_q, W_k, W_v (d × d) by name."""
    X = embed("random", tuple(tokens), d, seed)[0]  # (n, d)
    return X, {w: project(d, d, seed, f"ps.{w}") for w in ("W_q", "W_k", "W_v")}


def fit(given, generated: np.ndarray) -> np.ndarray | None:
    """A learner's (or a link's) matrix in the generated one's shape — a vector counts as a column —
    or None when it has another shape (it no longer belongs to these tokens or sizes)."""
    generated = np.asarray(generated)
    m = np.asarray(given, dtype=float)
    m = m if m.ndim == 2 else m.reshape(-1, 1)
    return m.reshape(generated.shape) if m.shape == generated.reshape(generated.shape[0], -1).shape else None


def param_base(name: str, d_k: int, d_a: int, seed: int, project=projection) -> np.ndarray:
    """The seeded value of a score function's parameter: W (d_k×d_k) for general; W_a, U_a (d_a×d_k) and
    w_a (d_a) for additive. ``project`` is :func:`projection` or a cached copy of it."""
    if name == "W":
        return project(d_k, d_k, seed, "W").T
    if name in ("W_a", "U_a"):
        return project(d_k, d_a, seed, name).T
    if name == "w_a":
        return project(d_a, 1, seed, "w_a")[:, 0]
    raise KeyError(name)


def qkv_matrices(qkv: str, X_q: np.ndarray, X_kv: np.ndarray, d_k: int, d_v: int, seed: int, edit=None,
                 project=projection) -> dict:
    """What ``core.lab.playground`` is given for Q, K and V in each mode, with d_k and d_v: ``projection``:
    W_q, W_k (d_model × d_k) and W_v (d_model × d_v), seeded; ``direct``: Q, K, V typed, starting from X
    (queries) and X_src (keys, values); ``identity``: nothing (Q = K = V = X, d_k = d_v = d_model).
    ``edit(name, generated)`` → the matrix used (the learner's edit, a matrix editor); none: the generated."""
    edit = edit or (lambda name, generated: generated)
    d_model = np.shape(X_q)[1]
    out = {"W_q": None, "W_k": None, "W_v": None, "Q": None, "K": None, "V": None, "d_k": d_model, "d_v": d_model}
    if qkv == "projection":
        out |= {"d_k": d_k, "d_v": d_v}
        for name, d_out in (("W_q", d_k), ("W_k", d_k), ("W_v", d_v)):
            out[name] = edit(name, project(d_model, d_out, seed, name))
    elif qkv == "direct":
        for name, base in (("Q", X_q), ("K", X_kv), ("V", X_kv)):
            out[name] = edit(name, np.asarray(base, dtype=float))
    return out


def score_params(score: str, d_k: int, d_a: int, seed: int, edit=None, project=projection) -> dict[str, np.ndarray]:
    """The parameters of a score function (:data:`SCORE_PARAMS`, seeded by :func:`param_base`), each through
    ``edit(name, generated)`` as in :func:`qkv_matrices`."""
    edit = edit or (lambda name, generated: generated)
    return {name: edit(name, param_base(name, d_k, d_a, seed, project)) for name in SCORE_PARAMS.get(score, ())}


def mask(n_q: int, n_k: int, *, causal, pad, blocked, cross: bool = False, window: int = 0) -> np.ndarray | None:
    """The scenario's mask (causal & padding & clicked cells, and a sliding window where a page adds one),
    row convention, or None. In cross attention the causal mask does not apply: the decoder may read
    every source token."""
    m = _masks.combine(n_q, n_k, causal=bool(causal) and not cross, pad=pad, blocked=blocked, window=window)
    return None if m is None else m.numpy()


def scale(mode: str, d_k: int) -> float | None:
    """The scale radio's factor: None = the score function's own default (core decides)."""
    if mode == "auto":
        return None
    return default_scale("scaled_dot", d_k) if mode == "sqrt_dk" else 1.0


def playground_args(*, X_q, X_kv, qkv: str, W_q=None, W_k=None, W_v=None, Q=None, K=None, V=None, d_k: int,
                    score: str, params: dict, scale_mode: str, temperature: float, mask=None, convention: str = "row") -> dict:
    """The keyword arguments of ``core.lab.playground`` for a scenario's numbers (also what "copy as
    code" writes out)."""
    return {"X_q": np.asarray(X_q, np.float32), "X_kv": np.asarray(X_kv, np.float32), "qkv": qkv,
            "W_q": W_q, "W_k": W_k, "W_v": W_v, "Q": Q, "K": K, "V": V, "score": score,
            "params": {k: np.asarray(p, np.float32) for k, p in params.items()}, "scale": scale(scale_mode, d_k),
            "temperature": float(temperature), "mask": mask, "convention": convention}


def _plain(x):
    """Tuples, mappings, tensors and arrays as the plain lists and dicts :func:`validate` reads."""
    if isinstance(x, dict) or (hasattr(x, "items") and hasattr(x, "keys")):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist") and not isinstance(x, (bool, int, float, str)):
        return x.tolist()
    return x


@dataclass(frozen=True)
class Numbers:
    """A scenario's numbers, row convention (one token per row): what ``core.lab.playground`` is given, with
    the tokens they belong to. Every page that shares the scenario and the tutorial's checkers hold one,
    made by :func:`numbers`; :meth:`args` is the core call's keyword arguments."""

    tq: tuple[str, ...]  # the query tokens
    tk: tuple[str, ...]  # the key (source) tokens: tq in self-attention
    q_labels: tuple[str, ...]  # the tokens as labelled on the page (a repeated token gets its position)
    k_labels: tuple[str, ...]
    cross: bool
    unknown: tuple[str, ...]  # tokens the C18 table lacks (given seeded random vectors)
    X_q: np.ndarray  # (n_q, d_model)
    X_kv: np.ndarray  # (n_k, d_model): X_q in self-attention
    qkv: str
    W_q: np.ndarray | None  # (d_model, d_k) in "projection" mode; W_k likewise, W_v (d_model, d_v)
    W_k: np.ndarray | None
    W_v: np.ndarray | None
    Q: np.ndarray | None  # (n_q, d_model) in "direct" mode; K, V (n_k, d_model)
    K: np.ndarray | None
    V: np.ndarray | None
    d_k: int
    d_v: int
    score: str
    params: dict  # the score function's parameters (SCORE_PARAMS)
    scale_mode: str
    temperature: float
    mask: np.ndarray | None  # (n_q, n_k), True = may attend; None = nothing hidden

    @property
    def d_model(self) -> int:
        return int(self.X_q.shape[1])

    def args(self, convention: str = "row") -> dict:
        """The keyword arguments of ``core.lab.playground`` in a notation (also what "copy as code" writes)."""
        return playground_args(X_q=self.X_q, X_kv=self.X_kv, qkv=self.qkv, W_q=self.W_q, W_k=self.W_k, W_v=self.W_v,
                               Q=self.Q, K=self.K, V=self.V, d_k=self.d_k, score=self.score, params=self.params,
                               scale_mode=self.scale_mode, temperature=self.temperature, mask=self.mask,
                               convention=convention)


def numbers(values: dict, tq, tk, *, seed: int, edit=None, project=projection, embed=embedding) -> Numbers:
    """The ONE path from a scenario's (valid) values and its tokens to its numbers: the embedding X (and X_src),
    Q/K/V or their projections, the score function's parameters and the mask.

    ``edit(name, generated)`` → the matrix used, called in order X, (X_src,) W_q, W_k, W_v or Q, K, V, then the
    parameters: the Playground's matrix editors, or :func:`build`'s stored edits. ``project`` and ``embed`` are
    :func:`projection` and :func:`embedding` or cached copies of them. PAD positions past the keys are left out."""
    edit = edit or (lambda name, generated: np.asarray(generated, dtype=float))
    tq, tk = tuple(tq), tuple(tk)
    cross = values["mode"] == "cross"
    X_all, unknown = embed(values["embedding"], tq + (tk if cross else ()), int(values["d_model"]), int(seed))
    n_q, n_k = len(tq), len(tk)
    X_q = edit("X", X_all[:n_q])
    X_kv = edit("X_src", X_all[n_q:]) if cross else X_q
    m = qkv_matrices(values["qkv"], X_q, X_kv, int(values["d_k"]), int(values["d_v"]), int(seed), edit, project)
    params = score_params(values["score"], m["d_k"], int(values["d_a"]), int(seed), edit, project)
    pad = [int(i) for i in values["pad"] if 0 <= int(i) < n_k]
    mk = mask(n_q, n_k, causal=values["causal"], pad=pad, blocked=values["blocked"], cross=cross)
    return Numbers(tq=tq, tk=tk, q_labels=tuple(indexed_labels(list(tq))), k_labels=tuple(indexed_labels(list(tk))),
                   cross=cross, unknown=tuple(unknown), X_q=X_q, X_kv=X_kv, qkv=values["qkv"], score=values["score"],
                   params=params, scale_mode=values["scale"], temperature=float(values["temperature"]), mask=mk, **m)


def build(raw, *, seed=None) -> tuple[dict, tuple[str, ...], tuple[str, ...]]:
    """A scenario (values, ``matrices``; ``seed`` from the argument or the mapping, 0 if neither) →
    (the keyword arguments of ``core.lab.playground`` in row convention, query tokens, key tokens):
    :func:`numbers` with the stored matrices as the edits.

    Strict, unlike :func:`validate`: a value that cannot be used raises BadScenario (a ValueError)
    naming it, instead of falling back to its default."""
    if not hasattr(raw, "items"):
        raise BadScenario("state")
    raw = _plain(raw)
    values, matrices, refused = validate(raw)
    seed = _int_in(0, MAX_SEED)(raw.get("seed", 0) if seed is None else seed)
    if refused or seed is None:
        raise BadScenario(refused[0] if refused else "seed")
    tq = token_list(values["tokens"], "tokens")
    tk = token_list(values["source"], "source") if values["mode"] == "cross" else tq

    def edited(name: str, generated: np.ndarray) -> np.ndarray:
        got = fit(matrices[name], generated) if name in matrices else None
        return np.asarray(generated, dtype=float) if got is None else got

    num = numbers(values, tq, tk, seed=seed, edit=edited)
    return num.args("row"), num.tq, num.tk
