r"""The one attention function: every variant, model and cache in core computes its softmax here.

    scores  = f(Q, K)                                     (..., n_q, n_k)   dot, scaled dot, general, additive, cosine
    scaled  = scores · scale / T
    biased  = scaled + bias                               ALiBi, a relative-position table
    capped  = c · tanh(biased / c)                        soft-capping (Gemma 2), when ``softcap`` = c
    logits  = capped, −∞ where the mask forbids          causal, window, chunk, top-k, padding: one boolean mask
    [α | α_sink] = softmax([logits | z])                  a learned sink logit z per row (gpt-oss), when ``sinks``
    output  = α V

Multi-head and grouped-query attention (:func:`core.mechanism.multihead.grouped_query_attention`), the KV and
paged caches, QK-norm (before it), the output gate (after it), DIFF (twice), MLA (explicit and absorbed), sparse
top-k and the decoder (alone and in a batch) all call :func:`attention`.

Row convention (ML code, CURRICULUM C2) — vectors are rows::

    Q (..., n_q, d_k)   K (..., n_k, d_k)   V (..., n_k, d_v)
    Attention(Q, K, V) = softmax(f(Q, K) · scale / T) V          softmax over each row

Column convention (the math source 000, C1) — vectors are columns::

    Q (d_k, n_q)   K (d_k, n_k)   V (d_v, n_k)
    Attention(Q, K, V) = V · Softmax(f(Q, K) · scale / T)        Softmax over each column

On the same numbers every matrix of the column trace is exactly the transpose of its
row-convention twin: the column convention is computed by transposing the inputs,
running the row computation and transposing every result back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch

from core.checks import TensorLike, as_bool_mask, as_tensor, as_tensors, positive_number, shape_str

SCORE_FUNCTIONS = ("dot", "scaled_dot", "general", "additive", "cosine")
CONVENTIONS = ("row", "column")
_COSINE_EPS = 1e-12


@dataclass(frozen=True, eq=False)
class AttentionTrace:
    """Every intermediate of one attention call, in the trace's own ``convention``.

    Shapes below are for ``convention="row"``; for ``"column"`` every matrix is the
    transpose of its row twin (scores etc. ``(..., n_k, n_q)``, output ``(..., d_v, n_q)``).

    q, k, v:       the inputs as tensors            (..., n_q, d_k) (..., n_k, d_k) (..., n_k, d_v)
    scores:        raw compatibility f(Q, K)        (..., n_q, n_k)
    scaled:        scores · scale / temperature     (..., n_q, n_k)
    bias:          the additive bias (ALiBi, a relative-position table …) broadcast to (..., n_q, n_k), or None
    logits:        ``scaled`` (+ ``bias``, soft-capped) with −inf where the mask forbids
    weights:       softmax of logits over keys      (..., n_q, n_k), sums to 1 per query (1 − sink_weight with sinks)
    capped:        c·tanh(biased / c) before the mask when ``softcap`` = c, else None
    sink_weight:   the share of each row the sink logit took (..., n_q), or None without sinks
    output:        weights · V                      (..., n_q, d_v)
    mask:          boolean, True = may attend, broadcast to the weights' shape (or None)
    fully_masked:  True for a query whose keys are all masked (weights and output 0) (..., n_q)
    """

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores: torch.Tensor
    scaled: torch.Tensor
    logits: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    mask: torch.Tensor | None
    fully_masked: torch.Tensor
    score: str
    scale: float
    temperature: float
    convention: str
    params: Mapping[str, torch.Tensor]
    bias: torch.Tensor | None = None
    softcap: float | None = None
    capped: torch.Tensor | None = None
    sink_weight: torch.Tensor | None = None

    @property
    def biased(self) -> torch.Tensor:
        """``scaled + bias``: the logits before the mask (``scaled`` itself when there is no bias)."""
        return self.scaled if self.bias is None else self.scaled + self.bias

    @property
    def query_axis(self) -> int:
        """Axis of ``weights`` that indexes queries (-2 in row, -1 in column convention)."""
        return -2 if self.convention == "row" else -1

    @property
    def key_axis(self) -> int:
        """Axis of ``weights`` that indexes keys; weights sum to 1 along it."""
        return -1 if self.convention == "row" else -2

    @property
    def weight_sums(self) -> torch.Tensor:
        """Σ of the weights of each query over its keys (..., n_q): 1, or 0 for a fully masked query."""
        return self.weights.sum(dim=self.key_axis)

    @property
    def top_keys(self) -> torch.Tensor:
        """Index of the key each query attends to most (..., n_q); −1 for a fully masked query (C39)."""
        top = self.weights.argmax(dim=self.key_axis)
        return top.masked_fill(self.fully_masked, -1)

    def contributions(self, query: int) -> torch.Tensor:
        """α_{query, i} · v_i for every key i, (..., n_k, d_v) whatever the convention (C4).

        Summed over keys it gives the output vector of that query: a convex combination of values.
        """
        row = self if self.convention == "row" else self.transposed()
        n_q = row.weights.shape[-2]
        if not -n_q <= query < n_q:
            raise ValueError(f"query index {query} is out of range for {n_q} queries")
        alpha = row.weights[..., query, :]  # (..., n_k)
        return alpha.unsqueeze(-1) * row.v  # (..., n_k, d_v)

    def transposed(self) -> AttentionTrace:
        """The same trace in the other convention (every matrix transposed)."""
        t = _swap
        return AttentionTrace(
            q=t(self.q), k=t(self.k), v=t(self.v), scores=t(self.scores), scaled=t(self.scaled),
            logits=t(self.logits), weights=t(self.weights), output=t(self.output),
            mask=None if self.mask is None else t(self.mask), fully_masked=self.fully_masked,
            score=self.score, scale=self.scale, temperature=self.temperature,
            convention="column" if self.convention == "row" else "row", params=self.params,
            bias=None if self.bias is None else t(self.bias), softcap=self.softcap,
            capped=None if self.capped is None else t(self.capped), sink_weight=self.sink_weight,
        )


def _swap(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(-1, -2)


def default_scale(score: str, d_k: int) -> float:
    """1/√d_k for ``scaled_dot`` (C6, C10); 1 for every other score function."""
    return 1.0 / math.sqrt(d_k) if score == "scaled_dot" else 1.0


# ---------------------------------------------------------------------------
# Score functions, row convention: f(Q, K)[..., i, j] = score(q_i, k_j)
# ---------------------------------------------------------------------------

def _check_param(params: Mapping[str, torch.Tensor], name: str, shape: tuple[int, ...], score: str):
    if name not in params:
        raise ValueError(f"score '{score}' needs params['{name}'] of shape {shape_str(shape)}")
    p = params[name]
    if tuple(p.shape) != shape:
        raise ValueError(
            f"params['{name}'] has shape {shape_str(p.shape)} but score '{score}' "
            f"needs {shape_str(shape)}"
        )
    return p


def _scores(score: str, q: torch.Tensor, k: torch.Tensor, params: Mapping[str, torch.Tensor]):
    d_q, d_k = q.shape[-1], k.shape[-1]
    if score in ("dot", "scaled_dot"):
        # score(q, k) = qᵀk  →  f = Q Kᵀ
        return q @ k.transpose(-1, -2)  # (..., n_q, n_k)
    if score == "cosine":
        # score(q, k) = qᵀk / (‖q‖ ‖k‖); a zero vector scores 0 against everything
        q_hat = q / q.norm(dim=-1, keepdim=True).clamp_min(_COSINE_EPS)
        k_hat = k / k.norm(dim=-1, keepdim=True).clamp_min(_COSINE_EPS)
        return q_hat @ k_hat.transpose(-1, -2)  # (..., n_q, n_k)
    if score == "general":
        # score(q, k) = kᵀ W q  →  f = Q Wᵀ Kᵀ
        W = _check_param(params, "W", (d_k, d_q), score)
        return (q @ W.transpose(-1, -2)) @ k.transpose(-1, -2)  # (..., n_q, n_k)
    if score == "additive":
        # score(q, k) = w_aᵀ tanh(W_a q + U_a k)
        if "W_a" not in params:
            raise ValueError(f"score 'additive' needs params['W_a'] of shape (d_a, {d_q})")
        if params["W_a"].dim() != 2:
            raise ValueError(
                f"params['W_a'] has shape {shape_str(params['W_a'].shape)} but score 'additive' "
                f"needs a matrix (d_a, {d_q})"
            )
        d_a = params["W_a"].shape[0]
        W_a = _check_param(params, "W_a", (d_a, d_q), score)
        U_a = _check_param(params, "U_a", (d_a, d_k), score)
        w_a = _check_param(params, "w_a", (d_a,), score)
        Wq = q @ W_a.T  # (..., n_q, d_a)
        Uk = k @ U_a.T  # (..., n_k, d_a)
        hidden = torch.tanh(Wq.unsqueeze(-2) + Uk.unsqueeze(-3))  # (..., n_q, n_k, d_a)
        return hidden @ w_a  # (..., n_q, n_k)
    raise ValueError(f"unknown score '{score}'; choose one of {', '.join(SCORE_FUNCTIONS)}")


def _validate_shapes(score: str, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
    """Checks on row-convention q, k, v (already at least 2-D)."""
    if q.shape[-1] != k.shape[-1] and score not in ("additive", "general"):
        raise ValueError(
            f"K has d_k={k.shape[-1]} but Q has d_k={q.shape[-1]} "
            f"(Q {shape_str(q.shape)}, K {shape_str(k.shape)}); score '{score}' needs them equal"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"K has n_k={k.shape[-2]} keys but V has {v.shape[-2]} values "
            f"(K {shape_str(k.shape)}, V {shape_str(v.shape)}); each key needs one value"
        )
    if q.shape[-2] == 0 or k.shape[-2] == 0 or q.shape[-1] == 0:
        raise ValueError(
            f"empty input: Q {shape_str(q.shape)}, K {shape_str(k.shape)}, V {shape_str(v.shape)}"
        )
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"batch dimensions do not broadcast: Q {shape_str(q.shape)}, K {shape_str(k.shape)}, "
            f"V {shape_str(v.shape)}"
        ) from None


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor | None, dim: int = -1):
    """Softmax over ``dim`` where ``mask`` False entries get weight exactly 0.

    A slice whose entries are all masked gets all-zero weights (never NaN).
    Returns ``(weights, fully_masked)``; ``fully_masked`` has ``dim`` removed.
    """
    if mask is None:
        fully = torch.zeros_like(logits.select(dim, 0), dtype=torch.bool)
        return torch.softmax(logits, dim=dim), fully
    fully = ~mask.any(dim=dim)  # (..., n_q)
    safe = logits.masked_fill(fully.unsqueeze(dim), 0.0)  # avoid softmax of all −inf
    weights = torch.softmax(safe, dim=dim).masked_fill(~mask, 0.0)
    return weights, fully


def attention(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    *,
    score: str = "scaled_dot",
    mask: TensorLike | None = None,
    scale: float | None = None,
    temperature: float = 1.0,
    params: Mapping[str, TensorLike] | None = None,
    convention: str = "row",
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    bias: TensorLike | None = None,
    softcap: float | None = None,
    sinks: TensorLike | None = None,
    check_finite: bool = True,
) -> AttentionTrace:
    r"""Attention of queries ``q`` over keys ``k`` and values ``v``; returns an :class:`AttentionTrace`.

    Shapes, row convention: q ``(..., n_q, d_k)``, k ``(..., n_k, d_k)``, v ``(..., n_k, d_v)``;
    weights ``(..., n_q, n_k)``, output ``(..., n_q, d_v)``. Column convention: q ``(d_k, n_q)``,
    k ``(d_k, n_k)``, v ``(d_v, n_k)`` (leading batch dims allowed); weights ``(n_k, n_q)``,
    output ``(d_v, n_q)``.

    score: ``dot`` qᵀk, ``scaled_dot`` qᵀk/√d_k, ``general`` kᵀWq (``params={"W": (d_k, d_q)}``),
    ``additive`` w_aᵀ tanh(W_a q + U_a k) (``params`` W_a ``(d_a, d_q)``, U_a ``(d_a, d_k)``,
    w_a ``(d_a,)``), ``cosine`` qᵀk/(‖q‖‖k‖).
    scale: overrides the default scale (1/√d_k for ``scaled_dot``, else 1).
    mask: boolean, True = may attend, broadcastable to the weights' shape in ``convention``.
    bias: an additive bias on the scaled scores, applied before the mask — logits = f(Q, K)·scale/T + bias,
    then −∞ where masked. Row: (n_q, n_k) or broadcastable, e.g. (H, n_q, n_k) per head (ALiBi,
    :func:`core.positional.alibi_bias`, or a learned relative-position table); column: its transpose.
    Must be finite (forbid with ``mask``).
    softcap: c > 0 caps the logits before the mask, c·tanh(logits / c) (Gemma 2), or None.
    sinks: one learned logit per query row, broadcastable to (..., n_q) — e.g. (H, 1) for one per head
    (gpt-oss): appended to every row as an extra key before the softmax and dropped after it, so a row's weights sum
    to 1 − its sink's share (a head can attend to "nothing"). Row convention only.
    check_finite: False skips the NaN/∞ scans of the inputs and of the scaled scores (shapes are
    still checked) — for a caller whose tensors come from a model's own matmuls, e.g. the decoder's
    30 blocks per token, where the scans cost more than the attention itself.

    Raises ValueError (naming the shapes) on any malformed input.
    """
    if score not in SCORE_FUNCTIONS:
        raise ValueError(f"unknown score '{score}'; choose one of {', '.join(SCORE_FUNCTIONS)}")
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown convention '{convention}'; choose 'row' or 'column'")
    named: dict[str, Any] = {"Q": q, "K": k, "V": v}
    for pname, p in (params or {}).items():
        named[f"params['{pname}']"] = p
    t = as_tensors(named, device=device, dtype=dtype, finite=check_finite)
    q_t, k_t, v_t = t.pop("Q"), t.pop("K"), t.pop("V")
    P = {name[len("params['"):-2]: val for name, val in t.items()}

    for name, x in (("Q", q_t), ("K", k_t), ("V", v_t)):
        if x.dim() < 2:
            want = "(d, n)" if convention == "column" else "(..., n, d)"
            raise ValueError(f"{name} must be a matrix {want} but has shape {shape_str(x.shape)}")
    if convention == "column":
        # (d_k, n_q) → (n_q, d_k): compute in rows, transpose every result back at the end
        q_r, k_r, v_r = _swap(q_t), _swap(k_t), _swap(v_t)
    else:
        q_r, k_r, v_r = q_t, k_t, v_t
    _validate_shapes(score, q_r, k_r, v_r)

    d_k = k_r.shape[-1]
    scale_f = default_scale(score, d_k) if scale is None else float(scale)
    temp_f = float(temperature)
    if not math.isfinite(scale_f):
        raise ValueError(f"scale must be a finite number, got {scale}")
    if not (math.isfinite(temp_f) and temp_f > 0):
        raise ValueError(f"temperature must be a positive finite number, got {temperature}")

    # f(Q, K): raw compatibility of every query with every key
    scores = _scores(score, q_r, k_r, P)  # (..., n_q, n_k)
    # scaled logits: f(Q, K) · scale / T
    scaled = scores * (scale_f / temp_f)  # (..., n_q, n_k)
    if check_finite and not bool(torch.isfinite(scaled).all()):
        raise ValueError(
            f"scores overflow {q_r.dtype}: the values of Q {shape_str(q_t.shape)} and "
            f"K {shape_str(k_t.shape)} are too large for this precision"
        )

    bias_r = _row_bias(bias, scaled, convention)  # (..., n_q, n_k) or None
    biased = scaled if bias_r is None else scaled + bias_r
    cap = None if softcap is None else positive_number("softcap", softcap)
    capped = None if cap is None else cap * torch.tanh(biased / cap)  # (..., n_q, n_k), in (−c, c)

    mask_r = None
    if mask is not None:
        m = as_bool_mask(mask, device=scaled.device)
        if convention == "column" and m.dim() >= 2:
            m = _swap(m)  # (..., n_k, n_q) → (..., n_q, n_k)
        elif convention == "column" and m.dim() == 1:
            raise ValueError(
                f"a 1-D mask {shape_str(m.shape)} is ambiguous in column convention; "
                f"give a (n_k, n_q) = {shape_str(_swap(scaled).shape[-2:])} mask"
            )
        try:
            full = torch.broadcast_shapes(m.shape, scaled.shape)
        except RuntimeError:
            full = None
        if full != scaled.shape:
            want = scaled.shape if convention == "row" else _swap(scaled).shape
            got = m.shape if convention == "row" else _swap(m).shape if m.dim() >= 2 else m.shape
            raise ValueError(
                f"mask of shape {shape_str(got)} does not broadcast to the weights' "
                f"shape {shape_str(want)}"
            )
        mask_r = m.expand(scaled.shape)  # (..., n_q, n_k)

    # masking: logits = scaled where allowed, −inf where forbidden
    pre_mask = biased if capped is None else capped
    logits = pre_mask if mask_r is None else pre_mask.masked_fill(~mask_r, float("-inf"))
    # α = softmax over keys (a fully masked query gets zeros, never NaN)
    if sinks is None:
        weights, fully = masked_softmax(logits, mask_r, dim=-1)  # (..., n_q, n_k)
        sink_weight = None
    else:
        weights, sink_weight = _softmax_with_sinks(logits, mask_r, sinks, convention)  # (..., n_q, n_k), (..., n_q)
        fully = torch.zeros_like(sink_weight, dtype=torch.bool) if mask_r is None else ~mask_r.any(dim=-1)
    # output = α V: each output row is the convex combination Σ_i α_i v_i
    output = weights @ v_r  # (..., n_q, d_v)

    trace = AttentionTrace(
        q=q_r, k=k_r, v=v_r, scores=scores, scaled=scaled, logits=logits, weights=weights,
        output=output, mask=mask_r, fully_masked=fully, score=score, scale=scale_f,
        temperature=temp_f, convention="row", params=P, bias=bias_r, softcap=cap, capped=capped,
        sink_weight=sink_weight,
    )
    return trace.transposed() if convention == "column" else trace


def _softmax_with_sinks(logits: torch.Tensor, mask: torch.Tensor | None, sinks: TensorLike, convention: str):
    """softmax([logits | z]) over each row with the sink logit z never masked; returns (weights (..., n_q, n_k),
    the sink's share (..., n_q))."""
    if convention != "row":
        raise ValueError("sinks are given per query row: use the row convention")
    z = as_tensor(sinks, "sinks", device=logits.device, dtype=logits.dtype)
    try:
        z_col = z.unsqueeze(-1).expand(*logits.shape[:-1], 1)  # (..., n_q, 1)
    except RuntimeError:
        raise ValueError(f"sinks {shape_str(z.shape)} do not broadcast to one logit per query row "
                         f"{shape_str(logits.shape[:-1])}") from None
    full_mask = None if mask is None else torch.cat([mask, torch.ones_like(mask[..., :1])], dim=-1)  # (..., n_q, n_k+1)
    probs, _ = masked_softmax(torch.cat([logits, z_col], dim=-1), full_mask)  # (..., n_q, n_k + 1)
    return probs[..., :-1], probs[..., -1]  # the sink column is dropped


def _row_bias(bias: TensorLike | None, scaled: torch.Tensor, convention: str) -> torch.Tensor | None:
    """The bias as a finite tensor of ``scaled``'s dtype and device, in rows, broadcast to (..., n_q, n_k)."""
    if bias is None:
        return None
    b = as_tensor(bias, "bias", device=scaled.device, dtype=scaled.dtype)
    if convention == "column":
        if b.dim() < 2:
            raise ValueError(f"a {b.dim()}-D bias {shape_str(b.shape)} is ambiguous in column convention; "
                             f"give a (n_k, n_q) = {shape_str(_swap(scaled).shape[-2:])} bias")
        b = _swap(b)  # (..., n_k, n_q) → (..., n_q, n_k)
    try:
        full = torch.broadcast_shapes(b.shape, scaled.shape)
    except RuntimeError:
        full = None
    if full != scaled.shape:
        want = scaled.shape if convention == "row" else _swap(scaled).shape
        got = b.shape if convention == "row" else _swap(b).shape
        raise ValueError(f"bias of shape {shape_str(got)} does not broadcast to the weights' shape {shape_str(want)}")
    out = scaled + b
    if not bool(torch.isfinite(out).all()):
        raise ValueError("scores + bias overflow: the bias is too large for this precision")
    return b.expand(scaled.shape)  # (..., n_q, n_k)


def transpose_gap(row: AttentionTrace, column: AttentionTrace) -> dict[str, float]:
    """max |row − columnᵀ| for every matrix of two traces of the same numbers (0 when they agree).

    −∞ entries (masked logits) count as equal when both sides hold them."""
    if row.convention != "row" or column.convention != "column":
        raise ValueError("give a row-convention trace and a column-convention trace")
    gaps = {}
    for name in ("q", "k", "v", "scores", "scaled", "logits", "weights", "output"):
        a, b = getattr(row, name), _swap(getattr(column, name))
        if a.shape != b.shape:
            raise ValueError(f"{name}: row {shape_str(a.shape)} vs columnᵀ {shape_str(b.shape)}")
        both_inf = torch.isneginf(a) & torch.isneginf(b)
        diff = torch.where(both_inf, torch.zeros_like(a), (a - b).abs())
        gaps[name] = float(diff.max()) if diff.numel() else 0.0
    return gaps


def l2_normalize(x: TensorLike, *, eps: float = _COSINE_EPS) -> torch.Tensor:
    """Each vector (last axis) divided by its length: x / ‖x‖ (a zero vector stays zero)."""
    t = as_tensors({"x": x})["x"]
    return t / t.norm(dim=-1, keepdim=True).clamp_min(eps)


def max_abs_diff(a: TensorLike, b: TensorLike) -> float:
    """max |a − b| over all entries (shapes must match)."""
    t = as_tensors({"a": a, "b": b})
    if t["a"].shape != t["b"].shape:
        raise ValueError(f"shapes differ: {shape_str(t['a'].shape)} vs {shape_str(t['b'].shape)}")
    return float((t["a"] - t["b"]).abs().max()) if t["a"].numel() else 0.0
