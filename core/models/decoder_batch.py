r"""Continuous batching: one forward pass writes the next token of several sequences at once (part of ``core.models.decoder``).

Each sequence keeps its own keys and values in pages of one :class:`BatchCache`; sequences of any lengths share a
step. For B sequences, sequence b holding t_b tokens and its new token at position t_b::

    X⁰ = E[ids]  (Gemma: · √d_model)                                               (B, d)
    for block l = 1..L:
        H = N(Xˡ⁻¹; g_attn)                                                         (B, d)
        q = R_l(t_b) H W_q,  k = R_l(t_b) H W_k,  v = H W_v   (Gemma: q, k normed first)   (B, H, 1, d_h), (B, G, 1, d_h)
        b's position t_b ← k, v;   K, V = b's positions 0 … T−1,  T = max_b t_b + 1    (B, G, T, d_h)
        A = Concat_h softmax(s · q_h K_g(h)ᵀ + M_b) V_g(h) · W_o                     (B, d)
            M_b[j] = −∞ for j > t_b: sequence b has no keys there (its row is padding); in a block with a sliding
            window w (Gemma's local blocks) also for j ≤ t_b − w
        Y = Xˡ⁻¹ + A,  Xˡ = Y + FFN(N(Y; g_ffn))    (Gemma: A and the FFN's output normed before their adds)
    logits = N(Xᴸ; g_final) Eᵀ                                                       (B, vocab)

as :func:`core.models.decoder_forward.forward` writes it for each family (N, R_l, s and the FFN's activation there).

Every row of every matrix product is computed as in :func:`core.models.decoder_forward.forward` for that sequence alone,
so a sequence's logits equal its unbatched ones to float32 rounding (the test: within 1e-4, any batch mates).
The weights are read once per step for the whole batch instead of once per sequence: that is the saving.
The same pass takes several new tokens for a sequence (:func:`extend_batch`): a prompt joining is prefilled in the
step that decodes the others, its rows causal among themselves. Position t of a sequence lives in row
table[t // P]·P + t mod P of the cache (its block table of pages of P positions).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.mechanism.multihead import grouped_query_attention, kv_head_map, merge_heads
from core.mechanism.paged import PagePool
from core.mechanism.positional import rope_cos_sin, rotate
from core.models.decoder_forward import linear, norm, swiglu, window_mask
from core.models.decoder_load import LlamaConfig, LlamaWeights


class BatchCache:
    """Every block's keys and values for the sequences of one batch, in pages of ``page_size`` positions
    (vLLM's PagedAttention; :class:`core.mechanism.paged.PagedKVCache` teaches it one layer at a time).

    k, v (L, G, R, d_head), R = n_pages · page_size rows, allocated once (their bytes are the bound: :attr:`nbytes`);
    page p holds rows p·P … p·P + P − 1. A sequence reserves the pages for all the positions it will ever hold
    when it opens (:meth:`open`), so a running batch never runs out; a sequence of 26 positions takes 2 pages of 16,
    not a slot of the longest request. ``lengths[s]``: the tokens sequence s holds. Keys are stored rotated.
    """

    def __init__(self, c: LlamaConfig, n_pages: int, page_size: int = 16, *, device=None, dtype=torch.float32):
        if n_pages < 1 or page_size < 1:
            raise ValueError(f"a batch cache needs at least 1 page of 1 position, got {n_pages} of {page_size}")
        shape = (c.n_layers, c.n_kv_heads, n_pages * page_size, c.d_head)
        # Uninitialised: a row is read only after its sequence wrote it (each sequence's keys are read up to its own
        # last position, extend_batch), and memory is touched as pages are first written: a class of 40 writing 16
        # tokens each touches its 80 pages of 136, 39 MB fewer than zeros (BENCHMARKS.md, "The decoding process's
        # memory"). Pages handed back are handed out again first (PagePool).
        self.k = torch.empty(shape, device=device, dtype=dtype)
        self.v = torch.empty(shape, device=device, dtype=dtype)
        self.page_size = page_size
        self.pool = PagePool(n_pages)
        self.lengths: dict[int, int] = {}
        self._tables: dict[int, list[int]] = {}
        self.room: dict[int, int] = {}  # the positions each sequence reserved
        self._next = 0

    @property
    def nbytes(self) -> int:
        """Bytes the keys and values take (all pages, allocated at once)."""
        return self.k.numel() * self.k.element_size() + self.v.numel() * self.v.element_size()

    @staticmethod
    def bytes_per_page(c: LlamaConfig, page_size: int = 16, bytes_per_value: int = 4) -> int:
        """Bytes one page of keys and values takes in every block."""
        return 2 * c.n_layers * c.n_kv_heads * page_size * c.d_head * bytes_per_value

    def pages_for(self, positions: int) -> int:
        return -(-positions // self.page_size)

    def open(self, positions: int) -> int | None:
        """A new, empty sequence with pages reserved for ``positions`` positions; None when too few pages are free."""
        need = self.pages_for(positions)
        if positions < 2 or need > self.pool.free:
            return None
        seq, self._next = self._next, self._next + 1
        self._tables[seq] = [self.pool.take() for _ in range(need)]
        self.lengths[seq], self.room[seq] = 0, positions
        return seq

    def rows(self, seq: int, positions) -> torch.Tensor:
        """The rows of the cache holding ``positions`` of sequence ``seq`` (long, same shape)."""
        P = self.page_size
        table = torch.tensor(self._tables[seq], dtype=torch.long, device=self.k.device)
        positions = torch.as_tensor(positions, dtype=torch.long, device=self.k.device)
        return table[positions // P] * P + positions % P

    def release(self, seq: int) -> None:
        """The sequence leaves; its pages return to the pool (their rows are overwritten by the next owner)."""
        for p in self._tables.pop(seq):
            self.pool.release(p)
        del self.lengths[seq], self.room[seq]


@dataclass(frozen=True, eq=False)
class BatchStep:
    """One pass over B sequences: each one's next-token logits and the attention row that produced them."""

    logits: torch.Tensor  # (B, vocab): after each sequence's last new token
    attentions: torch.Tensor  # (L, B, H, T): sequence b's last row over its t_b + 1 keys is [:, b, :, :t_b + 1] (rest 0)
    positions: tuple[int, ...]  # t_b: where each sequence's last new token stood (its length after the pass − 1)


def extend_batch(chunks: list[torch.Tensor], seqs: list[int], cache: BatchCache, P: LlamaWeights,
                 c: LlamaConfig) -> BatchStep:
    """The module docstring's pass, for n_b ≥ 1 new tokens per sequence: chunks[b] (n_b,) the token ids that follow
    what sequence ``seqs[b]`` holds (its prompt when it holds none: prefill; one token: a decoding step). Prompts
    joining and sequences decoding share the one pass. Writes every new key and value into its sequence's pages.

    The new tokens are packed, M = Σ n_b rows, for every matrix product; only attention is per sequence, its
    queries padded to N = max n_b and each sequence's keys read through its pages, padded to T = max_b (t₀_b + n_b)."""
    B = len(seqs)
    n = [int(x.numel()) for x in chunks]
    if not B or len(set(seqs)) != B or not all(s in cache.lengths for s in seqs) or len(chunks) != B or min(n) < 1:
        raise ValueError(f"one or more new tokens for each distinct open sequence: {n} for sequences {seqs}")
    start = [cache.lengths[s] for s in seqs]  # t₀_b: tokens each already holds
    if any(t0 + k > cache.room[s] for s, t0, k in zip(seqs, start, n, strict=True)):
        raise ValueError(f"sequences {seqs} holding {start} tokens have no room for {n} more")
    dev, N = P.device, max(n)
    ends = [t0 + k for t0, k in zip(start, n, strict=True)]
    T = max(ends)
    ids = torch.cat([x.reshape(-1) for x in chunks]).to(dev)  # (M,)
    pos = torch.cat([torch.arange(t0, e) for t0, e in zip(start, ends, strict=True)])  # (M,) each token's position
    new_rows = torch.cat([cache.rows(s, torch.arange(t0, e)) for s, t0, e in zip(seqs, start, ends, strict=True)])
    key_rows = torch.stack([cache.rows(s, torch.arange(T).clamp(max=e - 1)) for s, e in zip(seqs, ends, strict=True)])
    first = torch.tensor([0, *n[:-1]]).cumsum(0)  # (B,): where each sequence's tokens begin in the packed rows
    i = torch.arange(N)
    last = torch.tensor(n)[:, None] - 1  # (B, 1)
    padded = (first[:, None] + i.clamp(max=last)).to(dev)  # (B, N): a padding query repeats the last real one
    q_pos = torch.tensor(start)[:, None] + i.clamp(max=last)  # (B, N)
    masks = {w: window_mask(q_pos, T, w)[:, None].to(dev) for w in {c.window_of(l) for l in range(c.n_layers)}}
    # (B, 1, N, T) per window (None: global): its own keys, causal, within the block's window
    real = (i[None, :] <= last).to(dev)  # (B, N): the query rows that are tokens, not padding
    tables = {b: tuple(t[:, None, :] for t in rope_cos_sin(pos, c.d_head, base=b, device=dev, dtype=P.dtype))
              for b in {c.base_of(l) for l in range(c.n_layers)}}  # (M, 1, d/2) cos, sin per base: each token's position
    R = cache.k.shape[2]  # rows of one K/V head in the cache
    g_of_h = torch.tensor(kv_head_map(c.n_heads, c.n_kv_heads), device=dev)  # (H,): query head h's K/V head
    head_rows = (g_of_h[None, :, None] * R + key_rows[:, None, :].to(dev)).reshape(-1)  # (B·H·T,): rows of (G·R, d_head)
    x = P.embed(ids)  # (M, d)
    if c.embed_scale:
        x = x * torch.tensor(c.d_model ** 0.5, dtype=x.dtype)  # Gemma: E[ids] · √d_model
    M, attns = ids.numel(), []
    for l, layer in enumerate(P.layers):
        h = norm(x, layer.g_attn, c)  # (M, d)
        q = linear(h, layer.W_q).view(M, c.n_heads, c.d_head)  # (M, H, d_head)
        k = linear(h, layer.W_k).view(M, c.n_kv_heads, c.d_head)  # (M, G, d_head)
        if c.qk_norm:
            q, k = norm(q, layer.g_q, c), norm(k, layer.g_k, c)  # each head's q and k normed over d_head
        cos, sin = tables[c.base_of(l)]
        q, k = rotate(q, cos, sin, pairing=c.rope_pairing), rotate(k, cos, sin, pairing=c.rope_pairing)
        v = linear(h, layer.W_v).view(M, c.n_kv_heads, c.d_head)  # (M, G, d_head)
        cache.k[l][:, new_rows] = k.transpose(0, 1)  # (G, M, d_head) into each token's row
        cache.v[l][:, new_rows] = v.transpose(0, 1)
        # (G·R, d_head) → (B, H, T, d_head): query head h reads K/V head g(h) through the pages, in one gather (the
        # same values as gathering (B, G, T, d_head) and repeating each K/V head, without the copy of the repeat)
        K = cache.k[l].view(-1, c.d_head).index_select(0, head_rows).view(B, c.n_heads, T, c.d_head)
        V = cache.v[l].view(-1, c.d_head).index_select(0, head_rows).view(B, c.n_heads, T, c.d_head)
        _, _, _, heads = grouped_query_attention(q[padded].transpose(1, 2), K, V, mask=masks[c.window_of(l)], scale=c.scale,
                                                 check_finite=False)  # (B, N, H, d) → (B, H, N, d); weights (B, H, N, T)
        a = linear(merge_heads(heads.output)[real], layer.W_o)  # (B, N, H·d_head) → the M real rows (M, H·d_head) → (M, d)
        x = x + (norm(a, layer.g_post_attn, c) if c.post_norms else a)
        f = swiglu(norm(x, layer.g_ffn, c), layer.W_gate, layer.W_up, layer.W_down, c.activation)  # (M, d)
        x = x + (norm(f, layer.g_post_ffn, c) if c.post_norms else f)
        attns.append(heads.weights[torch.arange(B, device=dev), :, last[:, 0].to(dev)])  # (B, H, T): its last real row
    for s, e in zip(seqs, ends, strict=True):
        cache.lengths[s] = e
    logits = P.logits(norm(x[(first + last[:, 0]).to(dev)], P.g_final, c))  # (B, vocab): after each last new token
    return BatchStep(logits=logits, attentions=torch.stack(attns), positions=tuple(e - 1 for e in ends))


def decode_batch(ids: torch.Tensor, seqs: list[int], cache: BatchCache, P: LlamaWeights, c: LlamaConfig) -> BatchStep:
    """One decoding step: ids (B,) the new token of each of the B distinct sequences ``seqs`` (each holding at least
    one token and room for one more) — :func:`extend_batch` with one token each."""
    if ids.shape != (len(seqs),) or any(cache.lengths.get(s, 0) < 1 for s in seqs):
        raise ValueError(f"a decoding step needs one new token for each sequence holding at least 1: "
                         f"{tuple(ids.shape)} ids for sequences {seqs}")
    return extend_batch(list(ids.reshape(-1, 1)), seqs, cache, P, c)
