"""Newer variants (issue 33 and after): latent attention (MLA), sinks, gates and caps, the delta rule, sparse top-k
and differential attention, each on seeded, untrained projections of the shared tokens."""

from __future__ import annotations

import torch

import core
from core.variants import kept_chart, layer_demos, readouts

from .. import memo
from .common import HOUR
from .concepts import token_vectors

MLA_ROPE_BASE = 10000.0  # RoPE's θ on the d_R rotary dims of the MLA page's small example


MLA_MODELS = core.variants.mla.PUBLISHED  # DeepSeek-V3 and Kimi K2 (core.shapes.Published, each with its source)


MLA_COMPARED = ("llama-3-8b", "gpt2")  # a GQA and an MHA model of core.MODEL_PRESETS (their sources are there)


SG_HEADS = 2  # the sinks/gates/caps page's heads


DELTA_D_MODEL, DELTA_D = 8, 4  # the delta-rule page: embedding width, d_k = d_v


DELTA_CHUNK = 2  # tokens per chunk of the chunked form


DELTA_RULES = ("gated", "delta", "linear")


HYBRID = core.variants.delta.QWEN3_NEXT_HYBRID  # a 3:1 hybrid's published shapes (core.shapes.Published, with sources)


@memo.cached(max_entries=32, ttl=HOUR)
def mla(tokens: tuple[str, ...], d_model: int, heads: int, d_c: int, d_r: int, seed: int) -> dict:
    """core.mla (causal, RoPE θ 10000 on the d_R rotary dims, d_h = d_model / H) on seeded, untrained projections of
    the tokens' embeddings: the cached latent c_KV (n, d_c) and rotary key k_R (n, d_R), the explicit and absorbed
    outputs (n, d_model) with their gap, and the cache per token and layer (core.mla_cache_values)."""
    X = token_vectors(tokens, d_model, seed)
    d_h = d_model // heads
    shapes = (("W_DKV", d_model, d_c), ("W_KR", d_model, d_r), ("W_UK", d_c, heads * d_h), ("W_UV", d_c, heads * d_h),
              ("W_UQ", d_model, heads * d_h), ("W_QR", d_model, heads * d_r), ("W_o", heads * d_h, d_model))
    W = {name: core.tokens.projection(rows, cols, seed=seed, name=f"mla.{name}") for name, rows, cols in shapes}
    tr = core.mla(X, **W, n_heads=heads, rope=MLA_ROPE_BASE, causal=True)
    size = core.mla_cache_values(kv_rank=d_c, rope_dim=d_r, n_heads=heads, head_dim=d_h)
    return {"c_kv": tr.c_kv.numpy(), "k_rope": tr.k_rope.numpy(), "explicit": tr.output.numpy(),
            "absorbed": tr.output_absorbed.numpy(), "form_gap": tr.form_gap, "d_h": d_h, "mla": size.mla,
            "mha": size.mha, "ratio": size.ratio,
            "keys": tr.k.transpose(0, 1).reshape(tr.k.shape[1], -1).numpy()}  # (n, H·(d_h + d_R)): every head's key


