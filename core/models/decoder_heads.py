"""What the decoder's heads do, measured, and the mechanism changed: attention sinks and previous-token
heads (:func:`head_stats`), induction heads (:func:`induction`), the logit lens (:func:`logit_lens`) and
the loss of a text with heads or blocks off or a KV window (:func:`text_loss`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F

from core.models.decoder_forward import PLAIN, Mechanism, forward, linear, norm
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
    copy easy: the model copies). A model whose texts begin with BOS (Gemma) reads BOS first: ``token_ids``
    (1 + 2T,), every position above one further on.
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
    o = int(model.config.add_bos)  # a model whose texts start with BOS (Gemma) reads BOS first: the copies shift by o
    ids = torch.cat([torch.tensor([model.config.bos_id] * o, dtype=r.dtype), r, r])  # (o + 2T,)
    P = model.weights_on(device)
    with torch.no_grad():
        out = forward(ids.to(P.device), P, model.config, keep_qkv=False)
    T = length
    j = torch.arange(T - 1)
    scores = out.attentions[:, :, o + T + j, o + j + 1].mean(-1)  # (L, H)
    nll = F.cross_entropy(out.logits[o:-1].float(), ids[o + 1:].to(out.logits.device), reduction="none")  # (2T−1,)
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
    probs = torch.softmax(P.logits(norm(h, P.g_final, model.config)), dim=-1)  # (L + 1, vocab); Gemma's ⊙ (1 + g)
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
    ids_t = torch.tensor(ids, device=P.device)
    with torch.no_grad():
        out = forward(ids_t, P, model.config, mech=mech, keep_qkv=False)
    nll = F.cross_entropy(out.logits[:-1].float(), ids_t[1:], reduction="none")  # (n − 1,)
    return TextLoss(mech=mech, loss=float(nll.mean()), per_token=nll)


def induction(model: _SmolLM2, length: int = INDUCTION_LENGTH, seed: int = 0, device="cpu") -> Induction:
    """:class:`Induction` scores of every head on ``length`` random tokens written twice."""
    return _induction(model, length, seed, device)


@dataclass(frozen=True, eq=False)
class QKNorm:
    """QK-norm seen in one head (Gemma 3): block ``layer``'s query head ``head`` and the K/V head it reads, before
    RoPE — q = H W_q and k = H W_k of that head (H = the block's normed input), then RMSNorm(q) ⊙ w_q and
    RMSNorm(k) ⊙ w_k. q, q_normed, k, k_normed (n, d_head); w_q, w_k (d_head,): the gains as multiplied (1 + g)."""

    layer: int
    head: int
    q: torch.Tensor
    q_normed: torch.Tensor
    k: torch.Tensor
    k_normed: torch.Tensor
    w_q: torch.Tensor
    w_k: torch.Tensor


def qk_norm(model: _SmolLM2, trace: DecoderTrace, layer: int, head: int) -> QKNorm:
    """:class:`QKNorm` of ``trace`` (a model with QK-norm) in block ``layer``, query head ``head``. RoPE turns
    q_normed into ``trace.q[layer, head]`` and k_normed into ``trace.k[layer, kv_head_of[head]]``."""
    c = model.config
    if not c.qk_norm:
        raise ValueError(f"this model ({c.family}) has no QK-norm")
    if not (0 <= layer < c.n_layers and 0 <= head < c.n_heads):
        raise ValueError(f"block {layer}, head {head}: the model has {c.n_layers} blocks of {c.n_heads} heads")
    blk = model.weights_on(trace.hidden.device).layers[layer]
    n, g = trace.n_tokens, c.kv_head_of[head]
    h = norm(trace.hidden[layer], blk.g_attn, c)  # (n, d): the block's input, normed
    with torch.no_grad():
        q = linear(h, blk.W_q).view(n, c.n_heads, c.d_head)[:, head]  # (n, d_head)
        k = linear(h, blk.W_k).view(n, c.n_kv_heads, c.d_head)[:, g]  # (n, d_head)
        return QKNorm(layer=layer, head=head, q=q, q_normed=norm(q, blk.g_q, c), k=k, k_normed=norm(k, blk.g_k, c),
                      w_q=1 + blk.g_q if c.norm_plus_one else blk.g_q, w_k=1 + blk.g_k if c.norm_plus_one else blk.g_k)


@dataclass(frozen=True, eq=False)
class LocalGlobal:
    """A per-head measure (L, H) averaged over a model's local blocks (a sliding window) and over its global ones
    (Gemma 3: 5 local to 1 global). ``local``, ``global_``: the block indices; ``local_mean``, ``global_mean``: the
    mean over those blocks' heads (None where the model has no such block)."""

    local: tuple[int, ...]
    global_: tuple[int, ...]
    local_mean: float | None
    global_mean: float | None


def local_global(values: torch.Tensor, config) -> LocalGlobal:
    """:class:`LocalGlobal` of ``values`` (L, H), e.g. :func:`head_stats`'s sink shares, by ``config.window_of``."""
    L = values.shape[0]
    local = tuple(l for l in range(L) if config.window_of(l) is not None)
    glob = tuple(l for l in range(L) if config.window_of(l) is None)
    mean = lambda rows: float(values[list(rows)].float().mean()) if rows else None  # noqa: E731
    return LocalGlobal(local=local, global_=glob, local_mean=mean(local), global_mean=mean(glob))
