"""AppTest: the seq2seq page against core's decoder."""

from __future__ import annotations

import threading

import numpy as np
import torch

from core import seq2seq, seq2seq_store, tokens
from serving import training
from ui import compute, state
from ui.i18n import t

from .helpers import close, heat, no_errors, page, spec, texts

S2S, BLOCK, VIT = "app_pages/seq2seq.py", "app_pages/transformer_block.py", "app_pages/vision_transformer.py"
C18 = list(tokens.C18_TOKENS)


def test_seq2seq_trains_in_the_app_and_shows_cores_attention(monkeypatch):
    """The train button goes through the server's queue and the page then shows the model trained
    here — not the shipped one. A short real training (30 steps) stands in for the 1,500-step one;
    its numbers are compared with itself (the same model object), never with another training."""
    workers = []

    def train(cfg, seed, *, callback=None):  # seq2seq.train itself, noting the thread it ran on
        workers.append(threading.current_thread())
        return seq2seq.train(cfg, seed, callback=callback)

    queue = training.TrainingQueue(train, base=seq2seq.Config(steps=30), max_waiting=2, max_results=2)
    monkeypatch.setattr(compute, "seq2seq_queue", lambda: queue)  # the page's call
    monkeypatch.setattr(compute.trained, "seq2seq_queue", lambda: queue)  # its family's (compute.seq2seq_model)
    compute.seq2seq_run.clear()
    try:
        at = page(S2S)
        no_errors(at)
        at.radio(key=state.SEQ2SEQ.task).set_value("reverse").run()
        at.radio(key=state.SEQ2SEQ.att).set_value("dot").run()
        shipped = seq2seq_store.shipped("reverse", "dot")
        assert t("s2.trained.shipped", lang="en", acc=f"{100 * shipped.accuracy:.1f}", s=f"{shipped.seconds:.1f}",
                 n=shipped.cfg.steps) in [s.value for s in at.success]
        at.button(key=state.SEQ2SEQ.train).click().run()
        handle = queue.find("reverse", "dot", 0)
        assert handle is not None, "the click did not reach the training queue"
        own = handle.wait(120)  # the post-condition: this training is over
        at.run()
        no_errors(at)
        assert own is not shipped and own.cfg.steps == 30
        shown = [s.value for s in at.success]
        assert t("s2.trained.own", lang="en", acc=f"{100 * own.accuracy:.1f}", s=f"{own.seconds:.1f}", n=30) in shown
        assert state.SEQ2SEQ.train not in [b.key for b in at.button]  # no second training of one's own model
        words = at.text_input(key=state.SEQ2SEQ.input).value.split()
        task = seq2seq.get_task("reverse")
        dec = seq2seq.greedy_decode(own.params, own.cfg, torch.tensor([task.src_ids(words)]), len(words))
        close(heat(at, state.SEQ2SEQ.map), np.round(dec.attention_map[0].numpy(), 2), tol=0.006)
        assert spec(at, state.SEQ2SEQ.map)["ys"][0].split(" ", 1)[1] == task.tgt_words(dec.predictions[0].tolist())[0]
    finally:
        queue.shutdown()
        compute.seq2seq_run.clear()
    assert len(workers) == 1 and not workers[0].is_alive(), "a training thread outlived the test"
    # a bad input is refused; the model is not run
    at.text_input(key=state.SEQ2SEQ.input).input("a b <script>").run()
    assert not at.exception and any("<script>" not in e.value and "not:" in e.value for e in at.error)


def _caption_from_curves(task: str) -> list[str]:
    """The sentences the bottleneck caption must hold, computed here from the curves file by hand."""
    import json

    from ui.i18n import table

    data = json.loads((seq2seq_store.checkpoint_path("copy", "none").parent / "curves.json").read_text())
    c = data["curves"][task]
    cfg = seq2seq.Config()
    L = list(range(2, 13))
    longer = [i for i, n in enumerate(L) if n > cfg.max_len]
    att = sum(c["additive"][i] for i in longer) / len(longer)
    none = sum(c["none"][i] for i in longer) / len(longer)
    verdict = "same" if abs(att - none) <= 0.02 else ("better" if att > none else "worse")
    en = table("en")
    return [en[f"s2.curve.longer.{verdict}"].split(":")[0], f"{100 * c['additive'][-1]:.0f}% against {100 * c['none'][-1]:.0f}%"]


def test_the_bottleneck_caption_is_written_from_each_tasks_own_curves():
    at = page(S2S)
    for task, verdict in (("copy", "falls more slowly"), ("reverse", "falls faster")):
        at.radio(key=state.SEQ2SEQ.task).set_value(task).run()
        no_errors(at)
        caption = "\n".join(c.value for c in at.caption)
        for sentence in _caption_from_curves(task):
            assert sentence in caption, (task, sentence, caption)
        assert verdict in caption  # reverse: 0.18 with attention against 0.39 without at length 12
    assert "attention can do worse" not in caption and "can look back" not in texts(at)
    at.radio(key=state.SEQ2SEQ.task).set_value("translate").run()
    no_errors(at)
    assert "this chart is the reverse task's" in texts(at)


def test_the_toy_translation_caption_says_what_the_shipped_models_do():
    at = page(S2S)
    at.radio(key=state.SEQ2SEQ.task).set_value("translate").run()
    no_errors(at)
    A = heat(at, state.SEQ2SEQ.map)
    words = at.text_input(key=state.SEQ2SEQ.input).value.split()
    spread = int(np.argmin(A.max(axis=1)))  # the most spread output word, by hand
    top = np.argsort(-A[spread])[:2]
    caption = next(c.value for c in at.caption if "most spread output word" in c.value)
    assert f"puts {A[spread, top[0]]:.2f} on {words[top[0]]}" in caption
    plain = seq2seq_store.shipped("translate", "none")
    assert plain.accuracy > 0.99 and f"without attention gets {100 * plain.accuracy:.0f}%" in caption
    assert "attending to" not in caption
