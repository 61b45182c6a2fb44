"""Trained models: seq2seq (shipped models, the server's one training queue), all-MiniLM-L6-v2 and the ViT trained on
generated shapes, each loaded once per server."""

from __future__ import annotations

import dataclasses

import numpy as np
import streamlit as st
import torch

from core import seq2seq, seq2seq_store
from serving import training

from .. import memo
from .common import HOUR


@st.cache_resource(show_spinner=False)
def seq2seq_queue() -> training.TrainingQueue:
    """The server's one training queue: one training at a time, at most 8 waiting, the 8 most
    recent results kept (bounded by design, whoever asks)."""
    return training.TrainingQueue(max_waiting=8, max_results=8)


def seq2seq_model(task: str, attention: str, seed: int, own: bool) -> seq2seq.Trained | None:
    """The learner's own trained model (when they trained one and it is done), else the shipped one."""
    if own:
        handle = seq2seq_queue().find(task, attention, seed)
        if handle is not None and handle.result is not None:
            return handle.result
    return seq2seq_store.shipped(task, attention)


@memo.cached(max_entries=64, ttl=HOUR)
def seq2seq_run(task: str, attention: str, seed: int, own: bool, words: tuple[str, ...]) -> dict | None:
    """Greedy decoding of ``words`` by the model, with the reference answer and every step's
    scores, weights, s_{t−1} and c_t (numpy); None when no model is available."""
    model = seq2seq_model(task, attention, seed, own)
    if model is None:
        return None
    tk = seq2seq.get_task(task)
    ref = seq2seq_store.reference(tk, list(words))
    out = seq2seq.greedy_decode(model.params, model.cfg, torch.tensor([tk.src_ids(list(words))]), len(ref))
    pred = tk.tgt_words(out.predictions[0].tolist())
    return {"pred": pred, "ref": ref, "right": sum(p == r for p, r in zip(pred, ref, strict=True)),
            "map": None if out.attention_map is None else out.attention_map[0].numpy(),
            "steps": [{"scores": s.scores[0].numpy(), "weights": s.weights[0].numpy(), "s_prev": s.s_prev[0].numpy(),
                       "context": s.context[0].numpy()} for s in out.steps] if out.attention_map is not None else []}


@memo.cached(max_entries=8, ttl=HOUR)
def seq2seq_example(task: str, seed: int) -> str:
    """A seeded example input of six words for the task."""
    tk = seq2seq.get_task(task)
    src, _ = seq2seq.make_batch(tk, 1, (6, 6), torch.Generator().manual_seed(seed + 11))
    return " ".join(tk.src_vocab[i] for i in src[0].tolist() if i != seq2seq.PAD)


MODEL_MAX_TOKENS = 128  # the longest sentence the trained-model page runs ([CLS] and [SEP] included)


@st.cache_resource(show_spinner=False)
def pretrained_model():
    """all-MiniLM-L6-v2 (core.pretrained.minilm), loaded once per server and shared by every session.

    Raises core.pretrained.ModelNotInstalled (not cached: an install is picked up on the next run)."""
    from core import pretrained

    return pretrained.minilm()


@memo.cached(max_entries=32, ttl=HOUR)
def pretrained_tokens(text: str) -> list[str]:
    """The WordPiece tokens of ``text`` with [CLS] and [SEP] (however long it is)."""
    return pretrained_model().tokenize(text)[0]


@memo.cached(max_entries=16, ttl=HOUR)
def pretrained_trace(text: str, device: str) -> dict:
    """One sentence through the encoder, as numpy: tokens, attentions (L, H, n, n), q, k, v (L, H, n, 32)
    and the head patterns {name: (L, H)} with their row counts. ValueError beyond MODEL_MAX_TOKENS.

    16 entries of at most 128 tokens are at most ~130 MB (attentions and q, k, v: ~8 MB each)."""
    from core import pretrained

    tr = pretrained_model().trace(text, MODEL_MAX_TOKENS, device=device)
    pats = pretrained.head_patterns(tr)
    cpu = lambda x: x.detach().cpu().numpy()  # noqa: E731
    return {"tokens": list(tr.tokens), "words": list(tr.words), "attentions": cpu(tr.attentions),
            "q": cpu(tr.q), "k": cpu(tr.k), "v": cpu(tr.v),
            "patterns": {name: cpu(x) for name, x in pats.as_dict().items()}, "rows": dict(pats.rows)}


