r"""The Playground's scenario as code to take away: a ``core`` snippet, a plain-PyTorch snippet, a notebook.

``args`` is the plain dict of keyword arguments the Playground passes to :func:`core.lab.playground`
(``X_q, X_kv, qkv, W_q, W_k, W_v, Q, K, V, score, params, scale, temperature, mask, convention``;
arrays as nested lists, numpy arrays or tensors, None where unused) plus ``tokens_q`` / ``tokens_k``
for the labels. ``device`` and ``dtype`` are accepted and ignored (the snippets run on the CPU).

* :func:`core_snippet` recomputes the scenario with ``core`` and prints the weights and the output;
* :func:`torch_snippet` does the same in plain PyTorch, only the steps the scenario needs;
* :func:`notebook` / :func:`notebook_bytes` put both in a Jupyter notebook, with every pipeline step
  drawn as the page draws it (:mod:`attention_lab.notebook`), saved with its outputs, and a check that
  both agree — in the chosen language throughout, code comments included.

Bilingual prose, not math: this module lives outside ``core`` (it was ``core.codegen``); the
numbers come from ``core``, the formulas from :mod:`attention_lab.formulas`, the text from
``assets/i18n/*.notebook.json``.

Every snippet is standalone, embeds the numbers as literals that give back the page's float32
values exactly (the shortest decimal of each float32; float64 inputs keep all their digits), and
ends with two machine-readable lines::

    weights (JSON): [[...], ...]     the attention weights in the scenario's convention
    output (JSON): [[...], ...]      the output in the scenario's convention

Scenarios with more than :data:`MAX_CODE_TOKENS` queries or keys, or a matrix side above
:data:`MAX_DIM`, raise ValueError (the page shows "too large to copy").
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from core.mechanism.attention import CONVENTIONS, SCORE_FUNCTIONS
from core.playground.lab import QKV_MODES

from . import formulas
from .strings import translate as _t

MAX_CODE_TOKENS = 64
MAX_DIM = 64
ARG_NAMES = ("X_q", "X_kv", "qkv", "W_q", "W_k", "W_v", "Q", "K", "V", "score", "params", "scale", "temperature",
             "mask", "convention", "tokens_q", "tokens_k")
_IGNORED_ARGS = ("device", "dtype")
_PARAMS = {"general": ("W",), "additive": ("W_a", "U_a", "w_a")}
WEIGHTS_PREFIX = "weights (JSON): "
OUTPUT_PREFIX = "output (JSON): "


@dataclass(frozen=True)
class _Scenario:
    """The scenario in row convention, checked: the matrices to embed, in order, with their shapes."""

    qkv: str
    score: str
    convention: str
    self_attention: bool
    mats: dict[str, np.ndarray]  # name → row-convention matrix to embed (X or X_q/X_kv, W_*, or Q/K/V)
    params: dict[str, np.ndarray]
    mask: np.ndarray | None  # bool (n_q, n_k), row convention
    scale: float | None
    temperature: float
    tokens_q: list[str] | None
    tokens_k: list[str] | None
    f64: bool
    n_q: int
    n_k: int
    d_q: int
    d_k: int
    d_v: int


# ---------------------------------------------------------------------------
# Reading and checking the arguments
# ---------------------------------------------------------------------------

def _array(x: Any, name: str, ndim: int = 2) -> np.ndarray:
    if x is None:
        raise ValueError(f"{name} is missing")
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    arr = np.asarray(x)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be a rectangular array of numbers")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s) but has shape {arr.shape}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def _is_f64(x: Any) -> bool:
    """float64 survives core's conversion for numpy arrays and tensors; nested lists become float32."""
    return (isinstance(x, np.ndarray) and x.dtype == np.float64) or (isinstance(x, torch.Tensor) and x.dtype == torch.float64)


def _tokens(tokens: Any, n: int) -> list[str] | None:
    if tokens is None:
        return None
    out = [str(t) for t in tokens]
    return out if len(out) == n else None


