"""Every cached call into ``core``: the one place pages reach compute.

Every result is cached with ``memo.cached`` (ui/memo.py): one cache for the whole server, bounded
in BYTES (``memo.SERVER_BYTES``, 256 MB of pickled results together, least recently used first out),
and per function by ``max_entries`` and ``ttl``. A hit returns a fresh copy (no page can mutate a
cached trace). A new cached call uses the same decorator: ``@memo.cached(max_entries=…, ttl=HOUR)``.
Long-lived shared objects (trained models, the training queue) use ``st.cache_resource`` — created
once per server, never mutated by a page.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import streamlit as st
import torch

import core
from core import block, lab, pitfalls, seq2seq, seq2seq_store, vit
from core.lab import PlaygroundTrace

from . import memo

HOUR = 3600
# one thread per computation: a class shares the server's cores, and the matrices here are small;
# with torch's default of one thread per core, a 4×4 softmax waited tens of ms whenever the other
# core was busy (measured, BENCHMARKS.md)
torch.set_num_threads(1)


def _to_cpu(obj):
    """Tensors of a (nested) trace moved to the CPU, so the page can turn them into numbers."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{f.name: _to_cpu(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    return obj


# ------------------------------------------------------------------ the scenario
@memo.cached(max_entries=48, ttl=HOUR)
def playground(X_q: np.ndarray, X_kv: np.ndarray, qkv: str, W_q: np.ndarray | None, W_k: np.ndarray | None,
               W_v: np.ndarray | None, Q: np.ndarray | None, K: np.ndarray | None, V: np.ndarray | None, score: str,
               params: dict[str, np.ndarray], scale: float | None, temperature: float, mask: np.ndarray | None,
               convention: str, device: str) -> PlaygroundTrace:
    """core.lab.playground, cached on its inputs; tensors come back on CPU."""
    tr = core.lab.playground(X_q, X_kv, qkv=qkv, W_q=W_q, W_k=W_k, W_v=W_v, Q=Q, K=K, V=V, score=score,
                             params=params or None, scale=scale, temperature=temperature, mask=mask,
                             convention=convention, device=device, dtype=None)
    return _to_cpu(tr)