@memo.cached(max_entries=4, ttl=HOUR)
def pretrained_swap(text_a: str, text_b: str, query: str, key: str, device: str) -> dict:
    """core.pretrained.swap_experiment on two sentences (one word changed), as a plain dict."""

    from core import pretrained

    m = pretrained_model()
    e = pretrained.swap_experiment(m.trace(text_a, MODEL_MAX_TOKENS, device=device),
                                   m.trace(text_b, MODEL_MAX_TOKENS, device=device), query, key)
    return dataclasses.asdict(e) | {"still_on_key": e.still_on_key}


SHAPES_SEED = 2024  # the page's generated sample images: seed SHAPES_SEED + k for the k-th "new images"


SCORE_IMAGES = 300  # fresh images for the accuracy and attention-focus measures (once per server)


def vit_trained_ready() -> bool:
    """Whether the trained ViT can be used: core.models.vit_trained and its checkpoint are there."""
    try:
        from core.models import vit_trained
    except ImportError:
        return False
    return vit_trained.CHECKPOINT.is_file()


@st.cache_resource(show_spinner=False)
def vit_trained_model():
    """The shipped ViT (a few hundred KB), loaded once per server."""
    from core.models import vit_trained

    return vit_trained.load(vit_trained.CHECKPOINT)


@memo.cached(max_entries=32, ttl=HOUR)
def vit_trained_trace(img: np.ndarray) -> dict:
    """One image (96, 96, 3) through the trained ViT: class probabilities, the prediction, and every
    token's attention over the patch grid, heads averaged, per layer: maps (layers, 1+N, rows, cols)."""
    from core.models import vit_trained

    model = vit_trained_model()
    tr = vit_trained.trace(model, img)
    L, rows, cols = tr.attn.shape[0], *tr.grid
    maps = tr.attn.mean(dim=1)[:, :, 1:].reshape(L, -1, rows, cols)  # (layers, 1+N, rows, cols): row 0 is [CLS]
    return {"probs": tr.probs.numpy(), "pred": tr.pred, "classes": vit_trained.CLASSES, "maps": maps.numpy(),
            "grid": tr.grid, "N": tr.patches.shape[0], "dim": tr.patches.shape[1], "P": model.cfg.patch,
            "heads": model.cfg.n_heads, "d": model.cfg.d_model}


@memo.cached(max_entries=8, ttl=HOUR)
def shape_classes() -> tuple[str, ...]:
    """The trained ViT's class names, in its label order (circle, square, triangle)."""
    from core.models import vit_trained

    return tuple(vit_trained.CLASSES)


@memo.cached(max_entries=8, ttl=HOUR)
def vit_shapes(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n generated images (n, 96, 96, 3) with one circle, square or triangle each, and their labels (n,)."""
    from core.models import vit_trained

    batch = vit_trained.make_shapes(n, seed)
    return batch.images.numpy(), batch.labels.numpy()


@memo.cached(max_entries=1)  # no ttl: measured once per server
def vit_trained_scores(n: int = SCORE_IMAGES) -> dict:
    """Accuracy on n fresh generated images, and how much of the class token's attention lands on the shape."""
    from core.models import vit_trained

    model = vit_trained_model()
    focus = vit_trained.attention_focus(model, n=n)
    return {"n": n, "accuracy": vit_trained.accuracy(model, n=n), "on_shape": focus.on_shape, "area": focus.area,
            "ratio": focus.ratio}
