r"""A GGUF file read directly: its metadata fields and its tensors, dequantised to float32 with torch.

GGUF (llama.cpp's format, version 3), little-endian::

    "GGUF"  version u32  n_tensors u64  n_fields u64
    n_fields × (key: string, type u32, value)          string = u64 length + UTF-8 bytes; array = type u32, count u64, items
    n_tensors × (name: string, n_dims u32, dims u64 × n_dims (fastest first), type u32, offset u64)
    padding to ``general.alignment`` (32), then the tensor data (each tensor at data start + offset)

The tensor types this module dequantises (blocks of 32 weights along a row)::

    F32   (0)  plain float32
    F16   (1)  plain float16
    Q4_1  (3)  20 bytes a block: d (f16), m (f16), 16 bytes of 4-bit q (low nibbles: weights 0–15,
               high nibbles: 16–31);   w = d · q + m,  q ∈ {0 … 15}
    Q8_0  (8)  34 bytes a block: d (f16), 32 × int8 q;   w = d · q

The ``gguf`` package (``gguf.GGUFReader``, ``gguf.quants.dequantize``) reads the same files; it is the
tests' reference. This reader exists because ``GGUFReader`` is too slow on this file for the app's
cold start (it builds a numpy view for every part of every one of the ~150,000 vocabulary strings);
this one reads the strings with ``struct``. Both timed in BENCHMARKS.md (SmolLM2-135M).
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}
STRING, ARRAY = 8, 9
F32, F16, Q4_1, Q8_0 = 0, 1, 3, 8
TYPE_NAMES = {F32: "F32", F16: "F16", Q4_1: "Q4_1", Q8_0: "Q8_0"}
_HEAD_BYTES = 16 * 2**20  # read at most this much for the metadata
BLOCK = 32  # weights per quantised block
_CHUNK_BLOCKS = 1 << 16  # blocks dequantised at once (2 M weights: ~16 MB of float temporaries)
_BLOCK_BYTES = {Q4_1: 20, Q8_0: 34}


class GGUFFile:
    """The fields (``{key: value}``; arrays as lists, numeric arrays as numpy) and tensor table of a GGUF file.

    ``tensor(name)`` dequantises one tensor to a float32 torch tensor of numpy shape (dims reversed):
    a matrix stored with dims (in, out) comes back (out, in), as ``nn.Linear.weight``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as f:
            head = f.read(_HEAD_BYTES)  # the fields and the tensor table (a vocabulary of 49,152 needs ~2 MB)
        mv = memoryview(head)
        if bytes(mv[:4]) != b"GGUF":
            raise ValueError(f"{self.path} is not a GGUF file")
        self.version, n_tensors, n_fields = struct.unpack_from("<IQQ", mv, 4)
        if self.version < 2:
            raise ValueError(f"GGUF version {self.version} is not supported (2 or 3)")
        pos = 24
        self.fields: dict[str, object] = {}
        for _ in range(n_fields):
            key, pos = _string(mv, pos)
            (vtype,), pos = struct.unpack_from("<I", mv, pos), pos + 4
            self.fields[key], pos = _value(mv, pos, vtype)
        self.tensors: dict[str, tuple[int, tuple[int, ...], int]] = {}  # name → (type, numpy shape, offset)
        for _ in range(n_tensors):
            name, pos = _string(mv, pos)
            (n_dims,), pos = struct.unpack_from("<I", mv, pos), pos + 4
            dims = struct.unpack_from(f"<{n_dims}Q", mv, pos)
            pos += 8 * n_dims
            ttype, offset = struct.unpack_from("<IQ", mv, pos)
            pos += 12
            self.tensors[name] = (ttype, tuple(int(d) for d in reversed(dims)), int(offset))
        align = int(self.fields.get("general.alignment", 32))
        self.data_start = (pos + align - 1) // align * align

    def tensor(self, name: str, *, transposed: bool = False) -> torch.Tensor:
        """Tensor ``name`` as float32, shape = the file's dims reversed (rows, …, row length).

        ``transposed``: a matrix (rows, row length) returned as its transpose (row length, rows),
        contiguous, written chunk by chunk (no second full-size copy: the peak memory of a load).
        """
        if name not in self.tensors:
            raise ValueError(f"the GGUF file has no tensor '{name}'")
        ttype, shape, offset = self.tensors[name]
        count = int(np.prod(shape))
        if transposed and len(shape) != 2:
            raise ValueError(f"tensor '{name}' has shape {shape}: only a matrix can be read transposed")
        if ttype in (F32, F16):
            width = 4 if ttype == F32 else 2
            t = self._read(offset, width * count).view(torch.float32 if ttype == F32 else torch.float16).float()
            return t.reshape(shape).T.contiguous() if transposed else t.reshape(shape)
        if ttype not in _BLOCK_BYTES or shape[-1] % BLOCK:
            raise ValueError(f"tensor '{name}' has type {ttype} (shape {shape}), which this reader cannot dequantise")
        bb = _BLOCK_BYTES[ttype]
        raw = self._read(offset, count // BLOCK * bb)  # (n_blocks · block bytes,) uint8
        if transposed:
            rows, length = shape
            out_t = torch.empty(length, rows, dtype=torch.float32)  # (row length, rows)
            per_row = length // BLOCK
            step = max(1, _CHUNK_BLOCKS // per_row)  # whole rows at a time
            for r in range(0, rows, step):
                r1 = min(rows, r + step)
                out_t[:, r:r1] = dequantize(raw[r * per_row * bb:r1 * per_row * bb], ttype).view(r1 - r, length).T
            return out_t
        out = torch.empty(count, dtype=torch.float32)
        step = _CHUNK_BLOCKS  # a chunk at a time: the float temporaries stay small (the peak memory of a load)
        for b in range(0, count // BLOCK, step):
            out[b * BLOCK:(b + step) * BLOCK] = dequantize(raw[b * bb:(b + step) * bb], ttype)
        return out.reshape(shape)

    def _read(self, offset: int, nbytes: int) -> torch.Tensor:
        """nbytes of tensor data at ``offset`` as a uint8 tensor (read, not mapped: no file pages stay resident)."""
        buf = torch.empty(nbytes, dtype=torch.uint8)
        with open(self.path, "rb") as f:
            f.seek(self.data_start + offset)
            if f.readinto(buf.numpy()) != nbytes:
                raise ValueError(f"{self.path} ends inside a tensor: the file is truncated")
        return buf


def dequantize(raw: torch.Tensor, ttype: int) -> torch.Tensor:
    """Quantised blocks (uint8, n_blocks · block bytes) → float32 weights (n_blocks · 32,), per the module docstring."""
    blocks = raw.view(-1, _BLOCK_BYTES[ttype])  # (n_blocks, block bytes)
    d = blocks[:, 0:2].contiguous().view(torch.float16).float()  # (n_blocks, 1): the block's scale
    if ttype == Q8_0:
        q = blocks[:, 2:].contiguous().view(torch.int8).float()  # (n_blocks, 32)
        return (d * q).reshape(-1)
    m = blocks[:, 2:4].contiguous().view(torch.float16).float()  # (n_blocks, 1): the block's minimum
    qs = blocks[:, 4:]  # (n_blocks, 16): two 4-bit values a byte
    q = torch.cat([qs & 0x0F, qs >> 4], dim=1).float()  # (n_blocks, 32): low nibbles first
    return (d * q + m).reshape(-1)


def _string(mv: memoryview, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from("<Q", mv, pos)
    return bytes(mv[pos + 8:pos + 8 + n]).decode("utf-8"), pos + 8 + n


def _value(mv: memoryview, pos: int, vtype: int):
    if vtype == STRING:
        return _string(mv, pos)
    if vtype in _SCALARS:
        fmt = _SCALARS[vtype]
        return struct.unpack_from(fmt, mv, pos)[0], pos + struct.calcsize(fmt)
    if vtype != ARRAY:
        raise ValueError(f"unknown GGUF value type {vtype}")
    etype, count = struct.unpack_from("<IQ", mv, pos)
    pos += 12
    if etype in _NUMPY:
        arr = np.frombuffer(mv, dtype=_NUMPY[etype], count=count, offset=pos).copy()
        return arr, pos + arr.nbytes
    items = []
    for _ in range(count):
        item, pos = _value(mv, pos, etype)
        items.append(item)
    return items, pos