@memo.cached(max_entries=128, ttl=HOUR)
def embedding(kind: str, tokens: tuple[str, ...], d_model: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """X for the tokens: C18 table lookup, per-token seeded random, or one-hot. Returns (X, unknown tokens)."""
    if kind == "c18":
        X, unknown = core.lab.c18_lookup(tokens, fallback_seed=seed)
        return X.numpy(), unknown
    if kind == "onehot":
        return core.tokens.one_hot(tokens).numpy(), []
    return core.tokens.embed(tokens, d_model, seed=seed).numpy(), []


@memo.cached(max_entries=256, ttl=HOUR)
def projection(d_in: int, d_out: int, seed: int, name: str) -> np.ndarray:
    """A seeded (d_in, d_out) projection, the same for every page that names it the same."""
    return core.tokens.projection(d_in, d_out, seed=seed, name=name).numpy()


# ------------------------------------------------------------------ concept pages
@memo.cached(max_entries=32, ttl=HOUR)
def multihead(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, W_o: np.ndarray, n_heads: int,
              causal: bool, score: str, device: str):
    """core.multi_head_attention (self-attention, one batch), cached; tensors come back on CPU."""
    mask = core.masks.causal(x.shape[-2]) if causal else None
    tr = core.multi_head_attention(x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads, mask=mask, score=score,
                                   device=device)
    return _to_cpu(tr)


@memo.cached(max_entries=32, ttl=HOUR)
def multihead_checks(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, W_o: np.ndarray,
                     n_heads: int) -> dict:
    """The fused-QKV gap, the paper form beside unscaled MHA, and the no-transpose table of head 0."""
    paper = lab.paper_check(x[0], W_q, W_k, W_v, W_o, n_heads)
    return {"fused_gap": core.multihead.fused_qkv_gap(x, W_q, W_k, W_v),
            "paper": _to_cpu(paper),
            "wrong_output_gap": core.max_abs_diff(
                pitfalls.multi_head_without_transpose(x, n_heads=n_heads, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o),
                core.multi_head_attention(x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads).output),
            "scrambled": _to_cpu(core.attention(*(pitfalls.split_heads_without_transpose(x @ W, n_heads)
                                                  for W in (W_q, W_k, W_v)))),
            "table": pitfalls.scramble_table(x.shape[-2], W_q.shape[1], n_heads, head=0)}


@memo.cached(max_entries=32, ttl=HOUR)
def normalized_dot(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """q̂ᵀk̂ for every pair: core's dot score on L2-normalised vectors (equals the cosine score)."""
    Qn, Kn = core.l2_normalize(Q), core.l2_normalize(K)
    return core.attention(Qn, Kn, Kn, score="dot").scores.numpy()


@memo.cached(max_entries=4, ttl=HOUR)
def scaling_experiment(seed: int) -> dict:
    """The √d_k experiment: variance of qᵀk, peak weight, entropy and gradient against d."""
    e = core.experiments.scaling_experiment(seed=seed)
    return {f: getattr(e, f) if f in ("dims", "n_keys") else getattr(e, f).numpy()
            for f in ("dims", "n_keys", "var_dot", "dots", "max_weight", "max_weight_scaled", "entropy",
                      "entropy_scaled", "grad_norm", "grad_norm_scaled", "dots_scaled")}


@memo.cached(max_entries=16, ttl=HOUR)
def self_attention_weights(X: np.ndarray, scale: float | None) -> np.ndarray:
    """Weights with Q = K = V = X at the default 1/√d_k or a given scale."""
    return core.attention(X, X, X, scale=scale).weights.numpy()


@memo.cached(max_entries=32, ttl=HOUR)
def permutation_check(X: np.ndarray, perm: tuple[int, ...], W_q, W_k, W_v, pe: np.ndarray | None) -> dict:
    c = core.lab.permutation_check(X, perm, W_q=W_q, W_k=W_k, W_v=W_v, positions=pe)
    return {"sa_x": c.sa_x.numpy(), "sa_px": c.sa_px.numpy(), "p_sa_x": c.p_sa_x.numpy(), "max_diff": c.max_diff}


@memo.cached(max_entries=16, ttl=HOUR)
def seeded_block(X: np.ndarray, seed: int, n_heads: int, d_ff: int, activation: str, norm: str):
    """One Transformer block with seeded random weights and its FFN check."""
    return _to_cpu(block.seeded_block(X, seed=seed, n_heads=n_heads, d_ff=d_ff, activation=activation, norm=norm))


@memo.cached(max_entries=16, ttl=HOUR)
def vit_attention(img: np.ndarray, P: int, cls: bool, seed: int) -> dict:
    """Patches of an image and the attention of every token over the patch grid (random weights)."""
    tr = vit.vit_attention(img, P, d_model=16, seed=seed, cls=cls)
    maps = np.stack([tr.attention_map(q).numpy() for q in range(tr.attn.weights.shape[0])])  # (tokens, rows, cols)
    return {"N": tr.patches.shape[0], "dim": tr.patches.shape[1], "grid": tr.grid, "maps": maps,
            "tokens": tuple(tr.tokens.shape)}


# ------------------------------------------------------------------ seq2seq: shipped models, one training at a time
@st.cache_resource(show_spinner=False)
def seq2seq_queue() -> seq2seq_store.TrainingQueue:
    """The server's one training queue: one training at a time, at most 8 waiting, the 8 most
    recent results kept (bounded by design, whoever asks)."""
    return seq2seq_store.TrainingQueue(max_waiting=8, max_results=8)


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


# ------------------------------------------------------------------ a pretrained encoder: all-MiniLM-L6-v2
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


# ------------------------------------------------------------------ a ViT trained on generated shapes (core.vit_trained)
SHAPES_SEED = 2024  # the page's generated sample images: seed SHAPES_SEED + k for the k-th "new images"
SCORE_IMAGES = 300  # fresh images for the accuracy and attention-focus measures (once per server)


def vit_trained_ready() -> bool:
    """Whether the trained ViT can be used: core.vit_trained and its checkpoint are there."""
    try:
        from core import vit_trained
    except ImportError:
        return False
    return vit_trained.CHECKPOINT.is_file()


@st.cache_resource(show_spinner=False)
def vit_trained_model():
    """The shipped ViT (a few hundred KB), loaded once per server."""
    from core import vit_trained

    return vit_trained.load(vit_trained.CHECKPOINT)


@memo.cached(max_entries=32, ttl=HOUR)
def vit_trained_trace(img: np.ndarray) -> dict:
    """One image (96, 96, 3) through the trained ViT: class probabilities, the prediction, and every
    token's attention over the patch grid, heads averaged, per layer: maps (layers, 1+N, rows, cols)."""
    from core import vit_trained

    model = vit_trained_model()
    tr = vit_trained.trace(model, img)
    L, rows, cols = tr.attn.shape[0], *tr.grid
    maps = tr.attn.mean(dim=1)[:, :, 1:].reshape(L, -1, rows, cols)  # (layers, 1+N, rows, cols): row 0 is [CLS]
    return {"probs": tr.probs.numpy(), "pred": tr.pred, "classes": vit_trained.CLASSES, "maps": maps.numpy(),
            "grid": tr.grid, "N": tr.patches.shape[0], "dim": tr.patches.shape[1], "P": model.cfg.patch,
            "heads": model.cfg.n_heads, "d": model.cfg.d_model}


@memo.cached(max_entries=8, ttl=HOUR)
def vit_shapes(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """n generated images (n, 96, 96, 3) with one circle, square or triangle each, and their labels (n,)."""
    from core import vit_trained

    batch = vit_trained.make_shapes(n, seed)
    return batch.images.numpy(), batch.labels.numpy()


@memo.cached(max_entries=1)  # no ttl: measured once per server
def vit_trained_scores(n: int = SCORE_IMAGES) -> dict:
    """Accuracy on n fresh generated images, and how much of the class token's attention lands on the shape."""
    from core import vit_trained

    model = vit_trained_model()
    focus = vit_trained.attention_focus(model, n=n)
    return {"n": n, "accuracy": vit_trained.accuracy(model, n=n), "on_shape": focus.on_shape, "area": focus.area,
            "ratio": focus.ratio}