def size_problem(args: Mapping[str, Any]) -> str | None:
    """Why the scenario is too large to copy as code, or None when it fits. Only the matrices
    the snippets embed count (X is not embedded when Q, K, V are given directly)."""
    qkv = args.get("qkv", "identity")
    used = {"projection": ("X_q", "X_kv", "W_q", "W_k", "W_v"), "direct": ("Q", "K", "V")}.get(qkv, ("X_q", "X_kv"))
    sides = {name: np.shape(args[name]) for name in used if args.get(name) is not None}
    params = args.get("params") or {}
    sides |= {f"params['{k}']": np.shape(params[k]) for k in _PARAMS.get(args.get("score"), ()) if params.get(k) is not None}
    n_q = sides.get("Q" if qkv == "direct" else "X_q", (0,))[0]
    n_k = sides.get("K" if qkv == "direct" else ("X_kv" if "X_kv" in sides else "X_q"), (0,))[0]
    if max(n_q, n_k) > MAX_CODE_TOKENS:
        return (f"too large to copy as code: {n_q} queries and {n_k} keys (the limit is {MAX_CODE_TOKENS} tokens); "
                f"use core.lab.playground from Python instead")
    for name, shape in sides.items():
        if any(side > MAX_DIM for side in shape):
            return (f"too large to copy as code: {name} has shape {tuple(shape)} (the limit is {MAX_DIM} per side); "
                    f"use core.lab.playground from Python instead")
    return None


def _scenario(args: Mapping[str, Any]) -> _Scenario:
    unknown = set(args) - set(ARG_NAMES) - set(_IGNORED_ARGS)
    if unknown:
        raise ValueError(f"unknown argument(s) {sorted(unknown)}; expected {', '.join(ARG_NAMES)}")
    qkv = args.get("qkv", "identity")
    score = args.get("score", "scaled_dot")
    convention = args.get("convention", "row")
    for name, value, allowed in (("qkv", qkv, QKV_MODES), ("score", score, SCORE_FUNCTIONS),
                                 ("convention", convention, CONVENTIONS)):
        if value not in allowed:
            raise ValueError(f"unknown {name} '{value}'; choose one of {', '.join(allowed)}")
    problem = size_problem(args)
    if problem:
        raise ValueError(problem)

    X_kv_given = args.get("X_kv")
    used = {"identity": ("X_q", "X_kv"), "projection": ("X_q", "X_kv", "W_q", "W_k", "W_v"), "direct": ("Q", "K", "V")}[qkv]
    raw = {name: (args.get("X_q") if name == "X_kv" and X_kv_given is None else args.get(name)) for name in used}
    arrs = {name: _array(x, name) for name, x in raw.items()}
    params_in = args.get("params") or {}
    params = {}
    for pname in _PARAMS.get(score, ()):
        if params_in.get(pname) is None:
            raise ValueError(f"score '{score}' needs params['{pname}']")
        params[pname] = _array(params_in[pname], f"params['{pname}']", ndim=1 if pname == "w_a" else 2)
    f64 = any(_is_f64(x) for x in [*raw.values(), *(params_in.get(p) for p in params)])

    if qkv == "direct":
        Q, K, V = arrs["Q"], arrs["K"], arrs["V"]
        n_q, n_k, d_q, d_k, d_v = Q.shape[0], K.shape[0], Q.shape[1], K.shape[1], V.shape[1]
        if V.shape[0] != n_k:
            raise ValueError(f"K has {n_k} keys but V has {V.shape[0]} values")
    else:
        Xq, Xkv = arrs["X_q"], arrs["X_kv"]
        n_q, n_k = Xq.shape[0], Xkv.shape[0]
        if Xq.shape[1] != Xkv.shape[1] and qkv == "identity" and score not in ("general", "additive"):
            raise ValueError(f"X_q {Xq.shape} and X_kv {Xkv.shape} need the same width for Q = X_q, K = X_kv")
        d_q, d_k, d_v = Xq.shape[1], Xkv.shape[1], Xkv.shape[1]
        if qkv == "projection":
            for xname, wname in (("X_q", "W_q"), ("X_kv", "W_k"), ("X_kv", "W_v")):
                if arrs[wname].shape[0] != arrs[xname].shape[1]:
                    raise ValueError(f"{xname} {arrs[xname].shape} cannot be multiplied by {wname} {arrs[wname].shape}")
            d_q, d_k, d_v = arrs["W_q"].shape[1], arrs["W_k"].shape[1], arrs["W_v"].shape[1]

    same_x = qkv != "direct" and (X_kv_given is None or (
        arrs["X_q"].shape == arrs["X_kv"].shape and np.array_equal(arrs["X_q"], arrs["X_kv"])))
    tokens_q = _tokens(args.get("tokens_q"), n_q)
    tokens_k = _tokens(args.get("tokens_k"), n_k) if args.get("tokens_k") is not None else (tokens_q if same_x else None)
    if qkv == "direct":
        self_attention = n_q == n_k and tokens_q is not None and tokens_q == tokens_k
    else:
        self_attention = same_x and tokens_q == tokens_k
    mats = dict(arrs)
    if qkv != "direct" and self_attention:
        mats.pop("X_kv")
        mats = {("X" if k == "X_q" else k): v for k, v in mats.items()}

    mask = args.get("mask")
    if mask is not None:
        m = _array(mask, "mask")
        if m.dtype.kind != "b":
            if not np.isin(m, (0, 1)).all():
                raise ValueError("mask must be boolean (True = may attend) or contain only 0 and 1")
            m = m != 0
        if m.shape != (n_q, n_k):
            raise ValueError(f"mask {m.shape} must be (n_q, n_k) = {(n_q, n_k)} (row convention)")
        mask = m
    scale = args.get("scale")
    if scale is not None:
        scale = float(scale)
        if not math.isfinite(scale):
            raise ValueError(f"scale must be a finite number, got {scale}")
    temperature = 1.0 if args.get("temperature") is None else float(args["temperature"])
    if not (math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a positive finite number, got {temperature}")
    return _Scenario(qkv=qkv, score=score, convention=convention, self_attention=self_attention, mats=mats,
                     params=params, mask=mask, scale=scale, temperature=temperature, tokens_q=tokens_q,
                     tokens_k=tokens_k, f64=f64, n_q=n_q, n_k=n_k, d_q=d_q, d_k=d_k, d_v=d_v)


# ---------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------

def _num(v: float, f64: bool) -> str:
    """The shortest decimal that gives back the same float32 (or float64) value."""
    return repr(float(v)) if f64 else str(np.float32(v))


def _comment_token(tok: str) -> str:
    """A token inside a comment: repr keeps quotes, backslashes, newlines and control characters escaped."""
    return repr(tok)


def _tensor_literal(name: str, M: np.ndarray, f64: bool, shape_note: str, labels: Sequence[str] | None = None,
                    label_prefix: str = "") -> list[str]:
    """``name = torch.tensor([...])`` with one line per row, numbers right-aligned per column."""
    dtype = ", dtype=torch.float64" if f64 else ""
    if M.ndim == 1:
        body = ", ".join(_num(v, f64) for v in M)
        return [f"{name} = torch.tensor([{body}]{dtype})  # {shape_note}"]
    cells = [[_num(v, f64) for v in row] for row in M]
    widths = [max(len(r[j]) for r in cells) for j in range(M.shape[1])]
    lines = [f"{name} = torch.tensor(["]
    for i, row in enumerate(cells):
        text = "    [" + ", ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + "],"
        if labels is not None:
            text += f"  # {label_prefix}{_comment_token(labels[i])}"
        lines.append(text)
    lines.append(f"]{dtype})  # {shape_note}")
    return lines


