"""AppTest: the Transformer-block page against core (and so against torch's TransformerEncoderLayer)."""

from __future__ import annotations

import numpy as np
import torch

from core import block, tokens
from ui import state

from .helpers import close, heat, no_errors, page, texts

S2S, BLOCK, VIT = "app_pages/seq2seq.py", "app_pages/transformer_block.py", "app_pages/vision_transformer.py"
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
    assert "Residual shapes" in texts(at) and "(4×8)" in texts(at)
    # the FFN check: changing token 0 moves only its own FFN row — the numbers shown are core's
    checks = [s.value for s in at.success if "FFN treats every token on its own" in s.value]
    assert len(checks) == 2
    for norm, shown in zip(("post", "pre"), checks, strict=True):
        chk = block.seeded_block(X, seed=0, n_heads=2, d_ff=32, norm=norm).ffn_check
        assert chk.other_rows_gap == 0.0 and chk.changed_row_gap > 0.01
        assert f"by up to {chk.changed_row_gap:.2g} and every other token's by 0" in shown, shown
        # independently: perturb token 0 of what the FFN received and run torch's own layers
        tr = block.transformer_block(X, n_heads=2, norm=norm, **W)
        z = (tr.norm2 if norm == "pre" else tr.z).clone()
        ffn = torch.nn.Sequential(torch.nn.Linear(8, 32, bias=False), torch.nn.ReLU(), torch.nn.Linear(32, 8, bias=False))
        with torch.no_grad():
            ffn[0].weight.copy_(W["W_1"].T)
            ffn[2].weight.copy_(W["W_2"].T)
            before = ffn(z)
            z[0] += 3.0
            after = ffn(z)
        assert torch.equal(before[1:], after[1:]) and not torch.equal(before[0], after[0])
    at.radio(key=state.TRANSFORMER_BLOCK.act).set_value("gelu").run()
    tr = block.transformer_block(X, n_heads=2, norm="pre", activation="gelu", **W)
    close(heat(at, state.item(state.TRANSFORMER_BLOCK.map, "pre", "y")), np.round(tr.y.numpy(), 2), tol=0.006)


def test_block_complexity_is_measured_on_request():
    at = page(BLOCK)
    assert not any(el.proto.id.endswith("-" + state.TRANSFORMER_BLOCK.time) for el in at.get("plotly_chart"))
    at.button(key=state.TRANSFORMER_BLOCK.measure).click().run()
    no_errors(at)
    assert any(el.proto.id.endswith("-" + state.TRANSFORMER_BLOCK.mem) for el in at.get("plotly_chart"))
