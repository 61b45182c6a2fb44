"""AppTest: the seq2seq page against core's decoder."""

from __future__ import annotations

import numpy as np
import torch

from core import seq2seq, tokens
from ui import state

from .helpers import close, heat, no_errors, page, spec, texts

S2S, BLOCK, VIT = "app_pages/seq2seq.py", "app_pages/transformer_block.py", "app_pages/vision_transformer.py"
C18 = list(tokens.C18_TOKENS)


def test_seq2seq_trains_in_the_app_and_shows_cores_attention():
    at = page(S2S)
    no_errors(at)
    assert at.button(key=state.SEQ2SEQ.train)  # nothing trained yet for this configuration
    at.radio(key=state.SEQ2SEQ.task).set_value("reverse").run()
    at.radio(key=state.SEQ2SEQ.att).set_value("dot").run()
    at.button(key=state.SEQ2SEQ.train).click().run()
    no_errors(at)
    ref = seq2seq.train(seq2seq.Config(task="reverse", attention="dot"), seed=0)  # independent, same seed
    assert f"{100 * ref.accuracy:.1f}%" in texts(at)
    words = at.text_input(key=state.SEQ2SEQ.input).value.split()
    task = seq2seq.get_task("reverse")
    dec = seq2seq.greedy_decode(ref.params, ref.cfg, torch.tensor([task.src_ids(words)]), len(words))
    close(heat(at, state.SEQ2SEQ.map), np.round(dec.attention_map[0].numpy(), 2), tol=0.006)
    assert spec(at, state.SEQ2SEQ.map)["ys"][0].split(" ", 1)[1] == task.tgt_words(dec.predictions[0].tolist())[0]
    # a bad input is refused; the model is not run
    at.text_input(key=state.SEQ2SEQ.input).input("a b <script>").run()
    assert not at.exception and any("<script>" not in e.value and "not:" in e.value for e in at.error)
