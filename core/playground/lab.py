r"""The Attention Playground's pipeline as one pure function (used by the app and notebooks).

    X_q (n_q, d_model) ──W_q──▶ Q (n_q, d_k) ┐
    X_kv (n_k, d_model) ─W_k──▶ K (n_k, d_k) ├─▶ core.attention ─▶ AttentionTrace
    X_kv (n_k, d_model) ─W_v──▶ V (n_k, d_v) ┘

``qkv="identity"`` uses Q = X_q, K = V = X_kv (source 001's simplification);
``"projection"`` uses Q = X_q W_q, K = X_kv W_k, V = X_kv W_v; ``"direct"`` takes Q, K, V as given.
Self-attention passes the same X twice; cross-attention passes target and source.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from core import tolerances
from core.checks import TensorLike, as_tensors, shape_str
from core.mechanism.attention import AttentionTrace, attention
from core.mechanism.multihead import multi_head_attention
from core.mechanism.positional import alibi_bias, rope
from core.variants.paper import paper_attention

QKV_MODES = ("identity", "projection", "direct")


@dataclass(frozen=True, eq=False)
class PlaygroundTrace:
    """X_q (n_q, d_model), X_kv (n_k, d_model); W_q/W_k (d_model, d_k), W_v (d_model, d_v) or None;
    Q (n_q, d_k), K (n_k, d_k), V (n_k, d_v) in row convention; ``attn`` in the chosen convention."""

    X_q: torch.Tensor
    X_kv: torch.Tensor
    W_q: torch.Tensor | None
    W_k: torch.Tensor | None
    W_v: torch.Tensor | None
    Q: torch.Tensor
    K: torch.Tensor
    V: torch.Tensor
    attn: AttentionTrace
    qkv: str


def playground(
    X_q: TensorLike,
    X_kv: TensorLike | None = None,
    *,
    qkv: str = "identity",
    W_q: TensorLike | None = None,
    W_k: TensorLike | None = None,
    W_v: TensorLike | None = None,
    Q: TensorLike | None = None,
    K: TensorLike | None = None,
    V: TensorLike | None = None,
    score: str = "scaled_dot",
    params: Mapping[str, TensorLike] | None = None,
    scale: float | None = None,
    temperature: float = 1.0,
    mask: TensorLike | None = None,
    convention: str = "row",
    device=None,
    dtype=None,
) -> PlaygroundTrace:
    """Run the playground pipeline. ``mask`` is always given in row convention (n_q, n_k);
    it is transposed for ``convention="column"``. Raises ValueError on malformed input."""
    if qkv not in QKV_MODES:
        raise ValueError(f"unknown qkv mode '{qkv}'; choose one of {', '.join(QKV_MODES)}")
    named = {"X_q": X_q, "X_kv": X_q if X_kv is None else X_kv}
    if qkv == "projection":
        named |= {"W_q": W_q, "W_k": W_k, "W_v": W_v}
    if qkv == "direct":
        named |= {"Q": Q, "K": K, "V": V}
    t = as_tensors(named, device=device, dtype=dtype)
    Xq, Xkv = t["X_q"], t["X_kv"]
    for name in ("X_q", "X_kv"):
        if t[name].dim() != 2:
            raise ValueError(f"{name} must be (n, d_model) but has shape {shape_str(t[name].shape)}")
    Wq = Wk = Wv = None
    if qkv == "identity":
        Q_r, K_r, V_r = Xq, Xkv, Xkv
    elif qkv == "projection":
        Wq, Wk, Wv = t["W_q"], t["W_k"], t["W_v"]
        for xname, x, wname, W in (("X_q", Xq, "W_q", Wq), ("X_kv", Xkv, "W_k", Wk), ("X_kv", Xkv, "W_v", Wv)):
            if W.dim() != 2 or W.shape[0] != x.shape[1]:
                raise ValueError(f"{xname} {shape_str(x.shape)} cannot be multiplied by {wname} {shape_str(W.shape)}")
        Q_r = Xq @ Wq  # (n_q, d_model)(d_model, d_k) → (n_q, d_k)
        K_r = Xkv @ Wk  # (n_k, d_model)(d_model, d_k) → (n_k, d_k)
        V_r = Xkv @ Wv  # (n_k, d_model)(d_model, d_v) → (n_k, d_v)
    else:
        Q_r, K_r, V_r = t["Q"], t["K"], t["V"]

    m = None
    if mask is not None:
        m = torch.as_tensor(mask, dtype=torch.bool, device=Q_r.device)
        if m.shape != (Q_r.shape[0], K_r.shape[0]):
            raise ValueError(f"mask {shape_str(m.shape)} must be (n_q, n_k) = {shape_str((Q_r.shape[0], K_r.shape[0]))}")
    if convention == "column":
        # every matrix transposed: tokens become columns
        attn = attention(Q_r.T, K_r.T, V_r.T, score=score, params=params, scale=scale, temperature=temperature,
                         mask=None if m is None else m.T, convention="column")
    else:
        attn = attention(Q_r, K_r, V_r, score=score, params=params, scale=scale, temperature=temperature,
                         mask=m, convention=convention)
    return PlaygroundTrace(X_q=Xq, X_kv=Xkv, W_q=Wq, W_k=Wk, W_v=Wv, Q=Q_r, K=K_r, V=V_r, attn=attn, qkv=qkv)


def c18_lookup(tokens, *, fallback_seed: int = 0, dtype=torch.float32) -> tuple[torch.Tensor, list[str]]:
    """C18's 3-dim embedding for its four tokens; any other token gets a seeded random 3-vector.

    Returns (X (n, 3), the tokens that were not in the C18 table).
    """
    from core.playground.tokens import C18_EMBEDDING, C18_TOKENS, embed

    table = dict(zip(C18_TOKENS, C18_EMBEDDING, strict=True))
    rows, unknown = [], []
    for tok in tokens:
        if tok in table:
            rows.append(torch.tensor(table[tok], dtype=dtype))
        else:
            unknown.append(tok)
            rows.append(embed([tok], 3, seed=fallback_seed, dtype=dtype)[0])
    if not rows:
        return torch.zeros(0, 3, dtype=dtype), unknown
    return torch.stack(rows), unknown  # (n, 3)


def paper_weights_from_mha(W_q: TensorLike, W_k: TensorLike, W_v: TensorLike, W_o: TensorLike, n_heads: int):
    """Per-head matrices of the math-paper form (C22) equivalent to Concat(heads)·W_O.

    With row-convention weights (x @ W) split per head, W_h^Q = W_q[:, h]ᵀ (d_k, d),
    W_h^K = W_k[:, h]ᵀ (d_k, d) and W_h^V = (W_v[:, h] W_o[h, :])ᵀ (d, d): the value and output
    projections of a head folded into one d × d matrix. Returns (W_Q, W_K, W_V) stacked (H, ·, d).
    """
    t = as_tensors({"W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o})
    d = t["W_q"].shape[0]
    for name in ("W_q", "W_k", "W_v"):
        if t[name].dim() != 2 or t[name].shape[0] != d or t[name].shape[1] % n_heads:
            raise ValueError(f"{name} {shape_str(t[name].shape)} must be (d, H·d_head) with H={n_heads}")
    if t["W_o"].shape != (t["W_v"].shape[1], d):
        raise ValueError(f"W_o {shape_str(t['W_o'].shape)} must be ({t['W_v'].shape[1]}, {d}) to keep width d")
    d_k, d_v = t["W_q"].shape[1] // n_heads, t["W_v"].shape[1] // n_heads
    W_Q = torch.stack([t["W_q"][:, h * d_k:(h + 1) * d_k].T for h in range(n_heads)])  # (H, d_k, d)
    W_K = torch.stack([t["W_k"][:, h * d_k:(h + 1) * d_k].T for h in range(n_heads)])  # (H, d_k, d)
    W_V = torch.stack([(t["W_v"][:, h * d_v:(h + 1) * d_v] @ t["W_o"][h * d_v:(h + 1) * d_v, :]).T
                       for h in range(n_heads)])  # (H, d, d)
    return W_Q, W_K, W_V


@dataclass(frozen=True, eq=False)
class PaperCheck:
    """The math-paper form (C22) next to Concat(heads)·W_O, both as (d, n) columns."""

    attended: torch.Tensor  # Σ_h (W_h^V X) Softmax[(W_h^K X)ᵀ (W_h^Q X)]  (d, n)
    mha_columns: torch.Tensor  # (MHA(X) without the 1/√d_k scale)ᵀ  (d, n)
    gap: float


def paper_check(X: TensorLike, W_q: TensorLike, W_k: TensorLike, W_v: TensorLike, W_o: TensorLike,
                n_heads: int) -> PaperCheck:
    """X (n, d) through the paper form and through unscaled multi-head attention (one batch)."""
    x = as_tensors({"X": X})["X"]
    W_Q, W_K, W_V = paper_weights_from_mha(W_q, W_k, W_v, W_o, n_heads)
    paper = paper_attention(x.T, W_Q, W_K, W_V)  # columns are tokens: (d, n)
    mha = multi_head_attention(x[None], W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads, score="dot")
    cols = mha.output[0].T  # (n, d) → (d, n)
    return PaperCheck(attended=paper.attended, mha_columns=cols, gap=float((paper.attended - cols).abs().max()))


POSITION_KINDS = ("none", "added", "rope", "alibi")


@dataclass(frozen=True, eq=False)
class PermutationCheck:
    """SA(PX) against P·SA(X) for a permutation P of the tokens (C23, C37), with positions of ``kind``
    (one of :data:`POSITION_KINDS`); perm (n,) long, the rest (n, d_v); max_diff = max |SA(PX) − P·SA(X)|."""

    perm: torch.Tensor
    sa_x: torch.Tensor
    sa_px: torch.Tensor
    p_sa_x: torch.Tensor
    max_diff: float
    kind: str = "none"


def self_attention_with_positions(X: torch.Tensor, W_q: torch.Tensor, W_k: torch.Tensor, W_v: torch.Tensor, *,
                                  positions: torch.Tensor | None = None, rope_base: float | None = None,
                                  alibi_slope: float | None = None) -> torch.Tensor:
    r"""One head of self-attention of X (n, d) with positions given to slot i (at most one kind); (n, d_v).

        added (sinusoidal, learned):  x̃_i = x_i + p_i, then Q = X̃W_q, K = X̃W_k, V = X̃W_v   (positions (n, d))
        RoPE:                         q_i = R(i) W_qᵀx_i, k_j = R(j) W_kᵀx_j, V unrotated        (rope_base θ)
        ALiBi:                        logits_ij = q_iᵀk_j/√d − m·|i − j|                         (alibi_slope m)
    """
    if positions is not None:
        X = X + positions  # x̃_i = x_i + p_i
    q, k, v = X @ W_q, X @ W_k, X @ W_v  # (n, d)
    if rope_base is not None:
        q, k = rope(q, base=rope_base), rope(k, base=rope_base)  # rotated by slot 0 … n−1
    # ALiBi: −m·|i − j| for one head (symmetric: self-attention without a causal mask), (n, n)
    bias = (None if alibi_slope is None else
            alibi_bias(1, X.shape[-2], symmetric=True, slope=alibi_slope, dtype=q.dtype, device=q.device)[0])
    return attention(q, k, v, bias=bias).output  # (n, d_v): softmax(q kᵀ/√d + bias) v


def permutation_check(X: TensorLike, perm, *, W_q: TensorLike, W_k: TensorLike, W_v: TensorLike,
                      positions: TensorLike | None = None, rope_base: float | None = None,
                      alibi_slope: float | None = None) -> PermutationCheck:
    """The permutation experiment: self-attention of X (n, d) and of its permuted rows PX (row i of PX is row
    perm[i] of X), with at most one way of giving positions — ``positions`` (n, d) added to X after permuting,
    RoPE with base ``rope_base``, or ALiBi with slope ``alibi_slope``. A position belongs to the *slot* i, not to
    the token: shuffling the tokens moves x but not p_i, R(i) or the bias, so SA(PX) ≠ P·SA(X) — order becomes
    visible; without positions SA(PX) = P·SA(X). Raises ValueError on bad input."""
    given = [name for name, v in (("positions", positions), ("rope_base", rope_base), ("alibi_slope", alibi_slope))
             if v is not None]
    if len(given) > 1:
        raise ValueError(f"give one way of adding positions, not {' and '.join(given)}")
    kind = {"positions": "added", "rope_base": "rope", "alibi_slope": "alibi"}[given[0]] if given else "none"
    t = as_tensors({"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v} | ({} if positions is None else {"P": positions}))
    Xt = t["X"]
    for name in ("W_q", "W_k", "W_v"):
        if Xt.dim() != 2 or t[name].dim() != 2 or t[name].shape[0] != Xt.shape[1]:
            raise ValueError(f"X {shape_str(Xt.shape)} and {name} {shape_str(t[name].shape)} do not fit: X @ {name} "
                             "needs X (n, d) and W (d, d_out)")
    if "P" in t and tuple(t["P"].shape) != tuple(Xt.shape):
        raise ValueError(f"added positions need a table of X's shape {tuple(Xt.shape)}")
    if alibi_slope is not None and not alibi_slope > 0:
        raise ValueError(f"the ALiBi slope m must be positive, got {alibi_slope!r}")
    n = Xt.shape[0]
    p = torch.as_tensor(list(perm), dtype=torch.long, device=Xt.device)
    if sorted(p.tolist()) != list(range(n)):
        raise ValueError(f"{list(perm)} is not a permutation of 0..{n - 1}")

    def sa(Z: torch.Tensor) -> torch.Tensor:
        return self_attention_with_positions(Z, t["W_q"], t["W_k"], t["W_v"], positions=t.get("P"),
                                             rope_base=rope_base, alibi_slope=alibi_slope)

    sa_x = sa(Xt)
    sa_px = sa(Xt[p])  # the tokens move; the positions stay with their slots
    p_sa_x = sa_x[p]
    return PermutationCheck(perm=p, sa_x=sa_x, sa_px=sa_px, p_sa_x=p_sa_x,
                            max_diff=float((sa_px - p_sa_x).abs().max()), kind=kind)


EQUAL_TOL = tolerances.EQUAL  # two float32 results this close are equal up to rounding (core.tolerances)


def within_rounding(diff: float) -> bool:
    """Whether a max |difference| counts as equal up to float32 rounding (:data:`EQUAL_TOL`)."""
    return abs(float(diff)) < EQUAL_TOL


def gap_text(diff: float) -> str:
    """A max |difference| as every page and exercise prints it, two significant digits ("4.8e-07", "0", "0.012"):
    the sentence around it says "max |a − b| = {gap}", and :func:`within_rounding` says whether that is equal."""
    return f"{float(diff):.2g}"


def rank_keys(trace: AttentionTrace, query: int) -> torch.Tensor:
    """Key indices ordered by the query's score, best match first (C14's retrieval view)."""
    row = trace if trace.convention == "row" else trace.transposed()
    return torch.argsort(row.scores[..., query, :], dim=-1, descending=True, stable=True)


def top_keys(trace: AttentionTrace, query: int, *, tol: float = tolerances.WEIGHT_TIE) -> list[int]:
    """Every key that ties for the query's largest weight (within ``tol``), in key order; empty
    for a fully masked query. C18's 나는 → 나는 and 나는 → 먹었다 tie at 0.320, so both are named."""
    row = trace if trace.convention == "row" else trace.transposed()
    if bool(row.fully_masked[..., query]):
        return []
    w = row.weights[..., query, :]  # (n_k,)
    return [int(i) for i in torch.nonzero(w >= w.max() - tol).flatten()]


