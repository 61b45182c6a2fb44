"""A language model writing: SmolLM2-135M or Gemma 3 270M (``LM_MODELS``), each loaded once per server, their traces
and next-token distributions, and one decode scheduler per model (``serving.scheduler``) that every session's writing
on that model joins. Every call takes ``model`` (a key of ``LM_MODELS``; SmolLM2 by default)."""

from __future__ import annotations

import os
import threading

import numpy as np
import streamlit as st
import torch

from serving import decode_process, decoding, fair
from serving import scheduler as serving_scheduler

from .. import memo
from .common import ASSETS_TEXTS, HOUR

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


LM_MODELS = ("smollm2", "gemma3")  # the page's models: core.pretrained.smollm2 and core.pretrained.gemma3


LM_LOCAL_WINDOWS = (2, 4, 8, 16, 32)  # the narrowed local windows the page offers for a model with local blocks


@st.cache_resource(show_spinner=False, max_entries=len(LM_MODELS))
def language_model(model: str = "smollm2"):
    """The model ``model`` (core.pretrained.smollm2 or .gemma3), loaded once per server and shared by every session
    (never mutated). ValueError for a model not in LM_MODELS.

    Where the decoding runs in a process of its own (lm_scheduler), the weights are moved into a memory file before
    any session uses them, and that process maps the same pages.
    Raises core.models.decoder.ModelNotInstalled (not cached: an install is picked up on the next run)."""
    from core import pretrained

    if model not in LM_MODELS:
        raise ValueError(f"unknown model {model!r}: one of {LM_MODELS}")
    m = pretrained.gemma3() if model == "gemma3" else pretrained.smollm2()
    if decode_process.AVAILABLE:
        m.share_memory()
    return m


@memo.cached(max_entries=32, ttl=HOUR)
def lm_token_count(text: str, model: str = "smollm2") -> int:
    """How many tokens ``text`` is (however long it is)."""
    return len(language_model(model).encode(text))


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
def lm_trace(text: str, device: str, model: str = "smollm2", local_window: int | None = None) -> dict:
    """The prompt through the decoder, as numpy: tokens, byte flags, attentions (30, 9, n, n), q (30, 9, n, 64),
    k, v (30, 3, n, 64), the last position's logits (vocab,), sinks / previous-token shares (30, 9) and the
    logit lens at the last token (Gemma 3: (18, 4, n, n), q (18, 4, n, 256), k, v (18, 1, n, 256)); ``local_window``
    narrows the model's local blocks (``Mechanism(local_window=…)``). ValueError beyond LM_MAX_TOKENS.

    6 entries of at most 64 tokens are at most ~75 MB (attentions and q ~4.4 MB each, k and v ~1.5 MB)."""
    from core.models import decoder
    from core.models.decoder_forward import window_mask
    from core.models.decoder_heads import local_global

    m = language_model(model)
    mech = decoder.Mechanism(local_window=local_window)
    with _LM_TRACING:
        tr = m.trace(text, LM_MAX_TOKENS, mech=mech, device=device)
    cpu = lambda x: x.detach().cpu().numpy()  # noqa: E731
    stats = decoder.head_stats(tr.attentions) if tr.n_tokens >= 2 else None
    lens = decoder.logit_lens(m, tr)
    c = m.config
    kinds = None if stats is None else {name: vars(local_global(getattr(stats, name), c)) for name in ("sink", "previous")}
    # the keys each block's queries see: the block's own window (Gemma 3's local blocks, narrowed by local_window)
    own = [c.window_of(l) if c.window_of(l) is None or local_window is None else min(c.window_of(l), local_window)
           for l in range(c.n_layers)]
    seen = torch.stack([window_mask(torch.arange(tr.n_tokens), tr.n_tokens, w) for w in own]).numpy()  # (L, n, n)
    return {"windows": [c.window_of(l) for l in range(c.n_layers)], "bases": [c.base_of(l) for l in range(c.n_layers)],
            "local_blocks": [l for l in range(c.n_layers) if c.window_of(l)], "seen": seen,
            "global_blocks": [l for l in range(c.n_layers) if not c.window_of(l)],
            "qk_norm": c.qk_norm, "kinds": kinds,
            "tokens": list(tr.tokens), "is_bytes": list(tr.is_bytes), "attentions": cpu(tr.attentions),
            "q": cpu(tr.q), "k": cpu(tr.k), "v": cpu(tr.v), "kv_head_of": tr.kv_head_of, "logits": cpu(tr.logits[-1]),
            "sink": None if stats is None else cpu(stats.sink), "previous": None if stats is None else cpu(stats.previous),
            "lens": {"tokens": [m.tokens(row) for row in lens.top_ids.tolist()], "probs": cpu(lens.top_probs),
                     "final": m.token_text(lens.final_id), "final_prob": cpu(lens.final_prob)}}