def _mask_literal(m: np.ndarray, labels: Sequence[str] | None, lang: str) -> list[str]:
    lines = ["mask = torch.tensor(["]
    for i, row in enumerate(m):
        text = "    [" + ", ".join("1" if b else "0" for b in row) + "],"
        if labels is not None:
            text += "  # " + _t("nb.c.query", lang, tok=_comment_token(labels[i]))
        lines.append(text)
    lines.append(f"], dtype=torch.bool)  # (n_q, n_k) = {m.shape}: " + _t("nb.c.mask", lang))
    return lines


_SHAPE_NOTES = {
    "X": "(n, d_model)", "X_q": "(n_q, d_model)", "X_kv": "(n_k, d_model)", "W_q": "(d_model, d_k)",
    "W_k": "(d_model, d_k)", "W_v": "(d_model, d_v)", "Q": "(n_q, d_k)", "K": "(n_k, d_k)", "V": "(n_k, d_v)",
    "W": "(d_k, d_k)", "W_a": "(d_a, d_k)", "U_a": "(d_a, d_k)", "w_a": "(d_a,)",
}


def _data_lines(s: _Scenario, lang: str) -> list[str]:
    """Literals of every input matrix (row convention, one token per line), params and mask."""
    out: list[str] = []
    notes = dict(_SHAPE_NOTES)
    if s.d_q != s.d_k:  # general and additive compare queries and keys of different widths
        notes |= {"W_q": "(d_model, d_q)", "Q": "(n_q, d_q)", "W": "(d_k, d_q)", "W_a": "(d_a, d_q)"}
    for name, M in s.mats.items():
        labels = {"X": s.tokens_q, "X_q": s.tokens_q, "Q": s.tokens_q, "X_kv": s.tokens_k, "K": s.tokens_k,
                  "V": s.tokens_k}.get(name)
        out += _tensor_literal(name, M, s.f64, f"{notes[name]} = {M.shape}", labels)
    for name, P in s.params.items():
        out += _tensor_literal(name, P, s.f64, f"{notes[name]} = {P.shape}")
    if s.mask is not None:
        out += _mask_literal(s.mask, s.tokens_q, lang)
    return out


