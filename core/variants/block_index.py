r"""Choosing keys in blocks, and sharing the choice across layers (issue 55), row convention.

**Block indexer** (Qwen4-Exp's QSA, transformers' ``Qwen4ExpTextQSAIndexer``): the keys a query may see are cut into
blocks of c consecutive tokens; each closed block is scored by one pooled key, and the query keeps its best blocks::

    k̄_b = RoPE_{start of b}(RMSNorm(mean_{j ∈ b} x_j W_k) ⊙ w_k)            one key per block of c tokens
    q_t,h = RoPE_t(RMSNorm((x_t W_q)_h) ⊙ w_q)
    s_t,b = Σ_h ReLU(q_t,h · k̄_b) / √d                                        only the ⌊(t + 1)/c⌋ closed blocks
    keep: the top ⌊budget / c⌋ blocks' tokens, and the open block's tokens (the tail after the last closed block)

**Shared choice** (GLM-5's ``indexer_types``, ``GlmMoeDsaAttention``): a "shared" layer runs no indexer and attends
to the tokens the previous "full" layer chose (:func:`shared_choice`), so one indexer serves several layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensors, given, int_at_least, positive_number, shape_str
from core.mechanism.norms import rms_norm
from core.mechanism.positional import RopeTables
from core.variants.sparse import topk_mask


@dataclass(frozen=True, eq=False)
class BlockIndexTrace:
    """:func:`block_index`: block_keys (B, n_blocks, d) the pooled, normed, rotated key of each block of c tokens;
    scores (B, n, n_blocks) (−∞ for a block not yet closed); chosen_blocks (B, n, n_blocks); chosen (B, n, n) the
    tokens each query attends to (its chosen blocks' tokens and its open block's)."""

    block_keys: torch.Tensor
    scores: torch.Tensor
    chosen_blocks: torch.Tensor
    chosen: torch.Tensor
    block: int


def block_index(
    x: TensorLike,
    *,
    W_q: TensorLike,
    W_k: TensorLike,
    q_norm: TensorLike,
    k_norm: TensorLike,
    n_heads: int,
    block: int,
    budget: int,
    rope: RopeTables,
    norm_eps: float = 1e-6,
    device=None,
    dtype=None,
) -> BlockIndexTrace:
    """The block indexer of the module doc over x (B, n, d_model), causal. W_q (d_model, H_I·d), W_k (d_model, d) one
    key head; q_norm, k_norm (d,); block c ≥ 1; budget: tokens kept from closed blocks (⌊budget / c⌋ blocks);
    rope: tables (n, d/2) for positions 0 … n − 1."""
    H, c = int_at_least("n_heads", n_heads), int_at_least("the block size c", block)
    keep = int_at_least("budget", budget) // c
    if keep < 1:
        raise ValueError(f"a budget of {budget} tokens holds no block of {c}")
    t = as_tensors(given(x=x, W_q=W_q, W_k=W_k, q_norm=q_norm, k_norm=k_norm), device=device, dtype=dtype)
    X, eps = t["x"], positive_number("norm_eps", norm_eps)
    if X.dim() != 3 or X.shape[-2] == 0:
        raise ValueError(f"x must be (B, n, d_model) with n ≥ 1 but has shape {shape_str(X.shape)}")
    B, n = X.shape[:2]
    q = rms_norm((X @ t["W_q"]).view(B, n, H, -1), t["q_norm"], eps).transpose(1, 2)  # (B, H, n, d)
    q = rope.apply(q)  # (B, H, n, d): each query at its position
    nb = n // c
    raw = (X[:, :nb * c] @ t["W_k"]).view(B, nb, c, t["W_k"].shape[-1])  # (B, n_blocks, c, d)
    starts = torch.arange(nb, device=X.device) * c  # (n_blocks,): where each block begins
    pooled = rms_norm(raw.mean(dim=2), t["k_norm"], eps)  # (B, n_blocks, d)
    block_keys = RopeTables(rope.cos[..., starts, :], rope.sin[..., starts, :], rope.pairing).apply(pooled)
    scores = torch.relu(q @ block_keys.unsqueeze(1).transpose(-1, -2)).sum(1) / q.shape[-1] ** 0.5  # (B, n, n_blocks)
    closed = torch.arange(nb, device=X.device)[None, :] < ((torch.arange(n, device=X.device) + 1) // c)[:, None]
    scores = scores.masked_fill(~closed, float("-inf"))  # (B, n, n_blocks)
    chosen_blocks = topk_mask(scores, keep) if nb else torch.zeros_like(scores, dtype=torch.bool)
    pos = torch.arange(n, device=X.device)
    in_block = chosen_blocks.repeat_interleave(c, dim=-1)  # (B, n, n_blocks·c): a token of a chosen block
    in_block = torch.nn.functional.pad(in_block, (0, n - nb * c))  # (B, n, n)
    open_tail = (pos[None, :] >= ((pos + 1) // c * c)[:, None]) & (pos[None, :] <= pos[:, None])  # (n, n)
    return BlockIndexTrace(block_keys=block_keys, scores=scores, chosen_blocks=chosen_blocks,
                           chosen=in_block | open_tail, block=c)


@dataclass(frozen=True)
class SharedChoice:
    """Which layer's choice each layer attends with: source[l] = l for a "full" layer (its own indexer), the last
    full layer before it for a "shared" one."""

    indexer_types: tuple[str, ...]
    source: tuple[int, ...]

    @property
    def indexers(self) -> int:
        """How many layers run an indexer."""
        return sum(k == "full" for k in self.indexer_types)


def shared_choice(indexer_types) -> SharedChoice:
    """GLM-5's per-layer indexer modes: "full" runs its indexer, "shared" reuses the previous full layer's top-k."""
    types = tuple(indexer_types)
    if not types or any(k not in ("full", "shared") for k in types) or types[0] != "full":
        raise ValueError(f"indexer types are 'full' or 'shared', the first 'full' (a shared layer needs a choice to "
                         f"read), got {types}")
    source, last = [], 0
    for i, kind in enumerate(types):
        last = i if kind == "full" else last
        source.append(last)
    return SharedChoice(types, tuple(source))
