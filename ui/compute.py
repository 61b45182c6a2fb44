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
import gc
import os
import threading
from pathlib import Path

import numpy as np
import streamlit as st
import torch

import core
from attention_lab import scenario
from core import block, lab, pitfalls, seq2seq, seq2seq_store, vit
from core.playground.lab import PlaygroundTrace
from serving import decode_process, decoding, fair, training
from serving import scheduler as serving_scheduler

from . import memo

HOUR = 3600
ASSETS_TEXTS = Path(__file__).resolve().parent.parent / "assets" / "texts"
# one thread per computation: a class shares the server's cores, and the matrices here are small;
# with torch's default of one thread per core, a 4×4 softmax waited tens of ms whenever the other
# core was busy (measured, BENCHMARKS.md)
torch.set_num_threads(1)

# ATTN_LAB_GC_FREEZE=off: every object stays in the collector's sight (to measure what settled() saves)
GC_FREEZE = os.environ.get("ATTN_LAB_GC_FREEZE") != "off"


@st.cache_resource(show_spinner=False)
def settled() -> bool:
    """Once per server, after its first run: the objects alive then (the modules of Streamlit, torch, numpy, pandas,
    plotly and the app: ~300,000, of ~310,000 after every page has run) are collected once and put out of the
    collector's sight (``gc.freeze``). A full collection stops every session's run while it walks the objects it
    sees: beside a class writing, a median 312 ms, one at the press in every run; afterwards 85 ms (BENCHMARKS.md,
    "A full collection at the press"). Garbage made later is collected as before; only a cycle alive at that moment
    that dies later is never freed (one first run's worth, once)."""
    if GC_FREEZE:
        gc.collect()
        gc.freeze()
    return GC_FREEZE


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
    """attention_lab.scenario.embedding, cached: X for the tokens and the tokens not in the C18 table."""
    return scenario.embedding(kind, tokens, d_model, seed)


