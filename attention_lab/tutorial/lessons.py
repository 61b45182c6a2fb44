"""The lessons: their scenarios, exercises and the functions that compute each answer with core
(the content stays code: a judge recomputes the truth, never compares text). Registered in
:data:`LESSONS` in the tutorial's order; :data:`CONCEPTS` and :data:`CURRICULUM` say what each covers."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from types import MappingProxyType

import torch

from core import positional as _positional
from core import tokens as _tokens
from core import tolerances
from core.mechanism.attention import attention
from core.mechanism.kv_cache import MODEL_PRESETS, cached_decode, kv_cache_bytes
from core.mechanism.multihead import kv_head_map, multi_head_attention
from core.playground.experiments import scaling_experiment
from core.playground.lab import gap_text, permutation_check, within_rounding
from core.playground.pitfalls import head_layouts, mask_after_softmax
from core.shapes import MODELS
from core.tolerances import DECIMALS_1, DECIMALS_2, DECIMALS_3, HALF_UNIT, PERCENT_POINTS, READ_OFF, WHOLE
from core.variants import kept_chart
from core.variants.delta import QWEN3_NEXT_HYBRID, gated_delta_rule
from core.variants.mla import PUBLISHED as PUBLISHED_MLA
from core.variants.mla import mla, mla_cache_values

from ..labels import parse_perm
from ..scenario import MAX_TOKENS, multi_head_numbers, permutation_numbers
from .exercises import (
    MH_D_MODEL,
    MH_HEADS,
    PS_D_KEY,
    PS_PERM,
    TEMPERATURE_GRID,
    Exercise,
    Feedback,
    Lesson,
    LessonTrace,
    bounded_int,
    choice_ex,
    feedback_of,
    freeze,
    lesson_state,
    make_it_so,
    names_at,
    number_ex,
    predict_ex,
    scenario_trace,
    ties,
    tokens_of,
)

# =========================================================================== the lessons
C18 = _tokens.C18_TOKENS  # 나는 오늘 사과를 먹었다
# the example sentence's tokens by position: 나는 (NANEUN), 오늘 (ONEUL), 사과를 (SAGWA), 먹었다 (MEOK); not N, O, S, M,
# which the formulas beside them use for the count, the output, the scores and the mask
NANEUN, ONEUL, SAGWA, MEOK = 0, 1, 2, 3


def _exp_row(lt: LessonTrace, q: int) -> tuple[list[float], float]:
    logits = lt.trace.attn.logits[q]
    e = [math.exp(float(v)) if math.isfinite(float(v)) else 0.0 for v in logits]
    return e, sum(e)


# ---- 1. attention as a weighted average -------------------------------------------------
L1 = {"query": MEOK}


def _l1_weight():
    lt = scenario_trace(L1)
    e, total = _exp_row(lt, MEOK)
    raw = torch.softmax(lt.scores[MEOK], -1)  # the same row without 1/√d_k
    vals = {"query": C18[MEOK], "key": C18[SAGWA], "score": float(lt.scores[MEOK, SAGWA]),
            "scaled": float(lt.trace.attn.scaled[MEOK, SAGWA]),
            "e": e[SAGWA], "total": total, "w": float(lt.weights[MEOK, SAGWA]), "d_k": lt.trace.K.shape[1]}
    wrong = {"no_sum": e[SAGWA], "score": vals["score"], "scaled": vals["scaled"], "no_scale": float(raw[SAGWA]),
             "uniform": 1 / len(e), "self": float(lt.weights[MEOK, MEOK])}
    return vals["w"], vals, wrong


def _l1_rowsum():
    lt = scenario_trace(L1)
    sums = lt.trace.attn.weight_sums
    w = lt.weights[MEOK]
    right = "one" if bool(torch.allclose(sums, torch.ones_like(sums), atol=tolerances.EQUAL)) else "depends"
    return right, {"w0": float(w[0]), "w1": float(w[1]), "w2": float(w[2]), "w3": float(w[3]), "total": float(w.sum()),
                   "n": len(C18)}


# ---- 2. scores and the dot product -------------------------------------------------------
L2 = {"qkv": "direct", "query": SAGWA}


def _l2_score():
    lt = scenario_trace(L2)
    q, k = lt.trace.Q[MEOK], lt.trace.K[NANEUN]
    vals = {"query": C18[MEOK], "key": C18[NANEUN], "q0": float(q[0]), "q1": float(q[1]), "q2": float(q[2]),
            "k0": float(k[0]), "k1": float(k[1]), "k2": float(k[2]), "s": float(lt.scores[MEOK, NANEUN]),
            "qn": float(q.norm()), "kn": float(k.norm())}
    vals |= {"lo": -vals["qn"] * vals["kn"], "hi": vals["qn"] * vals["kn"]}  # |q·k| ≤ ‖q‖‖k‖
    wrong = {"scaled": float(lt.trace.attn.scaled[MEOK, NANEUN]), "weight": float(lt.weights[MEOK, NANEUN]),
             "self": float(lt.scores[MEOK, MEOK])}
    return vals["s"], vals, wrong


def _l2_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    K0 = scenario_trace(L2).trace.K
    diff = (lt.trace.K - K0).abs() > tolerances.CHANGED
    n = int(diff.sum())
    if n == 0:
        return feedback_of(False, "dot-product.edit-k.no_change")
    if n > 1:
        return feedback_of(False, "dot-product.edit-k.many_cells", n=n)
    row = lt.weights[SAGWA]
    top = ties(row)
    (r, c), = [tuple(int(v) for v in rc) for rc in torch.nonzero(diff)]
    vals = {"query": C18[SAGWA], "key": C18[NANEUN], "w": float(row[NANEUN]),
            "s": float(lt.scores[SAGWA, NANEUN]), "top": names_at(C18, top),
            "top_w": float(row[top[0]]), "top_s": float(lt.scores[SAGWA, top[0]]), "row": C18[r], "col": c,
            "old": float(K0[r, c]), "new": float(lt.trace.K[r, c])}
    if top == [NANEUN]:
        return Feedback(True, "dot-product.edit-k.ok", vals)
    if NANEUN in top:
        return Feedback(False, "dot-product.edit-k.tie", vals)
    return Feedback(False, "dot-product.edit-k.not_top", vals)


def _l2_example():
    K = [list(r) for r in _tokens.C18_EMBEDDING]
    K[NANEUN][1] = 2.0  # 나는's key (1, 0, 1) → (1, 2, 1): 사과를 (1, 1, 0) now scores 3 with it
    lt = scenario_trace(lesson_state(L2, matrices={"K": K}))
    return {"matrices": {"K": K}}, {"row": C18[NANEUN], "col": 1, "old": 0.0, "new": 2.0, "s": float(lt.scores[SAGWA, NANEUN]),
                                    "w": float(lt.weights[SAGWA, NANEUN]), "query": C18[SAGWA], "key": C18[NANEUN]}


# ---- 3. softmax, temperature and √d_k ----------------------------------------------------
L3 = {"query": MEOK}
L3_NO_SCALE = {"scale": "none"}
SHARP = 0.9


def _l3_no_scale():
    lt = scenario_trace({**L3, **L3_NO_SCALE})
    e, total = _exp_row(lt, MEOK)
    vals = {"query": C18[MEOK], "s": float(lt.scores[MEOK, MEOK]), "e": e[MEOK],
            "total": total, "w": float(lt.weights[MEOK, MEOK])}
    wrong = {"kept_scale": float(scenario_trace(L3).weights[MEOK, MEOK]), "no_sum": e[MEOK], "uniform": 1 / len(e),
             "score": vals["s"]}
    return vals["w"], vals, wrong


def _l3_sharp_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    w = float(lt.weights[MEOK].max())
    vals = {"query": C18[MEOK], "T": lt.trace.attn.temperature, "w": w, "target": SHARP}
    if w > SHARP:
        return Feedback(True, "softmax-temperature.sharp.ok", vals)
    if lt.trace.attn.temperature >= 1.0:
        return Feedback(False, "softmax-temperature.sharp.flatter", vals)
    return Feedback(False, "softmax-temperature.sharp.not_yet", vals)


def _l3_sharp_example():
    for T in sorted(TEMPERATURE_GRID, reverse=True):  # the largest slider value that works
        lt = scenario_trace({**L3, "temperature": T})
        if float(lt.weights[MEOK].max()) > SHARP:
            gap = float(lt.trace.attn.scaled[MEOK, MEOK] - lt.trace.attn.scaled[MEOK, NANEUN])
            return {"temperature": T}, {"T": T, "w": float(lt.weights[MEOK].max()), "gap": gap, "target": SHARP}
    raise AssertionError("no temperature on the slider makes the row sharp")  # pragma: no cover


def _l3_tie():
    w1 = float(scenario_trace(L3).weights[NANEUN].max())
    w_slider = float(scenario_trace({**L3, "temperature": 0.1}).weights[NANEUN].max())  # the slider's coldest
    # colder than the slider (and a scenario) goes: softmax(z / T) of the row at T = 1, by hand
    cold = torch.softmax(scenario_trace(L3).trace.attn.scaled[NANEUN] / 0.01, dim=-1)
    w_cold = float(cold.max())
    tied = ties(cold)
    right = "half" if len(tied) == 2 and abs(w_cold - 0.5) < tolerances.HALF else ("one" if w_cold > 0.99 else "quarter")
    return right, {"w1": w1, "w_slider": w_slider, "w_cold": w_cold, "T": 0.1, "keys": names_at(C18, tied)}


def _l3_sqrt_dk():
    ex = scaling_experiment(dims=(4, 64), n_keys=16, n_samples=2000, n_trials=100, seed=0)
    vals = {"var4": float(ex.var_dot[0]), "var64": float(ex.var_dot[1]), "mw64": float(ex.max_weight[1]),
            "mw64s": float(ex.max_weight_scaled[1])}
    grows = vals["var64"] > 4 * vals["var4"] and vals["mw64"] > vals["mw64s"]
    return ("variance" if grows else "sum"), vals


# ---- 4. the output Σ αᵢ vᵢ ----------------------------------------------------------------
L4 = {"qkv": "direct", "query": MEOK}
OUTPUT_TARGET = 2.0


def _l4_output():
    lt = scenario_trace(L4)
    w, v = lt.weights[MEOK], lt.trace.V[:, 0]
    vals = {"query": C18[MEOK], **{f"a{i}": float(w[i]) for i in range(4)}, **{f"v{i}": float(v[i]) for i in range(4)},
            "out": float(lt.trace.attn.output[MEOK, 0]), "lo": float(v.min()), "hi": float(v.max())}
    wrong = {"mean": float(v.mean()), "sum_v": float(v.sum()), "only_self": float(w[MEOK] * v[MEOK]), "sum_w": float(w.sum())}
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
    right = "no" if top <= float(V[:, 0].max()) + tolerances.CONVEX else "yes-sharp"
    return right, {"vmax": float(V[:, 0].max()), "vmin": float(V[:, 0].min()), "out": float(base.trace.attn.output[MEOK, 0]),
                   "top": top}


def _l4_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    V0 = scenario_trace(L4).trace.V
    out = float(lt.trace.attn.output[MEOK, 0])
    vals = {"query": C18[MEOK], "out": out, "vmax": float(lt.trace.V[:, 0].max()), "target": OUTPUT_TARGET}
    if torch.equal(lt.trace.V, V0):
        return Feedback(False, "weighted-sum.edit-v.no_change", vals)
    if out > OUTPUT_TARGET:
        return Feedback(True, "weighted-sum.edit-v.ok", vals)
    return Feedback(False, "weighted-sum.edit-v.not_yet", vals)


def _l4_example():
    V = [list(r) for r in _tokens.C18_EMBEDDING]
    V[MEOK][0] = 5.0
    lt = scenario_trace(lesson_state(L4, matrices={"V": V}))
    w = lt.weights[MEOK]
    return {"matrices": {"V": V}}, {"query": C18[MEOK], "out": float(lt.trace.attn.output[MEOK, 0]), "a3": float(w[MEOK]),
                                    "new": 5.0, "target": OUTPUT_TARGET}


# ---- 5. masks ------------------------------------------------------------------------------
L5 = {"query": ONEUL}
L5_CAUSAL = {"causal": True}


def _l5_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    w = lt.weights
    n = w.shape[0]
    for i in range(n):
        for j in range(n):
            if j > i and float(w[i, j]) > 0:
                return feedback_of(False, "masks.causal.future", query=C18[i], key=C18[j], w=float(w[i, j]))
    for i in range(n):
        for j in range(i + 1):
            if float(w[i, j]) == 0:
                return feedback_of(False, "masks.causal.past", query=C18[i], key=C18[j])
    return feedback_of(True, "masks.causal.ok", zeros=int((w == 0).sum()), w=float(w[ONEUL, NANEUN]), query=C18[ONEUL],
                       key=C18[NANEUN])


def _l5_example():
    lt = scenario_trace({**L5, **L5_CAUSAL})
    return {"causal": True}, {"zeros": int((lt.weights == 0).sum())}


def _l5_weight():
    lt = scenario_trace({**L5, **L5_CAUSAL})
    e, total = _exp_row(lt, ONEUL)
    plain = scenario_trace(L5)
    after = mask_after_softmax(plain.trace.attn.scaled, lt.trace.attn.mask)
    vals = {"query": C18[ONEUL], "key": C18[NANEUN], "e0": e[NANEUN], "e1": e[ONEUL],
            "total": total, "w": float(lt.weights[ONEUL, NANEUN]),
            "after_sum": float(after.sums_per_query[ONEUL])}
    wrong = {"unmasked": float(plain.weights[ONEUL, NANEUN]), "half": 0.5, "self": float(lt.weights[ONEUL, ONEUL])}
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
            if torch.allclose(w.sum(-1), torch.ones(w.shape[0]), atol=tolerances.EQUAL) and bool((w[~m] == 0).all())]
    return good[0], {"after_sum": float(recipes["after"][ONEUL].sum()), "zero_w": float(recipes["zero"][ONEUL, SAGWA]),
                     "query": C18[ONEUL], "key": C18[SAGWA]}


# ---- 6. learned projections W_Q, W_K, W_V --------------------------------------------------
L6 = {"qkv": "projection", "d_k": 2, "d_v": 2, "query": MEOK, "matrices": {
    "W_q": [[0.0, 0.0], [0.0, 1.0], [-1.0, -1.0]],
    "W_k": [[0.0, 1.0], [0.0, 1.0], [1.0, 1.0]],
    "W_v": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
}}


def _l6_score():
    lt = scenario_trace(L6)
    q, k = lt.trace.Q[SAGWA], lt.trace.K[MEOK]
    X = lt.trace.X_q
    vals = {"query": C18[SAGWA], "key": C18[MEOK], "q0": float(q[0]), "q1": float(q[1]), "k0": float(k[0]), "k1": float(k[1]),
            "s": float(lt.scores[SAGWA, MEOK]), "qn": float(q.norm()), "kn": float(k.norm())}
    vals |= {"lo": -vals["qn"] * vals["kn"], "hi": vals["qn"] * vals["kn"]}  # |q·k| ≤ ‖q‖‖k‖
    wrong = {"raw": float(X[SAGWA] @ X[MEOK]), "scaled": float(lt.trace.attn.scaled[SAGWA, MEOK])}
    return vals["s"], vals, wrong


def _l6_shape():
    lt = scenario_trace(L6)
    n, d_k = lt.trace.K.shape
    return f"{n}x{d_k}", {"n": n, "d_model": lt.trace.X_q.shape[1], "d_k": d_k}


def _l6_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    s = lt.scores
    if float(s.max() - s.min()) < tolerances.CONSTANT:
        return feedback_of(False, "projections.symmetric.flat", s=float(s[0, 0]))
    gap = (s - s.T).abs()
    if float(gap.max()) > tolerances.EQUAL:
        i, j = (int(v) for v in torch.nonzero(gap == gap.max())[0])
        return feedback_of(False, "projections.symmetric.asymmetric", a=C18[i], b=C18[j], s_ab=float(s[i, j]),
                           s_ba=float(s[j, i]))
    return feedback_of(True, "projections.symmetric.ok", s_ab=float(s[MEOK, SAGWA]), a=C18[MEOK], b=C18[SAGWA])


def _l6_example():
    W_q = [list(r) for r in L6["matrices"]["W_q"]]
    lt = scenario_trace(lesson_state(L6, matrices={"W_k": W_q}))
    return {"matrices": {"W_k": W_q}}, {"s_ab": float(lt.scores[MEOK, SAGWA]), "a": C18[MEOK], "b": C18[SAGWA]}


# ---- 7. multi-head attention and its shapes ------------------------------------------------
L7: dict = {}
MH_D, MH_H, MH_TARGET = 8, 2, 2


def _mh(state: Mapping, d: int, H: int):
    """The multi-head panel's trace: its numbers as the page builds them (``scenario.multi_head_numbers``)."""
    X, W = multi_head_numbers(tokens_of(state), d, bounded_int(state.get("seed", 0), 0, 2**31 - 1, "seed"))
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
    X, W = multi_head_numbers(tokens_of(L7), MH_D, 0)
    lay = head_layouts(X, W["W_q"], W["W_k"], MH_H)  # what each wrong option is (or is not) made by
    return "x".join(str(s) for s in tr.weights.shape), {
        "B": B, "H": H, "n": n_q, "d_k": tr.q.shape[-1], "heads_last": _shape_text(lay.heads_last),
        "no_transpose": _shape_text(lay.no_transpose), "averaged": _shape_text(lay.averaged),
        "view_only": _shape_text(lay.view_only), "view_gap": lay.view_gap}