def _mask_lines(s: _Scenario, lang: str) -> list[str]:
    """The mask as the Playground describes it — causal, PAD keys, clicked cells — read off the matrix
    itself (row notation), then the count of blocked pairs and the queries that see no key."""
    if s.mask is None:
        return [_t("nb.desc.mask_none", lang)]
    m = s.mask
    n_q, n_k = m.shape
    k_names = s.tokens_k or [str(j) for j in range(n_k)]
    q_names = s.tokens_q or [str(i) for i in range(n_q)]
    pad = [j for j in range(n_k) if not m[:, j].any()] if n_q > 1 else []
    keys = np.ones(n_k, dtype=bool)
    keys[pad] = False  # the columns no query may use: PAD keys
    causal = np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
    above = ~causal & keys[None, :]  # the cells a causal mask blocks, outside the PAD columns
    is_causal = s.self_attention and above.any() and not (m & above).any()
    lines = [_t("nb.desc.mask_causal", lang)] if is_causal else []
    if pad:
        lines.append(_t("nb.desc.mask_pad", lang, keys=", ".join(repr(k_names[j]) for j in pad)))
    clicked = ~m & keys[None, :] & (causal if is_causal else True)  # blocked beyond the causal mask and the PAD keys
    cells = list(zip(*np.nonzero(clicked), strict=True))
    if cells:
        shown = ", ".join(f"{q_names[i]!r} → {k_names[j]!r}" for i, j in cells[:8])
        more = " " + _t("nb.desc.mask_more", lang, n=len(cells) - 8) if len(cells) > 8 else ""
        lines.append(_t("nb.desc.mask_cells", lang, cells=shown + more))
    lines.append(_t("nb.desc.mask_blocked", lang, n=int((~m).sum()), total=m.size))
    fully = [q_names[i] for i in np.flatnonzero(~m.any(axis=1))]
    if fully:
        lines.append(_t("nb.desc.mask_fully", lang, names=", ".join(repr(q) for q in fully)))
    return lines


def _describe(s: _Scenario, lang: str = "en") -> list[str]:
    """The scenario in a few plain-text lines, in ``lang`` (used as comments and in the notebook)."""
    kind = (_t("nb.desc.self", lang, n=s.n_q) if s.self_attention
            else _t("nb.desc.cross", lang, n_q=s.n_q, n_k=s.n_k))
    qkv = _t("nb.desc.direct" if s.qkv == "direct" else f"nb.desc.{s.qkv}_{'self' if s.self_attention else 'cross'}", lang)
    if s.scale is None:
        scale = _t("nb.desc.scale_default_sqrt" if s.score == "scaled_dot" else "nb.desc.scale_default_one", lang)
    elif s.scale == 1 / math.sqrt(s.d_k):
        scale = f"1/√d_k = {s.scale!r}"
    else:
        scale = repr(s.scale)
    if s.tokens_q is None:
        first = _t("nb.desc.queries", lang, n=s.n_q)
    else:
        first = _t("nb.desc.tokens" if s.self_attention else "nb.desc.tokens_q", lang, tokens=repr(s.tokens_q))
    keys = [] if s.self_attention else [_t("nb.desc.tokens_k", lang, tokens=repr(s.tokens_k)) if s.tokens_k is not None
                                        else _t("nb.desc.keys", lang, n=s.n_k)]
    dims = (f"d_q = {s.d_q}, " if s.d_q != s.d_k else "") + f"d_k = {s.d_k}, d_v = {s.d_v}; {'float64' if s.f64 else 'float32'}"
    return [first, *keys, f"{kind}; {qkv}", _t("nb.desc.score", lang, score=s.score, scale=scale, T=repr(s.temperature)),
            *_mask_lines(s, lang), _t(f"nb.desc.{s.convention}", lang) + "; " + dims]


def _print_lines(weights: str, output: str, s: _Scenario, lang: str) -> list[str]:
    w_shape, o_shape = ("(n_q, n_k)", "(n_q, d_v)") if s.convention == "row" else ("(n_k, n_q)", "(d_v, n_q)")
    return [
        f"print({_t(f'nb.c.weights_{s.convention}', lang, shape=w_shape)!r})",
        f"print({weights})",
        f"print({_t('nb.c.output', lang, shape=o_shape)!r})",
        f"print({output})",
        "# " + _t("nb.c.machine", lang),
        f'print("{WEIGHTS_PREFIX}" + json.dumps({weights}.tolist()))',
        f'print("{OUTPUT_PREFIX}" + json.dumps({output}.tolist()))',
    ]


# ---------------------------------------------------------------------------
# The two snippets
# ---------------------------------------------------------------------------

