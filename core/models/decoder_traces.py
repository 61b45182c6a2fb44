"""What the decoder returns: a trace of one pass, one generated step, a generation, a next-token
distribution (``core.models.decoder.SmolLM2`` builds them), and the limits of a trace and of a generation."""

from __future__ import annotations

from dataclasses import dataclass

import torch

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
