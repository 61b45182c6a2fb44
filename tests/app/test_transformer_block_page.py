"""AppTest: the Transformer-block page against core (and so against torch's TransformerEncoderLayer)."""

from __future__ import annotations

import numpy as np
import torch

from core import block, tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

S2S, BLOCK, VIT = "pages/seq2seq.py", "pages/transformer_block.py", "pages/vision_transformer.py"
C18 = list(tokens.C18_TOKENS)


def test_block_post_and_pre_norm_equal_core():
    at = page(BLOCK)
    no_errors(at)
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"tb.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    W |= {"W_1": tokens.projection(8, 32, seed=0, name="tb.W_1"), "W_2": tokens.projection(32, 8, seed=0, name="tb.W_2"),
          "b_1": torch.zeros(32), "b_2": torch.zeros(8)}
    for norm in ("post", "pre"):
        tr = block.transformer_block(X, n_heads=2, norm=norm, **W)
        close(heat(at, state.item(state.TRANSFORMER_BLOCK.map, norm, "y")), np.round(tr.y.numpy(), 2), tol=0.006)
        close(heat(at, state.item(state.TRANSFORMER_BLOCK.map, norm, "attn")), np.round(tr.attn.numpy(), 2), tol=0.006)
    assert "(C31)" in texts(at) and all("= 0" in c.value for c in at.caption if "FFN(P·Z)" in c.value)
    at.radio(key=state.TRANSFORMER_BLOCK.act).set_value("gelu").run()
    tr = block.transformer_block(X, n_heads=2, norm="pre", activation="gelu", **W)
    close(heat(at, state.item(state.TRANSFORMER_BLOCK.map, "pre", "y")), np.round(tr.y.numpy(), 2), tol=0.006)


def test_block_complexity_is_measured_on_request():
    at = page(BLOCK)
    assert not any(el.proto.id.endswith("-" + state.TRANSFORMER_BLOCK.time) for el in at.get("plotly_chart"))
    at.button(key=state.TRANSFORMER_BLOCK.measure).click().run()
    no_errors(at)
    assert any(el.proto.id.endswith("-" + state.TRANSFORMER_BLOCK.mem) for el in at.get("plotly_chart"))
