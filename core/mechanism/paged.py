r"""A paged KV cache (vLLM's PagedAttention, Kwon et al. 2023), row convention.

Instead of reserving max_len rows per sequence up front, keys and values live in fixed-size pages of
P tokens from one shared pool; each sequence owns a block table, the list of its pages in order, so
token t sits in page ``table[t // P]`` at row ``t % P``. Only the last page of a sequence can be partly
empty, so at most P − 1 slots per sequence are wasted. A forked sequence (beam search, a shared system
prompt) shares its parent's pages; a shared page is copied only when one of them writes into it
(copy-on-write). Reading through the block table gives exactly the contiguous keys and values, so
attention over them is unchanged (:meth:`PagedKVCache.attend`).

The cache is mutable (a pool is): :meth:`append`, :meth:`fork` and :meth:`free` change it in place.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, int_at_least, shape_str
from core.mechanism.attention import AttentionTrace
from core.mechanism.masks import causal as causal_mask
from core.mechanism.multihead import grouped_query_attention


@dataclass(frozen=True)
class PagedMemory:
    """Bytes of the live sequences: paged (pages in use, shared pages counted once) against contiguous
    preallocation of ``max_len`` tokens per sequence; *_wasted: reserved but holding no token."""

    sequences: int
    tokens: int
    pages_used: int
    shared_pages: int
    paged_bytes: int
    paged_wasted_bytes: int
    contiguous_bytes: int
    contiguous_wasted_bytes: int


class PagePool:
    """Which of ``n_pages`` pages are free. A page handed out counts its owners; it is free again when the last
    one releases it. Shared by :class:`PagedKVCache` and the decoder's batch cache (``core.models.decoder_batch``)."""

    def __init__(self, n_pages: int):
        self.n_pages = int_at_least("n_pages", n_pages)
        self.ref_counts = [0] * self.n_pages
        self._free = list(range(self.n_pages))[::-1]  # pop() hands out page 0 first

    @property
    def free(self) -> int:
        return len(self._free)

    def take(self) -> int:
        """A free page, now owned once."""
        if not self._free:
            raise ValueError(f"the pool's {self.n_pages} pages are all in use")
        p = self._free.pop()
        self.ref_counts[p] = 1
        return p

    def share(self, p: int) -> None:
        """One more owner of page ``p``."""
        self.ref_counts[p] += 1

    def release(self, p: int) -> None:
        """One owner fewer; the page returns to the pool with its last owner."""
        self.ref_counts[p] -= 1
        if self.ref_counts[p] == 0:
            self._free.append(p)