def core_snippet(args: Mapping[str, Any], lang: str = "en") -> str:
    """A short standalone Python snippet that recomputes the scenario with ``core`` and prints
    the attention weights and the output (readable, then as JSON lines). Raises ValueError when
    the scenario is malformed or too large (:func:`size_problem`). Comments in ``lang``."""
    s = _scenario(args)
    lines = ["# " + _t("nb.c.core_head", lang), "# " + _t("nb.c.run_where", lang)]
    lines += [f"# {line}" for line in _describe(s, lang)]
    lines += ["import json", "", "import torch", "", "import core", "", "torch.set_printoptions(precision=4, sci_mode=False)", ""]
    lines += _data_lines(s, lang)
    if s.params:
        lines.append(f"params = {{{', '.join(f'{k!r}: {k}' for k in s.params)}}}")
    lines.append("")

    opts = [f"score={s.score!r}"]
    if s.params:
        opts.append("params=params")
    if s.scale is None:
        scale_note = _t("nb.c.scale_none", lang)
    else:
        scale_note = _t("nb.c.scale_sqrt" if s.scale == 1 / math.sqrt(s.d_k) else "nb.c.scale_one" if s.scale == 1.0
                        else "nb.c.scale_chosen", lang)
    opts += [f"scale={s.scale!r}", f"temperature={s.temperature!r}"]
    if s.mask is not None:
        opts.append("mask=mask" if s.qkv != "direct" or s.convention == "row" else "mask=mask.T")
    if s.qkv == "direct":
        if s.convention == "row":
            lines.append("# " + _t("nb.c.direct_row", lang))
            call = ["attn = core.attention(", "    Q, K, V,"]
        else:
            lines.append("# " + _t("nb.c.direct_column", lang))
            call = ["attn = core.attention(", "    Q.T, K.T, V.T,"]
            opts.append("convention='column'")
    else:
        xq, xkv = ("X", "X") if s.self_attention else ("X_q", "X_kv")
        proj = " W_q=W_q, W_k=W_k, W_v=W_v," if s.qkv == "projection" else ""
        lines.append("# " + _t("nb.c.pipeline", lang))
        call = ["tr = core.lab.playground(", f"    {xq}, {xkv}, qkv={s.qkv!r},{proj}"]
        opts.append(f"convention={s.convention!r}")
    lines.append("# " + _t("nb.c.scale", lang, note=scale_note))
    lines += call + ["    " + ", ".join(opts) + ",", ")"]
    if s.qkv != "direct":
        lines.append("attn = tr.attn  # " + _t("nb.c.attn", lang))
    lines.append("")
    lines += _print_lines("attn.weights", "attn.output", s, lang)
    return "\n".join(lines) + "\n"


def _score_lines(score: str, convention: str, lang: str) -> list[str]:
    """f(Q, K) for one score function, in one convention."""
    wa, ua, qh, kh = (_t(k, lang) for k in ("nb.c.wa_q", "nb.c.ua_k", "nb.c.q_hat", "nb.c.k_hat"))
    eij, eji = _t("nb.c.entry", lang, ij="(i, j)"), _t("nb.c.entry", lang, ij="(j, i)")
    if convention == "row":
        return {
            "dot": ["scores = Q @ K.T  # (n_q, n_k): " + eij + " = q_iᵀ k_j"],
            "scaled_dot": ["scores = Q @ K.T  # (n_q, n_k): " + eij + " = q_iᵀ k_j"],
            "general": ["scores = Q @ W.T @ K.T  # (n_q, n_k): " + eij + " = k_jᵀ W q_i"],
            "additive": [
                "Wa_q = Q @ W_a.T  # (n_q, d_a): " + wa,
                "Ua_k = K @ U_a.T  # (n_k, d_a): " + ua,
                "hidden = torch.tanh(Wa_q[:, None, :] + Ua_k[None, :, :])  # (n_q, n_k, d_a)",
                "scores = hidden @ w_a  # (n_q, n_k): " + eij + " = w_aᵀ tanh(W_a q_i + U_a k_j)",
            ],
            "cosine": [
                "Q_hat = Q / Q.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # " + qh,
                "K_hat = K / K.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # " + kh,
                "scores = Q_hat @ K_hat.T  # (n_q, n_k): " + eij + " = q_iᵀ k_j / (‖q_i‖ ‖k_j‖)",
            ],
        }[score]
    return {
        "dot": ["scores = K.T @ Q  # (n_k, n_q): " + eji + " = k_jᵀ q_i"],
        "scaled_dot": ["scores = K.T @ Q  # (n_k, n_q): " + eji + " = k_jᵀ q_i"],
        "general": ["scores = K.T @ W @ Q  # (n_k, n_q): " + eji + " = k_jᵀ W q_i"],
        "additive": [
            "Wa_q = W_a @ Q  # (d_a, n_q): " + wa,
            "Ua_k = U_a @ K  # (d_a, n_k): " + ua,
            "hidden = torch.tanh(Ua_k.T[:, None, :] + Wa_q.T[None, :, :])  # (n_k, n_q, d_a)",
            "scores = hidden @ w_a  # (n_k, n_q): " + eji + " = w_aᵀ tanh(W_a q_i + U_a k_j)",
        ],
        "cosine": [
            "Q_hat = Q / Q.norm(dim=0, keepdim=True).clamp_min(1e-12)  # " + qh,
            "K_hat = K / K.norm(dim=0, keepdim=True).clamp_min(1e-12)  # " + kh,
            "scores = K_hat.T @ Q_hat  # (n_k, n_q): " + eji + " = k_jᵀ q_i / (‖k_j‖ ‖q_i‖)",
        ],
    }[score]


