r"""The Playground's scenario as code to take away: a ``core`` snippet, a plain-PyTorch snippet, a notebook.

``args`` is the plain dict of keyword arguments the Playground passes to :func:`core.lab.playground`
(``X_q, X_kv, qkv, W_q, W_k, W_v, Q, K, V, score, params, scale, temperature, mask, convention``;
arrays as nested lists, numpy arrays or tensors, None where unused) plus ``tokens_q`` / ``tokens_k``
for the labels. ``device`` and ``dtype`` are accepted and ignored (the snippets run on the CPU).

* :func:`core_snippet` recomputes the scenario with ``core`` and prints the weights and the output;
* :func:`torch_snippet` does the same in plain PyTorch, only the steps the scenario needs;
* :func:`notebook` / :func:`notebook_bytes` put both in a Jupyter notebook that checks they agree.

Every snippet is standalone, embeds the numbers as literals that give back the page's float32
values exactly (the shortest decimal of each float32; float64 inputs keep all their digits), and
ends with two machine-readable lines::

    weights (JSON): [[...], ...]     the attention weights in the scenario's convention
    output (JSON): [[...], ...]      the output in the scenario's convention

Scenarios with more than :data:`MAX_TOKENS` queries or keys, or a matrix side above
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

from .attention import CONVENTIONS, SCORE_FUNCTIONS
from .lab import QKV_MODES

MAX_TOKENS = 64
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
    if max(n_q, n_k) > MAX_TOKENS:
        return (f"too large to copy as code: {n_q} queries and {n_k} keys (the limit is {MAX_TOKENS} tokens); "
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


def _mask_literal(m: np.ndarray, labels: Sequence[str] | None) -> list[str]:
    lines = ["mask = torch.tensor(["]
    for i, row in enumerate(m):
        text = "    [" + ", ".join("1" if b else "0" for b in row) + "],"
        if labels is not None:
            text += f"  # query {_comment_token(labels[i])}"
        lines.append(text)
    lines.append(f"], dtype=torch.bool)  # (n_q, n_k) = {m.shape}: 1 = query i may attend to key j, 0 = blocked")
    return lines


_SHAPE_NOTES = {
    "X": "(n, d_model)", "X_q": "(n_q, d_model)", "X_kv": "(n_k, d_model)", "W_q": "(d_model, d_k)",
    "W_k": "(d_model, d_k)", "W_v": "(d_model, d_v)", "Q": "(n_q, d_k)", "K": "(n_k, d_k)", "V": "(n_k, d_v)",
    "W": "(d_k, d_k)", "W_a": "(d_a, d_k)", "U_a": "(d_a, d_k)", "w_a": "(d_a,)",
}


def _data_lines(s: _Scenario) -> list[str]:
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
        out += _mask_literal(s.mask, s.tokens_q)
    return out


def _describe(s: _Scenario) -> list[str]:
    """The scenario in a few plain-text lines (used as comments and in the notebook)."""
    kind = (f"self-attention over {s.n_q} tokens" if s.self_attention
            else f"cross-attention: {s.n_q} queries, {s.n_k} keys/values")
    qkv = {"identity": "Q = X_q, K = V = X_kv (no projection)" if not s.self_attention else "Q = K = V = X (no projection)",
           "projection": "Q = X_q W_q, K = X_kv W_k, V = X_kv W_v" if not s.self_attention
           else "Q = X W_q, K = X W_k, V = X W_v",
           "direct": "Q, K, V given directly"}[s.qkv]
    if s.scale is None:
        scale = "default (1/√d_k)" if s.score == "scaled_dot" else "default (1)"
    elif s.scale == 1 / math.sqrt(s.d_k):
        scale = f"1/√d_k = {s.scale!r}"
    else:
        scale = repr(s.scale)
    if s.mask is None:
        mask = "none"
    else:
        fully = int((~s.mask.any(axis=1)).sum())
        mask = f"blocked (query, key) pairs: {int((~s.mask).sum())}" + (f"; queries that see no key: {fully}" if fully else "")
    lines = [
        (f"tokens: {s.tokens_q!r}" if s.self_attention else f"tokens (queries): {s.tokens_q!r}")
        if s.tokens_q is not None else f"queries: {s.n_q}",
        *([] if s.self_attention else
          [f"tokens (keys/values): {s.tokens_k!r}" if s.tokens_k is not None else f"keys/values: {s.n_k}"]),
        f"{kind}; {qkv}",
        f"score: {s.score}; scale: {scale}; temperature T = {s.temperature!r}; mask: {mask}",
        f"convention: {s.convention} ({'vectors are rows' if s.convention == 'row' else 'vectors are columns'}); "
        + (f"d_q = {s.d_q}, " if s.d_q != s.d_k else "") + f"d_k = {s.d_k}, d_v = {s.d_v}; {'float64' if s.f64 else 'float32'}",
    ]
    return lines


def _print_lines(weights: str, output: str, s: _Scenario) -> list[str]:
    w_shape, o_shape = ("(n_q, n_k)", "(n_q, d_v)") if s.convention == "row" else ("(n_k, n_q)", "(d_v, n_q)")
    reading = ("row i = query i's weights over the keys" if s.convention == "row"
               else "column j = query j's weights over the keys")
    return [
        f'print("weights α {w_shape}, {reading}:")',
        f"print({weights})",
        f'print("output {o_shape}:")',
        f"print({output})",
        "# the same numbers, machine-readable",
        f'print("{WEIGHTS_PREFIX}" + json.dumps({weights}.tolist()))',
        f'print("{OUTPUT_PREFIX}" + json.dumps({output}.tolist()))',
    ]


# ---------------------------------------------------------------------------
# The two snippets
# ---------------------------------------------------------------------------

def core_snippet(args: Mapping[str, Any]) -> str:
    """A short standalone Python snippet that recomputes the scenario with ``core`` and prints
    the attention weights and the output (readable, then as JSON lines). Raises ValueError when
    the scenario is malformed or too large (:func:`size_problem`)."""
    s = _scenario(args)
    lines = ["# Attention Lab: the Playground's scenario, recomputed with the `core` package",
             "# (run it from the Attention Lab folder so that `import core` works)"]
    lines += [f"# {line}" for line in _describe(s)]
    lines += ["import json", "", "import torch", "", "import core", "", "torch.set_printoptions(precision=4, sci_mode=False)", ""]
    lines += _data_lines(s)
    if s.params:
        lines.append(f"params = {{{', '.join(f'{k!r}: {k}' for k in s.params)}}}")
    lines.append("")

    opts = [f"score={s.score!r}"]
    if s.params:
        opts.append("params=params")
    if s.scale is None:
        scale_note = "None = the score's own scale (1/√d_k for scaled_dot, else 1)"
    else:
        scale_note = ("1/√d_k" if s.scale == 1 / math.sqrt(s.d_k) else "1: no scaling" if s.scale == 1.0
                      else "the chosen scale")
    opts += [f"scale={s.scale!r}", f"temperature={s.temperature!r}"]
    if s.mask is not None:
        opts.append("mask=mask" if s.qkv != "direct" or s.convention == "row" else "mask=mask.T")
    if s.qkv == "direct":
        if s.convention == "row":
            lines.append("# attention(Q, K, V): every intermediate is in the returned trace")
            call = ["attn = core.attention(", "    Q, K, V,"]
        else:
            lines.append("# column convention: vectors are columns, so Q, K, V and the mask go in transposed")
            call = ["attn = core.attention(", "    Q.T, K.T, V.T,"]
            opts.append("convention='column'")
    else:
        xq, xkv = ("X", "X") if s.self_attention else ("X_q", "X_kv")
        proj = " W_q=W_q, W_k=W_k, W_v=W_v," if s.qkv == "projection" else ""
        lines.append("# the Playground's pipeline; the mask is given in row convention (n_q, n_k) in both notations")
        call = ["tr = core.lab.playground(", f"    {xq}, {xkv}, qkv={s.qkv!r},{proj}"]
        opts.append(f"convention={s.convention!r}")
    lines.append(f"# scale: {scale_note}")
    lines += call + ["    " + ", ".join(opts) + ",", ")"]
    if s.qkv != "direct":
        lines.append("attn = tr.attn  # scores, scaled, logits, weights, output, ...")
    lines.append("")
    lines += _print_lines("attn.weights", "attn.output", s)
    return "\n".join(lines) + "\n"


def _score_lines(score: str, convention: str) -> list[str]:
    """f(Q, K) for one score function, in one convention."""
    if convention == "row":
        return {
            "dot": ["scores = Q @ K.T  # (n_q, n_k): entry (i, j) = q_iᵀ k_j"],
            "scaled_dot": ["scores = Q @ K.T  # (n_q, n_k): entry (i, j) = q_iᵀ k_j"],
            "general": ["scores = Q @ W.T @ K.T  # (n_q, n_k): entry (i, j) = k_jᵀ W q_i"],
            "additive": [
                "Wa_q = Q @ W_a.T  # (n_q, d_a): W_a q_i for every query",
                "Ua_k = K @ U_a.T  # (n_k, d_a): U_a k_j for every key",
                "hidden = torch.tanh(Wa_q[:, None, :] + Ua_k[None, :, :])  # (n_q, n_k, d_a)",
                "scores = hidden @ w_a  # (n_q, n_k): entry (i, j) = w_aᵀ tanh(W_a q_i + U_a k_j)",
            ],
            "cosine": [
                "Q_hat = Q / Q.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # every query scaled to length 1",
                "K_hat = K / K.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # every key scaled to length 1",
                "scores = Q_hat @ K_hat.T  # (n_q, n_k): entry (i, j) = q_iᵀ k_j / (‖q_i‖ ‖k_j‖)",
            ],
        }[score]
    return {
        "dot": ["scores = K.T @ Q  # (n_k, n_q): entry (j, i) = k_jᵀ q_i"],
        "scaled_dot": ["scores = K.T @ Q  # (n_k, n_q): entry (j, i) = k_jᵀ q_i"],
        "general": ["scores = K.T @ W @ Q  # (n_k, n_q): entry (j, i) = k_jᵀ W q_i"],
        "additive": [
            "Wa_q = W_a @ Q  # (d_a, n_q): W_a q_i for every query",
            "Ua_k = U_a @ K  # (d_a, n_k): U_a k_j for every key",
            "hidden = torch.tanh(Ua_k.T[:, None, :] + Wa_q.T[None, :, :])  # (n_k, n_q, d_a)",
            "scores = hidden @ w_a  # (n_k, n_q): entry (j, i) = w_aᵀ tanh(W_a q_i + U_a k_j)",
        ],
        "cosine": [
            "Q_hat = Q / Q.norm(dim=0, keepdim=True).clamp_min(1e-12)  # every query (column) scaled to length 1",
            "K_hat = K / K.norm(dim=0, keepdim=True).clamp_min(1e-12)  # every key (column) scaled to length 1",
            "scores = K_hat.T @ Q_hat  # (n_k, n_q): entry (j, i) = k_jᵀ q_i / (‖k_j‖ ‖q_i‖)",
        ],
    }[score]


def torch_snippet(args: Mapping[str, Any]) -> str:
    """The same computation in plain PyTorch, without ``core``: projections, the scenario's score
    function, scale and temperature, the mask as −∞, softmax, output — only the code path the
    scenario needs, in its convention. Prints like :func:`core_snippet`. Raises ValueError like it."""
    s = _scenario(args)
    row = s.convention == "row"
    key_dim = "-1" if row else "0"
    needs_math = (s.scale is None and s.score == "scaled_dot") or (s.scale is not None and s.scale == 1 / math.sqrt(s.d_k))
    lines = ["# Attention Lab: the Playground's scenario in plain PyTorch (no `core` needed)"]
    lines += [f"# {line}" for line in _describe(s)]
    lines += ["import json", *(["import math"] if needs_math else []), "", "import torch", "",
              "torch.set_printoptions(precision=4, sci_mode=False)", ""]
    lines += _data_lines(s)
    lines.append("")

    step = 1
    xq, xkv = ("X", "X") if s.self_attention else ("X_q", "X_kv")
    if not row:
        lines.append(f"# {step}. column convention: every vector is a column, so every matrix is transposed")
        step += 1
        if s.qkv == "direct":
            lines += ["Q = Q.T  # (d_k, n_q)", "K = K.T  # (d_k, n_k)", "V = V.T  # (d_v, n_k)"]
        else:
            if s.self_attention:
                lines.append("X = X.T  # (d_model, n): one column per token")
            else:
                lines += ["X_q = X_q.T  # (d_model, n_q)", "X_kv = X_kv.T  # (d_model, n_k)"]
            if s.qkv == "projection":
                lines += ["W_Q = W_q.T  # W^Q (d_k, d_model)", "W_K = W_k.T  # W^K (d_k, d_model)",
                          "W_V = W_v.T  # W^V (d_v, d_model)"]
        if s.mask is not None:
            lines.append("mask = mask.T  # (n_k, n_q): entry (j, i) = may query i attend to key j")
    if s.qkv != "direct":
        lines.append(f"# {step}. queries, keys and values")
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
    lines.append(f"# {step}. scores f(Q, K): {s.score}")
    step += 1
    lines += _score_lines(s.score, s.convention)

    lines.append(f"# {step}. scale s and temperature T: logits = scores · s / T")
    step += 1
    if needs_math:
        lines.append("d_k = K.shape[-1]  # K is (n_k, d_k)" if row else "d_k = K.shape[0]  # K is (d_k, n_k)")
        lines.append("scale = 1 / math.sqrt(d_k)")
    elif s.scale is None:
        lines.append(f"scale = 1.0  # {s.score} has no scale of its own")
    else:
        lines.append(f"scale = {s.scale!r}")
    lines.append(f"T = {s.temperature!r}")
    w_shape = "(n_q, n_k)" if row else "(n_k, n_q)"
    lines.append(f"scaled = scores * (scale / T)  # {w_shape}")
    logits = "scaled"
    if s.mask is not None:
        lines.append(f"# {step}. mask: −∞ where a query may not attend, so its weight becomes exactly 0")
        step += 1
        lines.append(f'logits = scaled.masked_fill(~mask, float("-inf"))  # {w_shape}')
        logits = "logits"
    lines.append(f"# {step}. softmax over the keys: " + ("each row sums to 1" if row else "each column sums to 1"))
    step += 1
    lines.append(f"weights = torch.softmax({logits}, dim={key_dim})  # {w_shape}")
    if s.mask is not None:
        lines.append("# a query that may see no key: softmax of only −∞ is NaN; use 0 (as core and torch's SDPA do)")
        lines.append("weights = weights.nan_to_num(0.0)")
    lines.append(f"# {step}. output: every query's output is Σ_j α_j v_j, a weighted mix of the values")
    if row:
        lines.append("output = weights @ V  # (n_q, n_k) @ (n_k, d_v) → (n_q, d_v)")
    else:
        lines.append("output = V @ weights  # (d_v, n_k) @ (n_k, n_q) → (d_v, n_q)")
    lines.append("")
    lines += _print_lines("weights", "output", s)
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The notebook
# ---------------------------------------------------------------------------

_TEXT = {
    "en": {
        "intro": "The Attention Lab Playground's scenario. The first code cell recomputes it with the lab's `core` "
                 "package (run this notebook from the Attention Lab folder so that `import core` works); the second "
                 "does every step in plain PyTorch; the last checks that both agree.",
        "scenario": "Scenario",
        "formulas": "Formulas",
        "core": "With `core`: one call, every intermediate (scores, scaled, logits, weights, output) in the trace.",
        "torch": "The same computation in plain PyTorch, step by step, without `core`.",
        "check": "Both ways give the same numbers.",
    },
    "ko": {
        "intro": "Attention Lab 플레이그라운드의 시나리오입니다. 첫 코드 셀은 랩의 `core` 패키지로 다시 계산합니다 "
                 "(`import core`가 되도록 Attention Lab 폴더에서 실행하세요). 두 번째 셀은 모든 단계를 순수 PyTorch로 "
                 "계산하고, 마지막 셀은 두 결과가 같은지 확인합니다.",
        "scenario": "시나리오",
        "formulas": "수식",
        "core": "`core` 사용: 한 번의 호출로 모든 중간값(점수, 스케일, 로짓, 가중치, 출력)이 trace에 담깁니다.",
        "torch": "같은 계산을 `core` 없이 순수 PyTorch로 한 단계씩.",
        "check": "두 방법의 숫자가 같습니다.",
    },
}

_DEFAULT_SCORE = {
    "dot": r"f(q, k) = q^\top k",
    "scaled_dot": r"f(q, k) = \frac{q^\top k}{\sqrt{d_k}}",
    "general": r"f(q, k) = k^\top W q",
    "additive": r"f(q, k) = w_a^\top \tanh(W_a q + U_a k)",
    "cosine": r"f(q, k) = \frac{q^\top k}{\lVert q \rVert\,\lVert k \rVert}",
}
_DEFAULT_WHOLE = {
    "row": r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}_{\text{row}}\!\left(\frac{f(Q, K)\cdot s}{T} + M\right) V",
    "column": r"\mathrm{Attention}(Q, K, V) = V\,\mathrm{Softmax}_{\text{column}}\!\left(\frac{f(Q, K)\cdot s}{T} + M\right)",
}


def default_formulas(args: Mapping[str, Any]) -> list[str]:
    """Markdown with the scenario's formulas (LaTeX in $$…$$), used when the page gives none."""
    s = _scenario(args)
    return ["$$" + _DEFAULT_WHOLE[s.convention] + "$$\n\n$$" + _DEFAULT_SCORE[s.score] + "$$\n\n"
            r"$M_{ij} = 0$ where query $i$ may attend to key $j$, $-\infty$ where it may not."]


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


