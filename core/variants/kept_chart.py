r"""Issue 55's chart and lesson: what eight published models keep per sequence as the context grows, from
:func:`core.variants.kept.kept` over :data:`core.shapes.MODELS` (nothing here counts a layer itself).

Each :class:`KeptCurve` is one model's values (and bytes at a number format) at each context length, with the
registry's source; :func:`growth_per_layer` is what one layer of a kind adds per token once the fixed parts (windows,
states) are full, read off two counts of :func:`kept`; :func:`head_state` is one linear layer's d_k × d_v state.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from core.checks import int_at_least
from core.shapes import MODELS, Published
from core.variants.kept import kept
from core.variants.kv_sharing import SharingPlan, sharing_plan

# the chart's models and the mechanism each stands for (issue 55: MHA, GQA, MLA, CSA + HCA, windows, GDN, KDA, Mamba-2)
CHART_MODELS: tuple[tuple[str, str], ...] = (
    ("gpt2", "mha"), ("llama-3-8b", "gqa"), ("deepseek-v3", "mla"), ("deepseek-v4-flash", "csa_hca"),
    ("gemma-4-e2b", "windows"), ("qwen3.5-27b", "gdn"), ("kimi-linear-48b-a3b", "kda"), ("mamba2", "mamba2"),
)
CONTEXTS: tuple[int, ...] = tuple(2 ** i for i in range(7, 21))  # 128 … 1,048,576 tokens (the chart's log axis)
MILLION = 1_000_000  # the context the text prices for every model
BYTES_PER_VALUE = {"bf16": 2, "fp32": 4, "fp8": 1}


@dataclass(frozen=True)
class KeptCurve:
    """One model's values kept at each of ``contexts`` tokens; ``million`` at :data:`MILLION`; ``flat`` when the
    count no longer grows with the context (every layer a state or a window)."""

    key: str
    mechanism: str
    name: str
    source: str
    contexts: tuple[int, ...]
    values: tuple[int, ...]
    million: int
    flat: bool
    context: int | None  # the published context length (None where the record has none)

    @property
    def past_context(self) -> bool:
        """Whether :data:`MILLION` tokens lie past the published context (the count is then what it would keep)."""
        return self.context is not None and self.context < MILLION

    def bytes(self, bytes_per_value: int) -> tuple[int, ...]:
        return tuple(v * bytes_per_value for v in self.values)

    def gib(self, values: int, bytes_per_value: int) -> float:
        return gib(values, bytes_per_value)


def gib(values: int, bytes_per_value: int) -> float:
    """``values`` numbers of ``bytes_per_value`` bytes each, in GiB (2³⁰ bytes)."""
    return values * bytes_per_value / 2 ** 30


def curve(key: str, mechanism: str, contexts: tuple[int, ...] = CONTEXTS) -> KeptCurve:
    """:func:`kept` of the registry's ``key`` at every context length (ValueError for an unknown key)."""
    if key not in MODELS:
        raise ValueError(f"no published shapes for {key!r}; the registry has {', '.join(MODELS)}")
    p = MODELS[key]
    values = tuple(kept(p, n).total for n in contexts)
    far = kept(p, 2 * MILLION).total
    return KeptCurve(key, mechanism, p.name, p.source, tuple(contexts), values, kept(p, MILLION).total,
                     far == kept(p, MILLION).total, p.context)


def curves(models: tuple[tuple[str, str], ...] = CHART_MODELS, contexts: tuple[int, ...] = CONTEXTS
           ) -> tuple[KeptCurve, ...]:
    """The chart: one :class:`KeptCurve` per (registry key, mechanism)."""
    return tuple(curve(k, m, contexts) for k, m in models)


