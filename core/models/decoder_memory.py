"""A decoder's weights in one anonymous memory file (part of ``core.models.decoder``): the server's decoding processes
map the same pages instead of each holding a copy (``Decoder.share`` / ``Decoder.from_shared``). Values are copied bit
for bit: a mapped model computes exactly what the loaded one does.
"""

from __future__ import annotations

import math
import os

import torch

from core.models.decoder_load import LlamaLayer, LlamaWeights
from core.models.gguf_file import Q8Rows
from core.models.plumbing import give_back_memory

Layout = tuple[tuple[int, tuple[int, ...], str, str], ...]  # each weight tensor's (byte offset, shape, dtype, name)
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "int8": torch.int8}  # int8: an embedding's Q8_0 blocks
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}
_ALIGN = 64  # bytes: every tensor starts on a cache line


def share_weights(weights: LlamaWeights) -> tuple[int, Layout, LlamaWeights]:
    """Move ``weights`` (CPU, contiguous: float32 or float16; an embedding's Q8_0 blocks int8 and float16) into one
    anonymous memory file (Linux ``memfd``) → (its file descriptor, the layout of ``weights.tensors()`` in it, the
    weights as views of the file). A process given the descriptor maps the same pages (:func:`shared_weights`) instead
    of holding a copy.

    ``weights`` is emptied as it is copied (each tensor ``set_()`` to nothing, the freed heap given back every
    64 MB), so the process never holds both copies: nothing may use it afterwards."""
    named, layout, size = weights.named(), [], 0
    tensors = [t for _, t in named]
    if any(t.dtype not in _DTYPE_NAMES or not t.is_contiguous() or t.device.type != "cpu" for t in tensors):
        raise ValueError("only contiguous float32 or float16 weights (and int8 blocks) on the CPU are shared")
    for name, t in named:
        layout.append((size, tuple(t.shape), _DTYPE_NAMES[t.dtype], name))
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
    offset, shape, dtype, _ = layout[-1]
    flat = torch.from_file(f"/proc/self/fd/{fd}", shared=True, size=offset + math.prod(shape) * _DTYPES[dtype].itemsize,
                           dtype=torch.uint8)
    return _from_flat(flat, layout)


def _views(flat: torch.Tensor, layout: Layout) -> list[torch.Tensor]:
    """Each tensor of ``layout`` as a view of the file's bytes ``flat`` (uint8)."""
    return [flat[o: o + math.prod(sh) * _DTYPES[dt].itemsize].view(_DTYPES[dt]).view(sh) for o, sh, dt, _ in layout]


def _from_flat(flat: torch.Tensor, layout: Layout) -> LlamaWeights:
    views = {name: t for (*_, name), t in zip(layout, _views(flat, layout), strict=True)}
    blocks: dict[int, dict[str, torch.Tensor]] = {}
    for name, t in views.items():
        if "." in name and not name.startswith("E."):
            i, field = name.split(".")
            blocks.setdefault(int(i), {})[field] = t
    E = views["E"] if "E" in views else Q8Rows(q=views["E.q"], scale=views["E.scale"])
    return LlamaWeights(E=E, g_final=views["g_final"], layers=tuple(LlamaLayer(**blocks[i]) for i in sorted(blocks)))