@memo.cached(max_entries=64, ttl=HOUR)
def lm_sampling(logits: np.ndarray, temperature: float, top_k: int | None, top_p: float | None,
                model: str = "smollm2") -> dict:
    """The ten most likely next tokens under the model and their probabilities after temperature, top-k, top-p."""
    from core.models import decoder

    x = torch.from_numpy(logits)
    model_p = torch.softmax(x, -1)
    top = torch.topk(model_p, decoder.TOP)
    sampled = decoder.next_token_probs(x, temperature, top_k, top_p)
    return {"ids": top.indices.tolist(), "tokens": language_model(model).tokens(top.indices.tolist()),
            "model": top.values.numpy(), "sampled": sampled[top.indices].numpy(),
            "kept": int((sampled > 0).sum())}


@st.cache_resource(show_spinner=False, max_entries=3 * len(LM_MODELS))  # one per device (cpu, cuda, mps) and model
def lm_scheduler(device: str, model: str = "smollm2") -> serving_scheduler.DecodeScheduler:
    """The server's one decode scheduler per device and model, made on its first use (continuous batching,
    ``serving.decoding``): every session's writing on that model joins one batch; its keys and values take at most
    LM_CACHE_BYTES. On the CPU it runs in a process of its
    own (``serving.decode_process``: its steps never wait for the sessions' GIL; Linux); on a GPU in a thread of the
    server (``serving.scheduler.make``)."""
    return serving_scheduler.make(language_model(model), device, threads=LM_THREADS, cache_bytes=LM_CACHE_BYTES,
                                  capacity=LM_MAX_TOKENS + LM_MAX_NEW, max_batch=LM_MAX_BATCH,
                                  abandoned_after=LM_ABANDON_S)


def lm_request(text: str, n_new: int, temperature: float, top_k: int | None, top_p: float | None,
               seed: int, model: str = "smollm2") -> decoding.Request:
    """The request for ``n_new`` tokens after ``text``; ValueError for a prompt the page does not run."""
    ids = language_model(model).encode(text)
    if not 1 <= len(ids) <= LM_MAX_TOKENS:
        raise ValueError(f"the text is {len(ids)} tokens long: 1 … {LM_MAX_TOKENS} are written after")
    return decoding.Request(ids=tuple(ids), n_new=n_new, temperature=float(temperature), top_k=top_k, top_p=top_p,
                            seed=int(seed))


def lm_writing(text: str, n_new: int, temperature: float, top_k: int | None, top_p: float | None, seed: int,
               device: str, model: str = "smollm2") -> decoding.Writing:
    """The server's writing of ``n_new`` tokens after ``text``: found (asking keeps it alive) or put in the line.
    ValueError for a prompt the page does not run; ``decoding.QueueFull`` when the line is full."""
    return lm_scheduler(device, model).submit(lm_request(text, n_new, temperature, top_k, top_p, seed, model))


@memo.cached(max_entries=32, ttl=HOUR)
def lm_generate(text: str, n_new: int, temperature: float, top_k: int | None, top_p: float | None, seed: int,
                device: str, model: str = "smollm2") -> dict:
    """``n_new`` tokens written after ``text`` by the server's batch (seeded: the first n − 1 are those of the call
    for n − 1), waiting until they are. Per step: the token, its probability, the cache's size; the attention rows
    (30, 9, c) of the position that predicted the last one; the largest batch it was written in."""
    w = serving_scheduler.wait(lm_scheduler(device, model), lm_request(text, n_new, temperature, top_k, top_p, seed, model),
                               LM_ASK_S)
    if w.stopped == "full":
        raise decoding.QueueFull("the decoding process's line is full")
    if w.stopped not in ("length", "eos"):
        raise ValueError(f"the writing stopped: {w.stopped}")
    m = language_model(model)
    steps = [{"token": s.token, "prob": s.chosen_prob, "cache": s.cache_positions, "bytes": s.cache_bytes}
             for s in w.steps]
    ids = list(w.request.ids)
    return {"steps": steps, "text": m.decode(ids + [s.token_id for s in w.steps]), "stopped": w.stopped,
            "attention": w.steps[-1].attention.numpy() if w.steps else None, "batch": w.batch,
            "context": m.tokens(ids) + [s.token for s in w.steps[:-1]], "kv_heads": m.config.n_kv_heads}


