"""Cost curves: the multiply-adds one attention/mixer layer spends to decode ONE new token at context length t, counted.

For each mechanism of the "what a 2026 model keeps" chart (core.variants.kept_chart.CHART_MODELS) this runs core's own
decoding step for that layer — with a cache of the size the layer keeps after t − 1 tokens, at the registry's published
widths (core.shapes.MODELS; batch 1, seeded random weights and caches: the count depends on shapes only) — under
core.mechanism.measures.counted_macs (torch.utils.flop_counter.FlopCounterMode), at t = 128 … 32,768 (every power of
two), fits count = a + b·t exactly (rational arithmetic) on the longest run of measured points and checks the fit on
every point of that run. Where core has a formula (core.mechanism.kv_cache.decode_step_macs) the count is checked
against it. Run: ``python -m bench.cost`` (prints Markdown; ``--quick`` stops at t = 2,048).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import torch

from core.mechanism.kv_cache import KVCache, attend_with_cache, decode_step_macs
from core.mechanism.measures import Counted, counted_macs
from core.mechanism.multihead import merge_heads, split_heads
from core.mechanism.norms import rms_norm
from core.mechanism.positional import rope_tables
from core.seeded import derive_seed
from core.shapes import MODELS
from core.variants import compressed
from core.variants.gated_deltanet import DeltaNetCache, gated_deltanet, kimi_delta_attention
from core.variants.kv_sharing import gemma4_attention, proportional_rope
from core.variants.mamba2 import Mamba2Cache, mamba2
from core.variants.mla import LatentCache, mla_decode

CONTEXTS = (128, 512, 2048, 8192, 32768)  # every count is measured, none extrapolated

# widths the registry does not publish, with their sources (every other number: core.shapes.MODELS)
DEEPSEEK_V3_Q_LORA = 1536  # deepseek-ai/DeepSeek-V3 config.json q_lora_rank 1536 (transformers DeepseekV3Config default)
V4 = {"q_lora": 1024, "o_groups": 8, "o_lora": 1024, "index_heads": 64}  # transformers 5.25 DeepseekV4Config() defaults:
# q_lora_rank 1024, o_groups 8, o_lora_rank 1024, index_n_heads 64 (docstring: deepseek-ai/DeepSeek-V4-Flash-Base)
GEMMA4_GLOBAL_ROPE_FRACTION = 0.25  # Gemma4TextConfig full_attention partial_rotary_factor (values only, not counts)


class Weights:
    """Seeded N(0, 0.02²) tensors, one stream per name (core.seeded's derivation; torch.randn in float32 for speed)."""

    def __init__(self, key: str):
        self.key = key

    def __call__(self, name: str, *shape: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(derive_seed(0, f"{self.key}/{name}"))
        return torch.randn(shape, generator=gen) * 0.02


@dataclass(frozen=True)
class Curve:
    """One layer's counted step at each t: macs (FlopCounterMode) and products (element-wise), and the exact fit."""

    mechanism: str
    model: str
    layer: str
    contexts: tuple[int, ...]
    macs: tuple[Fraction, ...]
    products: tuple[Fraction, ...]
    note: str = ""
    formula: str = ""

    def fit(self, counts: tuple[Fraction, ...] | None = None) -> tuple[int, Fraction, Fraction]:
        return exact_fit(self.contexts, self.macs if counts is None else counts)


def exact_fit(ts: tuple[int, ...], counts: tuple[Fraction, ...]) -> tuple[int, Fraction, Fraction]:
    """(t₀, a, b): count = a + b·t holds exactly on every measured t ≥ t₀, for the smallest such t₀ with at least three
    points (the last two points always fit a line; a third checks it). ValueError when no three points do."""
    for i in range(len(ts) - 2):
        b = Fraction(counts[-1] - counts[i], ts[-1] - ts[i])
        a = counts[i] - b * ts[i]
        if all(c == a + b * t for t, c in zip(ts[i:], counts[i:], strict=True)):
            return ts[i], a, b
    raise ValueError(f"no three measured points lie on a line: {list(zip(ts, counts, strict=True))}")


def growth(ts, counts) -> str:
    try:
        t0, a, b = exact_fit(ts, counts)
    except ValueError:
        return "not affine on the measured points"
    since = "" if t0 == ts[0] else f" (t ≥ {t0:,})"
    if b == 0:
        return f"constant{since}"
    per = f"{int(b):,}" if b.denominator == 1 else f"{b.numerator:,}/{b.denominator}"
    return f"+{per} per token{since}"


def _counted(fn: Callable[[], object]) -> Counted:
    return counted_macs(fn)


# ---------------------------------------------------------------------------
# One step per mechanism: t is the context the new token attends, itself included (the cache holds t − 1 tokens)
# ---------------------------------------------------------------------------

def gqa_step(key: str) -> Callable[[int], Counted]:
    """MHA / GQA: project the new token, core's attend_with_cache over a KV cache of t − 1 tokens, output projection."""
    p, w = MODELS[key], Weights(key)
    H, G, d, D = p.n_heads, p.n_kv_heads, p.d_head, p.d_model
    W_q, W_k, W_v, W_o = w("W_q", D, H * d), w("W_k", D, G * d), w("W_v", D, G * d), w("W_o", H * d, D)
    x = w("x", 1, 1, D)

    def step(t: int) -> Counted:
        cache = KVCache(k=w(f"k{t}", 1, G, t - 1, d), v=w(f"v{t}", 1, G, t - 1, d))

        def run():
            q, k, v = split_heads(x @ W_q, H), split_heads(x @ W_k, G), split_heads(x @ W_v, G)  # (1, ·, 1, d)
            out = attend_with_cache(q, k, v, cache, rope_base=p.rope_base, check_finite=False)
            return merge_heads(out.output) @ W_o  # (1, 1, D)
        return _counted(run)
    return step


def mla_step(key: str) -> tuple[Callable[[int], Counted], Counted]:
    """MLA absorbed: core's mla_decode against a LatentCache of t − 1 tokens. Also returns the count of the weight fold
    W_UV,h·W_o,h that mla_decode recomputes at every step (an engine folds once), counted on the same matmul."""
    p, w = MODELS[key], Weights(key)
    H, D, d_c, d_R, d_h, d_v, d_q = p.n_heads, p.d_model, p.kv_rank, p.rope_dim, p.nope_dim, p.d_head, DEEPSEEK_V3_Q_LORA
    W = dict(W_DKV=w("W_DKV", D, d_c), W_KR=w("W_KR", D, d_R), W_UK=w("W_UK", d_c, H * d_h), W_UV=w("W_UV", d_c, H * d_v),
             W_UQ=w("W_UQ", d_q, H * d_h), W_QR=w("W_QR", d_q, H * d_R), W_o=w("W_o", H * d_v, D), W_DQ=w("W_DQ", D, d_q),
             kv_norm=torch.ones(d_c), q_norm=torch.ones(d_q))
    x = w("x", 1, 1, D)
    fold = counted_macs(torch.matmul, W["W_UV"].reshape(d_c, H, d_v).permute(1, 0, 2), W["W_o"].reshape(H, d_v, D))

    def step(t: int) -> Counted:
        cache = LatentCache(c_kv=w(f"c{t}", 1, t - 1, d_c), k_rope=w(f"r{t}", 1, t - 1, d_R))
        return _counted(lambda: mla_decode(x, cache, **W, n_heads=H, rope_base=10000.0).output)
    return step, fold


def gemma4_step(key: str, kind: str, *, reused: bool) -> Callable[[int], Counted]:
    """Gemma 4: core's gemma4_attention for the new token over the layer's K and V (the last w for a sliding layer).
    A reused layer is handed them (shared=); an own layer first projects, normalises and rotates the new token's K
    (and V; K = V on global layers) as Gemma4TextAttention does, then attends the same way."""
    p, w = MODELS[key], Weights(f"{key}/{kind}")
    sliding = kind == "window"
    H, D = p.n_heads, p.d_model
    d, G = (p.d_head, p.n_kv_heads) if sliding else (p.global_d_head, p.global_kv_heads)
    W_q, q_norm, W_o = w("W_q", D, H * d), torch.ones(d), w("W_o", H * d, D)
    W_k, W_v, k_norm = w("W_k", D, G * d), (w("W_v", D, G * d) if sliding else None), torch.ones(d)
    x = w("x", 1, 1, D)

    def step(t: int) -> Counted:
        held = t if not sliding else min(t, p.window)  # keys the new token reads, itself included
        rope = (rope_tables(1, d, base=10000.0, pairing="half", start=t - 1) if sliding else
                proportional_rope(1, d, base=1_000_000.0, fraction=GEMMA4_GLOBAL_ROPE_FRACTION, start=t - 1))
        K, V = w(f"K{t}", 1, G, held - (0 if reused else 1), d), w(f"V{t}", 1, G, held - (0 if reused else 1), d)

        def run():
            keys, values = K, V
            if not reused:
                raw = x @ W_k  # (1, 1, G·d)
                k = rope.apply(rms_norm(split_heads(raw, G), k_norm))
                v = rms_norm(split_heads(raw if W_v is None else x @ W_v, G))
                keys, values = torch.cat([K, k], dim=-2), torch.cat([V, v], dim=-2)
            return gemma4_attention(x, W_q=W_q, q_norm=q_norm, W_o=W_o, n_heads=H, rope=rope, shared=(keys, values),
                                    window=p.window if sliding else None).output
        return _counted(run)
    return step


def gdn_step(key: str) -> Callable[[int], Counted]:
    """Gated DeltaNet: core's gated_deltanet for one token with its DeltaNetCache (state and the conv's last κ − 1)."""
    p, w = MODELS[key], Weights(key)
    Hv, Hk, dk, dv, D, kappa = (p.linear_value_heads, p.linear_key_heads, p.linear_key_dim, p.linear_value_dim,
                                p.d_model, p.conv_kernel)
    C = 2 * Hk * dk + Hv * dv
    W = dict(W_q=w("W_q", D, Hk * dk), W_k=w("W_k", D, Hk * dk), W_v=w("W_v", D, Hv * dv), W_z=w("W_z", D, Hv * dv),
             W_b=w("W_b", D, Hv), W_a=w("W_a", D, Hv), conv_taps=w("taps", C, kappa), A_log=w("A_log", Hv),
             dt_bias=w("dt_bias", Hv), norm_weight=torch.ones(dv), W_out=w("W_out", Hv * dv, D))
    x = w("x", 1, 1, D)
    cache = DeltaNetCache(state=w("state", 1, Hv, dk, dv), conv=w("conv", 1, kappa - 1, C))
    return lambda t: _counted(lambda: gated_deltanet(x, cache, **W, n_key_heads=Hk, n_value_heads=Hv).output)


def kda_step(key: str) -> Callable[[int], Counted]:
    """Kimi Delta Attention: core's kimi_delta_attention for one token with its DeltaNetCache."""
    p, w = MODELS[key], Weights(key)
    H, d, D, kappa = p.linear_value_heads, p.linear_key_dim, p.d_model, p.conv_kernel
    W = dict(W_q=w("W_q", D, H * d), W_k=w("W_k", D, H * d), W_v=w("W_v", D, H * d), conv_taps=w("taps", 3 * H * d, kappa),
             W_fa=w("W_fa", D, d), W_fb=w("W_fb", d, H * d), dt_bias=w("dt_bias", H * d), A_log=w("A_log", H),
             W_b=w("W_b", D, H), W_ga=w("W_ga", D, d), W_gb=w("W_gb", d, H * d), norm_weight=torch.ones(d),
             W_out=w("W_out", H * d, D))
    x = w("x", 1, 1, D)
    cache = DeltaNetCache(state=w("state", 1, H, d, d), conv=w("conv", 1, kappa - 1, 3 * H * d))
    return lambda t: _counted(lambda: kimi_delta_attention(x, cache, **W, n_heads=H).output)


def mamba2_step(key: str) -> Callable[[int], Counted]:
    """Mamba-2: core's mamba2 for one token with its Mamba2Cache (state (H, N, P) and the conv's last κ − 1)."""
    p, w = MODELS[key], Weights(key)
    H, G, N, P, D, kappa = (p.linear_value_heads, p.linear_key_heads, p.linear_key_dim, p.linear_value_dim, p.d_model,
                            p.conv_kernel)
    inner, C = H * P, H * P + 2 * G * N
    W = dict(W_z=w("W_z", D, inner), W_xBC=w("W_xBC", D, C), W_dt=w("W_dt", D, H), conv_taps=w("taps", C, kappa),
             conv_bias=w("conv_bias", C), dt_bias=w("dt_bias", H), A_log=w("A_log", H), D=w("D", H),
             norm_weight=torch.ones(inner), W_out=w("W_out", inner, D))
    x = w("x", 1, 1, D)
    cache = Mamba2Cache(state=w("state", 1, H, N, P), conv=w("conv", 1, kappa - 1, C))
    return lambda t: _counted(lambda: mamba2(x, cache, **W, n_heads=H, n_groups=G).output)


def v4_steps(key: str, kind: str) -> Callable[[int], tuple[Fraction, Fraction]]:
    """DeepSeek-V4 CSA / HCA: core's compressed_step, one token at a time. A step pools the m tokens of a window when
    it closes it, so the per-token cost is the mean over the m steps t − m + 1 … t: the closing step counted, and the
    m − 1 open ones, counted at the first, a middle and the last of them (checked affine in the position: they differ
    only in the window's keys while it fills, and in what is pending)."""
    p, w = MODELS[key], Weights(f"{key}/{kind}")
    H, d, D, r = p.n_heads, p.d_head, p.d_model, p.rope_dim
    m = p.csa_rate if kind == "csa" else p.hca_rate
    dq, g, ro, HI, dI = V4["q_lora"], V4["o_groups"], V4["o_lora"], V4["index_heads"], p.index_head_dim
    width = 2 * d if kind == "csa" else d
    W = dict(W_qa=w("W_qa", D, dq), q_norm=torch.ones(dq), W_qb=w("W_qb", dq, H * d), W_kv=w("W_kv", D, d),
             kv_norm=torch.ones(d), sinks=w("sinks", H), W_oa=w("W_oa", g, H * d // g, ro), W_ob=w("W_ob", g * ro, D))
    comp = dict(W_c=w("W_c", D, width), W_gate=w("W_gate", D, width), position_bias=w("bias", m, width),
                norm_weight=torch.ones(d), m=m)
    index = None if kind != "csa" else dict(
        W_c=w("iW_c", D, 2 * dI), W_gate=w("iW_gate", D, 2 * dI), position_bias=w("ibias", m, 2 * dI),
        norm_weight=torch.ones(dI), W_q=w("iW_q", dq, HI * dI), W_w=w("iW_w", D, HI), n_heads=HI)
    xs = w("x", 1, m, D)

    def mean(t: int) -> tuple[Fraction, Fraction]:
        t0 = t - m  # a window boundary; the steps t0 + 1 … t0 + m − 1 close no window, step t (= t0 + m) closes one
        rope = rope_tables(t, r, base=10000.0, pairing="adjacent")
        T = t0 // m

        def share(width_):
            return (w(f"sk{t}{width_}", 1, m, width_), w(f"sg{t}{width_}", 1, m, width_)) if kind == "csa" else (None, None)

        def count(pending: int) -> tuple[int, int]:  # the step of the token at position t0 + pending
            cache = compressed.CompressedCache(
                kind=kind, length=t0 + pending, window_kv=w(f"win{t}", 1, min(t0 + pending, p.window), d),
                pending=xs[:, :pending], compressor=compressed.PoolState(w(f"e{t}", 1, T, d), *share(d)),
                indexer=None if index is None else compressed.PoolState(w(f"ie{t}", 1, T, dI), *share(dI)))
            c = counted_macs(compressed.compressed_step, xs[:, pending:pending + 1], cache, kind=kind, **W, n_heads=H,
                             window=p.window, rope=rope, compressor=comp, indexer=index, top_k=p.index_topk)
            return c.macs, c.products

        mid = (m - 2) // 2
        first, middle, last, closing = count(0), count(mid), count(m - 2), count(m - 1)
        for f, mi, la in zip(first, middle, last, strict=True):  # the open steps grow at most by a window key a step
            if Fraction(la - f, m - 2) * mid + f != mi:
                raise ValueError(f"{kind} at t = {t}: the open steps count {first}, {middle}, {last}: not affine")
        # the m − 1 open steps are affine in their position, so their sum is (m − 1)·(first + last)/2
        return tuple(Fraction(c, m) + Fraction((m - 1) * (f + la), 2 * m) for c, f, la in zip(closing, first, last,
                                                                                                strict=True))
    return mean


# ---------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------

def _curve(mechanism, key, layer, step, contexts, **extra) -> Curve:
    counts = [step(t) for t in contexts]
    pairs = [c if isinstance(c, tuple) else (Fraction(c.macs), Fraction(c.products)) for c in counts]
    return Curve(mechanism, MODELS[key].name, layer, tuple(contexts), tuple(a for a, _ in pairs),
                 tuple(b for _, b in pairs), **extra)


def curves(contexts: tuple[int, ...] = CONTEXTS, log=lambda s: None) -> tuple[list[Curve], dict]:
    """Every mechanism's counted curve, and the checks against core's formula and the MLA weight fold."""
    out, checks = [], {}
    for mech, key in (("MHA", "gpt2"), ("GQA", "llama-3-8b")):
        p = MODELS[key]
        c = _curve(mech, key, "attention", gqa_step(key), contexts)
        want = [decode_step_macs(d_model=p.d_model, n_heads=p.n_heads, n_kv_heads=p.n_kv_heads, d_head=p.d_head, length=t)
                for t in contexts]
        checks[mech] = all(Fraction(w_) == got for w_, got in zip(want, c.macs, strict=True))
        out.append(Curve(**{**c.__dict__, "formula": "= decode_step_macs" if checks[mech] else "≠ decode_step_macs"}))
        log(mech)
    step, fold = mla_step("deepseek-v3")
    raw = _curve("MLA", "deepseek-v3", "absorbed decode", step, contexts)
    out.append(Curve(**{**raw.__dict__, "macs": tuple(m_ - fold.macs for m_ in raw.macs),
                        "note": f"less the W_UV·W_o fold mla_decode redoes per step ({fold.macs:,})"}))
    checks["MLA fold"] = fold.macs
    log("MLA")
    for kind in ("csa", "hca"):
        out.append(_curve(kind.upper(), "deepseek-v4-flash", f"{kind.upper()} layer", v4_steps("deepseek-v4-flash", kind),
                          contexts, note=f"mean of the {MODELS['deepseek-v4-flash'].csa_rate if kind == 'csa' else 128} "
                                         "steps to t (one pools a window)"))
        log(kind)
    for kind, reused, layer in (("window", False, "sliding (own K, V)"), ("global", False, "global (own K = V)"),
                                ("window", True, "sliding, reused K, V")):
        out.append(_curve("windows / shared KV", "gemma-4-e2b", layer, gemma4_step("gemma-4-e2b", kind, reused=reused),
                          contexts))
        log(layer)
    for mech, key, make in (("GDN", "qwen3.5-27b", gdn_step), ("KDA", "kimi-linear-48b-a3b", kda_step),
                            ("Mamba-2", "mamba2", mamba2_step)):
        out.append(_curve(mech, key, "mixer", make(key), contexts))
        log(mech)
    return out, checks


def _fmt(x: Fraction) -> str:
    return f"{int(x):,}" if x.denominator == 1 else f"{float(x):,.1f}"


def markdown(rows: list[Curve], checks: dict, shown: tuple[int, ...]) -> str:
    head = "| mechanism | model | layer | " + " | ".join(f"t = {t:,}" for t in shown) + " | growth (exact fit) |"
    lines = [head, "|" + "---|" * (len(shown) + 4)]
    for c in rows:
        at = dict(zip(c.contexts, c.macs, strict=True))
        lines.append(f"| {c.mechanism} | {c.model} | {c.layer} | " + " | ".join(_fmt(at[t]) for t in shown)
                     + f" | {growth(c.contexts, c.macs)} |")
    lines += ["", "Element-wise products per step (aten.mul of two tensors: norms, RoPE, gates, decays and the delta "
              "rule's state read/write, which core writes as products and sums; FlopCounterMode does not count them):", "",
              f"| mechanism | layer | t = {shown[0]:,} | t = {shown[-1]:,} | growth |", "|---|---|---|---|---|"]
    for c in rows:
        at = dict(zip(c.contexts, c.products, strict=True))
        lines.append(f"| {c.mechanism} | {c.layer} | {_fmt(at[shown[0]])} | {_fmt(at[shown[-1]])} | "
                     f"{growth(c.contexts, c.products)} |")
    notes = [f"- {c.mechanism} ({c.layer}): {c.note}" for c in rows if c.note]
    notes += [f"- {m}: counted {'equals' if ok else 'DIFFERS FROM'} core.mechanism.kv_cache.decode_step_macs at every t"
              for m, ok in checks.items() if m in ("MHA", "GQA")]
    return "\n".join(lines + [""] + notes)


METHOD = """Method: each row runs core's own one-token decoding step for one layer at the registry's published widths
(core.shapes.MODELS; batch 1; seeded random weights and a cache of the size the layer keeps after t − 1 tokens:
counts depend on shapes only) under core.mechanism.measures.counted_macs, i.e. torch.utils.flop_counter.FlopCounterMode,
which counts 2 FLOPs per multiply-add of mm/addmm/bmm/baddbmm (what matmul, einsum and linear become), convolutions
(the depthwise conv of GDN/KDA/Mamba-2) and fused SDPA kernels, and nothing element-wise (softmax, norms, exp, RoPE,
the delta rule's state update, which core writes as products and sums: counted separately below). Every t from 128 to
32,768 (×4 apart) is measured, none extrapolated; "growth" is the exact rational fit a + b·t on the longest run
of measured points it holds on (checked on each). Steps: attend_with_cache (MHA, GQA), mla_decode against a LatentCache
(MLA), compressed_step (DeepSeek-V4 CSA/HCA), gemma4_attention (Gemma 4; an own layer projects its new K/V first),
gated_deltanet, kimi_delta_attention, mamba2 with their caches."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="measure t = 128 … 2,048 only")
    args = ap.parse_args(argv)
    torch.set_grad_enabled(False)
    contexts = tuple(t for t in CONTEXTS if not args.quick or t <= 2048)
    start = time.perf_counter()
    rows, checks = curves(contexts, log=lambda s: print(f"  counted {s} ({time.perf_counter() - start:.0f} s)",
                                                         file=sys.stderr))
    print("## Cost per new token: counted multiply-adds of one layer's decoding step\n")
    print(markdown(rows, checks, contexts))
    print()
    print(METHOD)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