def growth_per_layer(p: Published, kind: str) -> float:
    """Values one layer of ``kind`` adds per token once its fixed part is full: the difference of two counts of
    :func:`kept` far past every window, over a span every pooling rate divides, per layer of that kind."""
    rates = [r for r in (p.csa_rate, p.hca_rate, p.chunk) if r]
    span = math.lcm(*rates) if rates else 1
    start = span * (1 + max(p.window or 0, span) // span)
    before, after = kept(p, start).by_kind, kept(p, start + span).by_kind
    if kind not in after:
        raise ValueError(f"{p.name} has no layer of kind {kind!r}; it has {', '.join(after)}")
    layers = after[kind][0]
    return (after[kind][1] - before[kind][1]) / (span * layers)


def head_state(p: Published) -> int:
    """One value head's state in a linear (GDN, KDA) or Mamba-2 layer: d_k × d_v values (Mamba-2: N × P)."""
    if not p.linear_key_dim or not p.linear_value_dim:
        raise ValueError(f"{p.name} has no linear or state-space layer")
    return p.linear_key_dim * p.linear_value_dim


# ------------------------------------------------------------------ Gemma 4's shared caches (issue 55, point 4)
GEMMA4 = "gemma-4-e2b"  # the registry's Gemma 4 record (transformers' Gemma4TextConfig defaults)
_SHARING_KINDS = {"window": "sliding_attention", "global": "full_attention"}  # the registry's kinds, transformers' names


@dataclass(frozen=True)
class SharingMeter:
    """Gemma 4's stack with its last ``n_shared`` layers reading an earlier layer's K and V (:func:`sharing_plan`):
    per layer its kind, mode and source, and the values it keeps at ``tokens`` (0 for a reuse layer, from
    :func:`kept`); the whole cache with the sharing and without it, and their ratio."""

    name: str
    tokens: int
    plan: SharingPlan
    per_layer: tuple[int, ...]
    shared: int
    alone: int

    @property
    def fraction(self) -> float:
        return self.shared / self.alone


def sharing_meter(n_shared: int, tokens: int, key: str = GEMMA4) -> SharingMeter:
    """The stack and cache meter of the registry's ``key`` with ``n_shared`` shared layers (ValueError, from
    :func:`sharing_plan`, for a count with no earlier layer to read, and from :func:`kept` for bad tokens)."""
    p = MODELS[key]
    kinds = tuple(p.layer_pattern[i % len(p.layer_pattern)] for i in range(p.layers))
    plan = sharing_plan(tuple(_SHARING_KINDS[k] for k in kinds), n_shared)
    with_sharing, alone = kept(replace(p, kv_shared_layers=n_shared), tokens), kept(replace(p, kv_shared_layers=0), tokens)
    one = {kind: v // n for kind, (n, v) in alone.by_kind.items()}  # every layer of a kind keeps the same
    per_layer = tuple(0 if m == "reuse" else one[k] for k, m in zip(kinds, plan.modes, strict=True))
    assert sum(per_layer) == with_sharing.total  # the stack adds up to core.kept's count
    return SharingMeter(p.name, with_sharing.tokens, plan, per_layer, with_sharing.total, alone.total)


# ------------------------------------------------------------------ DeepSeek-V4's three cache strips (issue 55, point 4)
DEEPSEEK_V4 = "deepseek-v4-flash"


@dataclass(frozen=True)
class CacheStrips:
    """One CSA layer and one HCA layer of DeepSeek-V4 at ``tokens`` tokens: the window's entries (min(t, w), both
    layers), the CSA entries (⌊t/m⌋, each with the indexer's key) and the HCA entries (⌊t/m′⌋); values = what
    :func:`kept` counts for each layer, split by strip (the strips add up to it)."""

    tokens: int
    window: int
    csa: int
    hca: int
    csa_layer: int
    hca_layer: int
    d: int
    d_index: int


def cache_strips(tokens: int, csa_rate: int | None = None, hca_rate: int | None = None,
                 key: str = DEEPSEEK_V4) -> CacheStrips:
    """The three strips at ``tokens`` with the record's pools or ``csa_rate`` / ``hca_rate`` tokens per entry
    (ValueError for a pool under 1 token or a count under 1)."""
    p = MODELS[key]
    m = int_at_least("csa_rate", p.csa_rate if csa_rate is None else csa_rate)
    m2 = int_at_least("hca_rate", p.hca_rate if hca_rate is None else hca_rate)
    t = int_at_least("tokens", tokens)
    q = replace(p, csa_rate=m, hca_rate=m2)
    by_kind = kept(q, t).by_kind
    window, csa, hca = min(t, p.window), t // m, t // m2
    csa_layer, hca_layer = (by_kind[k][1] // by_kind[k][0] for k in ("csa", "hca"))
    assert csa_layer == p.d_head * (window + csa) + p.index_head_dim * csa and hca_layer == p.d_head * (window + hca)
    return CacheStrips(t, window, csa, hca, csa_layer, hca_layer, p.d_head, p.index_head_dim)