def _l7_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    d = bounded_int(state.get(MH_D_MODEL, MH_D), 1, 64, MH_D_MODEL)
    H = bounded_int(state.get(MH_HEADS, MH_H), 1, 64, MH_HEADS)
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
    """The position panel's check for one order, on its numbers as the page builds them (``scenario.permutation_numbers``)."""
    toks = tokens_of(state)
    X, W = permutation_numbers(toks, d, bounded_int(state.get("seed", 0), 0, 2**31 - 1, "seed"))
    pe = _positional.sinusoidal(len(toks), d) if with_pe else None
    return permutation_check(X, perm, positions=pe, **W)


def _token_diff(c, token: int) -> float:
    r = c.perm.tolist().index(token)  # the slot where the token now sits
    return float((c.sa_px[r] - c.p_sa_x[r]).abs().max())


def _l8_shuffle():
    perm = (3, 2, 1, 0)
    diff = _token_diff(_ps(L8, perm, PS_D, False), MEOK)
    diff_pe = _token_diff(_ps(L8, perm, PS_D, True), MEOK)
    return ("same" if within_rounding(diff) else "changes"), {"diff": diff, "diff_pe": diff_pe, "token": C18[MEOK],
                                                             "gap": gap_text(diff), "gap_pe": gap_text(diff_pe)}


