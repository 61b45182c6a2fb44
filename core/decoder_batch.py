r"""Continuous batching: one forward pass writes the next token of several sequences at once (part of ``core.decoder``).

Each sequence keeps its own keys and values in a *slot* of one :class:`SlotCache`; sequences of any lengths share a
step. For B sequences, sequence b holding t_b tokens in its slot and its new token at position t_b::

    X⁰ = E[ids]                                                                    (B, 576)
    for block l = 1..30:
        H = RMSNorm(Xˡ⁻¹) ⊙ g_attn                                                  (B, 576)
        q = R(t_b) H W_q,  k = R(t_b) H W_k,  v = H W_v                              (B, 9, 1, 64), (B, 3, 1, 64)
        slot b, row t_b ← k, v;   K, V = the slots' rows 0 … T−1,  T = max_b t_b + 1  (B, 3, T, 64)
        A = Concat_h softmax(q_h K_g(h)ᵀ / √64 + M_b) V_g(h) · W_o                    (B, 576)
            M_b[j] = −∞ for j > t_b: the rows past sequence b's own are another sequence's, not its keys
        Xˡ = Y + SwiGLU(RMSNorm(Y)),  Y = Xˡ⁻¹ + A                                    (B, 576)
    logits = (RMSNorm(X³⁰) ⊙ g_final) Eᵀ                                             (B, 49152)

Every row of every matrix product is computed as in :func:`core.decoder_forward.forward` for that sequence alone,
so a sequence's logits equal its unbatched ones to float32 rounding (the test: within 1e-4, any batch mates).
The weights are read once per step for the whole batch instead of once per sequence: that is the saving.
A prompt enters a slot through the ordinary one-sequence pass (:meth:`SlotCache.fill`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .decoder_forward import rms_norm, swiglu
from .decoder_load import LlamaConfig, LlamaWeights
from .kv_cache import KVCache
from .multihead import grouped_query_attention, merge_heads
from .positional import rope_cos_sin, rotate


class SlotCache:
    """Every block's keys and values for up to ``slots`` sequences, each up to ``capacity`` tokens.

    k, v (L, S, G, capacity, d_head), allocated once (their bytes are the bound: :attr:`nbytes`);
    ``lengths[s]``: the tokens slot s holds (0: free). Keys are stored rotated (RoPE at their positions).
    """

    def __init__(self, c: LlamaConfig, slots: int, capacity: int, *, device=None, dtype=torch.float32):
        if slots < 1 or capacity < 2:
            raise ValueError(f"a slot cache needs at least 1 slot and 2 positions, got {slots} and {capacity}")
        shape = (c.n_layers, slots, c.n_kv_heads, capacity, c.d_head)
        self.k = torch.zeros(shape, device=device, dtype=dtype)
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.lengths = [0] * slots
        self.capacity = capacity

    @property
    def nbytes(self) -> int:
        """Bytes the keys and values take (all slots, allocated at once)."""
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    @staticmethod
    def bytes_for(c: LlamaConfig, slots: int, capacity: int, bytes_per_value: int = 4) -> int:
        """:attr:`nbytes` of a cache of that size, before making it."""
        return 2 * c.n_layers * slots * c.n_kv_heads * capacity * c.d_head * bytes_per_value

    def free_slots(self) -> list[int]:
        return [s for s, n in enumerate(self.lengths) if n == 0]

    def fill(self, slot: int, caches: tuple[KVCache, ...]) -> None:
        """Put a prefilled sequence (every block's cache from ``forward(..., use_cache=True)``, k (G, t, d)) in ``slot``."""
        t = caches[0].length
        if not 1 <= t < self.capacity:
            raise ValueError(f"a sequence of {t} tokens does not fit a slot of {self.capacity} positions with room to grow")
        for layer, cache in enumerate(caches):
            self.k[layer, slot, :, :t] = cache.k
            self.v[layer, slot, :, :t] = cache.v
        self.lengths[slot] = t

    def release(self, slot: int) -> None:
        """The slot is free again (its rows are overwritten by the next sequence; the mask hides them until then)."""
        self.lengths[slot] = 0


@dataclass(frozen=True, eq=False)
class BatchStep:
    """One step of B sequences: their next-token logits and the attention rows that produced them."""

    logits: torch.Tensor  # (B, vocab)
    attentions: torch.Tensor  # (L, B, H, T): sequence b's row over its t_b + 1 keys is [:, b, :, :t_b + 1] (rest 0)
    positions: tuple[int, ...]  # t_b: where each sequence's new token stood (its length after the step − 1)


def decode_batch(ids: torch.Tensor, slots: list[int], cache: SlotCache, P: LlamaWeights, c: LlamaConfig) -> BatchStep:
    """The module docstring's step: ids (B,) the new token of the sequence in each of ``slots`` (B distinct slots,
    each holding at least one token and room for one more). Writes each new key and value into its slot."""
    B = len(slots)
    if ids.shape != (B,) or len(set(slots)) != B:
        raise ValueError(f"one new token per distinct slot: {tuple(ids.shape)} ids for slots {slots}")
    pos = [cache.lengths[s] for s in slots]
    if min(pos) < 1 or max(pos) >= cache.capacity:
        raise ValueError(f"slots {slots} hold {pos} tokens: each needs 1 … {cache.capacity - 1}")
    T = max(pos) + 1
    where = torch.tensor(slots, device=P.E.device)
    at = torch.tensor(pos, device=P.E.device)
    cos, sin = rope_cos_sin(torch.tensor(pos), c.d_head, base=c.rope_base, device=P.E.device, dtype=P.E.dtype)  # (B, d/2)
    cos, sin = cos[:, None, None, :], sin[:, None, None, :]  # (B, 1, 1, d/2): each sequence at its own position
    keep = torch.arange(T, device=P.E.device)[None, :] <= at[:, None]  # (B, T): its own rows only
    mask = keep[:, None, None, :]  # (B, 1, 1, T)
    x = P.E[ids]  # (B, d)
    attns = []
    for l, layer in enumerate(P.layers):
        h = rms_norm(x, layer.g_attn, c.eps)  # (B, d)
        q = rotate((h @ layer.W_q).view(B, c.n_heads, 1, c.d_head), cos, sin)  # (B, H, 1, d_head)
        k = rotate((h @ layer.W_k).view(B, c.n_kv_heads, 1, c.d_head), cos, sin)  # (B, G, 1, d_head)
        v = (h @ layer.W_v).view(B, c.n_kv_heads, 1, c.d_head)  # (B, G, 1, d_head)
        cache.k[l, where, :, at] = k[:, :, 0]  # slot b, row t_b
        cache.v[l, where, :, at] = v[:, :, 0]
        K, V = cache.k[l, where, :, :T], cache.v[l, where, :, :T]  # (B, G, T, d_head)
        _, _, _, heads = grouped_query_attention(q, K, V, mask=mask, check_finite=False)  # weights (B, H, 1, T)
        x = x + merge_heads(heads.output)[:, 0] @ layer.W_o  # (B, H, 1, d_head) → (B, 1, H·d_head) → (B, d)
        x = x + swiglu(rms_norm(x, layer.g_ffn, c.eps), layer.W_gate, layer.W_up, layer.W_down)  # (B, d)
        attns.append(heads.weights[:, :, 0])  # (B, H, T)
    for s in slots:
        cache.lengths[s] += 1
    logits = rms_norm(x, P.g_final, c.eps) @ P.E.T  # (B, vocab)
    return BatchStep(logits=logits, attentions=torch.stack(attns), positions=tuple(pos))