def torch_snippet(args: Mapping[str, Any], lang: str = "en") -> str:
    """The same computation in plain PyTorch, without ``core``: projections, the scenario's score
    function, scale and temperature, the mask as −∞, softmax, output — only the code path the
    scenario needs, in its convention. Prints like :func:`core_snippet`. Raises ValueError like it."""
    s = _scenario(args)
    row = s.convention == "row"
    key_dim = "-1" if row else "0"
    needs_math = (s.scale is None and s.score == "scaled_dot") or (s.scale is not None and s.scale == 1 / math.sqrt(s.d_k))
    lines = ["# " + _t("nb.c.torch_head", lang)]
    lines += [f"# {line}" for line in _describe(s, lang)]
    lines += ["import json", *(["import math"] if needs_math else []), "", "import torch", "",
              "torch.set_printoptions(precision=4, sci_mode=False)", ""]
    lines += _data_lines(s, lang)
    lines.append("")

    step = 1
    xq, xkv = ("X", "X") if s.self_attention else ("X_q", "X_kv")
    if not row:
        lines.append(f"# {step}. " + _t("nb.c.transposed", lang))
        step += 1
        if s.qkv == "direct":
            lines += ["Q = Q.T  # (d_k, n_q)", "K = K.T  # (d_k, n_k)", "V = V.T  # (d_v, n_k)"]
        else:
            if s.self_attention:
                lines.append("X = X.T  # (d_model, n): " + _t("nb.c.one_column", lang))
            else:
                lines += ["X_q = X_q.T  # (d_model, n_q)", "X_kv = X_kv.T  # (d_model, n_k)"]
            if s.qkv == "projection":
                lines += ["W_Q = W_q.T  # W^Q (d_k, d_model)", "W_K = W_k.T  # W^K (d_k, d_model)",
                          "W_V = W_v.T  # W^V (d_v, d_model)"]
        if s.mask is not None:
            lines.append("mask = mask.T  # (n_k, n_q): " + _t("nb.c.mask_T", lang))
    if s.qkv != "direct":
        lines.append(f"# {step}. " + _t("nb.c.qkv", lang))
        step += 1
        if s.qkv == "identity":
            shapes = ("(n_q, d_k)", "(n_k, d_k)", "(n_k, d_v)") if row else ("(d_k, n_q)", "(d_k, n_k)", "(d_v, n_k)")
            lines += [f"Q = {xq}  # {shapes[0]}", f"K = {xkv}  # {shapes[1]}", f"V = {xkv}  # {shapes[2]}"]
        elif row:
            lines += [f"Q = {xq} @ W_q  # (n_q, d_model) @ (d_model, d_k) → (n_q, d_k)",
                      f"K = {xkv} @ W_k  # (n_k, d_model) @ (d_model, d_k) → (n_k, d_k)",
                      f"V = {xkv} @ W_v  # (n_k, d_model) @ (d_model, d_v) → (n_k, d_v)"]
        else:
            lines += [f"Q = W_Q @ {xq}  # (d_k, d_model) @ (d_model, n_q) → (d_k, n_q)",
                      f"K = W_K @ {xkv}  # (d_k, d_model) @ (d_model, n_k) → (d_k, n_k)",
                      f"V = W_V @ {xkv}  # (d_v, d_model) @ (d_model, n_k) → (d_v, n_k)"]
    lines.append(f"# {step}. " + _t("nb.c.scores", lang, score=s.score))
    step += 1
    lines += _score_lines(s.score, s.convention, lang)

    lines.append(f"# {step}. " + _t("nb.c.scale_step", lang))
    step += 1
    if needs_math:
        lines.append("d_k = K.shape[-1]  # " + _t("nb.c.k_shape", lang, shape="(n_k, d_k)") if row
                     else "d_k = K.shape[0]  # " + _t("nb.c.k_shape", lang, shape="(d_k, n_k)"))
        lines.append("scale = 1 / math.sqrt(d_k)")
    elif s.scale is None:
        lines.append("scale = 1.0  # " + _t("nb.c.no_scale", lang, score=s.score))
    else:
        lines.append(f"scale = {s.scale!r}")
    lines.append(f"T = {s.temperature!r}")
    w_shape = "(n_q, n_k)" if row else "(n_k, n_q)"
    lines.append(f"scaled = scores * (scale / T)  # {w_shape}")
    logits = "scaled"
    if s.mask is not None:
        lines.append(f"# {step}. " + _t("nb.c.mask_step", lang))
        step += 1
        lines.append(f'logits = scaled.masked_fill(~mask, float("-inf"))  # {w_shape}')
        logits = "logits"
    lines.append(f"# {step}. " + _t("nb.c.softmax_row" if row else "nb.c.softmax_column", lang))
    step += 1
    lines.append(f"weights = torch.softmax({logits}, dim={key_dim})  # {w_shape}")
    if s.mask is not None:
        lines.append("# " + _t("nb.c.nan", lang))
        lines.append("weights = weights.nan_to_num(0.0)")
    lines.append(f"# {step}. " + _t("nb.c.output_step", lang))
    if row:
        lines.append("output = weights @ V  # (n_q, n_k) @ (n_k, d_v) → (n_q, d_v)")
    else:
        lines.append("output = V @ weights  # (d_v, n_k) @ (n_k, n_q) → (d_v, n_q)")
    lines.append("")
    lines += _print_lines("weights", "output", s, lang)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The notebook