@memo.cached(max_entries=256, ttl=HOUR)
def projection(d_in: int, d_out: int, seed: int, name: str) -> np.ndarray:
    """attention_lab.scenario.projection, cached: a seeded (d_in, d_out) projection."""
    return scenario.projection(d_in, d_out, seed, name)


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
    return {"fused_gap": core.mechanism.multihead.fused_qkv_gap(x, W_q, W_k, W_v),
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
def permutation_check(X: np.ndarray, perm: tuple[int, ...], W_q, W_k, W_v, *, positions: np.ndarray | None = None,
                      rope_base: float | None = None, alibi_slope: float | None = None) -> dict:
    """The one permutation experiment (``core.lab.permutation_check``), for the position page, the LLM positions
    page and their lessons: SA(PX), P·SA(X) and max |SA(PX) − P·SA(X)| with at most one kind of positions."""
    c = core.lab.permutation_check(X, perm, W_q=W_q, W_k=W_k, W_v=W_v, positions=positions, rope_base=rope_base,
                                   alibi_slope=alibi_slope)
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


# ------------------------------------------------------------------ a live class: the server's one store
@st.cache_resource(show_spinner=False)
def class_store():
    """The live classes' store, once per server: SQLite (a file, the default) or Redis (``ATTN_LAB_STORE``)."""
    from attention_lab.live.store import open_store

    return open_store()


@memo.cached(max_entries=64, ttl=HOUR)
def class_question(qid: str, kind: str, state: dict, seed: int, query: int, key: int) -> dict:
    """A question about the scenario ``state`` (the teacher's), with its right answer from core's weights."""
    from attention_lab import tutorial
    from attention_lab.live import classes

    return classes.question(qid, kind, tutorial.scenario_trace(state, seed=seed), query, key)


@memo.cached(max_entries=64, ttl=HOUR)
def class_work(query: dict, seed: int):
    """A student's work (their Playground scenario's link parameters and seed) → its numbers, as the Playground
    computes them (``attention_lab.tutorial.scenario_trace``: a LessonTrace, weights (n_q, n_k)).

    Raises ValueError when core cannot compute the scenario."""
    from attention_lab import scenario, tutorial

    values, matrices, _ = scenario.from_query(query)
    return tutorial.scenario_trace(values | {"matrices": matrices, "seed": seed}, seed=seed)


# ------------------------------------------------------------------ seq2seq: shipped models, one training at a time
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


@memo.cached(max_entries=4, ttl=HOUR)
def pretrained_swap(text_a: str, text_b: str, query: str, key: str, device: str) -> dict:
    """core.pretrained.swap_experiment on two sentences (one word changed), as a plain dict."""
    import dataclasses

    from core import pretrained

    m = pretrained_model()
    e = pretrained.swap_experiment(m.trace(text_a, MODEL_MAX_TOKENS, device=device),
                                   m.trace(text_b, MODEL_MAX_TOKENS, device=device), query, key)
    return dataclasses.asdict(e) | {"still_on_key": e.still_on_key}


# ------------------------------------------------------------------ a ViT trained on generated shapes (core.models.vit_trained)
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


# ------------------------------------------------------------------ attention in today's LLMs (issue 22)
def _decoder_weights(d_model: int, n_heads: int, n_kv_heads: int, seed: int, prefix: str) -> dict[str, torch.Tensor]:
    """Seeded (untrained) W_q (d, d), W_k and W_v (d, G·d_head), W_o (d, d) for a decoder layer."""
    d_kv = n_kv_heads * (d_model // n_heads)
    shapes = {"W_q": (d_model, d_model), "W_k": (d_model, d_kv), "W_v": (d_model, d_kv), "W_o": (d_model, d_model)}
    return {n: core.tokens.projection(*s, seed=seed, name=f"{prefix}.{n}") for n, s in shapes.items()}


@memo.cached(max_entries=32, ttl=HOUR)
def grouped_heads(tokens: tuple[str, ...], d_model: int, n_heads: int, n_kv_heads: int, seed: int) -> dict:
    """Grouped-query self-attention (core.multi_head_attention with n_kv_heads) on seeded embeddings:
    weights (H, n, n), kv_head_of (H,), reads (H, G) as 1/0, d_head."""
    X = core.tokens.embed(list(tokens), d_model, seed=seed)
    W = _decoder_weights(d_model, n_heads, n_kv_heads, seed, "kvs")
    tr = core.multi_head_attention(X[None], n_heads=n_heads, n_kv_heads=n_kv_heads, **W)
    reads = np.zeros((n_heads, n_kv_heads))
    reads[np.arange(n_heads), list(tr.kv_head_of)] = 1.0
    return {"weights": tr.weights[0].detach().cpu().numpy(), "kv_head_of": tuple(tr.kv_head_of), "reads": reads,
            "d_head": d_model // n_heads}


def position_table(kind: str, n: int, d: int, seed: int) -> torch.Tensor | None:
    """The added positions (n, d) of ``kind`` ("sinusoidal" or "learned", seeded); None for the other kinds."""
    if kind == "sinusoidal":
        return core.positional.sinusoidal(n, d)
    return core.positional.learned(n, d, seed=seed) if kind == "learned" else None


@memo.cached(max_entries=16, ttl=HOUR)
def one_token_projection(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """q = x W (d_out,): one token's embedding x (d_model,) through a linear layer W (d_model × d_out),
    as the Playground's projection step computes it (``core.lab.playground``)."""
    return core.lab.playground(x[None], qkv="projection", W_q=W, W_k=W, W_v=W).Q[0].numpy()


@memo.cached(max_entries=32, ttl=HOUR)
def added_positions(X: np.ndarray, kind: str, seed: int) -> np.ndarray:
    """X + P (n, d): the positions of ``kind`` ("sinusoidal" or "learned") added to every row (C22)."""
    x = torch.as_tensor(X)
    return core.positional.add(x, position_table(kind, *x.shape, seed).to(x.dtype)).numpy()


@memo.cached(max_entries=32, ttl=HOUR)
def position_panel(kind: str, n: int, d: int, seed: int, base: float, pairing: str, pair: int, alibi_heads: int) -> dict:
    """What the positions page draws for one kind: the added table; RoPE's turning pair, scores by
    offset (from two starts) and the pairing check; ALiBi's slopes and bias maps (H, n, n)."""
    if kind in ("sinusoidal", "learned"):
        return {"table": position_table(kind, max(n, 16), d, seed).numpy()}
    if kind == "alibi":
        bias = core.positional.alibi_bias(alibi_heads, n)  # (H, n, n): −m_h (i − j)
        causal = core.masks.causal(n)  # (n, n), True = may attend
        return {"slopes": core.positional.alibi_slopes(alibi_heads).tolist(),
                "bias": torch.where(causal, bias, float("-inf")).numpy()}
    q = core.tokens.projection(1, d, seed=seed, name="lp.q")[0]
    k = core.tokens.projection(1, d, seed=seed, name="lp.k")[0]
    m = max(n, 8)
    track = core.positional.rope_pair_track(q, pair, torch.arange(m), base=base, pairing=pairing)  # (m, 2)
    offsets = torch.arange(-m + 1, m)
    scores = {s: core.positional.rope_scores_by_offset(q, k, offsets, base=base, pairing=pairing, start=s).numpy()
              for s in (0, 7)}
    perm = core.positional.rope_permutation(d)
    x = core.tokens.projection(m, d, seed=seed, name="lp.x")
    pairing_gap = core.max_abs_diff(core.positional.rope(x[:, perm], base=base, pairing="half"),
                                    core.positional.rope(x, base=base, pairing="adjacent")[:, perm])
    dims = (2 * pair, 2 * pair + 1) if pairing == "adjacent" else (pair, pair + d // 2)
    rotated = core.positional.rope(q.expand(m, d), positions=torch.arange(m), base=base, pairing=pairing)  # (m, d)
    return {"track": track.numpy(), "dims": dims, "theta": float(core.positional.rope_frequencies(d, base=base)[pair]),
            "offsets": offsets.numpy(), "scores": scores, "shift_gap": core.max_abs_diff(scores[0], scores[7]),
            "pairing_gap": pairing_gap, "norm_gap": core.max_abs_diff(rotated.norm(dim=-1), q.norm().expand(m))}


def _gib(n_bytes: int) -> str:
    return f"{n_bytes / 2**30:.2f} GiB"


@memo.cached(max_entries=32, ttl=HOUR)
def cache_sizes(tokens: int, batch: int, bytes_per_value: int) -> list[dict]:
    """core.kv_cache_bytes for every model preset (core.MODEL_PRESETS) with every token kept (no window):
    as published (its G), as MHA (G = H) and as MQA (G = 1)."""
    rows = []
    for p in core.MODEL_PRESETS.values():
        size = {k: core.kv_cache_bytes(layers=p.layers, n_kv_heads=g, d_head=p.d_head, tokens=tokens, batch=batch,
                                       bytes_per_value=bytes_per_value)
                for k, g in (("gqa", p.n_kv_heads), ("mha", p.n_heads), ("mqa", 1))}
        rows.append({"name": p.name, "layers": p.layers, "heads": p.n_heads, "kv_heads": p.n_kv_heads, "d_head": p.d_head}
                    | {f"{k}_gib": v / 2**30 for k, v in size.items()}
                    | {"actual_text": _gib(size["gqa"]), "mha_text": _gib(size["mha"]), "mqa_text": _gib(size["mqa"])})
    return rows


def _step_parts(d_model: int, n_heads: int, n_kv_heads: int) -> dict:
    """A cached decoding step's multiply-adds as a fixed part plus a part per cached key (core's count is
    linear in the cache's length: the difference of two lengths is the per-key part)."""
    shape = {"d_model": d_model, "n_heads": n_heads, "n_kv_heads": n_kv_heads, "d_head": d_model // n_heads}
    one, two = (core.kv_cache.decode_step_macs(**shape, length=n) for n in (1, 2))
    return {"macs_fixed": one - (two - one), "macs_per_key": two - one}


@memo.cached(max_entries=32, ttl=HOUR)
def decode(tokens: tuple[str, ...], d_model: int, n_heads: int, n_kv_heads: int, rope_base: float | None,
           seed: int) -> dict:
    """The tokens decoded one at a time with a KV cache (core.cached_decode) beside full causal
    multi-head attention over the whole sequence (core.multi_head_attention, the same weights).

    rows: per step the new row of weights (H, t); keys/values: the final cache as (n, G·d_head);
    full_weights (H, n, n); gaps / out_gaps per step: max |cached − full| of the row and of o_t;
    madds_* per step and cum_* running totals (multiply-adds counted by core); a cached step is
    macs_fixed + macs_per_key · (keys in the cache), both from core.kv_cache.decode_step_macs."""
    X = core.tokens.embed(list(tokens), d_model, seed=seed)
    W = _decoder_weights(d_model, n_heads, n_kv_heads, seed, "kv")
    tr = core.cached_decode(X, n_heads=n_heads, n_kv_heads=n_kv_heads, rope_base=rope_base, **W)
    full = core.multi_head_attention(X[None], n_heads=n_heads, n_kv_heads=n_kv_heads, rope_base=rope_base,
                                     mask=core.masks.causal(len(tokens)), **W)
    fw, fo = full.weights[0], full.output[0]  # (H, n, n), (n, d_model)
    rows = [s.weights.numpy() for s in tr.steps]  # (H, t) each
    merged = lambda x: x.transpose(0, 1).reshape(x.shape[1], -1).numpy()  # noqa: E731 — (G, n, d) → (n, G·d)
    cached, recompute = [s.macs_cached for s in tr.steps], [s.macs_recompute for s in tr.steps]
    return {"rows": rows, "keys": merged(tr.cache.k), "values": merged(tr.cache.v), "G": tr.n_kv_heads,
            "d_head": d_model // n_heads, "full_weights": fw.numpy(),
            "gaps": [core.max_abs_diff(s.weights, fw[:, i, : i + 1]) for i, s in enumerate(tr.steps)],
            "out_gaps": [core.max_abs_diff(s.output, fo[i]) for i, s in enumerate(tr.steps)],
            "madds_cached": cached, "madds_recompute": recompute, **_step_parts(d_model, n_heads, n_kv_heads),
            "cum_cached": np.cumsum(cached).tolist(), "cum_recompute": np.cumsum(recompute).tolist()}


@memo.cached(max_entries=32, ttl=HOUR)
def window_reach(n: int, size: int, sinks: int, layers: int) -> dict:
    """The causal window-with-sinks mask (n, n) as 1/0 and what the last token reaches after each of L layers
    (core.masks.window_reach): reach_last (L, n) as 1/0, farthest / reachable per layer, all_reached_at."""
    r = core.masks.window_reach(n, size, layers, sinks=sinks)
    mask = r.mask.to(torch.float64)
    return {"mask": mask.numpy(), "row_counts": [int(c) for c in r.mask.sum(dim=-1)], "size": r.size, "sinks": r.sinks,
            "reach_last": r.reach[:, n - 1, :].to(torch.float64).numpy(), "farthest": list(r.farthest),
            "reachable": list(r.reachable), "all_reached_at": r.all_reached_at}


@memo.cached(max_entries=32, ttl=HOUR)
def context_memory(window: int, sinks: int, contexts: tuple[int, ...]) -> list[dict]:
    """Every preset's KV cache (bfloat16, batch 1) for each context length: every token kept, and with a
    sliding window of ``window`` keys plus ``sinks`` (core.ModelShape.kv_cache_bytes)."""
    rows = []
    for p in core.MODEL_PRESETS.values():
        full = [p.with_window(None).kv_cache_bytes(c) for c in contexts]
        win = [p.with_window(window).kv_cache_bytes(c, sinks=sinks) for c in contexts]
        rows.append({"name": p.name, "context": p.context, "full_gib": [b / 2**30 for b in full],
                     "win_gib": [b / 2**30 for b in win]}
                    | {f"full_{c}": _gib(b) for c, b in zip(contexts, full, strict=True)}
                    | {f"win_{c}": _gib(b) for c, b in zip(contexts, win, strict=True)})
    return rows


@memo.cached(max_entries=32, ttl=HOUR)
def tiles(n: int, d: int, block_q: int, block_k: int, seed: int) -> dict:
    """Seeded q, k, v (n, d) through core.tiled_attention: every tile's scores, m, ℓ, correction and
    partial output, with seen_gap = max |partial output − softmax attention over the keys seen so far|;
    progress (steps, n_q_blocks, n_k_blocks): 1 for tiles done, 0 for those to come; the final output
    beside core.attention's, their gap, and the largest tile against the full n × n matrix."""
    q, k, v = (core.tokens.projection(n, d, seed=seed, name=f"ta.{x}") for x in "qkv")
    tr = core.tiled_attention(q, k, v, block_q=block_q, block_k=block_k)
    ref = core.attention(q, k, v).output  # (n, d)
    out, done = [], np.zeros((tr.n_q_blocks, tr.n_k_blocks))
    progress = []
    for tile in tr.tiles:
        seen = core.attention(q[tile.q_start:tile.q_stop], k[:tile.k_stop], v[:tile.k_stop]).output  # (b_q, d)
        done[tile.q_block, tile.k_block] = 1.0
        progress.append(done.copy())
        out.append({f: getattr(tile, f) for f in ("q_block", "k_block", "q_start", "q_stop", "k_start", "k_stop")}
                   | {f: getattr(tile, f).numpy() for f in ("scores", "m_before", "m_after", "correction", "l_before",
                                                             "l_after", "partial_output")}
                   | {"seen_gap": core.max_abs_diff(tile.partial_output, seen)})
    return {"tiles": out, "progress": progress, "output": tr.output.numpy(), "reference": ref.numpy(),
            "gap": core.max_abs_diff(tr.output, ref), "largest": tr.largest_tile, "full": n * n}


@memo.cached(max_entries=1, ttl=HOUR)
def attention_memory() -> dict:
    """Bytes held by full attention's n × n matrices and by chunked attention's one block, n = 64 … 2048
    (core.block.complexity, measured once per server per hour)."""
    c = core.block.complexity()
    return {"ns": list(c.ns), "bytes_full": list(c.bytes_full), "bytes_chunked": list(c.bytes_chunked)}
# ------------------------------------------------------------------ a language model writing: SmolLM2-135M (core.models.decoder)
LM_MAX_TOKENS = 64  # the longest prompt the page runs (its model view draws 30 × 9 maps of n × n)
LM_MAX_NEW = 64  # the most tokens one prompt may be continued by (core.models.decoder.MAX_NEW_TOKENS)
LM_CACHE_BYTES = 96 * 2**20  # the decode scheduler's keys and values: 136 pages of 16 positions (float32, 720 KiB each)
LM_MAX_BATCH = 48  # the most sequences one decoding step writes (a class of 40 in one batch)
# a writing no session has asked about for this long leaves the batch (a closed tab); pages ask 6 times as often.
# ATTN_LAB_LM_ABANDON_S shortens it for the real-server test of a student who leaves
LM_ABANDON_S = float(os.environ.get("ATTN_LAB_LM_ABANDON_S", 30.0))
LM_ASK_S = LM_ABANDON_S / 6  # how often a session waiting for its writing says it still wants it
# the decoding process's torch threads: one core left to the sessions' Python (ATTN_LAB_LM_THREADS: to measure)
LM_THREADS = int(os.environ.get("ATTN_LAB_LM_THREADS", max(1, min(4, (os.cpu_count() or 2) - 1))))
LM_WINDOWS = (16, 32, 64)  # the KV windows of the StreamingLLM experiment
LM_SINKS = 4  # the first tokens kept beside a window


@st.cache_resource(show_spinner=False)
def language_model():
    """SmolLM2-135M (core.pretrained.smollm2), loaded once per server and shared by every session (never mutated).

    Where the decoding runs in a process of its own (lm_scheduler), the weights are moved into a memory file before
    any session uses them, and that process maps the same pages.
    Raises core.models.decoder.ModelNotInstalled (not cached: an install is picked up on the next run)."""
    from core import pretrained

    model = pretrained.smollm2()
    if decode_process.AVAILABLE:
        model.share_memory()
    return model


@memo.cached(max_entries=32, ttl=HOUR)
def lm_token_count(text: str) -> int:
    """How many tokens ``text`` is (however long it is)."""
    return len(language_model().encode(text))


# one trace at a time per server: a class opening the page at once with forty prompts held forty traces' activations
# at once (a peak of 0.85 GB over the server's steady RSS); one at a time, 40 pages open sooner than with two
# (BENCHMARKS.md, "The Playground beside the writing": 10.5 s, not 11.2 s, and 0.1 GB less at the peak)
_LM_TRACING = threading.BoundedSemaphore(1)
# the language-model page's large part (the trace, the model view's 270 maps, the tables), two pages at a time: a class
# opening the page at once held forty pages' working memory at the same moment, the server and its decoding process
# 1.16–1.24 GB (PSS) beside a Playground class; two at a time 1.03–1.11 GB, the forty drawn as soon (BENCHMARKS.md,
# "Forty pages opening in turns"). The writing part is drawn after the turn: a run waiting for its writing holds none
LM_DRAWING = fair.Turns(2)


@memo.cached(max_entries=6, ttl=HOUR)
def lm_trace(text: str, device: str) -> dict:
    """The prompt through the decoder, as numpy: tokens, byte flags, attentions (30, 9, n, n), q (30, 9, n, 64),
    k, v (30, 3, n, 64), the last position's logits (vocab,), sinks / previous-token shares (30, 9) and the
    logit lens at the last token. ValueError beyond LM_MAX_TOKENS.

    6 entries of at most 64 tokens are at most ~75 MB (attentions and q ~4.4 MB each, k and v ~1.5 MB)."""
    from core.models import decoder

    m = language_model()
    with _LM_TRACING:
        tr = m.trace(text, LM_MAX_TOKENS, device=device)
    cpu = lambda x: x.detach().cpu().numpy()  # noqa: E731
    stats = decoder.head_stats(tr.attentions) if tr.n_tokens >= 2 else None
    lens = decoder.logit_lens(m, tr)
    return {"tokens": list(tr.tokens), "is_bytes": list(tr.is_bytes), "attentions": cpu(tr.attentions),
            "q": cpu(tr.q), "k": cpu(tr.k), "v": cpu(tr.v), "kv_head_of": tr.kv_head_of, "logits": cpu(tr.logits[-1]),
            "sink": None if stats is None else cpu(stats.sink), "previous": None if stats is None else cpu(stats.previous),
            "lens": {"tokens": [m.tokens(row) for row in lens.top_ids.tolist()], "probs": cpu(lens.top_probs),
                     "final": m.token_text(lens.final_id), "final_prob": cpu(lens.final_prob)}}


@memo.cached(max_entries=64, ttl=HOUR)
def lm_sampling(logits: np.ndarray, temperature: float, top_k: int | None, top_p: float | None) -> dict:
    """The ten most likely next tokens under the model and their probabilities after temperature, top-k, top-p."""
    from core.models import decoder

    x = torch.from_numpy(logits)
    model_p = torch.softmax(x, -1)
    top = torch.topk(model_p, decoder.TOP)
    sampled = decoder.next_token_probs(x, temperature, top_k, top_p)
    return {"ids": top.indices.tolist(), "tokens": language_model().tokens(top.indices.tolist()),
            "model": top.values.numpy(), "sampled": sampled[top.indices].numpy(),
            "kept": int((sampled > 0).sum())}


@st.cache_resource(show_spinner=False, max_entries=3)  # one per device: cpu, cuda, mps
def lm_scheduler(device: str) -> serving_scheduler.DecodeScheduler:
    """The server's one decode scheduler per device (continuous batching, ``serving.decoding``): every session's
    writing joins one batch; its keys and values take at most LM_CACHE_BYTES. On the CPU it runs in a process of its
    own (``serving.decode_process``: its steps never wait for the sessions' GIL; Linux); on a GPU in a thread of the
    server (``serving.scheduler.make``)."""
    return serving_scheduler.make(language_model(), device, threads=LM_THREADS, cache_bytes=LM_CACHE_BYTES,
                                  capacity=LM_MAX_TOKENS + LM_MAX_NEW, max_batch=LM_MAX_BATCH,
                                  abandoned_after=LM_ABANDON_S)


def lm_request(text: str, n_new: int, temperature: float, top_k: int | None, top_p: float | None,
               seed: int) -> decoding.Request:
    """The request for ``n_new`` tokens after ``text``; ValueError for a prompt the page does not run."""
    ids = language_model().encode(text)
    if not 1 <= len(ids) <= LM_MAX_TOKENS:
        raise ValueError(f"the text is {len(ids)} tokens long: 1 … {LM_MAX_TOKENS} are written after")
    return decoding.Request(ids=tuple(ids), n_new=n_new, temperature=float(temperature), top_k=top_k, top_p=top_p,
                            seed=int(seed))


def lm_writing(text: str, n_new: int, temperature: float, top_k: int | None, top_p: float | None, seed: int,
               device: str) -> decoding.Writing:
    """The server's writing of ``n_new`` tokens after ``text``: found (asking keeps it alive) or put in the line.
    ValueError for a prompt the page does not run; ``decoding.QueueFull`` when the line is full."""
    return lm_scheduler(device).submit(lm_request(text, n_new, temperature, top_k, top_p, seed))


@memo.cached(max_entries=32, ttl=HOUR)
def lm_generate(text: str, n_new: int, temperature: float, top_k: int | None, top_p: float | None, seed: int,
                device: str) -> dict:
    """``n_new`` tokens written after ``text`` by the server's batch (seeded: the first n − 1 are those of the call
    for n − 1), waiting until they are. Per step: the token, its probability, the cache's size; the attention rows
    (30, 9, c) of the position that predicted the last one; the largest batch it was written in."""
    w = serving_scheduler.wait(lm_scheduler(device), lm_request(text, n_new, temperature, top_k, top_p, seed), LM_ASK_S)
    if w.stopped == "full":
        raise decoding.QueueFull("the decoding process's line is full")
    if w.stopped not in ("length", "eos"):
        raise ValueError(f"the writing stopped: {w.stopped}")
    m = language_model()
    steps = [{"token": s.token, "prob": s.chosen_prob, "cache": s.cache_positions, "bytes": s.cache_bytes}
             for s in w.steps]
    ids = list(w.request.ids)
    return {"steps": steps, "text": m.decode(ids + [s.token_id for s in w.steps]), "stopped": w.stopped,
            "attention": w.steps[-1].attention.numpy() if w.steps else None, "batch": w.batch,
            "context": m.tokens(ids) + [s.token for s in w.steps[:-1]]}


@memo.cached(max_entries=32, ttl=HOUR)
def lm_next(text: str, heads_off: tuple[tuple[int, int], ...], layers_off: tuple[int, ...], window: int | None,
            sinks: int, device: str) -> dict:
    """The next-token distribution after ``text`` with the mechanism changed (heads / layers off, a KV window)."""
    from core.models import decoder

    mech = decoder.Mechanism(heads_off=frozenset(heads_off), layers_off=frozenset(layers_off), window=window, sinks=sinks)
    nt = language_model().next_token(text, LM_MAX_TOKENS, mech=mech, device=device)
    return {"tokens": nt.top_tokens, "probs": nt.top_probs.numpy(), "ids": nt.top_ids.tolist(), "all": nt.probs.numpy()}


@memo.cached(max_entries=1)  # no ttl: measured once per server
def lm_induction(device: str) -> dict:
    """Every head's induction score (30, 9) on INDUCTION_LENGTH random tokens written twice (seed 0), and the two losses."""
    from core.models import decoder

    ind = decoder.induction(language_model(), decoder.INDUCTION_LENGTH, 0, device=device)
    return {"scores": ind.scores.cpu().numpy(), "first": ind.loss_first, "second": ind.loss_second}


@memo.cached(max_entries=7)  # no ttl: one shipped text; 7 = the full cache + 3 windows × (no sinks, sinks)
def lm_text_loss(window: int | None, sinks: int, device: str) -> dict:
    """The next-token loss of the shipped text (Alice, ch. 1) with a KV window of the last ``window`` keys
    (and the first ``sinks``), or the full cache (window None)."""
    from core.models import decoder

    text = (ASSETS_TEXTS / "alice.en.txt").read_text(encoding="utf-8")
    r = decoder.text_loss(language_model(), text, decoder.Mechanism(window=window, sinks=sinks), device=device)
    return {"loss": r.loss, "ppl": r.perplexity, "tokens": int(r.per_token.numel()) + 1}


@memo.cached(max_entries=32, ttl=HOUR)
def linear(tokens: tuple[str, ...], d: int, seed: int, causal: bool) -> dict:
    """core.linear_attention on the position page's numbers for the tokens (``scenario.permutation_numbers``): both
    orders of the product,
    their gap, its weights beside softmax's on the same Q, K, total variation per query."""
    X, W = scenario.permutation_numbers(tokens, d, seed, embed=embedding, project=projection)  # the position page's
    pr = core.lab.playground(X, qkv="projection", **W)  # Q = XW_q, K = XW_k, V = XW_v, (n, d) each
    q, k, v = pr.Q, pr.K, pr.V
    tr = core.linear_attention(q, k, v, causal=causal)
    return {"quadratic": tr.output_quadratic.numpy(), "associative": tr.output.numpy(), "form_gap": tr.form_gap,
            "linear_weights": tr.weights.numpy(), "softmax_weights": tr.softmax_weights.numpy(),
            "total_variation": tr.total_variation.tolist(), "weight_gap": tr.weight_gap}


@memo.cached(max_entries=4, ttl=HOUR)
def linear_costs(ns: tuple[int, ...], d: int) -> dict:
    """Multiply-adds of the quadratic and the associative order for n = ns (core.linear.linear_attention_macs)."""
    macs = [core.linear.linear_attention_macs(n, n, d, d) for n in ns]
    return {"ns": list(ns), "quadratic": [q for q, _ in macs], "associative": [a for _, a in macs]}


# ------------------------------------------------------------------ latent attention, sinks/gates/caps, the delta rule (issue 33)
MLA_ROPE_BASE = 10000.0  # RoPE's θ on the d_R rotary dims of the MLA page's small example
MLA_MODELS = core.variants.mla.PUBLISHED  # (name, layers, d_c, d_R, H, d_h): their sources are in core.variants.mla
MLA_COMPARED = ("llama-3-8b", "gpt2")  # a GQA and an MHA model of core.MODEL_PRESETS (their sources are there)
SG_HEADS = 2  # the sinks/gates/caps page's heads
DELTA_D_MODEL, DELTA_D = 8, 4  # the delta-rule page: embedding width, d_k = d_v
DELTA_CHUNK = 2  # tokens per chunk of the chunked form
DELTA_RULES = ("gated", "delta", "linear")
HYBRID = core.variants.delta.QWEN3_NEXT_HYBRID  # a 3:1 hybrid's published shapes (sources in core.variants.delta)


@memo.cached(max_entries=32, ttl=HOUR)
def mla(tokens: tuple[str, ...], d_model: int, heads: int, d_c: int, d_r: int, seed: int) -> dict:
    """core.mla (causal, RoPE θ 10000 on the d_R rotary dims, d_h = d_model / H) on seeded, untrained projections of
    the tokens' embeddings: the cached latent c_KV (n, d_c) and rotary key k_R (n, d_R), the explicit and absorbed
    outputs (n, d_model) with their gap, and the cache per token and layer (core.mla_cache_values)."""
    X = core.tokens.embed(list(tokens), d_model, seed=seed)
    d_h = d_model // heads
    shapes = (("W_DKV", d_model, d_c), ("W_KR", d_model, d_r), ("W_UK", d_c, heads * d_h), ("W_UV", d_c, heads * d_h),
              ("W_UQ", d_model, heads * d_h), ("W_QR", d_model, heads * d_r), ("W_o", heads * d_h, d_model))
    W = {name: core.tokens.projection(rows, cols, seed=seed, name=f"mla.{name}") for name, rows, cols in shapes}
    tr = core.mla(X, **W, n_heads=heads, rope=MLA_ROPE_BASE, causal=True)
    size = core.mla_cache_values(kv_rank=d_c, rope_dim=d_r, n_heads=heads, head_dim=d_h)
    return {"c_kv": tr.c_kv.numpy(), "k_rope": tr.k_rope.numpy(), "explicit": tr.output.numpy(),
            "absorbed": tr.output_absorbed.numpy(), "form_gap": tr.form_gap, "d_h": d_h, "mla": size.mla,
            "mha": size.mha, "ratio": size.ratio}


@memo.cached(max_entries=2)  # no ttl: published numbers
def mla_published() -> list[dict]:
    """Cached values per token of DeepSeek-V3 and Kimi K2 (MLA: core.mla_cache_values) beside a GQA and an MHA model
    (core.kv_cache_bytes at one byte a value = values), per layer and over all layers, and as MHA with the same heads."""
    rows = []
    for name, layers, d_c, d_r, heads, d_h in MLA_MODELS:
        size = core.mla_cache_values(kv_rank=d_c, rope_dim=d_r, n_heads=heads, head_dim=d_h)
        rows.append({"name": name, "kind": "MLA", "layers": layers, "heads": heads, "per_layer": size.mla,
                     "as_mha": size.mha})
    for key in MLA_COMPARED:
        p = core.MODEL_PRESETS[key]
        per_layer = core.kv_cache_bytes(layers=1, n_kv_heads=p.n_kv_heads, d_head=p.d_head, tokens=1, batch=1,
                                        bytes_per_value=1)
        as_mha = core.kv_cache_bytes(layers=1, n_kv_heads=p.n_heads, d_head=p.d_head, tokens=1, batch=1, bytes_per_value=1)
        rows.append({"name": p.name, "kind": p.kind, "layers": p.layers, "heads": p.n_heads, "per_layer": per_layer,
                     "as_mha": as_mha})
    return [r | {"per_token": r["per_layer"] * r["layers"]} for r in rows]


@memo.cached(max_entries=32, ttl=HOUR)
def sinks_gates(tokens: tuple[str, ...], d_model: int, sinks: tuple[float, ...], cap: float, seed: int) -> dict:
    """core.modern_attention (causal, SG_HEADS heads) on seeded, untrained projections, five ways: plain softmax,
    a learned sink logit per head, QK-norm (RMSNorm weight 1), soft-capping at ``cap``, and a sigmoid output gate
    per head. Weights (H, n, n) of each; the sink's share (H, n); the logits before / after the cap (H, n, n);
    the QK-normed logits; the gate (n, H)."""
    X = core.tokens.embed(list(tokens), d_model, seed=seed)
    W = {name: core.tokens.projection(d_model, d_model, seed=seed, name=f"sg.{name}") for name in ("W_q", "W_k", "W_v", "W_o")}
    base = dict(W, n_heads=SG_HEADS, causal=True)
    d_k = d_model // SG_HEADS
    plain = core.modern_attention(X, **base)
    sink = core.modern_attention(X, **base, sinks=torch.tensor(sinks, dtype=torch.float32))
    normed = core.modern_attention(X, **base, q_norm=torch.ones(d_k), k_norm=torch.ones(d_k))
    capped = core.modern_attention(X, **base, softcap=cap)
    gated = core.modern_attention(X, **base, gate_W=core.tokens.projection(d_model, SG_HEADS, seed=seed, name="sg.W_gate"))
    return {"plain": plain.weights.numpy(), "sink": sink.weights.numpy(), "sink_weight": sink.sink_weight.numpy(),
            "qk_norm": normed.weights.numpy(), "softcap": capped.weights.numpy(), "scaled": capped.scaled.numpy(),
            "capped": capped.capped.numpy(), "qk_scaled": normed.scaled.numpy(), "gate": gated.gate.numpy(),
            "d_k": d_k, "cap": capped.softcap}


def _delta_run(q, k, v, beta: float, g: float, delta: bool) -> dict:
    """One rule of the delta-rule page: the recurrence (every state), the chunked form's gap, and per token what the
    state predicted for k_t before the write (α_t S_{t−1}ᵀ k_t) and what was written (β_t(v_t − prediction), or β_t v_t)."""
    n = q.shape[0]
    B, G = torch.full((n,), float(beta)), torch.full((n,), float(g))
    rec = core.gated_delta_rule(q, k, v, beta=B, g=G, l2_normalize_qk=True, delta=delta)
    chunked = core.gated_delta_rule_chunked(q, k, v, beta=B, g=G, chunk_size=DELTA_CHUNK, l2_normalize_qk=True, delta=delta)
    before = torch.cat([torch.zeros_like(rec.states[:1]), rec.states[:-1]]) * rec.decay[:, None, None]  # α_t S_{t−1}
    pred = (before * rec.k[:, :, None]).sum(-2)  # (n, d_v)
    write = (rec.v - pred if delta else rec.v) * rec.beta[:, None]
    return {"states": rec.states.numpy(), "output": rec.output.numpy(), "chunked": chunked.output.numpy(),
            "chunk_gap": float((rec.output - chunked.output).abs().max()), "pred": pred.numpy(), "write": write.numpy(),
            "k": rec.k.numpy(), "v": rec.v.numpy(), "q": rec.q.numpy(), "decay": float(rec.decay[0]), "scale": rec.scale}


@memo.cached(max_entries=32, ttl=HOUR)
def delta_rule(tokens: tuple[str, ...], beta: float, g: float, seed: int) -> dict:
    """core.gated_delta_rule (q, k L2-normalised as in Qwen3-Next) on seeded, untrained projections of the tokens'
    embeddings, d_k = d_v = DELTA_D, under the three rules: gated (β, g), the plain delta rule (β, g = 0) and
    linear attention (no delta, g = 0, β = 1); each with the chunked form's gap (core.gated_delta_rule_chunked)."""
    X = core.tokens.embed(list(tokens), DELTA_D_MODEL, seed=seed)
    q, k, v = (X @ core.tokens.projection(DELTA_D_MODEL, DELTA_D, seed=seed, name=f"dr.{w}") for w in ("W_q", "W_k", "W_v"))
    return {"gated": _delta_run(q, k, v, beta, g, True), "delta": _delta_run(q, k, v, beta, 0.0, True),
            "linear": _delta_run(q, k, v, 1.0, 0.0, False)}


@memo.cached(max_entries=8, ttl=HOUR)
def hybrid_cache(ns: tuple[int, ...]) -> list[dict]:
    """What a 3:1 hybrid (HYBRID) keeps per sequence at n tokens, in numbers: the KV cache of its attention layers
    (core.kv_cache_bytes at one byte a value) and the fixed d_k × d_v states of its Gated DeltaNet layers, beside the
    same model with every layer full attention."""
    h = HYBRID
    attn = h["layers"] // h["every"]
    state = (h["layers"] - attn) * h["v_heads"] * h["d_k"] * h["d_v"]
    out = []
    for n in ns:
        kv = core.kv_cache_bytes(layers=attn, n_kv_heads=h["kv_heads"], d_head=h["d_head"], tokens=n, batch=1,
                                 bytes_per_value=1)
        full = core.kv_cache_bytes(layers=h["layers"], n_kv_heads=h["kv_heads"], d_head=h["d_head"], tokens=n, batch=1,
                                   bytes_per_value=1)
        out.append({"n": n, "kv": kv, "state": state, "hybrid": kv + state, "full": full})
    return out


# ------------------------------------------------------------------ sparse top-k (DeepSeek Sparse Attention)
SPARSE_D_MODEL, SPARSE_HEADS, SPARSE_D_HEAD = 16, 2, 8  # the sparse page's attention: d_model, H, d_k = d_v
SPARSE_INDEX_HEADS, SPARSE_D_INDEX, SPARSE_D_CQ = 4, 8, 8  # its lightning indexer: H_I, d_I, the q latent's width
SPARSE_CHOOSERS = ("indexer", "oracle")


@memo.cached(max_entries=32, ttl=HOUR)
def sparse(tokens: tuple[str, ...], top_k: int, chooser: str, seed: int) -> dict:
    """core.sparse_topk_attention (causal) on seeded, untrained projections of the tokens' embeddings, its keys chosen
    by ``chooser``: "indexer" — core.lightning_indexer's scores (H_I heads, untrained, no RoPE here); "oracle" — the
    attention's own scaled scores averaged over the heads (what an indexer trained to match attention aims at).
    Returns the scores that chose (n, n; −∞ where the causal mask forbids), the chosen keys (n, n), sparse attention's
    logits (H, n, n; −∞ off the chosen keys: the top-k mask on the scaled scores), the weights of sparse and of full
    attention (H, n, n), max |sparse − full| of the outputs, the share of full attention's weight
    that falls on the chosen keys (H, n), and the keys each query reads (n,)."""
    if chooser not in SPARSE_CHOOSERS:
        raise ValueError(f"unknown chooser {chooser!r}")
    d, H, d_h = SPARSE_D_MODEL, SPARSE_HEADS, SPARSE_D_HEAD
    X = core.tokens.embed(list(tokens), d, seed=seed)[None]  # (1, n, d)
    W = {w: core.tokens.projection(d, H * d_h, seed=seed, name=f"sp.{w}") for w in ("W_q", "W_k", "W_v")}
    q, k, v = (core.split_heads(X @ W[w], H) for w in ("W_q", "W_k", "W_v"))  # (1, H, n, d_h)
    full = core.attention(q, k, v, mask=core.masks.causal(X.shape[1]))  # weights (1, H, n, n)
    if chooser == "indexer":
        c_q = X @ core.tokens.projection(d, SPARSE_D_CQ, seed=seed, name="sp.W_cq")  # (1, n, d_cq)
        index = core.lightning_indexer(
            X, c_q, W_Iq=core.tokens.projection(SPARSE_D_CQ, SPARSE_INDEX_HEADS * SPARSE_D_INDEX, seed=seed, name="sp.W_Iq"),
            W_Ik=core.tokens.projection(d, SPARSE_D_INDEX, seed=seed, name="sp.W_Ik"),
            W_w=core.tokens.projection(d, SPARSE_INDEX_HEADS, seed=seed, name="sp.W_w"),
            n_index_heads=SPARSE_INDEX_HEADS).scores  # (1, n, n)
    else:
        index = full.scores.masked_fill(~full.mask, float("-inf")).mean(-3)  # (1, n, n): the heads' scaled scores
    tr = core.sparse_topk_attention(q, k, v, index_scores=index, top_k=top_k)
    chosen = tr.chosen[0]  # (n, n)
    full_w = full.weights[0]  # (H, n, n)
    return {"index": index[0].numpy(), "chosen": chosen.numpy(), "logits": tr.attention.logits[0].numpy(),
            "sparse": tr.attention.weights[0].numpy(),
            "full": full_w.numpy(), "gap": core.max_abs_diff(tr.output, full.output),
            "coverage": (full_w * chosen).sum(-1).numpy(), "keys": tr.keys_per_query[0].numpy()}


@memo.cached(max_entries=16, ttl=HOUR)
def sparse_costs(ns: tuple[int, ...], top_k: int) -> dict:
    """Multiply-adds of full and of sparse top-k attention (core.sparse_topk_macs) for n = ns, with DeepSeek-V3.2's
    indexer shapes (64 index heads of width 128) and its attention's head count and widths (128 heads; d_k = 192,
    d_v = 128): DeepSeek-V3.2-Exp's config.json (index_n_heads 64, index_head_dim 128, num_attention_heads 128,
    qk_nope_head_dim 128 + qk_rope_head_dim 64, v_head_dim 128)."""
    costs = [core.sparse_topk_macs(n, top_k, n_heads=128, d_k=192, d_v=128, n_index_heads=64, d_index=128) for n in ns]
    return {"ns": list(ns), "full": [c.full for c in costs], "sparse": [c.sparse for c in costs],
            "indexer": [c.indexer for c in costs]}


# ------------------------------------------------------------------ differential attention (DIFF Transformer)
DIFF_D_MODEL, DIFF_HEADS, DIFF_KV_HEADS = 16, 4, 2  # the DIFF page: d_model, H query heads (H/2 pairs), G K/V heads


@memo.cached(max_entries=32, ttl=HOUR)
def differential(tokens: tuple[str, ...], layer: int, a: float, b: float, seed: int) -> dict:
    """core.differential_attention (causal, DiffLlama's layout) on seeded, untrained projections of the tokens'
    embeddings, with λ's re-parameterisation λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init(layer) set through
    the two dot products a = λ_q1·λ_k1 and b = λ_q2·λ_k2 (λ_q1 = a·e_1, λ_k1 = e_1; λ_q2 = b·e_1, λ_k2 = e_1).

    Returns the two softmax maps and their difference (D, n, n) with D = H/2 differential heads, λ and λ_init,
    the rows' sums (D, n), and per map the share of each row's absolute weight on its largest entry (D, n)."""
    d = DIFF_D_MODEL // DIFF_HEADS
    X = core.tokens.embed(list(tokens), DIFF_D_MODEL, seed=seed)
    shapes = {"W_q": (DIFF_D_MODEL, DIFF_HEADS * d), "W_k": (DIFF_D_MODEL, DIFF_KV_HEADS * d),
              "W_v": (DIFF_D_MODEL, DIFF_KV_HEADS * d), "W_o": (DIFF_HEADS * d, DIFF_D_MODEL)}
    W = {name: core.tokens.projection(*shape, seed=seed, name=f"df.{name}") for name, shape in shapes.items()}
    e1 = torch.zeros(d)
    e1[0] = 1.0
    tr = core.differential_attention(X, **W, n_heads=DIFF_HEADS, n_kv_heads=DIFF_KV_HEADS, layer_idx=layer,
                                     lambda_q1=a * e1, lambda_k1=e1, lambda_q2=b * e1, lambda_k2=e1)

    def peak(w: torch.Tensor) -> np.ndarray:  # (D, n): max_j |w_ij| / Σ_j |w_ij|
        return (w.abs().amax(-1) / w.abs().sum(-1).clamp_min(1e-30)).numpy()

    return {"w1": tr.weights1.numpy(), "w2": tr.weights2.numpy(), "diff": tr.weights.numpy(), "lam": float(tr.lam),
            "lambda_init": tr.lambda_init, "sums": tr.weights.sum(-1).numpy(), "peak1": peak(tr.weights1),
            "peak_diff": peak(tr.weights)}


# ------------------------------------------------------------------ local/global layers and pages of cache (Long contexts)
SCHEDULES = tuple(core.SCHEDULE_PRESETS)  # the published layer schedules, by name
@memo.cached(max_entries=16, ttl=HOUR)
def layer_schedule(name: str, n: int) -> dict:
    """A published layer schedule (core.SCHEDULE_PRESETS: Gemma 3 27B, gpt-oss-120b, Llama 4 Scout) at n tokens
    (core.schedule_reach): its layers by kind, the pattern's one period (the layers that repeat), the first layer
    count whose stack lets the last token reach token 0,
    the oldest token it reaches through all layers, and the KV cache (bfloat16, batch 1) against every layer global."""
    s = core.SCHEDULE_PRESETS[name]
    r = core.schedule_reach(s, n)
    kinds = [(layer.kind, layer.size, layer.rope) for layer in s.layers]  # (kind, size or None, RoPE or not)
    period = next(p for p in range(1, len(kinds) + 1) if all(kinds[i] == kinds[i % p] for i in range(len(kinds))))
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    return {"layers": len(s.layers), "counts": list(counts.items()), "period": kinds[:period],
            "all_reached_at": r.all_reached_at, "oldest": r.oldest[-1], "cache": r.cache_bytes,
            "global": r.global_cache_bytes, "kv_heads": s.n_kv_heads, "d_head": s.d_head}


PAGED_KV_HEADS, PAGED_D_HEAD = 8, 128  # one layer of Llama-3-8B's cache (core.MODEL_PRESETS["llama-3-8b"])


@memo.cached(max_entries=16, ttl=HOUR)
def paged(lengths: tuple[int, ...], page_size: int, max_len: int, fork: bool) -> dict:
    """core.PagedKVCache for requests of ``lengths`` tokens (one layer, G = 8 heads of 128, bfloat16), each written
    token by token; with ``fork`` a last request forks the first one after its prompt and writes 2 tokens of its own
    (copy-on-write). Returns the block tables, the pages copied on write, and the memory against contiguous
    preallocation of ``max_len`` tokens per request (core.PagedKVCache.memory)."""
    pages = sum(-(-n // page_size) for n in lengths) + (2 if fork else 0)
    cache = core.PagedKVCache(n_pages=max(pages, 1), page_size=page_size, n_kv_heads=PAGED_KV_HEADS, d_k=PAGED_D_HEAD,
                              dtype=torch.bfloat16)
    seqs = []
    for n in lengths:
        sid = cache.new_sequence()
        cache.append(sid, torch.zeros(PAGED_KV_HEADS, n, PAGED_D_HEAD), torch.zeros(PAGED_KV_HEADS, n, PAGED_D_HEAD))
        seqs.append(sid)
    if fork and seqs:
        child = cache.fork(seqs[0])
        cache.append(child, torch.zeros(PAGED_KV_HEADS, 2, PAGED_D_HEAD), torch.zeros(PAGED_KV_HEADS, 2, PAGED_D_HEAD))
        seqs.append(child)
    m = cache.memory(max(max_len, *(cache.length(s) for s in seqs)))
    return {"tables": [list(cache.block_table(s)) for s in seqs], "lengths": [cache.length(s) for s in seqs],
            "copies": cache.copies, "memory": dataclasses.asdict(m)}