def _l8_pe():
    pe = _positional.sinusoidal(2, PS_D)
    vals = {"pos": 1, "dim": 0, "pe": float(pe[1, 0])}
    wrong = {"degrees": math.sin(math.radians(1.0)), "cosine": float(pe[1, 1]), "pos0": float(pe[0, 0])}
    return vals["pe"], vals, wrong


def _l8_judge(state: Mapping, lt: LessonTrace) -> Feedback:
    n = len(lt.q_tokens)
    d = bounded_int(state.get(PS_D_KEY, PS_D), 1, 64, PS_D_KEY)
    perm = parse_perm(state.get(PS_PERM, ""), n)
    if perm is None:
        return feedback_of(False, "position.move.bad_perm", last=n - 1)
    diff = _token_diff(_ps(state, perm, d, False), MEOK)
    diff_pe = _token_diff(_ps(state, perm, d, True), MEOK)
    vals = {"token": C18[MEOK], "diff": diff, "diff_pe": diff_pe, "order": " ".join(C18[i] for i in perm),
            "gap": gap_text(diff), "gap_pe": gap_text(diff_pe)}
    if within_rounding(diff_pe):
        return Feedback(False, "position.move.same", vals)
    if within_rounding(diff):
        return Feedback(True, "position.move.ok", vals)
    return Feedback(False, "position.move.no_set", vals)  # pragma: no cover — self-attention is permutation-equivariant