# ---------------------------------------------------------------------------

def default_formulas(args: Mapping[str, Any], lang: str = "en") -> list[str]:
    """Markdown with the scenario's formulas (LaTeX in $$…$$), used when the page gives none."""
    s = _scenario(args)
    return ["$$" + formulas.WHOLE[s.convention] + "$$\n\n$$" + formulas.SCORE_PAIR[s.score] + "$$\n\n"
            + _t("nb.default_formula.mask", lang)]


def _fenced(text: str) -> str:
    """A fenced code block longer than any run of backticks inside: shown literally (no HTML, no math)."""
    longest = max((len(run) for run in text.split("\n") for run in _backtick_runs(run)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


def _backtick_runs(line: str) -> list[str]:
    runs, cur = [], ""
    for ch in line:
        if ch == "`":
            cur += ch
        elif cur:
            runs.append(cur)
            cur = ""
    return runs + ([cur] if cur else [])


def _playground_kwargs(args: Mapping[str, Any]) -> dict:
    """The keyword arguments of ``core.lab.playground`` (no labels, on the CPU)."""
    return {k: v for k, v in args.items() if k in ARG_NAMES and not k.startswith("tokens_")}


def _step_cells(s: _Scenario, trace, var: str, lang: str, decimals: int) -> list[tuple[str, str]]:
    """(markdown, code) for every pipeline step: title, formula and shape as the page writes them,
    then the call that draws the step's map with the app's own components."""
    from .panels import Layout, pipeline_panels

    q = s.tokens_q or [f"q{i}" for i in range(s.n_q)]
    k = s.tokens_k or (q if s.self_attention else [f"k{j}" for j in range(s.n_k)])
    layout = Layout(list(q), list(k), s.convention, decimals, lang)
    out = []
    for i, p in enumerate(pipeline_panels(trace, layout, s.score), 1):
        md = f"### {html.escape(p.title, quote=False)}\n\n$${p.latex}$$\n\n{_t('nb.shape', lang)}: `{p.shape}`"
        code = (f"# {_t('nb.c.show', lang, i=i)}\n"
                f"show({var}, steps=[{p.step!r}], tokens=tokens_q, tokens_k=tokens_k, lang={lang!r}, decimals={decimals})")
        out.append((md, code))
    return out


def _run(cells: list, namespace: dict) -> dict:
    """The notebook's outputs made here, without a kernel, from the same code: every code cell is run
    in order in one namespace (its printed text becomes a stream output); a cell whose last line
    calls ``show`` gets that view's outputs (the static SVG, the widget's view) and the widget states
    are collected for the notebook's metadata. The code is this module's own (numbers as literals,
    learner text only in comments and ``repr`` strings)."""
    import contextlib
    import io

    import nbformat

    states: dict = {}
    for n, cell in enumerate((c for c in cells if c.cell_type == "code"), 1):
        src = cell.source
        body, _, last = src.rpartition("\n")
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            if last.startswith("show("):
                exec(compile(body, "<cell>", "exec"), namespace)  # noqa: S102
                view = eval(compile(last, "<cell>", "eval"), namespace)  # noqa: S307
            else:
                exec(compile(src, "<cell>", "exec"), namespace)  # noqa: S102
                view = None
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=buf.getvalue())] if buf.getvalue() else []
        if view is not None:
            shown, state = view.outputs()
            outputs += shown
            states |= state
        cell.outputs, cell.execution_count = outputs, n
    return states