@memo.cached(max_entries=2)  # no ttl: published numbers
def mla_published() -> list[dict]:
    """Cached values per token of DeepSeek-V3 and Kimi K2 (MLA: core.mla_cache_values) beside a GQA and an MHA model
    (core.kv_cache_bytes at one byte a value = values), per layer and over all layers, and as MHA with the same heads."""
    rows = []
    for m in MLA_MODELS:
        size = core.mla_cache_values(kv_rank=m.kv_rank, rope_dim=m.rope_dim, n_heads=m.n_heads, head_dim=m.nope_dim)
        rows.append({"name": m.name, "kind": "MLA", "layers": m.layers, "heads": m.n_heads, "per_layer": size.mla,
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
    X = token_vectors(tokens, d_model, seed)
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
    pred, write = readouts.delta_readout(rec, delta=delta)  # α_t S_{t−1}ᵀ k_t and β_t(v_t − it) (or β_t v_t), (n, d_v)
    return {"states": rec.states.numpy(), "output": rec.output.numpy(), "chunked": chunked.output.numpy(),
            "chunk_gap": float((rec.output - chunked.output).abs().max()), "pred": pred.numpy(), "write": write.numpy(),
            "k": rec.k.numpy(), "v": rec.v.numpy(), "q": rec.q.numpy(), "decay": float(rec.decay[0]), "scale": rec.scale}


@memo.cached(max_entries=32, ttl=HOUR)
def delta_rule(tokens: tuple[str, ...], beta: float, g: float, seed: int) -> dict:
    """core.gated_delta_rule (q, k L2-normalised as in Qwen3-Next) on seeded, untrained projections of the tokens'
    embeddings, d_k = d_v = DELTA_D, under the three rules: gated (β, g), the plain delta rule (β, g = 0) and
    linear attention (no delta, g = 0, β = 1); each with the chunked form's gap (core.gated_delta_rule_chunked)."""
    X = token_vectors(tokens, DELTA_D_MODEL, seed)
    q, k, v = (X @ core.tokens.projection(DELTA_D_MODEL, DELTA_D, seed=seed, name=f"dr.{w}") for w in ("W_q", "W_k", "W_v"))
    return {"gated": _delta_run(q, k, v, beta, g, True), "delta": _delta_run(q, k, v, beta, 0.0, True),
            "linear": _delta_run(q, k, v, 1.0, 0.0, False)}


@memo.cached(max_entries=8, ttl=HOUR)
def hybrid_cache(ns: tuple[int, ...]) -> list[dict]:
    """What a 3:1 hybrid (HYBRID as its schedule, core.QWEN3_NEXT: 36 linear, 12 global layers) keeps per sequence at
    n tokens, in numbers (core.LayerKind.values, the count core.kept sums): the KV cache of its attention layers and the
    fixed d_k × d_v states of its Gated DeltaNet layers (without the conv's last inputs, which the caption leaves out),
    beside the same model with every layer full attention (core.schedule_reach's global_cache_bytes, one byte a value)."""
    s = core.QWEN3_NEXT
    state = sum(layer.state_values for layer in s.layers if layer.kind == "linear")
    out = []
    for n in ns:
        kv = sum(v for layer, v in zip(s.layers, s.values(n), strict=True) if layer.kind == "global")
        full = core.schedule_reach(s, n, bytes_per_value=1).global_cache_bytes
        out.append({"n": n, "kv": kv, "state": state, "hybrid": kv + state, "full": full})
    return out


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
    X = token_vectors(tokens, d, seed)[None]  # (1, n, d)
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
        index = readouts.oracle_index(full.scores, full.mask)  # (1, n, n): the heads' mean score
    tr = core.sparse_topk_attention(q, k, v, index_scores=index, top_k=top_k)
    chosen = tr.chosen[0]  # (n, n)
    full_w = full.weights[0]  # (H, n, n)
    return {"index": index[0].numpy(), "chosen": chosen.numpy(), "logits": tr.attention.logits[0].numpy(),
            "sparse": tr.attention.weights[0].numpy(),
            "full": full_w.numpy(), "gap": core.max_abs_diff(tr.output, full.output),
            "coverage": readouts.weight_kept(full_w, chosen).numpy(), "keys": tr.keys_per_query[0].numpy()}


@memo.cached(max_entries=16, ttl=HOUR)
def sparse_costs(ns: tuple[int, ...], top_k: int) -> dict:
    """Multiply-adds of full and of sparse top-k attention (core.sparse_topk_macs) for n = ns, with DeepSeek-V3.2's
    indexer shapes (64 index heads of width 128) and its attention's head count and widths (128 heads; d_k = 192,
    d_v = 128): DeepSeek-V3.2-Exp's config.json (index_n_heads 64, index_head_dim 128, num_attention_heads 128,
    qk_nope_head_dim 128 + qk_rope_head_dim 64, v_head_dim 128)."""
    costs = [core.sparse_topk_macs(n, top_k, n_heads=128, d_k=192, d_v=128, n_index_heads=64, d_index=128) for n in ns]
    return {"ns": list(ns), "full": [c.full for c in costs], "sparse": [c.sparse for c in costs],
            "indexer": [c.indexer for c in costs]}


DIFF_D_MODEL, DIFF_HEADS, DIFF_KV_HEADS = 16, 4, 2  # the DIFF page: d_model, H query heads (H/2 pairs), G K/V heads


@memo.cached(max_entries=32, ttl=HOUR)
def differential(tokens: tuple[str, ...], layer: int, a: float, b: float, seed: int) -> dict:
    """core.differential_attention (causal, DiffLlama's layout) on seeded, untrained projections of the tokens'
    embeddings, with λ's re-parameterisation λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init(layer) set through
    the two dot products a = λ_q1·λ_k1 and b = λ_q2·λ_k2 (λ_q1 = a·e_1, λ_k1 = e_1; λ_q2 = b·e_1, λ_k2 = e_1).

    Returns the two softmax maps and their difference (D, n, n) with D = H/2 differential heads, λ and λ_init,
    the rows' sums (D, n), and per map the share of each row's absolute weight on its largest entry (D, n)."""
    d = DIFF_D_MODEL // DIFF_HEADS
    X = token_vectors(tokens, DIFF_D_MODEL, seed)
    shapes = {"W_q": (DIFF_D_MODEL, DIFF_HEADS * d), "W_k": (DIFF_D_MODEL, DIFF_KV_HEADS * d),
              "W_v": (DIFF_D_MODEL, DIFF_KV_HEADS * d), "W_o": (DIFF_HEADS * d, DIFF_D_MODEL)}
    W = {name: core.tokens.projection(*shape, seed=seed, name=f"df.{name}") for name, shape in shapes.items()}
    e1 = torch.zeros(d)
    e1[0] = 1.0
    tr = core.differential_attention(X, **W, n_heads=DIFF_HEADS, n_kv_heads=DIFF_KV_HEADS, layer_idx=layer,
                                     lambda_q1=a * e1, lambda_k1=e1, lambda_q2=b * e1, lambda_k2=e1)

    return {"w1": tr.weights1.numpy(), "w2": tr.weights2.numpy(), "diff": tr.weights.numpy(), "lam": float(tr.lam),
            "lambda_init": tr.lambda_init, "sums": tr.weights.sum(-1).numpy(), "peak1": readouts.peak_share(tr.weights1).numpy(),
            "peak_diff": readouts.peak_share(tr.weights).numpy()}


KEPT_MODELS = kept_chart.CHART_MODELS  # the 2026 chart's models (core.shapes records, with sources)


@memo.cached(max_entries=8, ttl=HOUR)
def kept_curves(bytes_per_value: int) -> dict:
    """What eight published models keep for one sequence (core.variants.kept_chart, from core.kept): per model its
    GiB at each context length, at 1M tokens, whether it stays flat, its source; and DeepSeek-V4's values a token and
    layer beyond the window (CSA, HCA) beside DeepSeek-V3's MLA."""
    kc = kept_chart
    rows = [{"key": c.key, "mechanism": c.mechanism, "name": c.name, "source": c.source, "context": c.context,
             "gib": [c.gib(v, bytes_per_value) for v in c.values], "million": c.million,
             "million_gib": c.gib(c.million, bytes_per_value), "flat": c.flat,
             "past": c.past_context} for c in kc.curves()]
    v4, v3 = core.shapes.MODELS["deepseek-v4-flash"], core.shapes.MODELS["deepseek-v3"]
    return {"contexts": list(kc.CONTEXTS), "rows": rows, "million": kc.MILLION,
            "csa": kc.growth_per_layer(v4, "csa"), "hca": kc.growth_per_layer(v4, "hca"),
            "mla": kc.growth_per_layer(v3, "mla"), "window": v4.window}


LAYER_BETA_MAXES = layer_demos.BETA_MAXES  # the delta-rule page's β range: (0, 1) or (0, 2)


@memo.cached(max_entries=32, ttl=HOUR)
def layers_2026(tokens: tuple[str, ...], beta_max: float, seed: int) -> dict:
    """The whole Gated DeltaNet layer, Kimi Delta Attention and Mamba-2 on seeded untrained weights
    (core.variants.layer_demos): the conv's taps (C, κ), β and α per value head (H_v, n), head 0's fades (GDN and
    Mamba-2 one per token, KDA one per key channel), Mamba-2's q = C, k = B, v = x for head 0, the final states of
    head 0 and every cache's numbers (states, conv inputs)."""
    g = layer_demos.gdn_demo(tokens, seed, beta_max)
    k, m = layer_demos.kda_demo(tokens, seed), layer_demos.mamba2_demo(tokens, seed)
    f = layer_demos.fades(g, k, m)
    return {"taps": g.taps.numpy(), "beta": g.beta[0].numpy(), "alpha": g.decay[0].numpy(),
            "gdn_fade": f.gdn.numpy(), "kda_fade": f.kda.numpy(), "m2_fade": f.mamba2.numpy(),
            "C": m.scan.q[0, 0].numpy(), "B": m.scan.k[0, 0].numpy(), "x": m.scan.v[0, 0].numpy(),
            "gdn_state": g.cache.state[0, 0].numpy(), "kda_state": k.cache.state[0, 0].numpy(),
            "m2_state": m.cache.state[0, 0].numpy(),
            "cache": {name: layer_demos.cache_values(tr) for name, tr in (("gdn", g), ("kda", k), ("mamba2", m))},
            "sizes": layer_demos.DEMO, "beta_max": beta_max}


GEMMA4_LAYERS = core.shapes.MODELS[kept_chart.GEMMA4].layers  # the stack the KV-sharing page draws


@memo.cached(max_entries=32, ttl=HOUR)
def gemma4_sharing(n_shared: int, tokens: int, bytes_per_value: int) -> dict:
    """Gemma 4's layer stack with the last n_shared layers reusing an earlier layer's K and V (core.variants.kept_chart
    .sharing_meter over core.sharing_plan and core.kept): per layer kind, mode, source and GiB; the meter."""
    m = kept_chart.sharing_meter(n_shared, tokens)
    gib = [kept_chart.gib(v, bytes_per_value) for v in m.per_layer]
    return {"name": m.name, "kinds": list(m.plan.layer_types), "modes": list(m.plan.modes), "source": list(m.plan.source),
            "gib": gib, "shared_gib": kept_chart.gib(m.shared, bytes_per_value),
            "alone_gib": kept_chart.gib(m.alone, bytes_per_value),
            "fraction": m.fraction, "cached": m.plan.cached_layers, "layers": len(m.per_layer), "tokens": m.tokens}


V4 = core.shapes.MODELS[kept_chart.DEEPSEEK_V4]  # DeepSeek-V4-Flash's record (window, pools; transformers' defaults)
V4_CONTEXTS = kept_chart.CONTEXTS


@memo.cached(max_entries=32, ttl=HOUR)
def v4_strips(tokens: int, csa_rate: int, hca_rate: int) -> dict:
    """DeepSeek-V4's three cache strips (core.variants.kept_chart.cache_strips): entries of the window, CSA and HCA at
    every context of the chart and at ``tokens``, with one CSA and one HCA layer's values."""
    curve = [kept_chart.cache_strips(n, csa_rate, hca_rate) for n in V4_CONTEXTS]
    at = kept_chart.cache_strips(tokens, csa_rate, hca_rate)
    return {"contexts": list(V4_CONTEXTS), "window": [s.window for s in curve], "csa": [s.csa for s in curve],
            "hca": [s.hca for s in curve], "at": at}


BLOCK_PATTERNS = layer_demos.INDEXER_PATTERNS  # the sparse page's layer stacks (F own indexer, S shared)
closed_blocks = layer_demos.closed_blocks  # whole blocks n tokens close (the top-k control's bound)


@memo.cached(max_entries=32, ttl=HOUR)
def shared_blocks(tokens: tuple[str, ...], block: int, keep_blocks: int, pattern: str, seed: int) -> dict:
    """Untrained block indexers over a stack of layers (core.variants.layer_demos.shared_blocks_demo): per layer the
    tokens each query attends (n, n; 1 = chosen) and the layer whose choice it reads."""
    r = layer_demos.shared_blocks_demo(tokens, seed, block, keep_blocks, pattern)
    return {"source": list(r.source), "chosen": [c.to(torch.float64).numpy() for c in r.chosen],
            "blocks": [b.to(torch.float64).numpy() for b in r.chosen_blocks], "n_blocks": r.n_blocks, "pattern": pattern}