@dataclass(frozen=True)
class StepFacts:
    """What happened to the numbers at each step of a trace, for one spoken sentence per step.

    Row convention whatever the trace's notation; indices are (query, key). ``top_score`` and
    ``top_weight`` are the largest entries (ties: the first in reading order); ``masked`` counts
    the blocked (query, key) pairs of ``pairs``. ``factor`` = s / T is what step 2 multiplies every
    score by: the order of a row is kept (factor > 0) and its spread max − min is multiplied by it
    (``spread`` says "smaller", "same" or "larger"). ``dot_products`` is True for the score
    functions whose score is a dot product (dot, scaled dot); ``convention`` is the trace's
    notation (weights sum to 1 along a row, or a column in the column notation)."""

    n_q: int
    n_k: int
    d_v: int
    top_score: tuple[float, int, int]
    top_scaled: float
    scale: float
    temperature: float
    masked: int
    pairs: int
    fully_masked: int
    top_weight: tuple[float, int, int]
    score: str = "scaled_dot"
    factor: float = 1.0
    spread: str = "same"
    dot_products: bool = True
    convention: str = "row"


SPREAD_TOL = tolerances.SPREAD  # s / T this close to 1 leaves the spread as it was


def step_facts(trace: AttentionTrace) -> StepFacts:
    """The facts the step-through reads aloud, computed from one 2-D trace."""
    row = trace if trace.convention == "row" else trace.transposed()
    S, W = row.scores, row.weights  # (n_q, n_k)
    if S.dim() != 2:
        raise ValueError(f"step_facts needs one (n_q, n_k) trace, got scores {tuple(S.shape)}")
    n_q, n_k = S.shape
    i, j = divmod(int(torch.argmax(S)), n_k)
    wi, wj = divmod(int(torch.argmax(W)), n_k)
    blocked = 0 if row.mask is None else int((~row.mask.bool()).sum())
    factor = float(row.scale) / float(row.temperature)
    spread = "same" if abs(factor - 1.0) <= SPREAD_TOL else ("smaller" if factor < 1.0 else "larger")
    return StepFacts(n_q=n_q, n_k=n_k, d_v=row.output.shape[-1], top_score=(float(S[i, j]), i, j),
                     top_scaled=float(row.scaled.max()), scale=float(row.scale), temperature=float(row.temperature),
                     masked=blocked, pairs=n_q * n_k, fully_masked=int(row.fully_masked.sum()),
                     top_weight=(float(W[wi, wj]), wi, wj), score=row.score, factor=factor, spread=spread,
                     dot_products=row.score in ("dot", "scaled_dot"), convention=trace.convention)
