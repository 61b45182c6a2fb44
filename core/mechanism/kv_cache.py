r"""Decoding one token at a time with a KV cache (row convention).

A decoder computes token t's output from its own query and the keys and values of tokens 0 … t.
Those keys and values never change once computed (causal attention: later tokens do not alter
earlier ones), so a model keeps them in a cache and, per new token, computes only

    q_t = x_t W_q,  k_t = x_t W_k,  v_t = x_t W_v         (rotated by RoPE at position t if used)
    K ← [K; k_t],  V ← [V; v_t]                           (the cache grows by one row per K/V head)
    out_t = softmax(q_t Kᵀ / √d_k) V                      (one row of the full causal matrix)

With grouped-query attention (G K/V heads for H query heads) the cache holds G heads, not H:
that is where GQA/MQA save memory (:func:`core.kv_cache_bytes`).

For a real model, call :func:`attend_with_cache` once per layer per step with that layer's own
cache (a :class:`KVCache`, ``None`` before the first token)::

    caches = [None] * n_layers                      # e.g. SmolLM2-135M: 30 layers, H = 9, G = 3, d = 64
    for layer in range(n_layers):
        q = split_heads(h @ W_q[layer], 9)          # (B, 9, s, 64)  s new tokens (the prompt, then 1)
        k = split_heads(h @ W_k[layer], 3)          # (B, 3, s, 64)  not yet rotated
        v = split_heads(h @ W_v[layer], 3)          # (B, 3, s, 64)
        step = attend_with_cache(q, k, v, caches[layer], rope_base=100000.0, rope_pairing="adjacent")
        caches[layer] = step.cache                  # length grows by s; positions continue from it
        h_attn = merge_heads(step.output) @ W_o[layer]

:func:`cached_decode` does this for one attention layer over a whole sequence and keeps every step.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from core.checks import TensorLike, as_tensors, shape_str
from core.mechanism.attention import AttentionTrace
from core.mechanism.masks import causal
from core.mechanism.multihead import grouped_query_attention, kv_head_map, merge_heads, project_heads, split_heads
from core.mechanism.positional import RopeTables, rope_tables
from core.shapes import MODELS, Published


@dataclass(frozen=True, eq=False)
class KVCache:
    """The keys and values of the t tokens seen so far, for one layer.

    k (..., G, t, d_k) — already rotated when the model uses RoPE; v (..., G, t, d_v).
    Immutable: :meth:`append` returns a new, longer cache.
    """

    k: torch.Tensor
    v: torch.Tensor

    @property
    def length(self) -> int:
        """t, the number of cached tokens (the next token's position)."""
        return int(self.k.shape[-2])

    @property
    def n_kv_heads(self) -> int:
        return int(self.k.shape[-3])

    @property
    def nbytes(self) -> int:
        """Bytes the cache holds now (keys + values)."""
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    def append(self, k_new: torch.Tensor, v_new: torch.Tensor) -> KVCache:
        """The cache with s more tokens: k_new (..., G, s, d_k), v_new (..., G, s, d_v) → length t + s."""
        self.check_fits(k_new, v_new)
        return KVCache(k=torch.cat([self.k, k_new], dim=-2), v=torch.cat([self.v, v_new], dim=-2))  # (..., G, t+s, d)

    def check_fits(self, k_new: torch.Tensor, v_new: torch.Tensor) -> None:
        """ValueError unless new keys and values have the cache's leading dims, heads and widths."""
        if k_new.shape[:-2] != self.k.shape[:-2] or k_new.shape[-1] != self.k.shape[-1]:
            raise ValueError(f"new keys {shape_str(k_new.shape)} do not fit the cache's keys {shape_str(self.k.shape)}")
        if v_new.shape[:-2] != self.v.shape[:-2] or v_new.shape[-1] != self.v.shape[-1]:
            raise ValueError(f"new values {shape_str(v_new.shape)} do not fit the cache's values {shape_str(self.v.shape)}")


@dataclass(frozen=True, eq=False)
class CachedAttentionStep:
    """One layer's attention for s new tokens at positions t … t+s−1 over a cache of t earlier tokens.

    q (..., H, s, d_k) (rotated when RoPE), positions (s,) long, cache: the cache after appending
    (length t + s), weights (..., H, s, t+s), output (..., H, s, d_v), attention: the full
    :class:`AttentionTrace` (its k, v are the cache's heads repeated for every query head).
    """

    q: torch.Tensor
    positions: torch.Tensor
    cache: KVCache
    attention: AttentionTrace
    kv_head_of: tuple[int, ...]

    @property
    def weights(self) -> torch.Tensor:
        return self.attention.weights

    @property
    def output(self) -> torch.Tensor:
        return self.attention.output


def attend_with_cache(
    q: TensorLike,
    k: TensorLike,
    v: TensorLike,
    cache: KVCache | None = None,
    *,
    rope_base: float | None = None,
    rope_pairing: str = "adjacent",
    scale: float | None = None,
    bias: TensorLike | None = None,
    tables: RopeTables | None = None,
    check_finite: bool = True,
) -> CachedAttentionStep:
    """Causal attention of s new tokens over the cache plus themselves; appends their keys and values.

    q (..., H, s, d_k), k (..., G, s, d_k), v (..., G, s, d_v), before RoPE; G divides H (query head h
    reads K/V head ⌊h / (H/G)⌋). The new tokens sit at positions t … t+s−1 with t = ``cache.length``
    (0 for ``cache=None``); with ``rope_base`` q and k are rotated there (:func:`core.positional.rope`,
    ``rope_pairing`` "adjacent" or "half") and the rotated keys are cached. New token i sees every
    cached key and the new keys up to itself. ``scale`` defaults to 1/√d_k.
    ``bias``: an additive bias before the mask, broadcastable to (..., H, s, t+s) (ALiBi's rows for
    these positions: ``alibi_bias(H, s, t + s)``).
    ``tables``: RoPE's :class:`RopeTables` for positions t … t+s−1, computed once by the caller
    (:func:`core.mechanism.positional.rope_tables`) when many blocks share them, instead of ``rope_base``.
    ``check_finite=False`` skips the NaN/∞ scans (see :func:`core.attention.attention`).
    Returns a :class:`CachedAttentionStep` (``.output``, ``.weights``, ``.cache``).
    """
    named = {"q": q, "k": k, "v": v} if cache is None else {"q": q, "k": k, "v": v, "cache.k": cache.k, "cache.v": cache.v}
    t = as_tensors(named, finite=check_finite)
    Q, K, V = t["q"], t["k"], t["v"]
    if min(Q.dim(), K.dim(), V.dim()) < 3:
        raise ValueError(f"q, k, v must be (..., heads, s, d): {shape_str(Q.shape)}, {shape_str(K.shape)}, "
                         f"{shape_str(V.shape)}")
    H, G, s = Q.shape[-3], K.shape[-3], Q.shape[-2]
    kv_head_map(int(H), int(G))
    if K.shape[-2] != s or V.shape[-2] != s or V.shape[-3] != G:
        raise ValueError(f"q {shape_str(Q.shape)}, k {shape_str(K.shape)} and v {shape_str(V.shape)} need the same "
                         "number of new tokens, and k and v the same number of heads")
    if cache is not None:
        cache = KVCache(k=t["cache.k"], v=t["cache.v"])
    past = 0 if cache is None else cache.length
    if tables is not None:
        if rope_base is not None:
            raise ValueError("give rope_base or precomputed tables, not both")
        if not isinstance(tables, RopeTables) or tuple(tables.cos.shape) != (s, Q.shape[-1] // 2):
            raise ValueError(f"tables must be RopeTables of ({s}, {Q.shape[-1] // 2}) for {s} new tokens, got "
                             f"{tables!r:.60}")
    elif rope_base is not None:
        tables = rope_tables(s, Q.shape[-1], base=rope_base, pairing=rope_pairing, start=past, device=Q.device,
                             dtype=Q.dtype)  # (s, d_k/2) each: positions t … t+s−1
    return _attend(Q, K, V, cache, rope=tables, scale=scale, bias=bias, check_finite=check_finite)


def _attend(Q, K, V, cache, *, rope, scale=None, bias=None, mask=None, check_finite=True) -> CachedAttentionStep:
    """attend_with_cache on checked tensors; rope: RopeTables (s, d_k/2) for the new positions, or None;
    ``mask`` (s, t+s), default causal (new token i sees keys ≤ t + i)."""
    H, s = Q.shape[-3], Q.shape[-2]
    past = 0 if cache is None else cache.length
    if mask is None and s > 1:
        mask = causal(s, past + s, device=Q.device)  # (s, t+s)
    if cache is not None:
        cache.check_fits(K, V)
    Q, K_all, V_all, trace = grouped_query_attention(
        Q, K, V, past=None if cache is None else (cache.k, cache.v), rope=rope, mask=mask, scale=scale, bias=bias,
        check_finite=check_finite)  # weights (..., H, s, t+s), output (..., H, s, d_v)
    return CachedAttentionStep(q=Q, positions=torch.arange(past, past + s), cache=KVCache(k=K_all, v=V_all),
                               attention=trace, kv_head_of=kv_head_map(int(H), int(K.shape[-3])))


# ---------------------------------------------------------------------------
# Multiply-adds per decoding step
# ---------------------------------------------------------------------------

def decode_step_macs(*, d_model: int, n_heads: int, n_kv_heads: int | None = None, d_head: int, length: int,
                     d_v: int | None = None, d_out: int | None = None, cached: bool = True) -> int:
    """Multiply-adds of one attention layer to produce the output of the token at position length − 1.

    H query heads, G K/V heads, d_k = ``d_head``, d_v (default d_k), L = ``length``.
    cached: the new token only — projections d_model·((H + G)·d_k + G·d_v), scores H·L·d_k, mix
    H·L·d_v, output projection H·d_v·d_out.
    not cached (recompute everything): the whole prefix again — L·d_model·((H + G)·d_k + G·d_v),
    H·L²·(d_k + d_v) for QKᵀ and αV as a dense implementation computes them (the masked half
    included), L·H·d_v·d_out. Element-wise work (softmax, RoPE, scaling) is not counted.
    """
    H = n_heads
    G = H if n_kv_heads is None else n_kv_heads
    kv_head_map(H, G)
    d_v = d_head if d_v is None else d_v
    d_out = d_model if d_out is None else d_out
    for name, val in (("d_model", d_model), ("d_head", d_head), ("length", length), ("d_v", d_v), ("d_out", d_out)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    L, d_k = length, d_head
    proj = d_model * ((H + G) * d_k + G * d_v)  # one token's q, k, v
    if cached:
        return proj + H * L * (d_k + d_v) + H * d_v * d_out
    return L * proj + H * L * L * (d_k + d_v) + L * H * d_v * d_out


@dataclass(frozen=True, eq=False)
class DecodeStep:
    """Token t of :func:`cached_decode`: its row of weights (..., H, t+1), its output (..., d_out), the
    cache's length after it (t + 1) and the multiply-adds of this step with the cache and without."""

    position: int
    weights: torch.Tensor
    output: torch.Tensor
    cache_length: int
    macs_cached: int
    macs_recompute: int


@dataclass(frozen=True, eq=False)
class DecodeTrace:
    """x (..., n, d_model) decoded one token at a time.

    output (..., n, d_out) — equal to full causal multi-head attention over x; steps: one
    :class:`DecodeStep` per token; cache: the final :class:`KVCache` (k (..., G, n, d_k), rotated
    when RoPE; v (..., G, n, d_v)); kv_head_of: query head h reads K/V head kv_head_of[h].
    """

    x: torch.Tensor
    output: torch.Tensor
    steps: tuple[DecodeStep, ...]
    cache: KVCache
    n_heads: int
    n_kv_heads: int
    kv_head_of: tuple[int, ...]
    rope_base: float | None

    @property
    def macs_cached(self) -> int:
        """Multiply-adds of all steps with the cache."""
        return sum(s.macs_cached for s in self.steps)

    @property
    def macs_recompute(self) -> int:
        """Multiply-adds of all steps when each recomputes the whole prefix."""
        return sum(s.macs_recompute for s in self.steps)

    @property
    def weights(self) -> torch.Tensor:
        """The steps' rows stacked into the causal matrix (..., H, n, n) (zeros above the diagonal)."""
        n = len(self.steps)
        rows = [torch.nn.functional.pad(s.weights, (0, n - s.cache_length)) for s in self.steps]
        return torch.stack(rows, dim=-2)  # (..., H, n, n)


def cached_decode(
    x: TensorLike,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    W_v: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    n_kv_heads: int | None = None,
    rope_base: float | None = None,
    rope_pairing: str = "adjacent",
    device=None,
    dtype=None,
) -> DecodeTrace:
    """One self-attention layer run token by token with a KV cache.

    x (..., n, d_model) fed one row at a time; W_q (d_model, H·d_k), W_k (d_model, G·d_k),
    W_v (d_model, G·d_v), W_o (H·d_v, d_out); G = n_kv_heads (None: G = H). Step t projects x_t,
    rotates q_t and k_t to position t when ``rope_base`` is given, appends k_t and v_t to the cache
    and attends over it (:func:`attend_with_cache`). ``.output`` (..., n, d_out) equals
    ``multi_head_attention(x, mask=masks.causal(n), n_kv_heads=G, rope_base=…)``; ``.steps`` has the
    new row of weights, the cache's length and the multiply-adds with and without the cache.
    """
    t = as_tensors({"x": x, "W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}, device=device, dtype=dtype)
    X = t["x"]
    H = n_heads
    G = H if n_kv_heads is None else n_kv_heads
    head_of = kv_head_map(H, n_kv_heads)
    if X.dim() < 2 or X.shape[-2] < 1:
        raise ValueError(f"x must be (..., n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    # row t of X W is x_t W: every token's q, k, v, projected (and checked) at once, then taken one row per step
    Q, K, V, d_k, d_v = project_heads(t, H, G)  # (..., n, H·d_k), (..., n, G·d_k), (..., n, G·d_v)
    d_out = int(t["W_o"].shape[1])
    n = X.shape[-2]
    tables = None if rope_base is None else rope_tables(n, d_k, base=rope_base, pairing=rope_pairing, device=X.device,
                                                        dtype=X.dtype)  # (n, d_k/2)
    steps, cache, rows = [], None, []
    for pos in range(n):
        at = slice(pos, pos + 1)
        q = split_heads(Q[..., at, :], H)  # (..., H, 1, d_k)
        k, v = split_heads(K[..., at, :], G), split_heads(V[..., at, :], G)  # (..., G, 1, d)
        step = _attend(q, k, v, cache, rope=None if tables is None else tables.at(at))
        cache = step.cache
        out = merge_heads(step.output) @ t["W_o"]  # (..., 1, d_out)
        rows.append(out)
        shape = dict(d_model=X.shape[-1], n_heads=H, n_kv_heads=G, d_head=d_k, d_v=d_v, length=pos + 1, d_out=d_out)
        steps.append(DecodeStep(
            position=pos, weights=step.weights[..., 0, :], output=out[..., 0, :], cache_length=cache.length,
            macs_cached=decode_step_macs(**shape, cached=True), macs_recompute=decode_step_macs(**shape, cached=False),
        ))
    return DecodeTrace(x=X, output=torch.cat(rows, dim=-2), steps=tuple(steps), cache=cache, n_heads=H,
                       n_kv_heads=G, kv_head_of=head_of, rope_base=None if rope_base is None else float(rope_base))


# ---------------------------------------------------------------------------
# How big the cache gets
# ---------------------------------------------------------------------------

def _count(name: str, value, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {value!r}")
    return value


def kv_cache_bytes(*, layers: int, n_kv_heads: int, d_head: int, tokens: int, batch: int = 1,
                   bytes_per_value: float = 2) -> int | float:
    """Bytes of a KV cache: 2 (keys and values) × layers × n_kv_heads × d_head × tokens × batch × bytes per value.

    ``bytes_per_value`` 2 is float16/bfloat16, 4 float32, 1 int8, 0.5 a 4-bit cache. An int when every
    factor is one.
    """
    for name, val, lo in (("layers", layers, 1), ("n_kv_heads", n_kv_heads, 1), ("d_head", d_head, 1),
                          ("tokens", tokens, 0), ("batch", batch, 1)):
        _count(name, val, minimum=lo)
    if isinstance(bytes_per_value, bool) or not isinstance(bytes_per_value, (int, float)) or not bytes_per_value > 0 \
            or bytes_per_value == float("inf"):
        raise ValueError(f"bytes_per_value must be a positive number, got {bytes_per_value!r}")
    return 2 * layers * n_kv_heads * d_head * tokens * batch * bytes_per_value


@dataclass(frozen=True)
class ModelShape:
    """The attention shape of a published model: what its KV cache and its positions depend on.

    layers, n_heads (query heads H), n_kv_heads (G), d_head, d_model, context (the published maximum
    length), window (sliding-window size, or None: every layer sees the whole context), rope_base
    (RoPE's θ, None for learned positions), source (where the numbers are published).
    """

    name: str
    layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_model: int
    context: int
    window: int | None = None
    rope_base: float | None = None
    source: str = ""

    @property
    def kind(self) -> str:
        """'MHA' (G = H), 'MQA' (G = 1) or 'GQA'."""
        return "MHA" if self.n_kv_heads == self.n_heads else "MQA" if self.n_kv_heads == 1 else "GQA"

    def cached_tokens(self, tokens: int, *, sinks: int = 0) -> int:
        """Tokens the cache must hold for a context of ``tokens``: all of them, or with a window the last
        ``window`` ones plus ``sinks`` first ones (StreamingLLM; :func:`core.masks.window`)."""
        _count("tokens", tokens, minimum=0)
        _count("sinks", sinks, minimum=0)
        return tokens if self.window is None else min(tokens, self.window + sinks)

    def kv_cache_bytes(self, tokens: int, *, batch: int = 1, bytes_per_value: float = 2, sinks: int = 0) -> int | float:
        """:func:`kv_cache_bytes` of this model for a context of ``tokens`` (a window caps what is kept)."""
        return kv_cache_bytes(layers=self.layers, n_kv_heads=self.n_kv_heads, d_head=self.d_head,
                              tokens=self.cached_tokens(tokens, sinks=sinks), batch=batch, bytes_per_value=bytes_per_value)

    def with_window(self, window: int | None) -> ModelShape:
        """The same model with a sliding window of ``window`` keys per layer (None: the full context)."""
        if window is not None:
            _count("window", window)
        return replace(self, window=window, name=self.name if window == self.window else f"{self.name} (window {window})")

    def reach(self, *, window: int | None = None) -> int | None:
        """How many tokens back the last layer can draw on through the stacked windows, layers·(window − 1)
        (what :func:`core.masks.window_reach` computes from the masks); None without a window."""
        w = self.window if window is None else window
        return None if w is None else self.layers * (w - 1)

    def with_kv_heads(self, n_kv_heads: int) -> ModelShape:
        """The same model with G K/V heads instead (G divides H): its MHA (G = H) or MQA (G = 1) twin."""
        kv_head_map(self.n_heads, n_kv_heads)
        return replace(self, n_kv_heads=n_kv_heads, name=f"{self.name} (G = {n_kv_heads})")

    def kv_cache_variants(self, tokens: int, *, batch: int = 1, bytes_per_value: float = 2) -> dict[str, int | float]:
        """Cache bytes as MHA (G = H), as published, and as MQA (G = 1), keyed 'MHA', the model's kind, 'MQA'."""
        out = {}
        for G in (self.n_heads, self.n_kv_heads, 1):
            shape = self.with_kv_heads(G)
            out[shape.kind] = shape.kv_cache_bytes(tokens, batch=batch, bytes_per_value=bytes_per_value)
        return out

    @classmethod
    def of(cls, published: Published) -> ModelShape:
        """The attention shape of a model of the registry (:mod:`core.shapes`), with its source."""
        p = published
        return cls(p.name, layers=p.layers, n_heads=p.n_heads, n_kv_heads=p.n_kv_heads, d_head=p.d_head,
                   d_model=p.d_model, context=p.context, window=p.window, rope_base=p.rope_base, source=p.source)


# the models the KV-cache pages compare (their numbers and sources: core.shapes.MODELS)
MODEL_PRESETS: dict[str, ModelShape] = {key: ModelShape.of(MODELS[key])
                                        for key in ("gpt2", "smollm2-135m", "llama-3-8b", "mistral-7b")}