def _l8_example():
    perm = (3, 0, 1, 2)
    diff = _token_diff(_ps(L8, perm, PS_D, False), MEOK)
    diff_pe = _token_diff(_ps(L8, perm, PS_D, True), MEOK)
    return {PS_PERM: "3 0 1 2", PS_D_KEY: PS_D}, {"token": C18[MEOK], "diff": diff, "diff_pe": diff_pe,
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
    """How many keys token SAGWA's query attends to (step t = SAGWA, tokens counted from 0) when the sentence is
    decoded with a cache."""
    toks = list(C18)
    X = _tokens.embed(toks, 8, seed=0)
    W = {n: _tokens.projection(8, w, seed=0, name=f"kv.{n}") for n, w in
         (("W_q", 8), ("W_k", 4), ("W_v", 4), ("W_o", 8))}
    step = cached_decode(X, n_heads=2, n_kv_heads=1, **W).steps[SAGWA]
    return float(step.cache_length), {"token": C18[SAGWA], "t": SAGWA}, {"all": float(len(toks)), "before": float(SAGWA)}


KV_PANEL = {"d_model": 8, "n_heads": 2, "n_kv_heads": 1}  # the lesson's panel (ui.compute.LESSON_KV): one K/V head


def _kv_trace():
    """The lesson's sentence decoded with a cache, as the panel draws it (seed 0, d_model 8, H = 2, G = 1)."""
    X = _tokens.embed(list(C18), KV_PANEL["d_model"], seed=0)
    d, H, G = KV_PANEL["d_model"], KV_PANEL["n_heads"], KV_PANEL["n_kv_heads"]
    W = {n: _tokens.projection(d, w, seed=0, name=f"kv.{n}") for n, w in
         (("W_q", d), ("W_k", G * d // H), ("W_v", G * d // H), ("W_o", d))}
    return cached_decode(X, n_heads=H, n_kv_heads=G, **W)


def _l10_size():
    """Numbers in the panel's cache once token SAGWA is fed in: keys and values of tokens 0 … t, G · d_head each."""
    tr = _kv_trace()
    G, _, d_head = tr.cache.k.shape  # (G, n, d_head)
    held = tr.steps[SAGWA].cache_length
    vals = {"token": C18[SAGWA], "t": SAGWA, "G": G, "d_head": d_head, "k": held}
    return float(2 * G * d_head * held), vals, {"keys_only": float(G * d_head * held),
                                                "before": float(2 * G * d_head * SAGWA),
                                                "all": float(2 * G * d_head * len(C18))}


# ---- 11. RoPE: positions as rotations of q and k ------------------------------------------------
L11: dict = {}
ROPE_D, ROPE_BASE, ROPE_PAIR = 8, 10000.0, 1




ROPE_KEY_AT, ROPE_QUERY_AT, ROPE_SHIFT = 3, 5, 7  # the prediction: the score at (3, 5), then at (10, 12)


def _rope_qk():
    q = _tokens.projection(1, ROPE_D, seed=0, name="lp.q")[0]
    k = _tokens.projection(1, ROPE_D, seed=0, name="lp.k")[0]
    return q, k


ROPE_PAIR_Q, ROPE_PAIR_K = (1.0, 0.0), (2.0, 0.0)  # one pair (d = 2: θ₀ = 1 radian per position)
ROPE_PAIR_AT = (12, 10)  # the query's and the key's positions
ROPE_LONG_Q = (2.0, 1.0, 2.0, 4.0)  # a query of length 5, turned to ROPE_LONG_AT
ROPE_LONG_AT = 100


def _l11_shift_score():
    """One pair: q at position 12, k at 10, θ₀ = 1 — the score q·k after RoPE (core.rope_scores_by_offset)."""
    q, k = torch.tensor(ROPE_PAIR_Q), torch.tensor(ROPE_PAIR_K)
    mq, mk = ROPE_PAIR_AT
    score = float(_positional.rope_scores_by_offset(q, k, [mq - mk], base=ROPE_BASE, start=float(mk))[0])
    only_q = float(_positional.rope(q[None], positions=torch.tensor([float(mq)]), base=ROPE_BASE)[0] @ k)
    vals = {"qa": ROPE_PAIR_Q[0], "qb": ROPE_PAIR_Q[1], "ka": ROPE_PAIR_K[0], "kb": ROPE_PAIR_K[1], "mq": mq, "mk": mk,
            "dist": mq - mk, "qn": float(q.norm()), "kn": float(k.norm())}
    return score, vals, {"no_rope": float(q @ k), "only_q": only_q}


def _l11_length_value():
    """‖R(100) q‖ for a query q of four numbers: RoPE's rotation of q to position 100 (core.rope)."""
    q = torch.tensor(ROPE_LONG_Q)
    at = _positional.rope(q[None], positions=torch.tensor([float(ROPE_LONG_AT)]), base=ROPE_BASE)[0]
    norm = float(q.norm())
    vals = {"q": ", ".join(f"{x:g}" for x in ROPE_LONG_Q), "pos": ROPE_LONG_AT}
    return float(at.norm()), vals, {"grows": norm * ROPE_LONG_AT ** 0.5, "squared": norm ** 2, "sum": float(q.sum())}


def _l11_angle():
    theta = _positional.rope_frequencies(ROPE_D, base=ROPE_BASE)
    vals = {"i": ROPE_PAIR, "d": ROPE_D, "base": int(ROPE_BASE)}
    wrong = {"pair0": float(theta[0]), "odd": ROPE_BASE ** (-ROPE_PAIR / ROPE_D), "last": float(theta[-1])}
    return float(theta[ROPE_PAIR]), vals, wrong




# ---- 12. a real language model writing (SmolLM2-135M, core.models.decoder) -------------------------------
# The panel shows the causal mask on the worked example; the exercises are checked against the real model.
L12 = {"causal": True, "query": ONEUL}
L12_PROMPT = "The capital of France is"
L12_PRESET = "france"  # the language-model page's example with this prompt (its link opens the page on it)


def _lm():
    from core.models.pretrained import smollm2  # loaded once per process; imported here so the other lessons never need it

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
    from core.models.decoder import next_token_probs

    m = _lm()
    logits = torch.log(m.next_token(L12_PROMPT).probs)
    tops = {int(next_token_probs(logits, T).argmax()) for T in TEMPERATURE_GRID}
    top = m.token_text(int(logits.argmax()))
    cold = float(next_token_probs(logits, 0.1).max())
    hot = float(next_token_probs(logits, 5.0).max())
    return ("no" if len(tops) == 1 else "yes"), {"token": top, "cold": cold, "hot": hot}


def _l12_previous():
    """In the model's strongest previous-token head for L12_PROMPT (largest mean share on the token just before),
    the share, in percent, of the last token's attention on the token just before it: read off that head's map."""
    from core.models.decoder import head_stats

    tr = _lm().trace(L12_PROMPT)
    hs = head_stats(tr.attentions)
    l, h = divmod(int(hs.previous.argmax()), hs.previous.shape[1])
    row = tr.attentions[l, h, -1]  # (n,): the last query's weights
    vals = {"l": l, "h": h, "prompt": L12_PROMPT, "last": tr.tokens[-1], "before": tr.tokens[-2],
            "first": tr.tokens[0], "lo": 0.0, "hi": 100.0}
    # rounded to 0.01 %: the model's float32 sums differ in the last bits between thread counts
    return round(100.0 * float(row[-2]), 2), vals, {"first": round(100.0 * float(row[0]), 2)}




# ---- 13. compressing the cache: multi-head latent attention (DeepSeek-V3) --------------------------
L13 = {"causal": True}  # the masks panel with the causal mask: every row reads the same cached keys and values
MLA_MODEL = PUBLISHED_MLA[0]  # DeepSeek-V3's published shapes (core.shapes.MODELS["deepseek-v3"], with its source)


def _mla_sizes():
    m = MLA_MODEL
    size = mla_cache_values(kv_rank=m.kv_rank, rope_dim=m.rope_dim, n_heads=m.n_heads, head_dim=m.nope_dim)
    return size, {"model": m.name, "d_c": m.kv_rank, "d_r": m.rope_dim, "H": m.n_heads, "d_h": m.nope_dim,
                  "L": m.layers, "mla": size.mla}


def _l13_mha():
    """Numbers per token and layer that multi-head attention with DeepSeek-V3's heads would cache: 2·H·d_h."""
    size, vals = _mla_sizes()
    return float(size.mha), vals, {"keys_only": float(size.mha // 2), "latent": float(size.mla)}


def _l13_ratio():
    """How many times smaller MLA's cache is than multi-head attention's, per token and layer (one decimal)."""
    size, vals = _mla_sizes()
    return round(size.ratio, 1), vals | {"mha": size.mha}, {"no_rope": round(size.mha / vals["d_c"], 1)}


MLA_PANEL = {"d_model": 8, "heads": 2, "d_c": 4, "d_r": 2}  # the lesson's panel (ui.compute.LESSON_MLA)


def _mla_small(d: int, H: int, d_c: int, d_r: int):
    X = _tokens.embed(list(C18), d, seed=0)
    shapes = (("W_DKV", d, d_c), ("W_KR", d, d_r), ("W_UK", d_c, d), ("W_UV", d_c, d), ("W_UQ", d, d),
              ("W_QR", d, H * d_r), ("W_o", d, d))
    W = {name: _tokens.projection(r, c, seed=0, name=f"mla.{name}") for name, r, c in shapes}
    return mla(X, **W, n_heads=H, rope=10000.0, causal=True)


def _l13_absorbed_width():
    """Entries of one head's absorbed query q_C W_UKᵀ with DeepSeek-V3's shapes: the latent's width d_c, which is its
    cache row (d_c + d_R) without the rotary key; core.mla's absorbed query has d_c entries (checked on the panel's
    small layer)."""
    size, vals = _mla_sizes()
    p = MLA_PANEL
    small = _mla_small(p["d_model"], p["heads"], p["d_c"], p["d_r"])
    if small.q_absorbed.shape[-1] != p["d_c"]:  # (H, n, d_c): what the absorbed query reads
        raise ValueError("core.mla's absorbed query is not d_c wide")
    return float(size.mla - vals["d_r"]), vals, {"not_absorbed": float(vals["d_h"]), "whole_row": float(size.mla)}


def _l13_panel():
    """The panel's small layer: numbers per token of every head's explicit key (H · (d_h + d_R), core.mla's k) over
    what the cache holds (d_c + d_R), to one decimal."""
    p = MLA_PANEL
    tr = _mla_small(p["d_model"], p["heads"], p["d_c"], p["d_r"])
    H, _, width = tr.k.shape  # (H, n, d_h + d_R)
    cached = tr.c_kv.shape[-1] + tr.k_rope.shape[-1]
    keys = H * width
    vals = {"keys": keys, "cached": cached, "H": H, "d_c": p["d_c"], "d_r": p["d_r"]}
    return round(keys / cached, 2), vals, {"latent_only": round(keys / p["d_c"], 2),
                                           "with_values": round((keys + H * tr.v.shape[-1]) / cached, 2)}


# ---- 14. memory in a matrix: the delta rule (Gated DeltaNet) --------------------------------------
L14 = {"causal": True}  # the masks panel with the causal mask: the state reads the same tokens, one at a time
DR_KEY = (1.0, 0.0)  # a unit key, written twice
DR_VALUES, DR_BETAS = (2.0, 6.0), (1.0, 0.5)


def _l14_state():
    """Numbers one Gated DeltaNet layer of Qwen3-Next keeps per sequence, at any length: value heads × d_k × d_v."""
    h = QWEN3_NEXT_HYBRID
    n = h.linear_value_heads * h.linear_key_dim * h.linear_value_dim
    return float(n), {"model": h.name, "V": h.linear_value_heads, "d_k": h.linear_key_dim, "d_v": h.linear_value_dim}, {
        "one_head": float(h.linear_key_dim * h.linear_value_dim), "vector": float(h.linear_value_heads * h.linear_value_dim)}


def _l14_read():
    """The unit key k written with v₁ (β₁ = 1) into an empty state, then again with v₂ (β₂ = ½): what S returns for k
    (core.gated_delta_rule, no decay, no normalisation, scale 1)."""
    k = torch.tensor([DR_KEY, DR_KEY], dtype=torch.float64)  # (2, d_k)
    v = torch.tensor([[DR_VALUES[0]], [DR_VALUES[1]]], dtype=torch.float64)  # (2, 1)
    beta = torch.tensor(DR_BETAS, dtype=torch.float64)
    delta = gated_delta_rule(k, k, v, beta=beta, scale=1.0)
    linear = gated_delta_rule(k, k, v, beta=beta, scale=1.0, delta=False)
    vals = {"v1": DR_VALUES[0], "v2": DR_VALUES[1], "b2": DR_BETAS[1]}
    return float(delta.output[-1, 0]), vals, {"replace": DR_VALUES[1], "add": float(linear.output[-1, 0])}


DR_PANEL = {"d_model": 8, "d": 4}  # the lesson's panel: ui.compute.delta_rule's sizes, β = 1, no decay, seed 0


def _dr_panel():
    """The lesson's sentence through the delta rule as the panel draws it (q, k L2-normalised, β = 1, g = 0)."""
    X = _tokens.embed(list(C18), DR_PANEL["d_model"], seed=0)
    q, k, v = (X @ _tokens.projection(DR_PANEL["d_model"], DR_PANEL["d"], seed=0, name=f"dr.{w}")
               for w in ("W_q", "W_k", "W_v"))
    n = len(C18)
    return gated_delta_rule(q, k, v, beta=torch.ones(n), g=torch.zeros(n), l2_normalize_qk=True)


def _l14_erase():
    """What S_1 returns for k_1 after token 1's write (first entry): with β = 1 the old reading is erased and v_1
    written in its place."""
    rec = _dr_panel()
    t = ONEUL
    after = float((rec.states[t] * rec.k[t][:, None]).sum(0)[0])  # S_tᵀ k_t
    before = float((rec.states[t - 1] * rec.k[t][:, None]).sum(0)[0])  # S_{t−1}ᵀ k_t: the prediction
    vals = {"token": C18[t], "t": t, "v": float(rec.v[t, 0]), "pred": before}
    return after, vals, {"before": before, "add": before + float(rec.v[t, 0])}


def _l14_special():
    """With orthonormal keys, β = 1 and no decay, the delta rule computes what linear attention computes: checked."""
    g = torch.Generator().manual_seed(0)
    k = torch.linalg.qr(torch.randn(4, 4, generator=g, dtype=torch.float64))[0]  # (4, 4): orthonormal rows
    q, v = torch.randn(4, 4, generator=g, dtype=torch.float64), torch.randn(4, 3, generator=g, dtype=torch.float64)
    ones = torch.ones(4, dtype=torch.float64)
    gap = float((gated_delta_rule(q, k, v, beta=ones).output - gated_delta_rule(q, k, v, beta=ones, delta=False).output)
                .abs().max())
    return ("linear" if within_rounding(gap) else "softmax"), {"gap": gap_text(gap)}


# ---- 15. what a 2026 model keeps (issue 55): the chart of core.variants.kept_chart ----------------------------
L15 = {"causal": True}  # the masks panel's scenario; the lesson draws the chart instead (panel "kept")
KEPT_V4, KEPT_GDN = MODELS["deepseek-v4-flash"], MODELS["qwen3.5-27b"]  # core.shapes records (transformers' configs)
KEPT_CHOICES = ("mamba2", "qwen3.5-27b", "deepseek-v4-flash", "kimi-linear-48b-a3b")  # which stays flat?


def _l15_csa():
    """Numbers one CSA layer of DeepSeek-V4-Flash adds per token beyond its window (core.kept, read off two counts):
    a pooled entry of d every m tokens and the indexer's key of d_I, d/m + d_I/m."""
    p = KEPT_V4
    vals = {"model": p.name, "d": p.d_head, "d_I": p.index_head_dim, "m": p.csa_rate, "w": p.window, "m2": p.hca_rate}
    return kept_chart.growth_per_layer(p, "csa"), vals, {
        "no_index": p.d_head / p.csa_rate, "hca": kept_chart.growth_per_layer(p, "hca"), "whole": float(p.d_head)}


def _l15_flat():
    """The one model among the choices whose count at 2M tokens equals its count at 1M (core.kept)."""
    flat = [k for k in KEPT_CHOICES if kept_chart.curve(k, "").flat]
    assert len(flat) == 1, flat  # the question has one right answer
    return flat[0], {"name": MODELS[flat[0]].name}


def _l15_head_state():
    """One value head's state in a Gated DeltaNet layer of Qwen3.5-27B: d_k × d_v numbers."""
    p = KEPT_GDN
    vals = {"model": p.name, "d_k": p.linear_key_dim, "d_v": p.linear_value_dim, "V": p.linear_value_heads}
    return float(kept_chart.head_state(p)), vals, {
        "sum": float(p.linear_key_dim + p.linear_value_dim),
        "all_heads": float(p.linear_value_heads * kept_chart.head_state(p))}


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
    "mla-cache": ("latent_cache", "kv_cache"),
    "delta-rule": ("delta_rule", "linear_attention"),
    "kept-per-token": ("kept_per_token", "kv_cache", "latent_cache", "delta_rule"),
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
    "mla-cache": ("C20", "C21"),
    "delta-rule": ("C4", "C28"),
    "kept-per-token": ("C20", "C21", "C28"),
})


def _lesson(lesson_id: str, panel: str, scenario: Mapping, exercises: list[Exercise]) -> Lesson:
    return Lesson(lesson_id, panel, freeze(scenario), tuple(exercises), CONCEPTS[lesson_id])


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
            N_(predict_ex("weighted-average.top", L1, NANEUN, prompt_values=_pv(query=C18[NANEUN])), "weights",
               "query_key_value"),
            N_(choice_ex("weighted-average.row-sum", ("one", "tokens", "depends"), _l1_rowsum,
                          prompt_values=_pv(query=C18[MEOK]), query=MEOK), "weights", "weights_sum_to_one"),
        ]),
        _lesson("dot-product", "pipeline", L2, [
            N_(number_ex("dot-product.score", _l2_score, tolerance=DECIMALS_2, range_key="dot-product.score.outside",
                       diagnoses=("scaled", "weight", "self"),
                       prompt_values=_pv(query=C18[MEOK], key=C18[NANEUN], tol=DECIMALS_2), query=MEOK), "dot_product"),
            N_(predict_ex("dot-product.top-score", L2, MEOK, prompt_values=_pv(query=C18[MEOK])), "dot_product", "weights"),
            N_(make_it_so("dot-product.edit-k", L2, ("matrices.K",), _l2_judge, _l2_example,
                           ("no_change", "many_cells", "tie", "not_top"), prompt_values=_pv(query=C18[SAGWA], key=C18[NANEUN]),
                           query=SAGWA), "dot_product", "score_matrix"),
        ]),
        _lesson("softmax-temperature", "pipeline", L3, [
            # asked here, not in lesson 1: computing α needs the dot product, √d_k and softmax (L1 = L3's scenario)
            N_(number_ex("weighted-average.weight", _l1_weight, tolerance=DECIMALS_2, lo=0.0, hi=1.0, range_key=weight,
                       diagnoses=("no_sum", "score", "scaled", "no_scale", "uniform", "self"),
                       prompt_values=_pv(query=C18[MEOK], key=C18[SAGWA], tol=DECIMALS_2), query=MEOK),
               "dot_product", "scale_sqrt_dk", "softmax"),
            N_(number_ex("softmax-temperature.no-scale", _l3_no_scale, tolerance=DECIMALS_2, lo=0.0, hi=1.0, range_key=weight,
                       diagnoses=("kept_scale", "no_sum", "uniform", "score"), scenario=freeze(L3_NO_SCALE),
                       prompt_values=_pv(query=C18[MEOK], tol=DECIMALS_2), query=MEOK), "softmax", "scale_sqrt_dk"),
            N_(make_it_so("softmax-temperature.sharp", L3, ("temperature",), _l3_sharp_judge, _l3_sharp_example,
                           ("flatter", "not_yet"), prompt_values=_pv(query=C18[MEOK], target=SHARP), query=MEOK), "temperature"),
            N_(choice_ex("softmax-temperature.tie", ("half", "one", "quarter"), _l3_tie,
                          prompt_values=_pv(query=C18[NANEUN], key=C18[MEOK]), query=NANEUN), "temperature", "softmax"),
            N_(choice_ex("softmax-temperature.sqrt-dk", ("variance", "sum", "length"), _l3_sqrt_dk), "scale_sqrt_dk"),
        ]),
        _lesson("weighted-sum", "inspector", L4, [
            N_(number_ex("weighted-sum.output", _l4_output, tolerance=DECIMALS_2, lo=0.0, hi=1.0,
                       range_key="weighted-sum.output.outside", diagnoses=("mean", "sum_v", "only_self", "sum_w"),
                       prompt_values=_pv(query=C18[MEOK], tol=DECIMALS_2), query=MEOK), "output"),
            N_(choice_ex("weighted-sum.convex", ("no", "yes-sharp", "yes-negative"), _l4_convex,
                          prompt_values=_pv(query=C18[MEOK]), query=MEOK), "convex_combination", "softmax"),
            N_(make_it_so("weighted-sum.edit-v", L4, ("matrices.V",), _l4_judge, _l4_example, ("no_change", "not_yet"),
                           prompt_values=_pv(query=C18[MEOK], target=OUTPUT_TARGET), query=MEOK), "output"),
        ]),
        _lesson("masks", "masks", L5, [
            N_(make_it_so("masks.causal", L5, ("causal", "pad", "blocked"), _l5_judge, _l5_example, ("future", "past")),
               "causal_mask"),
            N_(number_ex("masks.weight", _l5_weight, tolerance=DECIMALS_2, lo=0.0, hi=1.0, range_key=weight,
                       diagnoses=("unmasked", "half", "self"), scenario=freeze(L5_CAUSAL),
                       prompt_values=_pv(query=C18[ONEUL], key=C18[NANEUN], tol=DECIMALS_2), query=ONEUL),
               "causal_mask", "softmax", "scale_sqrt_dk", "dot_product"),
            N_(choice_ex("masks.order", ("before", "after", "zero"), _l5_order), "mask_before_softmax", "softmax"),
        ]),
        _lesson("projections", "pipeline", L6, [
            N_(number_ex("projections.score", _l6_score, tolerance=DECIMALS_2, range_key="projections.score.outside",
                       diagnoses=("raw", "scaled"),
                       prompt_values=_pv(query=C18[SAGWA], key=C18[MEOK], tol=DECIMALS_2), query=SAGWA), "projections",
                       "dot_product"),
            N_(predict_ex("projections.top", L6, MEOK, prompt_values=_pv(query=C18[MEOK])), "projections", "dot_product"),
            N_(choice_ex("projections.k-shape", ("4x2", "3x2", "4x3", "2x4"), _l6_shape), "matrix_shapes"),
            N_(make_it_so("projections.symmetric", L6, ("matrices.W_q", "matrices.W_k", "matrices.W_v"), _l6_judge,
                           _l6_example, ("flat", "asymmetric")), "projections", "score_matrix"),
        ]),
        _lesson("multi-head", "multihead", L7, [
            N_(number_ex("multi-head.d-head", _l7_dhead, tolerance=WHOLE, lo=1, hi=MH_D, integer=True, decimals=0,
                       diagnoses=("times", "d_model", "heads"), prompt_values=_pv(d=MH_D, H=MH_H)), "head_width"),
            N_(choice_ex("multi-head.weights-shape", ("1x2x4x4", "1x4x4", "1x4x2x4", "2x4x4x1"), _l7_shape,
                          prompt_values=_pv(H=MH_H, n=len(C18))), "head_shapes"),
            N_(make_it_so("multi-head.heads", L7, (MH_D_MODEL, MH_HEADS), _l7_judge, _l7_example, ("keep_d", "wrong_dk"),
                           check_tokens=False, compare=False, prompt_values=_pv(d=MH_D, target=MH_TARGET)), "head_width"),
        ]),
        _lesson("position", "position", L8, [
            N_(choice_ex("position.shuffle", ("same", "changes", "zero"), _l8_shuffle, prompt_values=_pv(token=C18[MEOK])),
               "permutation"),
            N_(number_ex("position.pe-value", _l8_pe, tolerance=DECIMALS_2, lo=-1.0, hi=1.0,
                         range_key="position.pe-value.outside",
                       diagnoses=("degrees", "cosine", "pos0"), prompt_values=_pv(pos=1, dim=0, tol=DECIMALS_2)),
               "positional_encoding"),
            N_(make_it_so("position.move", L8, (PS_PERM, PS_D_KEY), _l8_judge, _l8_example, ("bad_perm", "same", "no_set"),
                           compare=False, prompt_values=_pv(token=C18[MEOK])), "permutation", "positional_encoding"),
        ]),
        _lesson("cross-attention", "weights", L9, [
            N_(choice_ex("cross-attention.shape", ("3x4", "4x3", "4x4", "3x3"), _l9_shape), "cross_attention"),
            N_(predict_ex("cross-attention.cielo", L9, 2, prompt_values=_pv(query=L9_TARGET[2])), "cross_attention",
               "dot_product"),
            N_(predict_ex("cross-attention.vediamo", L9, 0, prompt_values=_pv(query=L9_TARGET[0])), "cross_attention",
               "dot_product"),
            N_(number_ex("cross-attention.outputs", _l9_outputs, tolerance=WHOLE, lo=1, hi=MAX_TOKENS, integer=True, decimals=0,
                       diagnoses=("keys", "pairs")), "cross_attention", "output"),
        ]),
        _lesson("kv-cache", "cache", L10, [
            N_(number_ex("kv-cache.bytes", _l10_bytes, tolerance=HALF_UNIT, lo=0.0, hi=1e6,
                       diagnoses=("mha", "keys_only", "fp32"),
                       decimals=0, prompt_values=_pv(model=MODEL_PRESETS[KV_MODEL].name, L=MODEL_PRESETS[KV_MODEL].layers,
                                                     G=MODEL_PRESETS[KV_MODEL].n_kv_heads,
                                                     d_head=MODEL_PRESETS[KV_MODEL].d_head)), "kv_cache", "grouped_query"),
            N_(choice_ex("kv-cache.group", ("0", "1", "2", "5"), _l10_group, prompt_values=_pv(H=KV_H, G=KV_G, h=KV_HEAD)),
               "grouped_query", "heads"),
            N_(number_ex("kv-cache.keys", _l10_keys, tolerance=WHOLE, lo=1, hi=MAX_TOKENS, integer=True, decimals=0,
                       diagnoses=("all", "before"), prompt_values=_pv(token=C18[SAGWA], t=SAGWA)), "kv_cache", "causal_mask"),
            N_(number_ex("kv-cache.size", _l10_size, tolerance=WHOLE, lo=0, hi=1e6, integer=True, decimals=0,
                       diagnoses=("keys_only", "before", "all"), prompt_values=_pv(token=C18[SAGWA], t=SAGWA)),
               "kv_cache", "grouped_query"),
        ]),
        _lesson("rope", "rope", L11, [
            # predictions the panel's numbers then check (the text says why; the learner applies it to numbers)
            N_(number_ex("rope.shift-score", _l11_shift_score, tolerance=DECIMALS_2, lo=-100.0, hi=100.0,
                       diagnoses=("no_rope", "only_q"), decimals=4,
                       prompt_values=_pv(qa=ROPE_PAIR_Q[0], qb=ROPE_PAIR_Q[1], ka=ROPE_PAIR_K[0], kb=ROPE_PAIR_K[1],
                                         mq=ROPE_PAIR_AT[0], mk=ROPE_PAIR_AT[1], tol=DECIMALS_2)), "rope", "dot_product"),
            N_(number_ex("rope.angle", _l11_angle, tolerance=DECIMALS_3, lo=0.0, hi=1.0, diagnoses=("pair0", "odd", "last"),
                       decimals=3, prompt_values=_pv(i=ROPE_PAIR, d=ROPE_D, base=int(ROPE_BASE), tol=DECIMALS_3)), "rope"),
            N_(number_ex("rope.length-value", _l11_length_value, tolerance=DECIMALS_2, lo=0.0, hi=1e4,
                       diagnoses=("grows", "squared", "sum"), decimals=3,
                       prompt_values=_pv(q=", ".join(f"{x:g}" for x in ROPE_LONG_Q), pos=ROPE_LONG_AT, tol=DECIMALS_2)), "rope"),
        ]),
        _lesson("model-writing", "model", L12, [
            N_(number_ex("model-writing.paris", _l12_paris, tolerance=PERCENT_POINTS, lo=0.0, hi=100.0, decimals=1,
                       prompt_values=_pv(prompt=L12_PROMPT, tol=3)), "next_token", "softmax"),
            N_(choice_ex("model-writing.temperature", ("no", "yes"), _l12_temperature, prompt_values=_pv(prompt=L12_PROMPT)),
               "temperature", "next_token"),
            N_(number_ex("model-writing.previous", _l12_previous, tolerance=PERCENT_POINTS, lo=0.0, hi=100.0, decimals=1,
                       diagnoses=("first",), prompt_values=_pv(prompt=L12_PROMPT, tol=3)),
               "attention_sink", "heads", "causal_mask"),
        ]),
        _lesson("mla-cache", "latent", L13, [
            N_(number_ex("mla-cache.mha", _l13_mha, tolerance=WHOLE, lo=1, hi=1e7, integer=True, decimals=0,
                       diagnoses=("keys_only", "latent"),
                       prompt_values=_pv(model=MLA_MODEL.name, H=MLA_MODEL.n_heads, d_h=MLA_MODEL.nope_dim)),
               "kv_cache", "heads"),
            N_(number_ex("mla-cache.ratio", _l13_ratio, tolerance=DECIMALS_1, lo=0.0, hi=1e4, decimals=1, diagnoses=("no_rope",),
                       prompt_values=_pv(model=MLA_MODEL.name, d_c=MLA_MODEL.kv_rank, d_r=MLA_MODEL.rope_dim, tol=DECIMALS_1)),
               "latent_cache"),
            N_(number_ex("mla-cache.absorbed-width", _l13_absorbed_width, tolerance=WHOLE, lo=1, hi=1e6, integer=True,
                       decimals=0, diagnoses=("not_absorbed", "whole_row"),
                       prompt_values=_pv(**{k: _mla_sizes()[1][k] for k in ("model", "mla", "d_r", "d_h")})),
               "latent_cache", "projections"),
            N_(number_ex("mla-cache.panel", _l13_panel, tolerance=READ_OFF, lo=0.0, hi=1e3, decimals=2,
                       diagnoses=("latent_only", "with_values"), prompt_values=_pv(tol=READ_OFF)), "latent_cache"),
        ]),
        _lesson("delta-rule", "state", L14, [
            N_(number_ex("delta-rule.state", _l14_state, tolerance=WHOLE, lo=1, hi=1e9, integer=True, decimals=0,
                       diagnoses=("one_head", "vector"),
                       prompt_values=_pv(model=QWEN3_NEXT_HYBRID.name, V=QWEN3_NEXT_HYBRID.linear_value_heads,
                                         d_k=QWEN3_NEXT_HYBRID.linear_key_dim,
                                         d_v=QWEN3_NEXT_HYBRID.linear_value_dim)), "delta_rule"),
            N_(number_ex("delta-rule.read", _l14_read, tolerance=DECIMALS_2, lo=-100.0, hi=100.0, decimals=2,
                       diagnoses=("replace", "add"),
                       prompt_values=_pv(v1=DR_VALUES[0], v2=DR_VALUES[1], b2=DR_BETAS[1], tol=DECIMALS_2)), "delta_rule"),
            N_(choice_ex("delta-rule.special", ("linear", "softmax", "cache"), _l14_special), "delta_rule",
               "linear_attention"),
            N_(number_ex("delta-rule.erase", _l14_erase, tolerance=DECIMALS_2, lo=-100.0, hi=100.0, decimals=2,
                       diagnoses=("before", "add"), prompt_values=_pv(token=C18[ONEUL], t=ONEUL, tol=DECIMALS_2)), "delta_rule"),
        ]),
        _lesson("kept-per-token", "kept", L15, [
            N_(number_ex("kept-per-token.csa", _l15_csa, tolerance=WHOLE, lo=0, hi=1e6, decimals=0,
                         diagnoses=("no_index", "hca", "whole"),
                         prompt_values=_pv(model=KEPT_V4.name, d=KEPT_V4.d_head, d_I=KEPT_V4.index_head_dim,
                                           m=KEPT_V4.csa_rate, w=KEPT_V4.window)), "kept_per_token", "latent_cache"),
            N_(choice_ex("kept-per-token.flat", KEPT_CHOICES, _l15_flat), "kept_per_token", "delta_rule"),
            N_(number_ex("kept-per-token.head-state", _l15_head_state, tolerance=WHOLE, lo=1, hi=1e9, integer=True, decimals=0,
                         diagnoses=("sum", "all_heads"),
                         prompt_values=_pv(model=KEPT_GDN.name, d_k=KEPT_GDN.linear_key_dim, d_v=KEPT_GDN.linear_value_dim)),
               "kept_per_token", "delta_rule"),
        ]),
    )


LESSONS: tuple[Lesson, ...] = _build()
BY_ID: dict[str, Lesson] = {lesson.id: lesson for lesson in LESSONS}
_EX_BY_ID: dict[str, Exercise] = {ex.id: ex for lesson in LESSONS for ex in lesson.exercises}


_LESSON_OF: dict[str, Lesson] = {ex.id: lesson for lesson in LESSONS for ex in lesson.exercises}


def lesson(lesson_id: str) -> Lesson:
    """The lesson with this id (KeyError if none)."""
    return BY_ID[lesson_id]


def lesson_of(exercise_id: str) -> Lesson:
    """The lesson that asks this exercise now (KeyError if none)."""
    return _LESSON_OF[exercise_id]


def exercise(exercise_id: str) -> Exercise:
    """The exercise with this id (KeyError if none)."""
    return _EX_BY_ID[exercise_id]
