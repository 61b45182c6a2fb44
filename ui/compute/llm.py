"""Attention in today's LLMs (issue 22): shared keys and values, the KV cache step by step, where positions go, long
contexts (windows, layer schedules, pages of cache), tiles that never build the matrix, linear attention."""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

import core
from attention_lab import scenario
from core.mechanism import measures
from core.variants import readouts

from .. import memo
from .common import HOUR
from .concepts import embedding, position_table, projection, token_vectors


def _decoder_weights(d_model: int, n_heads: int, n_kv_heads: int, seed: int, prefix: str) -> dict[str, torch.Tensor]:
    """Seeded (untrained) W_q (d, d), W_k and W_v (d, G·d_head), W_o (d, d) for a decoder layer."""
    d_kv = n_kv_heads * (d_model // n_heads)
    shapes = {"W_q": (d_model, d_model), "W_k": (d_model, d_kv), "W_v": (d_model, d_kv), "W_o": (d_model, d_model)}
    return {n: core.tokens.projection(*s, seed=seed, name=f"{prefix}.{n}") for n, s in shapes.items()}


@memo.cached(max_entries=32, ttl=HOUR)
def grouped_heads(tokens: tuple[str, ...], d_model: int, n_heads: int, n_kv_heads: int, seed: int) -> dict:
    """Grouped-query self-attention (core.multi_head_attention with n_kv_heads) on seeded embeddings:
    weights (H, n, n), kv_head_of (H,), reads (H, G) as 1/0, d_head."""
    X = token_vectors(tokens, d_model, seed)
    W = _decoder_weights(d_model, n_heads, n_kv_heads, seed, "kvs")
    tr = core.multi_head_attention(X[None], n_heads=n_heads, n_kv_heads=n_kv_heads, **W)
    reads = np.zeros((n_heads, n_kv_heads))
    reads[np.arange(n_heads), list(tr.kv_head_of)] = 1.0
    return {"weights": tr.weights[0].detach().cpu().numpy(), "kv_head_of": tuple(tr.kv_head_of), "reads": reads,
            "d_head": d_model // n_heads}


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
    x = core.tokens.projection(m, d, seed=seed, name="lp.x")
    return {"track": track.numpy(), "dims": measures.rope_pair_dims(pair, d, pairing),
            "theta": float(core.positional.rope_frequencies(d, base=base)[pair]),
            "offsets": offsets.numpy(), "scores": scores, "shift_gap": core.max_abs_diff(scores[0], scores[7]),
            "pairing_gap": measures.rope_pairing_gap(x, base=base),
            "norm_gap": measures.rope_norm_gap(q, m, base=base, pairing=pairing)}


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


@memo.cached(max_entries=32, ttl=HOUR)
def decode(tokens: tuple[str, ...], d_model: int, n_heads: int, n_kv_heads: int, rope_base: float | None,
           seed: int) -> dict:
    """The tokens decoded one at a time with a KV cache (core.cached_decode) beside full causal
    multi-head attention over the whole sequence (core.multi_head_attention, the same weights).

    rows: per step the new row of weights (H, t); keys/values: the final cache as (n, G·d_head);
    full_weights (H, n, n); gaps / out_gaps per step: max |cached − full| of the row and of o_t;
    madds_* per step and cum_* running totals (multiply-adds counted by core); a cached step is
    macs_fixed + macs_per_key · (keys in the cache), both from core.kv_cache.decode_step_macs."""
    X = token_vectors(tokens, d_model, seed)
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
            "madds_cached": cached, "madds_recompute": recompute, **measures.decode_step_parts(d_model, n_heads, n_kv_heads),
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


SCHEDULES = tuple(core.SCHEDULE_PRESETS)  # the published layer schedules, by name


@memo.cached(max_entries=16, ttl=HOUR)
def layer_schedule(name: str, n: int) -> dict:
    """A published layer schedule (core.SCHEDULE_PRESETS: Gemma 3 27B, gpt-oss-120b, Llama 4 Scout, Gemma 2 2B) at n tokens
    (core.schedule_reach): its layers by kind, the pattern's one period (the layers that repeat), the first layer
    count whose stack lets the last token reach token 0,
    the oldest token it reaches through all layers, and the KV cache (bfloat16, batch 1) against every layer global."""
    s = core.SCHEDULE_PRESETS[name]
    r = core.schedule_reach(s, n)
    kinds = [(layer.kind, layer.size, layer.rope) for layer in s.layers]  # (kind, size or None, RoPE or not)
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    return {"layers": len(s.layers), "counts": list(counts.items()), "period": readouts.schedule_period(kinds),
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
