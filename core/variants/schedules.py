r"""Layer schedules: which attention each layer of a model runs, how far back the last token can see through
the stack, and what the KV cache costs (issue 33).

A layer is global (every earlier token), a causal window of the w most recent tokens (i − j < w), or a
chunk: the tokens of the same block of c positions (⌊i/c⌋ = ⌊j/c⌋, j ≤ i, Llama 4's "chunked attention");
with or without RoPE (a NoPE layer has no position signal of its own). Every such mask lets query i see an
interval [lo(i), i] with lo non-decreasing, so the last token's reach through layers 1 … l is the interval
[lo₁(lo₂(… lo_l(n − 1))), n − 1] — :func:`schedule_reach` computes it that way; the tests check it against
the boolean masks multiplied out layer by layer (:func:`core.masks.reach` does that for one repeated mask).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import int_at_least
from core.shapes import MODELS, Published

LAYER_KINDS = ("global", "window", "chunk")


@dataclass(frozen=True)
class LayerKind:
    """One layer's attention: ``kind`` "global" / "window" (size w) / "chunk" (size c); ``rope`` False = NoPE."""

    kind: str
    size: int | None = None
    rope: bool = True

    def __post_init__(self):
        if self.kind not in LAYER_KINDS:
            raise ValueError(f"unknown layer kind '{self.kind}'; choose one of {', '.join(LAYER_KINDS)}")
        if self.kind == "global" and self.size is not None:
            raise ValueError("a global layer has no size")
        if self.kind != "global":
            int_at_least(f"the {self.kind} size", self.size)

    @property
    def label(self) -> str:
        size = "" if self.size is None else f" {self.size}"
        return f"{self.kind}{size}{'' if self.rope else ' (NoPE)'}"

    def first_key(self, i: int) -> int:
        """lo(i): the oldest key query i sees (it sees lo(i) … i)."""
        if self.kind == "global":
            return 0
        if self.kind == "window":
            return max(0, i - self.size + 1)
        return (i // self.size) * self.size

    def mask(self, n: int, *, device=None) -> torch.Tensor:
        """The (n, n) boolean mask, True = may attend."""
        n = int_at_least("n", n)
        i = torch.arange(n, device=device).unsqueeze(1)
        j = torch.arange(n, device=device).unsqueeze(0)
        m = j <= i  # (n, n)
        if self.kind == "window":
            m = m & (i - j < self.size)
        elif self.kind == "chunk":
            m = m & (i // self.size == j // self.size)
        return m

    def cached_tokens(self, tokens: int) -> int:
        """Keys this layer must keep to decode the next token after ``tokens`` tokens (the new one included)."""
        t = int_at_least("tokens", tokens)
        if self.kind == "global":
            return t
        if self.kind == "window":
            return min(t, self.size)
        return (t - 1) % self.size + 1


def global_layer(*, rope: bool = True) -> LayerKind:
    return LayerKind("global", None, rope)


def window_layer(size: int, *, rope: bool = True) -> LayerKind:
    return LayerKind("window", size, rope)


def chunk_layer(size: int, *, rope: bool = True) -> LayerKind:
    return LayerKind("chunk", size, rope)


@dataclass(frozen=True)
class LayerSchedule:
    """A model's layers in order, with the K/V shape that sizes its cache and where the numbers come from."""

    name: str
    layers: tuple[LayerKind, ...]
    n_kv_heads: int
    d_head: int
    source: str = ""

    def __post_init__(self):
        if not self.layers:
            raise ValueError("a schedule needs at least one layer")
        int_at_least("n_kv_heads", self.n_kv_heads)
        int_at_least("d_head", self.d_head)

    @property
    def counts(self) -> dict[str, int]:
        """How many layers of each label ("window 1024", "global (NoPE)", …)."""
        out: dict[str, int] = {}
        for layer in self.layers:
            out[layer.label] = out.get(layer.label, 0) + 1
        return out


def repeat_pattern(name: str, pattern, n_layers: int, *, n_kv_heads: int, d_head: int, source: str = "") -> LayerSchedule:
    """``pattern`` (a sequence of LayerKind) repeated and cut to ``n_layers`` layers."""
    pattern = tuple(pattern)
    if not pattern or not all(isinstance(p, LayerKind) for p in pattern):
        raise ValueError("pattern must be a non-empty sequence of LayerKind")
    n = int_at_least("n_layers", n_layers)
    return LayerSchedule(name, tuple(pattern[i % len(pattern)] for i in range(n)), n_kv_heads, d_head, source)


def schedule_of(published: Published) -> LayerSchedule:
    """A model of the registry (:mod:`core.shapes`) as its layer schedule: one period of ``layer_pattern`` repeated
    over its layers ("window" → its window, "chunk" → its chunk, "global", "global-nope": global without RoPE)."""
    p = published
    kinds = {"window": lambda: window_layer(p.window), "chunk": lambda: chunk_layer(p.chunk), "global": global_layer,
             "global-nope": lambda: global_layer(rope=False)}
    if p.layer_pattern is None or any(k not in kinds for k in p.layer_pattern):
        raise ValueError(f"{p.name}'s layers are not a schedule of window, chunk and global attention: {p.layer_pattern}")
    return repeat_pattern(p.name, [kinds[k]() for k in p.layer_pattern], p.layers, n_kv_heads=p.n_kv_heads,
                          d_head=p.d_head, source=f"{p.source_of('layer_pattern')}; {p.source}")


# Gemma 3 27B: 5 local layers (window 1024) for every global one, a local layer first; gpt-oss-120b: banded (128-token
# window) and dense layers alternate, the first banded; Llama 4 Scout: chunked attention (8192) with RoPE, every 4th
# layer global without RoPE (iRoPE). Their numbers and sources: core.shapes.MODELS.
GEMMA3_27B = schedule_of(MODELS["gemma-3-27b"])
GPT_OSS_120B = schedule_of(MODELS["gpt-oss-120b"])
LLAMA4_SCOUT = schedule_of(MODELS["llama-4-scout"])
SCHEDULE_PRESETS = {s.name: s for s in (GEMMA3_27B, GPT_OSS_120B, LLAMA4_SCOUT)}


@dataclass(frozen=True)
class ScheduleReach:
    """What the last of n tokens can draw on after the first 1 … L layers of a schedule.

    oldest[l]: the oldest token that can reach it through layers 1 … l + 1 (it reaches every token from there
    on); reach[l] = n − 1 − oldest[l]; all_reached_at: the first layer count that reaches token 0 (None if none).
    cached_tokens[l]: keys layer l + 1 keeps to decode the next token; cache_bytes: all layers, K and V, for
    ``batch`` sequences at ``bytes_per_value``; global_cache_bytes: the same model with every layer global.
    """

    n: int
    oldest: tuple[int, ...]
    reach: tuple[int, ...]
    all_reached_at: int | None
    cached_tokens: tuple[int, ...]
    cache_bytes: int
    global_cache_bytes: int


def schedule_reach(schedule: LayerSchedule, n: int, *, bytes_per_value: int = 2, batch: int = 1) -> ScheduleReach:
    """Reach of the last of ``n`` tokens through the schedule, and its KV cache at n tokens (see ScheduleReach)."""
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
    per_token = 2 * schedule.n_kv_heads * schedule.d_head * bpv * batch  # K and V of one token in one layer
    return ScheduleReach(n=n, oldest=tuple(oldest), reach=tuple(n - 1 - a for a in oldest), all_reached_at=full,
                         cached_tokens=cached, cache_bytes=sum(cached) * per_token,
                         global_cache_bytes=n * len(schedule.layers) * per_token)
