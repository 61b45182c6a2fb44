"""AppTest: the tiled-attention page (online softmax replayed tile by tile) against torch's SDPA and a
numpy replay of the running maximum and sum."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from core import tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

PAGE = "app_pages/tiled_attention.py"
KEYS = state.TILED_ATTENTION


def qkv(n: int, d: int = 4):
    return [tokens.projection(n, d, seed=0, name=f"ta.{x}") for x in "qkv"]


def at_with(**values):
    at = page(PAGE, run=False)
    for name, v in values.items():
        at.session_state[getattr(KEYS, name)] = v
    return at.run()


def running(q, k, bq: int, bk: int, step: int):
    """(rows, m, ℓ) after tile ``step`` (1-based) in FlashAttention's order, replayed in numpy."""
    q, k = q.double().numpy(), k.double().numpy()
    n, d = q.shape
    order = [(q0, k0) for q0 in range(0, n, bq) for k0 in range(0, n, bk)]
    q0, k0 = order[step - 1]
    s = q[q0:q0 + bq] @ k[:k0 + bk].T / np.sqrt(d)  # every key up to this tile's last one
    m = s.max(axis=1)
    return s, m, np.exp(s - m[:, None]).sum(axis=1)


@pytest.mark.parametrize(("n", "bq", "bk", "step"), [(8, 4, 3, 2), (8, 4, 3, 6), (5, 2, 2, 4)])
def test_every_tile_matches_a_numpy_replay(n, bq, bk, step):
    at = at_with(n=n, block_q=bq, block_k=bk, step=step)
    no_errors(at)
    q, k, v = qkv(n)
    s, m, ell = running(q, k, bq, bk, step)
    df = at.dataframe[0].value
    close(df.iloc[:, 2].to_numpy(), m, tol=1.5e-6)
    close(df.iloc[:, 5].to_numpy(), ell, tol=2e-6 * max(1.0, ell.max()))
    w = np.exp(s - m[:, None]) / ell[:, None]
    rows = slice(*[int(x) for x in (df.iloc[0, 0], int(df.iloc[-1, 0]) + 1)])
    close(heat(at, KEYS.partial), w @ v.double().numpy()[: s.shape[1]], tol=2e-6)
    assert rows.stop - rows.start == s.shape[0]


def test_the_final_output_equals_sdpa():
    at = at_with(n=8, block_q=3, block_k=2)
    no_errors(at)
    q, k, v = qkv(8)
    ref = torch.nn.functional.scaled_dot_product_attention(q[None], k[None], v[None])[0]
    close(heat(at, KEYS.output), ref, tol=2e-6)
    close(heat(at, KEYS.reference), ref, tol=2e-6)
    assert "Equal: max |tiled − ordinary|" in texts(at)


def test_step_buttons_walk_the_tiles():
    at = at_with(n=6, block_q=3, block_k=3)  # 2 × 2 tiles
    assert at.session_state[KEYS.step] == 1
    for want in (2, 3, 4):
        at.button(key=KEYS.step_next).click().run()
        assert at.session_state[KEYS.step] == want
    assert at.button(key=KEYS.step_next).disabled  # the last tile
    assert heat(at, KEYS.tile).sum() == 4  # every tile done
    at.button(key=KEYS.step_prev).click().run()
    assert heat(at, KEYS.tile).sum() == 3


@pytest.mark.parametrize(("name", "value"), [("n", 10**6), ("block_k", 0), ("block_q", "x"), ("step", 999)])
def test_bad_and_tampered_values_get_a_message(name, value):
    at = at_with(**{name: value})
    assert not at.exception
    assert at.error or at.warning
    assert heat(at, KEYS.output).shape[1] == 4


def test_memory_chart_and_korean():
    import json

    at = page(PAGE, query={"lang": "ko"})
    no_errors(at)
    fig = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id.endswith(KEYS.chart))
    full, block = fig["data"][0]["y"], fig["data"][1]["y"]
    assert full[-1] > 10 * block[-1]
    assert "타일" in texts(at)