class PagedKVCache:
    """A pool of ``n_pages`` pages of ``page_size`` tokens for G = ``n_kv_heads`` heads of width d_k (keys) and d_v.

    k_pages (n_pages, G, P, d_k), v_pages (n_pages, G, P, d_v); a sequence is an integer id with a block table.
    """

    def __init__(self, *, n_pages: int, page_size: int, n_kv_heads: int, d_k: int, d_v: int | None = None,
                 dtype: torch.dtype = torch.float32, device=None):
        self.n_pages, self.page_size = int_at_least("n_pages", n_pages), int_at_least("page_size", page_size)
        G, d_k = int_at_least("n_kv_heads", n_kv_heads), int_at_least("d_k", d_k)
        d_v = d_k if d_v is None else int_at_least("d_v", d_v)
        self.k_pages = torch.zeros(self.n_pages, G, self.page_size, d_k, dtype=dtype, device=device)
        self.v_pages = torch.zeros(self.n_pages, G, self.page_size, d_v, dtype=dtype, device=device)
        self.pool = PagePool(self.n_pages)
        self._tables: dict[int, list[int]] = {}
        self._lengths: dict[int, int] = {}
        self._next_id = 0
        self.copies = 0  # pages copied on write

    # -- sequences ---------------------------------------------------------------------------------
    def new_sequence(self) -> int:
        """A new, empty sequence; returns its id."""
        sid = self._next_id
        self._next_id += 1
        self._tables[sid], self._lengths[sid] = [], 0
        return sid

    def _check(self, seq: int) -> int:
        if seq not in self._tables:
            raise ValueError(f"unknown sequence {seq!r}; live sequences: {sorted(self._tables)}")
        return seq

    def length(self, seq: int) -> int:
        return self._lengths[self._check(seq)]

    def block_table(self, seq: int) -> tuple[int, ...]:
        """The pages of a sequence in order: token t is row t % P of page table[t // P]."""
        return tuple(self._tables[self._check(seq)])

    @property
    def free_pages(self) -> int:
        return self.pool.free

    @property
    def ref_counts(self) -> list[int]:
        return self.pool.ref_counts

    def _take_page(self) -> int:
        return self.pool.take()

    def _release(self, p: int) -> None:
        self.pool.release(p)

    def fork(self, seq: int) -> int:
        """A new sequence sharing every page of ``seq`` (no copy until one of them writes to a shared page)."""
        table = self._tables[self._check(seq)]
        child = self.new_sequence()
        self._tables[child], self._lengths[child] = list(table), self._lengths[seq]
        for p in table:
            self.pool.share(p)
        return child

    def free(self, seq: int) -> None:
        """Drop a sequence; pages no other sequence shares return to the pool."""
        for p in self._tables.pop(self._check(seq)):
            self._release(p)
        del self._lengths[seq]

    def append(self, seq: int, k: TensorLike, v: TensorLike) -> None:
        """Write s new tokens: k (G, s, d_k), v (G, s, d_v) — into the last page while it has room (copied first
        if it is shared), then into fresh pages."""
        table = self._tables[self._check(seq)]
        t = as_tensors({"k": k, "v": v}, device=self.k_pages.device, dtype=self.k_pages.dtype)
        K, V = t["k"], t["v"]
        G, P = self.k_pages.shape[1], self.page_size
        if K.dim() != 3 or K.shape[0] != G or K.shape[2] != self.k_pages.shape[3]:
            raise ValueError(f"k {shape_str(K.shape)} must be (G, s, d_k) = ({G}, s, {self.k_pages.shape[3]})")
        if V.shape != (G, K.shape[1], self.v_pages.shape[3]):
            raise ValueError(f"v {shape_str(V.shape)} must be (G, s, d_v) = ({G}, {K.shape[1]}, {self.v_pages.shape[3]})")
        s, pos = K.shape[1], self._lengths[seq]
        cow = 1 if s and pos % P and self.ref_counts[table[-1]] > 1 else 0  # a shared last page gets copied
        need = math.ceil((pos + s) / P) - len(table) + cow
        if need > self.free_pages:  # checked before writing anything
            raise ValueError(f"{s} more tokens need {need} new pages but only {self.free_pages} are free")
        done = 0
        while done < s:
            row = pos % P
            if row == 0:
                table.append(self._take_page())
            elif self.ref_counts[table[-1]] > 1:  # copy-on-write: the last page is shared and about to change
                old, new = table[-1], self._take_page()
                self.k_pages[new], self.v_pages[new] = self.k_pages[old], self.v_pages[old]
                self._release(old)
                table[-1] = new
                self.copies += 1
            take = min(P - row, s - done)
            page = table[-1]
            self.k_pages[page, :, row:row + take] = K[:, done:done + take]
            self.v_pages[page, :, row:row + take] = V[:, done:done + take]
            done, pos = done + take, pos + take
        self._lengths[seq] = pos

    # -- reading -------------------------------------------------------------------------------------
    def gather(self, seq: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The sequence's keys (G, t, d_k) and values (G, t, d_v), read page by page through its block table."""
        table, t = self._tables[self._check(seq)], self._lengths[seq]
        idx = torch.tensor(table, dtype=torch.long, device=self.k_pages.device)
        G = self.k_pages.shape[1]

        def read(pages):  # (n_p, G, P, d) → (G, n_p·P, d) → the first t rows
            sel = pages.index_select(0, idx)
            return sel.permute(1, 0, 2, 3).reshape(G, -1, pages.shape[-1])[:, :t]

        return read(self.k_pages), read(self.v_pages)

    def attend(self, seq: int, q: TensorLike, *, scale: float | None = None) -> AttentionTrace:
        """Causal attention of s queries q (H, s, d_k) — the sequence's last s positions — over its cached keys
        and values (K/V head g serves H/G query heads). Equal to attention over the contiguous cache."""
        K, V = self.gather(seq)
        t = K.shape[1]
        Q = as_tensors({"q": q}, device=K.device, dtype=K.dtype)["q"]
        if Q.dim() != 3 or Q.shape[-1] != K.shape[-1] or Q.shape[0] % K.shape[0] or not 1 <= Q.shape[1] <= t:
            raise ValueError(f"q {shape_str(Q.shape)} must be (H, s, d_k) with d_k = {K.shape[-1]}, G = {K.shape[0]} "
                             f"dividing H, and 1 ≤ s ≤ {t} cached tokens")
        return grouped_query_attention(Q, K, V, mask=causal_mask(Q.shape[1], t, device=K.device), scale=scale)[3]

    def memory(self, max_len: int) -> PagedMemory:
        """Bytes in use now against reserving ``max_len`` tokens per live sequence up front."""
        max_len = int_at_least("max_len", max_len)
        per_token = (self.k_pages[0, :, 0].numel() + self.v_pages[0, :, 0].numel()) * self.k_pages.element_size()
        used = {p for table in self._tables.values() for p in table}
        tokens = sum(self._lengths.values())
        if any(n > max_len for n in self._lengths.values()):
            raise ValueError(f"max_len={max_len} is shorter than a live sequence ({max(self._lengths.values())} tokens)")
        # slots holding a token, shared pages counted once: each page's filled rows, taken from one owner
        filled: dict[int, int] = {}
        for sid, table in self._tables.items():
            for i, p in enumerate(table):
                filled[p] = max(filled.get(p, 0), min(self.page_size, self._lengths[sid] - i * self.page_size))
        page_bytes = self.page_size * per_token
        n_seq = len(self._tables)
        return PagedMemory(sequences=n_seq, tokens=tokens, pages_used=len(used),
                           shared_pages=sum(1 for p in used if self.ref_counts[p] > 1),
                           paged_bytes=len(used) * page_bytes,
                           paged_wasted_bytes=(len(used) * self.page_size - sum(filled.values())) * per_token,
                           contiguous_bytes=n_seq * max_len * per_token,
                           contiguous_wasted_bytes=(n_seq * max_len - tokens) * per_token)
