"""AppTest: the sinks, gates and caps page against core.modern_attention and the formulas written out in numpy: one
query's row under plain softmax, a learned sink per head (the row sums to 1 − the sink's share), QK-norm and
soft-capping; the logits before and after the cap; the output gate; tampered controls get a message."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/sinks_gates.py"
KEYS = state.SINKS_GATES
C18 = list(tokens.C18_TOKENS)
D, H = 16, 2


def traces(sinks, cap, seed: int = 0) -> dict:
    X = tokens.embed(C18, D, seed=seed)
    W = {n: tokens.projection(D, D, seed=seed, name=f"sg.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    base = dict(W, n_heads=H, causal=True)
    return {"plain": core.modern_attention(X, **base),
            "sink": core.modern_attention(X, **base, sinks=torch.tensor(sinks)),
            "qk_norm": core.modern_attention(X, **base, q_norm=torch.ones(D // H), k_norm=torch.ones(D // H)),
            "softcap": core.modern_attention(X, **base, softcap=cap),
            "gate": core.modern_attention(X, **base, gate_W=tokens.projection(D, H, seed=seed, name="sg.W_gate"))}


def run(query=None, sinks=None, cap=None, lang=None):
    at = page(PAGE, run=False, query={"lang": lang} if lang else None)
    if query is not None:
        at.session_state[KEYS.query] = query
    for h, z in enumerate(sinks or ()):
        at.session_state[state.item(KEYS.sink, h)] = z
    if cap is not None:
        at.session_state[KEYS.cap] = cap
    return at.run()


@pytest.mark.parametrize(("i", "sinks", "cap"), [(2, (0.5, 2.0), 1.0), (3, (1.0, 3.0), 1.5), (0, (-4.0, 8.0), 10.0)])
def test_the_row_under_each_switch_is_cores(i, sinks, cap):
    at = run(i, sinks, cap)
    no_errors(at)
    tr = traces(sinks, cap)
    for h in range(H):
        shown = heat(at, state.item(KEYS.rows, h))  # rows: plain, sink, QK-norm, soft-cap; columns: keys 0 … i
        assert shown.shape == (4, i + 1)
        for row, name in zip(shown, ("plain", "sink", "qk_norm", "softcap"), strict=True):
            close(row, tr[name].weights[h, i, : i + 1])
        # the sink by hand: e^s / (e^z + Σ e^s), and the sink's share 1 − Σα
        s = tr["plain"].scaled[h, i, : i + 1].double().numpy()
        by_hand = np.exp(s) / (np.exp(sinks[h]) + np.exp(s).sum())
        close(shown[1], by_hand)
        share = float(tr["sink"].sink_weight[h, i])
        assert abs(share - (1 - by_hand.sum())) < 1e-6 and share > 0
        assert f"took **{share:.6f}** of the row" in texts(at)
        close(shown[[0, 2, 3]].sum(1), [1, 1, 1])


def test_soft_capping_keeps_every_logit_within_c():
    at = run(3, (1.0, 3.0), 0.5)
    no_errors(at)
    tr = traces((1.0, 3.0), 0.5)
    shown = heat(at, KEYS.logits)  # head 0 before, after; head 1 before, after
    for h in range(H):
        close(shown[2 * h], tr["softcap"].scaled[h, 3])
        close(shown[2 * h + 1], tr["softcap"].capped[h, 3])
        close(shown[2 * h + 1], 0.5 * np.tanh(tr["softcap"].scaled[h, 3].double().numpy() / 0.5))
    assert np.abs(shown[1::2]).max() < 0.5 < np.abs(shown[0::2]).max()


def test_qk_norm_bound_and_the_gate():
    at = run(3)
    no_errors(at)
    tr = traces((1.0, 3.0), 1.5)
    normed = float(tr["qk_norm"].scaled[:, 3].abs().max())
    assert normed <= (D // H) ** 0.5 + 1e-6
    assert f"**{normed:.6f}** with it" in texts(at)
    close(heat(at, KEYS.gate), tr["gate"].gate)  # (n, H): σ(x W_gate), one gate per token and head
    assert ((heat(at, KEYS.gate) > 0) & (heat(at, KEYS.gate) < 1)).all()


@pytest.mark.parametrize(("query", "sinks", "cap", "words"), [
    (99, None, None, "is not a token here"), (None, ("lots", 1.0), None, "is not a number from -4.0 to 8.0"),
    (None, (float("nan"), 1.0), None, "is not a number"), (None, None, -1.0, "is not a number from 0.5 to 10.0"),
    (True, None, None, "is not a token here")])
def test_tampered_controls_get_a_message(query, sinks, cap, words):
    at = run(query, sinks, cap)
    assert not at.exception
    said = [m.value for m in (*at.error, *at.warning)]
    assert any(words in m for m in said), said
    assert heat(at, state.item(KEYS.rows, 0)).shape[0] == 4


def test_korean():
    at = run(lang="ko", cap=-2.0)
    assert not at.exception
    assert any("0.5부터 10.0까지의 수가 아닙니다" in e.value for e in at.error), [e.value for e in at.error]
    assert "싱크" in texts(at) and "출력 게이트" in texts(at)


def test_query_sinks_and_cap_come_back_from_the_link():
    at = run(1, (2.5, -1.0), 4.0)
    params = {k: (v[0] if isinstance(v, list) else v) for k in at.query_params for v in [at.query_params[k]]}
    assert (params["sg_q"], params["sink0"], params["sink1"], params["cap"]) == ("1", "2.5", "-1.0", "4.0")
    again = page(PAGE, query=params)
    no_errors(again)
    close(heat(again, state.item(KEYS.rows, 0))[1], traces((2.5, -1.0), 4.0)["sink"].weights[0, 1, :2])
