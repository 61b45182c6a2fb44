r"""Layer schedules: which mixer each layer of a model runs, how far back the last token can see through the stack,
and what each layer keeps per sequence (issues 33 and 55).

Attention over a span of tokens: a layer is global (every earlier token), a causal window of the w most recent tokens
(i − j < w), or a chunk: the tokens of the same block of c positions (⌊i/c⌋ = ⌊j/c⌋, j ≤ i, Llama 4's "chunked
attention"); with or without RoPE (a NoPE layer has no position signal of its own). Every such mask lets query i see an
interval [lo(i), i] with lo non-decreasing, so the last token's reach through layers 1 … l is the interval
[lo₁(lo₂(… lo_l(n − 1))), n − 1] — :func:`schedule_reach` computes it that way; the tests check it against the boolean
masks multiplied out layer by layer (:func:`core.masks.reach` does that for one repeated mask).

The kinds of issue 55 (the registry's names, :mod:`core.shapes`):

- "mla": latent attention (DeepSeek-V3, Kimi Linear's full layers) — global attention whose cache is a latent of d_c
  and a shared rotary key of d_R per token.
- "csa" / "hca": DeepSeek-V4's compressed attention — a sliding window of w tokens over one K = V head of width d,
  plus one pooled entry per m tokens (CSA: m = 4, with an indexer key of d_I per entry that picks the top-k entries;
  HCA: m = 128, every entry read).
- "linear": a delta-rule layer (Gated DeltaNet, Kimi Delta Attention) — H_v states of d_k × d_v, plus the short
  convolution's last κ − 1 inputs (q, k: H_k·d_k each; v: H_v·d_v).
- "mamba": Mamba-2 — H states of N × P (core's gated linear attention with q = C, k = B, v = x) and the conv's last
  κ − 1 inputs (x: H·P; B, C: G·N each), i.e. the "linear" count under Mamba-2's names.
- a reused layer (``reused``, Gemma 4's last ``kv_shared_layers``) reads an earlier layer's K and V: it keeps nothing.

**Reach through the new kinds.** MLA, linear and Mamba-2 layers mix every earlier token into query i (the latent is
attention over all tokens; a state is a sum over all of them): lo(i) = 0, like a global layer. CSA and HCA also have
lo(i) = 0: the window holds the last w tokens and the pooled entries cover every token of a completed block of m, so
with w ≥ m − 1 no earlier token falls between them. A layer with a shorter window (a learner's choice on the Compressing
page) leaves the oldest tokens of the open block in neither: its :meth:`LayerKind.mask` says so exactly, and its reach
is no interval, so :meth:`LayerKind.first_key` (and :func:`schedule_reach`) refuse it by name. Reach is
what the layer *can* draw on: an old token reaches a CSA/HCA layer only blurred into a pooled entry (and through CSA's
indexer only if its entry is among the top k), and a state layer holds it only as far as its decay and overwrites leave it.

**What a layer keeps** (values for one sequence after t tokens, the new one included) is :meth:`LayerKind.values`, the
one place these counts live (:func:`core.variants.kept.kept` and :func:`schedule_reach` sum it)::

    global                 e · t                         e: values one cached token costs (2·G·d: K and V)
    window (w)             e · min(t, w)
    chunk (c)              e · ((t − 1) mod c + 1)
    mla                    e · t                         e = d_c + d_R
    csa / hca (w, m)       e · min(t, w) + p · ⌊t/m⌋      e = d (one K = V head); p = d (+ d_I for CSA's indexer key)
    linear / mamba         S + C                         S = H_v·d_k·d_v (N × P per head); C = (κ − 1)·(2·H_k·d_k + H_v·d_v)
    a reused layer         0

The fixed parts (windows, states) do not grow with t; the rest grows by the same amount every token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

import torch

from core.checks import int_at_least
from core.shapes import MODELS, Published

LAYER_KINDS = ("global", "window", "chunk", "mla", "csa", "hca", "linear", "mamba")
SPAN_KINDS = ("window", "chunk")  # attention over a bounded span: the only kinds whose reach stops before token 0
STATE_KINDS = ("linear", "mamba")  # a fixed-size state instead of keys
POOLED_KINDS = ("csa", "hca")  # a window plus pooled entries
TOKEN_KINDS = ("global", "window", "chunk", "mla")  # keys (or a latent) per cached token


def _count(name: str, value) -> int:
    """A count of values ≥ 0 (a conv of kernel 1 keeps no inputs)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an integer ≥ 0, got {value!r}")
    return value


