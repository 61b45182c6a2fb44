"""What the decoder returns: a trace of one pass, one generated step, a generation, a next-token
distribution (``core.models.decoder.Decoder`` builds them), the limits of a trace and of a generation, and the
distribution a token is drawn from (:func:`next_token_probs`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

MAX_TRACE_TOKENS = 512  # the longest text trace() accepts (the model was trained on up to 8192)
MAX_NEW_TOKENS = 64  # the most tokens one generate() call writes
TOP = 10  # how many of the most likely next tokens a step reports


@dataclass(frozen=True, eq=False)
class DecoderTrace:
    """One forward pass of the whole text, n tokens, L = 30 blocks, H = 9 query heads, G = 3 K/V heads.

    text:        the input text
    tokens:      the n tokens as readable strings (spaces as ␣, newlines as ↵, a piece that is not
                 whole UTF-8 as its bytes: ``<EB 82>``)
    token_ids:   their vocabulary ids                               (n,) long
    is_bytes:    True for a token that is only part of a character (Korean, emoji: byte-level BPE)
    attentions:  softmax weights, query rows, key columns           (L, H, n, n), causal, rows sum to 1
    logits:      the next-token logits at every position            (n, vocab)
    hidden:      the embeddings, then every block's output          (L + 1, n, d_model)
    q:           every query head's queries after RoPE              (L, H, n, d_head)
    k, v:        every K/V head's keys (after RoPE) and values       (L, G, n, d_head)
    kv_head_of:  query head h reads K/V head kv_head_of[h]           (H,)
    """

    text: str
    tokens: list[str]
    token_ids: torch.Tensor
    is_bytes: list[bool]
    attentions: torch.Tensor
    logits: torch.Tensor
    hidden: torch.Tensor
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    kv_head_of: tuple[int, ...]

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def head_qkv(self, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Query head ``head`` of block ``layer``: its q (n, d_head) and the k, v (n, d_head) of its K/V head.

        ``core.attention(q, k, v, mask=masks.causal(n)).weights`` reproduces ``attentions[layer, head]``.
        """
        g = self.kv_head_of[head]
        return self.q[layer, head], self.k[layer, g], self.v[layer, g]


@dataclass(frozen=True, eq=False)
class Step:
    """One generated token.

    token_id, token:  the token chosen (id, readable string as in :class:`DecoderTrace`)
    top_ids:          the ten most likely next tokens under the model (temperature 1)     (10,) long
    top_tokens:       their readable strings
    top_probs:        their probabilities under the model                                  (10,)
    sampled_probs:    their probabilities after temperature, top-k, top-p                  (10,)
    chosen_prob:      the chosen token's probability under the model
    attention:        every head's attention row of the position that predicted it: the
                      last token of the context it saw, over that context's c tokens       (L, H, c)
    cache_positions:  tokens held in the KV cache after this token is fed back (c + 1)
    cache_bytes:      that cache's size in bytes (float32 K and V, G = 3 heads per block)
    """

    token_id: int
    token: str
    top_ids: torch.Tensor
    top_tokens: list[str]
    top_probs: torch.Tensor
    sampled_probs: torch.Tensor
    chosen_prob: float
    attention: torch.Tensor
    cache_positions: int
    cache_bytes: int


@dataclass(frozen=True, eq=False)
class Generation:
    """``prompt`` → the ``steps``; ``text`` is the prompt followed by the generated tokens, decoded.

    stopped: "length" (max_new_tokens reached) or "eos" (the model wrote an end token, not kept).
    """

    prompt: str
    prompt_tokens: list[str]
    steps: tuple[Step, ...]
    text: str
    stopped: str

    @property
    def token_ids(self) -> list[int]:
        return [s.token_id for s in self.steps]


@dataclass(frozen=True, eq=False)
class NextToken:
    """The model's next-token distribution after a text (optionally with a changed mechanism).

    probs: (vocab,) at temperature 1; top_ids, top_probs (10,), top_tokens: the ten most likely.
    """

    probs: torch.Tensor
    top_ids: torch.Tensor
    top_probs: torch.Tensor
    top_tokens: list[str]


# ----------------------------------------------------------------------------- sampling


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None,
                     top_p: float | None = None) -> torch.Tensor:
    """The distribution the next token is drawn from, (vocab,) from logits (vocab,).

    temperature T > 0: softmax(logits / T); T = 0: all mass on the argmax (greedy). Then top-k keeps
    the k most likely tokens and top-p the fewest most likely ones whose probability reaches p (the
    token that crosses p included); the kept ones are renormalised. (Hugging Face's order.)
    """
    T = float(temperature)
    if not (math.isfinite(T) and T >= 0):
        raise ValueError(f"temperature must be a finite number ≥ 0, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if top_p is not None and not (0.0 < float(top_p) <= 1.0):
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    logits = logits.float()
    if T == 0:
        return F.one_hot(logits.argmax(), logits.shape[-1]).to(logits.dtype)
    probs = torch.softmax(logits / T, dim=-1)  # (vocab,)
    keep = torch.ones_like(probs, dtype=torch.bool)
    if top_k is not None and top_k < probs.shape[-1]:
        keep &= _first_k(probs, top_k)
    if top_p is not None and float(top_p) < 1.0:
        sorted_p, order = torch.sort(probs.masked_fill(~keep, 0.0), descending=True)
        before = torch.cumsum(sorted_p, dim=-1) - sorted_p  # mass of the tokens ranked above each one
        keep_sorted = before < float(top_p) * sorted_p.sum()
        keep &= torch.zeros_like(keep).scatter(0, order, keep_sorted)
    probs = probs.masked_fill(~keep, 0.0)
    return probs / probs.sum()


def _first_k(probs: torch.Tensor, k: int) -> torch.Tensor:
    """Exactly the k highest entries (ties broken by torch.topk), as a boolean mask."""
    return torch.zeros_like(probs, dtype=torch.bool).scatter(0, torch.topk(probs, k).indices, True)
