"""AppTest: the Gated DeltaNet page against core.gated_delta_rule and the recurrence written out in numpy: the state
after each token (◀ ▶), what was predicted, written and read, the chunked form's gap, the special cases (g = 0; no
delta), the hybrid's memory; β or g out of range from a tampered state get a message."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import core
from core import tokens
from ui import compute, state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/delta_rule.py"
KEYS = state.DELTA_RULE
C18 = list(tokens.C18_TOKENS)


def qkv(seed: int = 0):
    X = tokens.embed(C18, 8, seed=seed)
    return [X @ tokens.projection(8, 4, seed=seed, name=f"dr.{w}") for w in ("W_q", "W_k", "W_v")]


def by_hand(beta: float, g: float, delta: bool = True):
    """The recurrence in numpy: q, k L2-normalised; S ← e^g S; S += k (β(v − Sᵀk))ᵀ (or k (βv)ᵀ); o = Sᵀq/√d_k."""
    q, k, v = (x.double().numpy() for x in qkv())
    q, k = (x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-6) for x in (q, k))
    S, states, preds, outs = np.zeros((4, 4)), [], [], []
    for t in range(len(q)):
        S = np.exp(g) * S
        pred = S.T @ k[t]
        S = S + np.outer(k[t], beta * ((v[t] - pred) if delta else v[t]))
        states.append(S.copy())
        preds.append(pred)
        outs.append(S.T @ q[t] / 2.0)
    return np.array(states), np.array(preds), np.array(outs)


def run(lang=None, **values):
    at = page(PAGE, run=False, query={"lang": lang} if lang else None)
    for key, value in values.items():
        at.session_state[getattr(KEYS, key)] = value
    return at.run()


@pytest.mark.parametrize(("beta", "g"), [(0.5, -0.2), (1.0, 0.0), (0.25, -2.0)])
def test_every_state_equals_the_recurrence(beta, g):
    at = run(beta=beta, g=g)
    no_errors(at)
    states, preds, outs = by_hand(beta, g)
    q, k, v = qkv()
    tr = core.gated_delta_rule(q, k, v, beta=torch.full((4,), beta), g=torch.full((4,), g), l2_normalize_qk=True)
    for t in range(len(C18)):
        if t:
            at.button(key=KEYS.step_next).click().run()
        assert f"**Token t = {t}**" in texts(at)
        close(heat(at, KEYS.state), states[t], tol=3e-6)
        close(heat(at, KEYS.state), tr.states[t], tol=2e-6)
        step = heat(at, KEYS.write)  # rows: k, v, prediction, written, q, read
        close(step[2], preds[t], tol=3e-6)
        close(step[3], beta * (tr.v[t].numpy() - preds[t]), tol=3e-6)
        close(step[5], outs[t], tol=3e-6)
    assert at.button(key=KEYS.step_next).disabled
    at.button(key=KEYS.step_prev).click().run()
    close(heat(at, KEYS.state), states[len(C18) - 2], tol=3e-6)


def test_chunked_form_and_special_cases():
    at = run(beta=0.75, g=-0.5)
    no_errors(at)
    ok = "\n".join(s.value for s in at.success)
    assert "The recurrent and chunked forms agree" in ok and f"{compute.DELTA_CHUNK} tokens at a time" in ok
    close(heat(at, state.item(KEYS.outputs, "gated")), by_hand(0.75, -0.5)[2], tol=3e-6)
    close(heat(at, state.item(KEYS.outputs, "delta")), by_hand(0.75, 0.0)[2], tol=3e-6)
    # linear attention: no correction, β = 1, g = 0: o_t = Σ_{s≤t} (q_t·k_s) v_s / √d_k
    q, k, v = (x.double().numpy() for x in qkv())
    q, k = (x / np.sqrt((x * x).sum(-1, keepdims=True) + 1e-6) for x in (q, k))
    linear = np.array([sum((q[t] @ k[s]) * v[s] for s in range(t + 1)) / 2.0 for t in range(len(q))])
    close(heat(at, state.item(KEYS.outputs, "linear")), linear, tol=3e-6)
    # choosing the linear rule: the state is the plain running sum Σ k_s v_sᵀ
    at.session_state[KEYS.rule] = "linear"
    at.session_state[KEYS.step] = 3
    at.run()
    no_errors(at)
    close(heat(at, KEYS.state), sum(np.outer(k[s], v[s]) for s in range(3)), tol=3e-6)
    assert heat(at, KEYS.write).shape == (5, 4)  # no prediction row without the delta


def test_the_hybrids_memory():
    at = run()
    no_errors(at)
    df = at.dataframe[0].value
    first = df.iloc[0]
    # 4,096 tokens: 48 layers × 2 × 2 KV heads × 256 = 201.3 M; hybrid: 12 such layers (50.3 M)
    # plus 36 layers × 32 states of 128 × 128 (18.9 M)
    assert list(first) == ["4,096", "201.3 M", "50.3 M", "18.9 M", "69.2 M"]
    assert "48 layers: 36 Gated DeltaNet layers and 12 attention layers" in texts(at)


@pytest.mark.parametrize(("key", "value", "words"), [("beta", 1.7, "is outside [0, 1]"), ("beta", -0.1, "is outside [0, 1]"),
                                                      ("beta", "x", "is outside [0, 1]"), ("g", 0.5, "is not a log decay"),
                                                      ("g", float("inf"), "is not a log decay"),
                                                      ("rule", "mamba", "That rule is not one of this page's"),
                                                      ("step", 99, "That step does not exist")])
def test_tampered_values_get_a_message(key, value, words):
    at = run(**{key: value})
    assert not at.exception
    said = [m.value for m in (*at.error, *at.warning)]
    assert any(words in m for m in said), said
    assert heat(at, KEYS.state).shape == (4, 4)


def test_korean():
    at = run(lang="ko", beta=3.0)
    assert not at.exception
    assert any("[0, 1] 밖입니다" in e.value for e in at.error), [e.value for e in at.error]
    assert "행렬" in texts(at) and "순환 형태와 청크 형태가 같습니다" in texts(at)


def test_rule_beta_g_and_step_come_back_from_the_link():
    at = run(rule="delta", beta=0.35, g=-1.0, step=3)
    params = {k: (v[0] if isinstance(v, list) else v) for k in at.query_params for v in [at.query_params[k]]}
    assert (params["rule"], params["beta"], params["g"], params["dr_step"]) == ("delta", "0.35", "-1.0", "3")
    again = page(PAGE, query=params)
    no_errors(again)
    assert "**Token t = 2**" in texts(again)
    close(heat(again, KEYS.state), by_hand(0.35, 0.0)[0][2], tol=3e-6)


# ---------------------------------------------------------------- the whole layers of 2026 (issue 55)
C18_TOKENS = list(tokens.C18_TOKENS)


def _out(name: str, *parts) -> str:
    return state.item(KEYS.outputs, name, *parts)


@pytest.mark.parametrize("beta_max", [1.0, 2.0])
def test_the_whole_layers_maps_equal_core_layer_demos(beta_max):
    """The taps, β, α, the fades and Mamba-2's C, B, x on screen are core.variants.layer_demos' on the same tokens."""
    from core.variants import layer_demos as L

    at = page(PAGE, run=False)
    at.session_state[state.item(KEYS.beta, "max")] = beta_max
    at.run()
    no_errors(at)
    g = L.gdn_demo(C18_TOKENS, 0, beta_max)
    k, m = L.kda_demo(C18_TOKENS, 0), L.mamba2_demo(C18_TOKENS, 0)
    close(heat(at, _out("taps")), g.taps.numpy(), tol=2e-6)
    close(heat(at, _out("beta")), g.beta[0].numpy(), tol=2e-6)
    close(heat(at, _out("alpha")), g.decay[0].numpy(), tol=2e-6)
    close(heat(at, _out("kda_fade")), torch.exp(k.log_decay[0, 0]).numpy(), tol=2e-6)
    close(heat(at, _out("gdn_fade"))[:, 0], g.decay[0, 0].numpy(), tol=2e-6)
    for name, want in (("C", m.scan.q), ("B", m.scan.k), ("x", m.scan.v)):
        close(heat(at, _out("m2", name)), want[0, 0].numpy(), tol=2e-6)
    assert heat(at, _out("beta")).max() < beta_max
    state_n, conv_n = L.cache_values(g)
    assert f"**{state_n}** numbers of state" in texts(at) and f"**{conv_n}** conv inputs" in texts(at)
    assert "Untrained layers" in texts(at) and "#kept-2026" in texts(at)


@pytest.mark.parametrize("value", [3.0, "two", -1])
def test_a_beta_range_out_of_range_is_named_not_a_traceback(value):
    at = page(PAGE, run=False)
    at.session_state[state.item(KEYS.beta, "max")] = value
    at.run()
    assert not at.exception
    assert any("is not a β range this page offers" in e.value for e in at.error), [e.value for e in at.error]
    assert heat(at, _out("beta")).max() < 1  # drawn with β in (0, 1)


def test_a_tampered_beta_range_in_the_link_is_refused_in_korean():
    at = page(PAGE, query={"beta_max": "7", "lang": "ko"})
    assert not at.exception
    assert any("beta_max" in w.value for w in at.warning), [w.value for w in at.warning]
    assert "학습되지 않은 층" in texts(at)