@memo.cached(max_entries=32, ttl=HOUR)
def lm_next(text: str, heads_off: tuple[tuple[int, int], ...], layers_off: tuple[int, ...], window: int | None,
            sinks: int, device: str, model: str = "smollm2", local_window: int | None = None) -> dict:
    """The next-token distribution after ``text`` with the mechanism changed (heads / layers off, a KV window)."""
    from core.models import decoder

    mech = decoder.Mechanism(heads_off=frozenset(heads_off), layers_off=frozenset(layers_off), window=window, sinks=sinks,
                             local_window=local_window)
    nt = language_model(model).next_token(text, LM_MAX_TOKENS, mech=mech, device=device)
    return {"tokens": nt.top_tokens, "probs": nt.top_probs.numpy(), "ids": nt.top_ids.tolist(), "all": nt.probs.numpy()}


@memo.cached(max_entries=2)  # no ttl: measured once per server and model (LM_MODELS: two)
def lm_induction(device: str, model: str = "smollm2") -> dict:
    """Every head's induction score (30, 9) on INDUCTION_LENGTH random tokens written twice (seed 0), and the two losses."""
    from core.models import decoder

    ind = decoder.induction(language_model(model), decoder.INDUCTION_LENGTH, 0, device=device)
    return {"scores": ind.scores.cpu().numpy(), "first": ind.loss_first, "second": ind.loss_second}


@memo.cached(max_entries=20)  # no ttl: one text; a model's full cache + 3 windows × 3 (alone, sinks, sinks re-indexed): 10
def lm_text_loss(window: int | None, sinks: int, device: str, model: str = "smollm2", reindex: bool = False) -> dict:
    """The next-token loss of the shipped text (Alice, ch. 1) with a KV window of the last ``window`` keys
    (and the first ``sinks``; ``reindex``: at positions within the cache, as StreamingLLM), or the full cache."""
    from core.models import decoder

    text = (ASSETS_TEXTS / "alice.en.txt").read_text(encoding="utf-8")
    mech = decoder.Mechanism(window=window, sinks=sinks, reindex=reindex)
    r = decoder.text_loss(language_model(model), text, mech, device=device)
    return {"loss": r.loss, "ppl": r.perplexity, "tokens": int(r.per_token.numel()) + 1}


@memo.cached(max_entries=16, ttl=HOUR)
def lm_greedy(text: str, n_new: int, local_window: int | None, device: str, model: str = "smollm2") -> dict:
    """``n_new`` tokens written greedily after ``text`` by ``model.generate`` (alone, not the server's batch) with the
    local blocks' window narrowed to ``local_window`` (None: the file's windows): the text and its tokens."""
    from core.models import decoder

    g = language_model(model).generate(text, n_new, 0.0, max_tokens=LM_MAX_TOKENS, mech=decoder.Mechanism(
        local_window=local_window), device=device)
    return {"tokens": [s.token for s in g.steps], "ids": [s.token_id for s in g.steps], "stopped": g.stopped}


@memo.cached(max_entries=16, ttl=HOUR)
def lm_qk_norm(text: str, layer: int, head: int, device: str, model: str = "gemma3") -> dict:
    """One head's q and k before and after QK-norm (``decoder.qk_norm``), as numpy: q, q_normed, k, k_normed
    (n, d_head), the gains w_q, w_k (d_head,)."""
    from core.models import decoder

    m = language_model(model)
    with _LM_TRACING:
        tr = m.trace(text, LM_MAX_TOKENS, device=device)
    v = decoder.qk_norm(m, tr, layer, head)
    return {name: getattr(v, name).detach().cpu().numpy() for name in ("q", "q_normed", "k", "k_normed", "w_q", "w_k")}
