r"""Gemma 4's cross-layer KV sharing and K = V (issue 55), row convention; transformers' ``Gemma4TextAttention``.

Every layer has its own queries. Keys and values::

    own layers:     K = RoPE(RMSNorm(x W_k) ⊙ w_k),   V = RMSNorm(x W_v)            (V's norm has no weight)
    K = V layers:   V = RMSNorm(x W_k)  — the raw key projection, normalised without weight, before RoPE
    reuse layers:   no W_k, no W_v: K and V are those an earlier layer of the same kind stored   cache cost 0

    q = RoPE(RMSNorm(x W_q) ⊙ w_q),   out = softmax(q Kᵀ · 1 + mask) V W_o          scaling 1 (the norms set the scale)

The last ``n_shared`` layers reuse: each reads the K and V of the last layer before them of its own kind (local
with local, global with global), :func:`sharing_plan`. Global layers rotate with *proportional* RoPE
(:func:`proportional_rope`): frequencies θ^(−2i/d) over the whole head width d, the first fraction p of the pairs
turning and the rest standing still.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.masks import causal
from core.mechanism.masks import window as window_mask
from core.mechanism.multihead import grouped_query_attention, merge_heads, project, split_heads
from core.mechanism.norms import rms_norm
from core.mechanism.positional import RopeTables, rope_tables

KINDS = ("sliding_attention", "full_attention")


def proportional_rope(n: int, d: int, *, base: float, fraction: float, start: int = 0, device=None,
                      dtype=torch.float32) -> RopeTables:
    """Proportional RoPE's tables (n, d/2), "half" pairing: pair i turns by m·θ^(−2i/d) for i < ⌊fraction·d/2⌋ and
    stands still (angle 0) after — the whole width d sets the frequencies, unlike partial rotary's r."""
    if not 0 < fraction <= 1:
        raise ValueError(f"the rotated fraction must be in (0, 1], got {fraction!r}")
    turning = int(fraction * d // 2)
    full = rope_tables(n, d, base=base, pairing="half", start=start, device=device, dtype=dtype)  # (n, d/2)
    keep = (torch.arange(d // 2, device=full.cos.device) < turning)  # (d/2,): the pairs that turn
    return RopeTables(torch.where(keep, full.cos, torch.ones_like(full.cos)),
                      torch.where(keep, full.sin, torch.zeros_like(full.sin)), "half")


@dataclass(frozen=True)
class SharingPlan:
    """Which layer's keys and values each layer reads. modes[l]: None (own, kept to itself), "store" (own, and the
    layers after it of its kind read them) or "reuse"; source[l]: the layer whose K and V layer l attends to."""

    layer_types: tuple[str, ...]
    modes: tuple[str | None, ...]
    source: tuple[int, ...]

    @property
    def cached_layers(self) -> int:
        """Layers that keep a cache of their own (the reuse layers' cost 0)."""
        return sum(m != "reuse" for m in self.modes)


def sharing_plan(layer_types, n_shared: int) -> SharingPlan:
    """The last ``n_shared`` layers reuse the K and V of the last earlier layer of their kind (Gemma 4's
    ``num_kv_shared_layers``; transformers' ``Gemma4TextConfig.kv_sharing_modes``)."""
    types = tuple(layer_types)
    L = len(types)
    if not types or any(k not in KINDS for k in types):
        raise ValueError(f"layer types must be among {KINDS}, got {types}")
    n = int_at_least("n_shared", n_shared, minimum=0)
    first = L - n
    if n >= L or set(types[first:]) - set(types[:first]):
        raise ValueError(f"{n} shared layers of {L}: every kind the shared layers have needs an earlier layer to read")
    modes: list[str | None] = [None if i < first else "reuse" for i in range(L)]
    producer = {kind: max(i for i in range(first) if types[i] == kind) for kind in set(types)}
    for i in producer.values():
        modes[i] = "store"
    return SharingPlan(types, tuple(modes), tuple(i if i < first else producer[types[i]] for i in range(L)))


@dataclass(frozen=True, eq=False)
class SharedKVTrace:
    """One layer of :func:`gemma4_attention`: q (B, H, n, d) rotated; k, v (B, G, n, d) the keys and values it
    attended (its own, or the ones it was handed); weights (B, H, n, n); output (B, n, d_out); reused: whether
    K and V came from another layer (then this layer cached nothing)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    weights: torch.Tensor
    output: torch.Tensor
    reused: bool


def gemma4_attention(
    x: TensorLike,
    *,
    W_q: TensorLike,
    q_norm: TensorLike,
    W_o: TensorLike,
    n_heads: int,
    rope: RopeTables,
    W_k: TensorLike | None = None,
    W_v: TensorLike | None = None,
    k_norm: TensorLike | None = None,
    shared: tuple[TensorLike, TensorLike] | None = None,
    window: int | None = None,
    scale: float = 1.0,
    norm_eps: float = 1e-6,
    device=None,
    dtype=None,
) -> SharedKVTrace:
    r"""One Gemma 4 attention layer over x (B, n, d_model) (see the module doc).

    W_q (d_model, H·d), q_norm (d,), W_o (H·d, d_out); rope: the layer's tables (n, d/2) (``proportional_rope``
    for a global layer). Own keys: W_k (d_model, G·d) and k_norm (d,), with W_v (d_model, G·d), or W_v None for K = V.
    A reuse layer gives ``shared`` = (K, V) (B, G, n, d) from :attr:`SharedKVTrace.k` / ``.v`` of its source layer
    instead. window: a sliding layer's window (keys i − w < j ≤ i), None for a global layer. scale: 1, as Gemma 4
    (the query and key norms set the logits' size).
    """
    H = int_at_least("n_heads", n_heads)
    if (shared is None) == (W_k is None):
        raise ValueError("a layer has its own key projection W_k or is handed shared=(K, V) from another: one of them")
    t = as_tensors(given(x=x, W_q=W_q, q_norm=q_norm, W_o=W_o, W_k=W_k, W_v=W_v, k_norm=k_norm), device=device,
                   dtype=dtype)
    X, eps = t["x"], positive_number("norm_eps", norm_eps)
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    n = X.shape[-2]
    q = rope.apply(rms_norm(split_heads(project(t, "x", "W_q"), H), t["q_norm"], eps))  # (B, H, n, d)
    if shared is None:
        raw = project(t, "x", "W_k")  # (B, n, G·d)
        d = q.shape[-1]
        G = raw.shape[-1] // d
        k = rope.apply(rms_norm(split_heads(raw, G), t["k_norm"], eps))  # (B, G, n, d)
        v_raw = raw if "W_v" not in t else project(t, "x", "W_v")  # K = V: the key projection, before norm and RoPE
        v = rms_norm(split_heads(v_raw, G), eps=eps)  # (B, G, n, d): normalised, no weight
    else:
        kv = as_tensors({"K": shared[0], "V": shared[1]}, device=X.device, dtype=X.dtype)
        k, v = kv["K"], kv["V"]
    mask = causal(n, device=X.device) if window is None else window_mask(n, int_at_least("window", window),
                                                                          causal_only=True, device=X.device)
    heads = grouped_query_attention(q, k, v, mask=mask, scale=positive_number("scale", scale))[3]  # (B, H, n, n)
    t["merged"] = merge_heads(heads.output)  # (B, n, H·d)
    return SharedKVTrace(q=q, k=k, v=v, weights=heads.weights, output=project(t, "merged", "W_o"),
                         reused=shared is not None)