def notebook(args: Mapping[str, Any], *, title: str, formulas_md: str | Sequence[str] | None = None, lang: str = "en",
             decimals: int = 3, outputs: bool = True):
    """A Jupyter notebook (nbformat v4 ``NotebookNode``) in ``lang`` throughout (prose and code comments):
    title, how to run it and the scenario (the mask described as the page describes it); the formulas
    (one markdown cell per string of ``formulas_md``; :func:`default_formulas` when None); the ``core``
    snippet; every pipeline step as a markdown cell (title, formula, shape) and a cell drawing its map
    with the app's own components (``attention_lab.show``); the plain-PyTorch snippet; a cell that
    checks they agree. ``outputs``: saved with its outputs, made here from the same code (see
    :func:`_run`), the maps as widget state and a static SVG. Raises ValueError like :func:`core_snippet`."""
    import nbformat

    import core

    s = _scenario(args)
    core_code, torch_code = core_snippet(args, lang), torch_snippet(args, lang)
    if formulas_md is None:
        formulas_md = default_formulas(args, lang)
    elif isinstance(formulas_md, str):
        formulas_md = [formulas_md]
    trace = core.lab.playground(**_playground_kwargs(args))
    var = "attn" if s.qkv == "direct" else "tr"
    v4 = nbformat.v4
    heading = html.escape(" ".join(str(title).split()), quote=False)
    random_note = f"\n\n{_t('nb.random', lang)}" if s.qkv == "projection" else ""
    cells = [
        v4.new_markdown_cell(f"# {heading}\n\n{_t('nb.intro', lang)}\n\n{_t('nb.where', lang)}\n\n"
                             f"**{_t('nb.scenario', lang)}**\n\n" + _fenced("\n".join(_describe(s, lang))) + random_note),
        *[v4.new_markdown_cell(f"## {_t('nb.formulas', lang)}\n\n{f}" if i == 0 else f) for i, f in enumerate(formulas_md)],
        v4.new_markdown_cell(_t("nb.core", lang)),
        v4.new_code_cell(core_code.rstrip("\n")),
        v4.new_markdown_cell(f"## {_t('nb.pipeline', lang)}\n\n$${formulas.WHOLE[s.convention]}$$" + random_note),
        v4.new_code_cell(f"from attention_lab import show  # {_t('nb.c.import_views', lang)}\n\n"
                         f"tokens_q = {s.tokens_q!r}\ntokens_k = {s.tokens_k!r}"),
    ]
    for md, code in _step_cells(s, trace, var, lang, decimals):
        cells += [v4.new_markdown_cell(md), v4.new_code_cell(code)]
    cells += [
        v4.new_markdown_cell(_t("nb.torch", lang)),
        v4.new_code_cell(torch_code.rstrip("\n")),
        v4.new_markdown_cell(_t("nb.check", lang)),
        v4.new_code_cell(
            f"# {_t('nb.c.check', lang)}\n"
            "diff_weights = (attn.weights - weights).abs().max().item()\n"
            "diff_output = (attn.output - output).abs().max().item()\n"
            'print(f"max |Δ weights| = {diff_weights:.2e}, max |Δ output| = {diff_output:.2e}")\n'
            "assert diff_weights < 1e-5 and diff_output < 1e-5 * max(1.0, output.abs().max().item())"),
    ]
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    if outputs:
        states = _run(nb.cells, {"__name__": "__main__"})
        if states:
            nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
                "version_major": 2, "version_minor": 0, "state": states}}
    nbformat.validate(nb)
    return nb


def notebook_bytes(args: Mapping[str, Any], *, title: str, formulas_md: str | Sequence[str] | None = None,
                   lang: str = "en", decimals: int = 3) -> bytes:
    """:func:`notebook` (with its outputs) as the bytes of an .ipynb file (UTF-8 JSON), for a download button."""
    import nbformat

    return nbformat.writes(notebook(args, title=title, formulas_md=formulas_md, lang=lang,
                                    decimals=decimals)).encode("utf-8")