def notebook(args: Mapping[str, Any], *, title: str, formulas_md: str | Sequence[str] | None = None, lang: str = "en"):
    """A Jupyter notebook (nbformat v4 ``NotebookNode``): title and scenario, the formulas (one
    markdown cell per string of ``formulas_md``; :func:`default_formulas` when None), the ``core``
    snippet, the plain-PyTorch snippet, and a cell that checks they agree (max abs difference).
    ``lang`` is "en" or "ko" for the notebook's own prose. Raises ValueError like :func:`core_snippet`."""
    import nbformat

    text = _TEXT.get(lang, _TEXT["en"])
    s = _scenario(args)
    core_code, torch_code = core_snippet(args), torch_snippet(args)
    if formulas_md is None:
        formulas_md = default_formulas(args)
    elif isinstance(formulas_md, str):
        formulas_md = [formulas_md]
    heading = html.escape(" ".join(str(title).split()), quote=False)
    v4 = nbformat.v4
    cells = [
        v4.new_markdown_cell(f"# {heading}\n\n{text['intro']}\n\n**{text['scenario']}**\n\n" + _fenced("\n".join(_describe(s)))),
        *[v4.new_markdown_cell(f"## {text['formulas']}\n\n{f}" if i == 0 else f) for i, f in enumerate(formulas_md)],
        v4.new_markdown_cell(text["core"]),
        v4.new_code_cell(core_code.rstrip("\n")),
        v4.new_markdown_cell(text["torch"]),
        v4.new_code_cell(torch_code.rstrip("\n")),
        v4.new_markdown_cell(text["check"]),
        v4.new_code_cell(
            "# max |core − plain PyTorch| over the weights and the output\n"
            "diff_weights = (attn.weights - weights).abs().max().item()\n"
            "diff_output = (attn.output - output).abs().max().item()\n"
            'print(f"max |Δ weights| = {diff_weights:.2e}, max |Δ output| = {diff_output:.2e}")\n'
            "assert diff_weights < 1e-5 and diff_output < 1e-5 * max(1.0, output.abs().max().item())"),
    ]
    nb = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    })
    nbformat.validate(nb)
    return nb


def notebook_bytes(args: Mapping[str, Any], *, title: str, formulas_md: str | Sequence[str] | None = None,
                   lang: str = "en") -> bytes:
    """:func:`notebook` as the bytes of an .ipynb file (UTF-8 JSON), for a download button."""
    import nbformat

    return nbformat.writes(notebook(args, title=title, formulas_md=formulas_md, lang=lang)).encode("utf-8")