@dataclass(frozen=True)
class LayerKind:
    """One layer's mixer and what it keeps.

    ``kind``: one of :data:`LAYER_KINDS`; ``size``: the window w ("window", "csa", "hca") or the chunk c ("chunk");
    ``rope`` False = NoPE; ``rate``: tokens per pooled entry m ("csa", "hca"); ``token_values``: values one cached token
    costs in this layer (attention: 2·G·d, None = the schedule's; "mla": d_c + d_R; "csa"/"hca": d, one K = V head);
    ``entry_values``: values one pooled entry costs ("csa": d + d_I, "hca": d); ``state_values``: the fixed states
    ("linear"/"mamba": H_v·d_k·d_v); ``conv_values``: the conv's last κ − 1 inputs; ``reused``: the layer reads an
    earlier layer's K and V and keeps nothing (Gemma 4). The module doc gives the counts.
    """

    kind: str
    size: int | None = None
    rope: bool = True
    rate: int | None = None
    token_values: int | None = None
    entry_values: int | None = None
    state_values: int | None = None
    conv_values: int | None = None
    reused: bool = False

    def __post_init__(self):
        k = self.kind
        if k not in LAYER_KINDS:
            raise ValueError(f"unknown layer kind '{k}'; choose one of {', '.join(LAYER_KINDS)}")
        if k in SPAN_KINDS or k in POOLED_KINDS:
            int_at_least(f"the {'chunk' if k == 'chunk' else 'window'} size", self.size)
        elif self.size is not None:
            raise ValueError(f"a {k} layer has no size")
        if k in POOLED_KINDS:
            int_at_least(f"the {k} pool rate (tokens per entry)", self.rate)
            int_at_least(f"the {k} layer's token_values (d, one K = V head)", self.token_values)
            int_at_least(f"the {k} layer's entry_values (values per pooled entry)", self.entry_values)
        elif self.rate is not None or self.entry_values is not None:
            raise ValueError(f"only csa and hca layers pool entries; a {k} layer has no rate or entry_values")
        if k in STATE_KINDS:
            int_at_least(f"the {k} layer's state_values (H_v·d_k·d_v)", self.state_values)
            _count(f"the {k} layer's conv_values", self.conv_values)
            if self.token_values is not None or self.reused:
                raise ValueError(f"a {k} layer keeps a state, no tokens: no token_values, and it reuses no cache")
        elif self.state_values is not None or self.conv_values is not None:
            raise ValueError(f"only linear and mamba layers keep a state; a {k} layer has no state_values or conv_values")
        if k == "mla":
            int_at_least("the mla layer's token_values (d_c + d_R)", self.token_values)
        elif k in TOKEN_KINDS and self.token_values is not None:
            int_at_least(f"the {k} layer's token_values", self.token_values)
        if self.reused and k not in TOKEN_KINDS:
            raise ValueError(f"a {k} layer cannot reuse another layer's cache (only global, window, chunk and mla)")

    @property
    def name(self) -> str:
        """The registry's name of the kind ("global-nope" for a global layer without RoPE), " (reused)" for reuse."""
        return f"{self.kind}{'' if self.rope else '-nope'}{' (reused)' if self.reused else ''}"

    @property
    def label(self) -> str:
        """"window 1024", "global (NoPE)", "csa 4" (the pool rate), "linear", "mla (reused)" …"""
        size = self.rate if self.kind in POOLED_KINDS else self.size
        size = "" if size is None else f" {size}"
        return f"{self.kind}{size}{'' if self.rope else ' (NoPE)'}{' (reused)' if self.reused else ''}"

    @property
    def leaves_a_gap(self) -> bool:
        """A CSA/HCA layer whose window is shorter than the m − 1 tokens of an open block: the older ones of them
        are in neither the window nor an entry (module doc)."""
        return self.kind in POOLED_KINDS and self.size < self.rate - 1

    def first_key(self, i: int) -> int:
        """lo(i): the oldest key query i sees (it sees lo(i) … i); 0 for every kind but a window or a chunk.
        ValueError for a layer that :attr:`leaves_a_gap` (what it sees is then no interval)."""
        if self.leaves_a_gap:
            raise ValueError(f"a {self.kind} layer's window ({self.size}) is shorter than the up to {self.rate - 1} tokens "
                             "not yet pooled (w < m − 1): some earlier tokens are in neither, so its reach is no interval")
        if self.kind == "window":
            return max(0, i - self.size + 1)
        if self.kind == "chunk":
            return (i // self.size) * self.size
        return 0

    def mask(self, n: int, *, device=None) -> torch.Tensor:
        """The (n, n) boolean mask, True = query i may draw on token j (causal for the kinds that see every token)."""
        n = int_at_least("n", n)
        i = torch.arange(n, device=device).unsqueeze(1)
        j = torch.arange(n, device=device).unsqueeze(0)
        m = j <= i  # (n, n)
        if self.kind == "window":
            m = m & (i - j < self.size)
        elif self.kind == "chunk":
            m = m & (i // self.size == j // self.size)
        elif self.kind in POOLED_KINDS:  # the window, or a block closed by query i (its entry made)
            m = m & ((i - j < self.size) | (j < self.rate * ((i + 1) // self.rate)))
        return m

    def cached_tokens(self, tokens: int) -> int:
        """Keys this layer must keep to decode the next token after ``tokens`` tokens (the new one included): a
        window's or chunk's span, every token (global, the MLA latent), CSA/HCA's window plus its pooled entries, and
        0 for a state layer (its state is no token) or a reused layer."""
        t = int_at_least("tokens", tokens)
        if self.reused or self.kind in STATE_KINDS:
            return 0
        if self.kind == "window":
            return min(t, self.size)
        if self.kind == "chunk":
            return (t - 1) % self.size + 1
        if self.kind in POOLED_KINDS:
            return min(t, self.size) + t // self.rate
        return t

    def values(self, tokens: int, token_values: int | None = None) -> int:
        """Values this layer keeps for one sequence after ``tokens`` tokens (the module doc's table); ``token_values``
        is the schedule's 2·G·d for an attention layer that carries none of its own."""
        t = int_at_least("tokens", tokens)
        if self.reused:
            return 0
        if self.kind in STATE_KINDS:
            return self.state_values + self.conv_values
        e = self.token_values if self.token_values is not None else token_values
        if e is None:
            raise ValueError(f"a {self.kind} layer needs the values one cached token costs (token_values)")
        if self.kind in POOLED_KINDS:
            return e * min(t, self.size) + self.entry_values * (t // self.rate)
        return e * self.cached_tokens(t)


def global_layer(*, rope: bool = True) -> LayerKind:
    return LayerKind("global", None, rope)


def window_layer(size: int, *, rope: bool = True) -> LayerKind:
    return LayerKind("window", size, rope)


def chunk_layer(size: int, *, rope: bool = True) -> LayerKind:
    return LayerKind("chunk", size, rope)


def mla_layer(latent: int, rope_dim: int) -> LayerKind:
    """An MLA layer caching a latent of ``latent`` (d_c) and a rotary key of ``rope_dim`` (d_R) per token."""
    return LayerKind("mla", token_values=int_at_least("d_c", latent) + int_at_least("d_R", rope_dim))


def pooled_layer(kind: str, *, window: int, rate: int, d_head: int, index_dim: int = 0) -> LayerKind:
    """A CSA or HCA layer: a window of ``window`` tokens of one K = V head of ``d_head``, one pooled entry per ``rate``
    tokens (d_head values, plus ``index_dim`` for CSA's indexer key)."""
    if kind not in POOLED_KINDS:
        raise ValueError(f"a pooled layer is csa or hca, not {kind!r}")
    if kind == "hca" and index_dim:
        raise ValueError("an hca layer has no indexer")
    d = int_at_least("d_head", d_head)
    return LayerKind(kind, window, rate=rate, token_values=d, entry_values=d + _count("index_dim", index_dim))


def state_layer(kind: str, *, value_heads: int, key_heads: int, key_dim: int, value_dim: int, conv_kernel: int) -> LayerKind:
    """A linear (GDN, KDA) or mamba layer: ``value_heads`` states of ``key_dim`` × ``value_dim`` (Mamba-2: H states of
    N × P, ``key_heads`` = its groups G) and the conv's last κ − 1 inputs, 2·H_k·d_k + H_v·d_v each."""
    if kind not in STATE_KINDS:
        raise ValueError(f"a state layer is linear or mamba, not {kind!r}")
    hv, hk = int_at_least("value_heads", value_heads), int_at_least("key_heads", key_heads)
    dk, dv = int_at_least("key_dim", key_dim), int_at_least("value_dim", value_dim)
    kappa = int_at_least("conv_kernel", conv_kernel)
    return LayerKind(kind, state_values=hv * dk * dv, conv_values=(kappa - 1) * (2 * hk * dk + hv * dv))


@dataclass(frozen=True)
class LayerSchedule:
    """A model's layers in order, with the K/V shape (G heads of d) that sizes an attention layer carrying no
    token_values of its own, and where the numbers come from."""

    name: str
    layers: tuple[LayerKind, ...]
    n_kv_heads: int
    d_head: int
    source: str = ""

    def __post_init__(self):
        if not self.layers:
            raise ValueError("a schedule needs at least one layer")
        if not all(isinstance(layer, LayerKind) for layer in self.layers):
            raise ValueError("a schedule's layers must be LayerKind")
        int_at_least("n_kv_heads", self.n_kv_heads)
        int_at_least("d_head", self.d_head)

    @property
    def counts(self) -> dict[str, int]:
        """How many layers of each label ("window 1024", "global (NoPE)", "linear", …)."""
        out: dict[str, int] = {}
        for layer in self.layers:
            out[layer.label] = out.get(layer.label, 0) + 1
        return out

    @property
    def token_values(self) -> int:
        """2·G·d: K and V of one token in an attention layer that carries no token_values of its own."""
        return 2 * self.n_kv_heads * self.d_head

    @property
    def has_states(self) -> bool:
        """Whether some layer keeps a fixed-size state (linear, mamba) instead of keys."""
        return any(layer.kind in STATE_KINDS for layer in self.layers)

    def values(self, tokens: int) -> tuple[int, ...]:
        """Per layer, the values it keeps for one sequence after ``tokens`` tokens (:meth:`LayerKind.values`)."""
        return tuple(layer.values(tokens, self.token_values) for layer in self.layers)


def repeat_pattern(name: str, pattern, n_layers: int, *, n_kv_heads: int, d_head: int, source: str = "") -> LayerSchedule:
    """``pattern`` (a sequence of LayerKind) repeated and cut to ``n_layers`` layers."""
    pattern = tuple(pattern)
    if not pattern or not all(isinstance(p, LayerKind) for p in pattern):
        raise ValueError("pattern must be a non-empty sequence of LayerKind")
    n = int_at_least("n_layers", n_layers)
    return LayerSchedule(name, tuple(pattern[i % len(pattern)] for i in range(n)), n_kv_heads, d_head, source)


def record_pattern(published: Published) -> tuple[str, ...]:
    """One period of the record's layer kinds; a record without ``layer_pattern`` has every layer alike: MLA where it
    publishes a latent (kv_rank), a window where it publishes one (Mistral), global attention otherwise."""
    p = published
    return p.layer_pattern or (("mla",) if p.kv_rank else ("window",) if p.window else ("global",))


def schedule_of(published: Published) -> LayerSchedule:
    """A model of the registry (:mod:`core.shapes`) as its layer schedule: one period of :func:`record_pattern`
    repeated over its layers, each kind sized from the record ("window" → its window, "chunk" → its chunk, "global",
    "global-nope": global without RoPE (a global layer uses global_kv_heads / global_d_head where the record has them),
    "mla" → d_c + d_R, "csa" / "hca" → window, pool rate, d_head and CSA's index_head_dim, "linear" / "mamba" → the
    states and conv_kernel); the last ``kv_shared_layers`` layers reuse an earlier layer's K and V. ValueError names a
    kind the schedule does not know or a size the record does not publish."""
    p = published
    pattern = record_pattern(p)

    def need(kind: str, *fields: str) -> tuple:
        missing = [f for f in fields if getattr(p, f) is None]
        if missing:
            raise ValueError(f"{p.name}'s {kind} layers need {', '.join(missing)}, which its record does not publish")
        return tuple(getattr(p, f) for f in fields)

    def attention(rope: bool) -> LayerKind:
        e = None
        if p.global_kv_heads is not None or p.global_d_head is not None:  # Gemma 4: global layers have their own K/V shape
            e = 2 * (p.global_kv_heads or p.n_kv_heads) * (p.global_d_head or p.d_head)
        return LayerKind("global", None, rope, token_values=e)

    def state(kind: str) -> LayerKind:
        hv, hk, dk, dv, kappa = need(kind, "linear_value_heads", "linear_key_heads", "linear_key_dim", "linear_value_dim",
                                     "conv_kernel")
        return state_layer(kind, value_heads=hv, key_heads=hk, key_dim=dk, value_dim=dv, conv_kernel=kappa)

    make = {
        "global": lambda: attention(True), "global-nope": lambda: attention(False),
        "window": lambda: window_layer(*need("window", "window")), "chunk": lambda: chunk_layer(*need("chunk", "chunk")),
        "mla": lambda: mla_layer(*need("mla", "kv_rank", "rope_dim")),
        "csa": lambda: pooled_layer("csa", window=need("csa", "window")[0], rate=need("csa", "csa_rate")[0],
                                    d_head=p.d_head, index_dim=need("csa", "index_head_dim")[0]),
        "hca": lambda: pooled_layer("hca", window=need("hca", "window")[0], rate=need("hca", "hca_rate")[0],
                                    d_head=p.d_head),
        "linear": lambda: state("linear"), "mamba": lambda: state("mamba"),
    }
    unknown = [k for k in dict.fromkeys(pattern) if k not in make]
    if unknown:
        raise ValueError(f"{p.name}'s layer_pattern has kinds a schedule does not know ({', '.join(map(repr, unknown))}); "
                         f"it knows {', '.join(make)}")
    kinds = {k: make[k]() for k in dict.fromkeys(pattern)}
    shared = p.kv_shared_layers or 0
    if not 0 <= shared < p.layers:
        raise ValueError(f"{p.name}: {shared} reused layers out of {p.layers} (a reused layer needs an earlier layer to read)")
    layers = tuple(kinds[pattern[i % len(pattern)]] for i in range(p.layers))
    layers = layers[:p.layers - shared] + tuple(replace(layer, reused=True) for layer in layers[p.layers - shared:])
    source = p.source if p.layer_pattern is None or p.source_of("layer_pattern") == p.source else (
        f"{p.source_of('layer_pattern')}; {p.source}")
    return LayerSchedule(p.name, layers, p.n_kv_heads, p.d_head, source)


# Every record of core.shapes.MODELS as a schedule, by registry key (their numbers and sources are there).
ALL_SCHEDULES: Mapping[str, LayerSchedule] = MappingProxyType({key: schedule_of(p) for key, p in MODELS.items()})
# Gemma 3 27B: 5 local layers (window 1024) for every global one, a local layer first; gpt-oss-120b: banded (128-token
# window) and dense layers alternate, the first banded; Llama 4 Scout: chunked attention (8192) with RoPE, every 4th
# layer global without RoPE (iRoPE); Gemma 2 2B: window (4096) and global layers alternate, a window layer first.
GEMMA3_27B = ALL_SCHEDULES["gemma-3-27b"]
GPT_OSS_120B = ALL_SCHEDULES["gpt-oss-120b"]
LLAMA4_SCOUT = ALL_SCHEDULES["llama-4-scout"]
GEMMA2_2B = ALL_SCHEDULES["gemma-2-2b"]
# Issue 55's kinds: Qwen3-Next and Qwen3.5, 3 Gated DeltaNet layers for each global one; DeepSeek-V4-Flash, CSA and HCA;
# Gemma 4 E2B, 5 windows for each global layer with its own K/V shape; Kimi Linear, KDA and MLA; Mamba-2, every layer a state.
QWEN3_NEXT = ALL_SCHEDULES["qwen3-next-80b-a3b"]
QWEN3_5_27B = ALL_SCHEDULES["qwen3.5-27b"]
DEEPSEEK_V4_FLASH = ALL_SCHEDULES["deepseek-v4-flash"]
GEMMA4_E2B = ALL_SCHEDULES["gemma-4-e2b"]
KIMI_LINEAR = ALL_SCHEDULES["kimi-linear-48b-a3b"]
MAMBA2_2_8B = ALL_SCHEDULES["mamba2"]
# The schedules of attention over spans (global, window, chunk) that the Long contexts page draws, by name.
SCHEDULE_PRESETS = {s.name: s for s in (GEMMA3_27B, GPT_OSS_120B, LLAMA4_SCOUT, GEMMA2_2B)}


@dataclass(frozen=True)
class ScheduleReach:
    """What the last of n tokens can draw on after the first 1 … L layers of a schedule.

    oldest[l]: the oldest token that can reach it through layers 1 … l + 1 (it reaches every token from there
    on; through a mla, csa, hca, linear or mamba layer every earlier token: module doc); reach[l] = n − 1 − oldest[l];
    all_reached_at: the first layer count that reaches token 0 (None if none).
    cached_tokens[l]: keys layer l + 1 keeps to decode the next token (CSA/HCA: window plus pooled entries; 0 for a
    state or reused layer); cache_bytes: everything the layers keep (:meth:`LayerSchedule.values`: keys and values,
    latents, pooled entries, and the fixed states and conv inputs of linear and mamba layers, which are no tokens) for
    ``batch`` sequences at ``bytes_per_value``; global_cache_bytes: the same number of layers, every one global
    attention with the schedule's G heads of d (K and V of all n tokens).
    """

    n: int
    oldest: tuple[int, ...]
    reach: tuple[int, ...]
    all_reached_at: int | None
    cached_tokens: tuple[int, ...]
    cache_bytes: int
    global_cache_bytes: int


def schedule_reach(schedule: LayerSchedule, n: int, *, bytes_per_value: int = 2, batch: int = 1) -> ScheduleReach:
    """Reach of the last of ``n`` tokens through the schedule, and what its layers keep at n tokens (ScheduleReach)."""
    n = int_at_least("n", n)
    bpv, batch = int_at_least("bytes_per_value", bytes_per_value), int_at_least("batch", batch)
    oldest = []
    for depth in range(1, len(schedule.layers) + 1):
        a = n - 1
        for layer in reversed(schedule.layers[:depth]):  # from the top layer down to layer 1
            a = layer.first_key(a)
        oldest.append(a)
    full = next((i + 1 for i, a in enumerate(oldest) if a == 0), None)
    cached = tuple(layer.cached_tokens(n) for layer in schedule.layers)
    return ScheduleReach(n=n, oldest=tuple(oldest), reach=tuple(n - 1 - a for a in oldest), all_reached_at=full,
                         cached_tokens=cached, cache_bytes=sum(schedule.values(n)) * bpv * batch,
                         global_cache_bytes=n * len(schedule.layers) * schedule.token_values * bpv * batch)
