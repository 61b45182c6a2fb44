"""What the decoder's heads do, measured, and the mechanism changed: attention sinks and previous-token
heads (:func:`head_stats`), induction heads (:func:`induction`), the logit lens (:func:`logit_lens`) and
the loss of a text with heads or blocks off or a KV window (:func:`text_loss`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F

from core.mechanism.norms import rms_norm
from core.models.decoder_forward import PLAIN, Mechanism, forward
from core.models.decoder_load import LlamaConfig, LlamaWeights
from core.models.decoder_traces import MAX_TRACE_TOKENS, DecoderTrace

INDUCTION_LENGTH = 32  # the random tokens written twice by induction(): 2 × 32 tokens in all


class _SmolLM2(Protocol):
    """What these measurements use of a ``core.models.decoder.SmolLM2`` (named, not imported: core.models.decoder
    imports this module)."""

    config: LlamaConfig

    def weights_on(self, device: str | torch.device) -> LlamaWeights: ...

    def _ids(self, text: str, max_tokens: int) -> list[int]: ...


@dataclass(frozen=True, eq=False)
class DecoderHeads:
    """Each head's mean share of attention on two kinds of key, ``(L, H)`` tensors, over queries i = 1 … n−1
    (query 0 can only attend to itself, so it is left out of both):

    sink:      α[i, 0]      the first token (an *attention sink*: a place to put weight that changes nothing)
    previous:  α[i, i−1]    the token just before
    """

    sink: torch.Tensor
    previous: torch.Tensor
    rows: int


def head_stats(attentions: torch.Tensor) -> DecoderHeads:
    """:class:`DecoderHeads` of causal attentions (L, H, n, n); ValueError for fewer than two tokens."""
    A = attentions
    if A.dim() != 4 or A.shape[-1] != A.shape[-2]:
        raise ValueError(f"attentions must be (L, H, n, n), got {tuple(A.shape)}")
    n = A.shape[-1]
    if n < 2:
        raise ValueError("measuring heads needs at least two tokens")
    sink = A[..., 1:, 0].mean(-1)  # (L, H, n−1) → (L, H)
    previous = A.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)  # α[i, i−1] for i = 1 … n−1 → (L, H)
    return DecoderHeads(sink=sink, previous=previous, rows=n - 1)


@dataclass(frozen=True, eq=False)
class Induction:
    """Induction heads on T random tokens r₀ … r_{T−1} written twice (positions 0 … 2T−1).

    The query at T + j (r_j, second time) attends to key j + 1 (what followed r_j the first time):
    score = mean over j = 0 … T−2 of α[T + j, j + 1], per head (L, H). ``token_ids`` (2T,), ``loss``:
    the mean next-token loss on the first copy and on the second (an induction head makes the second
    copy easy: the model copies).
    """

    token_ids: torch.Tensor
    scores: torch.Tensor
    loss_first: float
    loss_second: float


def _induction(model: _SmolLM2, length: int, seed: int, device) -> Induction:
    if isinstance(length, bool) or not isinstance(length, int) or not 4 <= length <= MAX_TRACE_TOKENS // 2:
        raise ValueError(f"length must be an integer from 4 to {MAX_TRACE_TOKENS // 2}, got {length!r}")
    g = torch.Generator().manual_seed(int(seed))
    pool = torch.arange(1000, 20000)  # ordinary tokens: no specials, no single bytes
    r = pool[torch.randperm(pool.numel(), generator=g)[:length]]  # (T,) distinct
    ids = torch.cat([r, r])  # (2T,)
    P = model.weights_on(device)
    with torch.no_grad():
        out = forward(ids.to(P.E.device), P, model.config, keep_qkv=False)
    T = length
    j = torch.arange(T - 1)
    scores = out.attentions[:, :, T + j, j + 1].mean(-1)  # (L, H)
    nll = F.cross_entropy(out.logits[:-1].float(), ids[1:].to(out.logits.device), reduction="none")  # (2T−1,)
    return Induction(token_ids=ids, scores=scores, loss_first=float(nll[:T - 1].mean()), loss_second=float(nll[T:].mean()))


@dataclass(frozen=True, eq=False)
class LogitLens:
    """The next-token guess read from every layer's hidden state at one position (the *logit lens*).

    For l = 0 … L: p_l = softmax(RMSNorm(X^l[pos]) ⊙ g_final · Eᵀ); l = L is the model's own answer.
    top_ids, top_probs (L + 1, k); final_prob (L + 1,): each layer's probability of the model's final
    top token; final_id: that token.
    """

    position: int
    top_ids: torch.Tensor
    top_probs: torch.Tensor
    final_id: int
    final_prob: torch.Tensor


def logit_lens(model: _SmolLM2, trace: DecoderTrace, position: int = -1, k: int = 5) -> LogitLens:
    """:class:`LogitLens` of ``trace`` at ``position`` (default: the last token)."""
    n = trace.n_tokens
    if not -n <= position < n:
        raise ValueError(f"position must be in −{n} … {n - 1}, got {position}")
    P = model.weights_on(trace.hidden.device)
    h = trace.hidden[:, position]  # (L + 1, d)
    probs = torch.softmax(rms_norm(h, P.g_final, model.config.eps) @ P.E.T, dim=-1)  # (L + 1, vocab)
    top = torch.topk(probs, k, dim=-1)
    final = int(probs[-1].argmax())
    return LogitLens(position=position % n, top_ids=top.indices, top_probs=top.values, final_id=final,
                     final_prob=probs[:, final])


@dataclass(frozen=True, eq=False)
class TextLoss:
    """Mean next-token loss (nats) over a text, and per position (n − 1,), under one mechanism."""

    mech: Mechanism
    loss: float
    per_token: torch.Tensor

    @property
    def perplexity(self) -> float:
        return math.exp(self.loss)


def text_loss(model: _SmolLM2, text: str, mech: Mechanism = PLAIN, max_tokens: int = MAX_TRACE_TOKENS,
              device="cpu") -> TextLoss:
    """−mean log p(token_{i+1} | tokens ≤ i) over ``text`` with ``mech`` (e.g. a KV window, with or without sinks).

    A window w keeps, for every query, only the last w keys (and the first ``sinks``): the mask of a
    KV cache capped at w that evicts the oldest entries — the StreamingLLM experiment.
    """
    ids = model._ids(text, max_tokens)
    if len(ids) < 2:
        raise ValueError("a loss needs at least two tokens")
    P = model.weights_on(device)
    ids_t = torch.tensor(ids, device=P.E.device)
    with torch.no_grad():
        out = forward(ids_t, P, model.config, mech=mech, keep_qkv=False)
    nll = F.cross_entropy(out.logits[:-1].float(), ids_t[1:], reduction="none")  # (n − 1,)
    return TextLoss(mech=mech, loss=float(nll.mean()), per_token=nll)


def induction(model: _SmolLM2, length: int = INDUCTION_LENGTH, seed: int = 0, device="cpu") -> Induction:
    """:class:`Induction` scores of every head on ``length`` random tokens written twice."""
    return _induction(model, length, seed, device)
