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
    Q5_0  (6)  22 bytes a block: d (f16), qh (u32: bit i is weight i's fifth bit), 16 bytes of low nibbles
               (as Q4_1);   w = d · (q − 16),  q = low | high << 4 ∈ {0 … 31}
    Q8_0  (8)  34 bytes a block: d (f16), 32 × int8 q;   w = d · q

and the "K" super-blocks of 256 weights (8 sub-blocks of 32, or 16 of 16)::

    Q4_K (12)  144 bytes: d (f16), dmin (f16), 12 bytes of 6-bit scales sc_j and mins m_j (j = 0 … 7: bytes 0–3 and
               4–7 hold the low 6 bits of sc_0…3 and m_0…3; bytes 8–11 the low/high nibbles of sc_4…7 / m_4…7, whose
               top 2 bits are the top bits of bytes 0–3 / 4–7), 128 bytes of 4-bit q (32 bytes per two sub-blocks:
               low nibbles sub-block 2i, high nibbles 2i + 1);   w = (d · sc_j) · q − dmin · m_j
    Q6_K (14)  210 bytes: 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales s_j (sub-blocks of 16), d (f16)
               at the end;   w = (d · s_j) · (q − 32),  q ∈ {0 … 63}

Each is computed in the order of ``gguf.quants`` (the same float32 products and differences), so the values are the
same bits (tests/core/test_gemma3.py checks every tensor of the Gemma 3 file).

The ``gguf`` package (``gguf.GGUFReader``, ``gguf.quants.dequantize``) reads the same files; it is the
tests' reference. This reader exists because ``GGUFReader`` is too slow on this file for the app's
cold start (it builds a numpy view for every part of every one of the ~150,000 vocabulary strings);
this one reads the strings with ``struct``. Both timed in BENCHMARKS.md (SmolLM2-135M).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_NUMPY = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "?", 10: "<u8", 11: "<i8", 12: "<f8"}
STRING, ARRAY = 8, 9
F32, F16, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K = 0, 1, 3, 6, 8, 12, 14
TYPE_NAMES = {F32: "F32", F16: "F16", Q4_1: "Q4_1", Q5_0: "Q5_0", Q8_0: "Q8_0", Q4_K: "Q4_K", Q6_K: "Q6_K"}
_HEAD_BYTES = 32 * 2**20  # read at most this much for the metadata (Gemma 3's 262,144 tokens and scores: ~8 MB)
BLOCK = 32  # weights per quantised block (Q4_1, Q5_0, Q8_0)
SUPER_BLOCK = 256  # weights per K super-block (Q4_K, Q6_K)
_CHUNK_WEIGHTS = 1 << 21  # weights dequantised at once (~16 MB of float temporaries)
_BLOCK_BYTES = {Q4_1: 20, Q5_0: 22, Q8_0: 34, Q4_K: 144, Q6_K: 210}
BLOCK_WEIGHTS = {Q4_1: BLOCK, Q5_0: BLOCK, Q8_0: BLOCK, Q4_K: SUPER_BLOCK, Q6_K: SUPER_BLOCK}


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
        if ttype not in _BLOCK_BYTES or shape[-1] % BLOCK_WEIGHTS[ttype]:
            raise ValueError(f"tensor '{name}' has type {ttype} (shape {shape}), which this reader cannot dequantise")
        bb, bw = _BLOCK_BYTES[ttype], BLOCK_WEIGHTS[ttype]
        raw = self._read(offset, count // bw * bb)  # (n_blocks · block bytes,) uint8
        if transposed:
            rows, length = shape
            out_t = torch.empty(length, rows, dtype=torch.float32)  # (row length, rows)
            per_row = length // bw
            step = max(1, _CHUNK_WEIGHTS // length)  # whole rows at a time
            for r in range(0, rows, step):
                r1 = min(rows, r + step)
                out_t[:, r:r1] = dequantize(raw[r * per_row * bb:r1 * per_row * bb], ttype).view(r1 - r, length).T
            return out_t
        out = torch.empty(count, dtype=torch.float32)
        step = _CHUNK_WEIGHTS // bw  # blocks a chunk: the float temporaries stay small (the peak memory of a load)
        for b in range(0, count // bw, step):
            out[b * bw:(b + step) * bw] = dequantize(raw[b * bb:(b + step) * bb], ttype)
        return out.reshape(shape)

    def q8_rows(self, name: str) -> Q8Rows:
        """Matrix ``name`` (Q8_0) kept in its blocks: :class:`Q8Rows`, whose values are :meth:`tensor`'s bit for bit.
        Read a chunk of rows at a time (the raw blocks never all in memory beside the result)."""
        if name not in self.tensors:
            raise ValueError(f"the GGUF file has no tensor '{name}'")
        ttype, shape, offset = self.tensors[name]
        if ttype != Q8_0 or len(shape) != 2 or shape[1] % BLOCK:
            raise ValueError(f"tensor '{name}' (type {TYPE_NAMES.get(ttype, ttype)}, shape {shape}) is not a Q8_0 matrix")
        rows, length = shape
        per_row = length // BLOCK * _BLOCK_BYTES[Q8_0]
        q = torch.empty(rows, length, dtype=torch.int8)
        scale = torch.empty(rows, length // BLOCK, dtype=torch.float16)
        step = max(1, _CHUNK_WEIGHTS // length)
        for r in range(0, rows, step):
            r1 = min(rows, r + step)
            blocks = self._read(offset + r * per_row, (r1 - r) * per_row).view(r1 - r, length // BLOCK, -1)
            scale[r:r1] = blocks[..., 0:2].contiguous().view(torch.float16)[..., 0]
            q[r:r1] = blocks[..., 2:].contiguous().view(torch.int8).view(r1 - r, length)
        return Q8Rows(q=q, scale=scale)

    def raw(self, name: str) -> tuple[torch.Tensor, int]:
        """Tensor ``name`` as the file stores it → (its bytes, uint8; its type): quantised blocks that
        :func:`dequantize` turns into float32 (what a benchmark times), float32/float16 values as their bytes."""
        if name not in self.tensors:
            raise ValueError(f"the GGUF file has no tensor '{name}'")
        ttype, shape, offset = self.tensors[name]
        count = int(np.prod(shape))
        if ttype in (F32, F16):
            return self._read(offset, (4 if ttype == F32 else 2) * count), ttype
        if ttype not in _BLOCK_BYTES:
            raise ValueError(f"tensor '{name}' has type {ttype}, which this reader cannot read")
        return self._read(offset, count // BLOCK_WEIGHTS[ttype] * _BLOCK_BYTES[ttype]), ttype

    def _read(self, offset: int, nbytes: int) -> torch.Tensor:
        """nbytes of tensor data at ``offset`` as a uint8 tensor (read, not mapped: no file pages stay resident)."""
        buf = torch.empty(nbytes, dtype=torch.uint8)
        with open(self.path, "rb") as f:
            f.seek(self.data_start + offset)
            if f.readinto(buf.numpy()) != nbytes:
                raise ValueError(f"{self.path} ends inside a tensor: the file is truncated")
        return buf


def _f16(b: torch.Tensor) -> torch.Tensor:
    """Two bytes a row (n, 2) uint8 → their float16 as float32 (n, 1)."""
    return b.contiguous().view(torch.float16).float()


def dequantize(raw: torch.Tensor, ttype: int) -> torch.Tensor:
    """Quantised blocks (uint8, n_blocks · block bytes) → float32 weights (n_blocks · block weights,), per the module
    docstring; the same bits as ``gguf.quants.dequantize``."""
    blocks = raw.view(-1, _BLOCK_BYTES[ttype])  # (n, block bytes)
    n = blocks.shape[0]
    if ttype == Q4_K:
        return _q4_k(blocks)
    if ttype == Q6_K:
        ql, qh = blocks[:, :128].view(n, 2, 64), blocks[:, 128:192].view(n, 2, 32)
        s = blocks[:, 192:208].contiguous().view(torch.int8).float()  # (n, 16): one scale per 16 weights
        dd = (_f16(blocks[:, 208:210]) * s).view(n, 16, 1)  # (n, 16, 1)
        low = torch.stack([ql & 0x0F, ql >> 4], dim=2).view(n, 8, 32)  # (n, 2, 2, 64) → (n, 8, 32)
        high = torch.stack([(qh >> k) & 0x03 for k in (0, 2, 4, 6)], dim=2).view(n, 8, 32)  # (n, 2, 4, 32) → (n, 8, 32)
        q = ((low | (high << 4)).to(torch.int8) - 32).view(n, 16, 16).float()  # (n, 16, 16), q − 32 ∈ −32 … 31
        return (dd * q).reshape(-1)
    d = _f16(blocks[:, 0:2])  # (n, 1): the block's scale
    if ttype == Q8_0:
        q = blocks[:, 2:].contiguous().view(torch.int8).float()  # (n, 32)
        return (d * q).reshape(-1)
    if ttype == Q5_0:
        qh = blocks[:, 2:6].contiguous().view(torch.int32)  # (n, 1): bit i is weight i's fifth bit
        high = ((qh >> torch.arange(32, dtype=torch.int32)) & 1).to(torch.uint8)  # (n, 32)
        qs = blocks[:, 6:]  # (n, 16)
        q = (torch.cat([qs & 0x0F, qs >> 4], dim=1) | (high << 4)).to(torch.int8) - 16  # (n, 32): q − 16 ∈ −16 … 15
        return (d * q.float()).reshape(-1)
    m = _f16(blocks[:, 2:4])  # (n, 1): the block's minimum
    qs = blocks[:, 4:]  # (n, 16): two 4-bit values a byte
    q = torch.cat([qs & 0x0F, qs >> 4], dim=1).float()  # (n, 32): low nibbles first
    return (d * q + m).reshape(-1)


def _q4_k(blocks: torch.Tensor) -> torch.Tensor:
    """Q4_K super-blocks (n, 144) → (n · 256,): the scales' 6-bit unpacking, then (d · sc_j) · q − dmin · m_j."""
    n = blocks.shape[0]
    d, dmin = _f16(blocks[:, 0:2]), _f16(blocks[:, 2:4])  # (n, 1) each
    a, b, c = blocks[:, 4:8], blocks[:, 8:12], blocks[:, 12:16]  # (n, 4) each: the 12 scale bytes
    sc = torch.cat([a & 0x3F, (c & 0x0F) | ((a >> 2) & 0x30)], dim=1).float()  # (n, 8)
    mn = torch.cat([b & 0x3F, (c >> 4) | ((b >> 2) & 0x30)], dim=1).float()  # (n, 8)
    qs = blocks[:, 16:].view(n, 4, 32)  # (n, 4, 32): low nibbles sub-block 2i, high 2i + 1
    q = torch.stack([qs & 0x0F, qs >> 4], dim=2).view(n, 8, 32).float()  # (n, 8, 32)
    return ((d * sc).view(n, 8, 1) * q - (dmin * mn).view(n, 8, 1)).reshape(-1)


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


HEAD_CHUNK_ROWS = 2048  # rows of a Q8_0 matrix dequantised at once for a product (Q8Rows.head; BENCHMARKS.md)


@dataclass(frozen=True, eq=False)
class Q8Rows:
    """A matrix (rows, d) kept in the file's Q8_0 blocks: q (rows, d) int8 and one float16 scale per block of 32,
    scale (rows, d/32); the value of entry (r, i) is scale[r, i // 32] · q[r, i]. That product is exact in float32
    (an 11-bit times a 7-bit significand), so every row it gives is :meth:`GGUFFile.tensor`'s float32 row bit for bit,
    in a quarter of the memory (Gemma 3's 262,144 × 640 embedding: 178 MB instead of 671 MB).

    Two uses, as a decoder's token embedding and its tied output head: :meth:`rows` (a lookup, E[ids]) and
    :meth:`head` (h Eᵀ, dequantised a chunk of rows at a time into one float32 buffer). ``E[ids]`` and ``h @ E.T``
    also work, as on the float32 tensor (a hand-written reference reads the same either way).
    """

    q: torch.Tensor
    scale: torch.Tensor

    @property
    def shape(self) -> torch.Size:
        return self.q.shape

    @property
    def device(self) -> torch.device:
        return self.q.device

    @property
    def dtype(self) -> torch.dtype:
        """The values' dtype: float32 (what :meth:`rows` and :meth:`head` compute in)."""
        return torch.float32

    @property
    def nbytes(self) -> int:
        return self.q.numel() * self.q.element_size() + self.scale.numel() * self.scale.element_size()

    def to(self, device) -> Q8Rows:
        return Q8Rows(q=self.q.to(device), scale=self.scale.to(device))

    def _widen(self, q: torch.Tensor, scale: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Blocks q (..., d) int8, scale (..., d/32) → float32 (..., d), exactly: into ``out`` when given."""
        out = q.to(torch.float32) if out is None else out.copy_(q)
        out.view(*q.shape[:-1], -1, BLOCK).mul_(scale.to(torch.float32).unsqueeze(-1))
        return out

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """The rows ``ids`` (...,) as float32 (..., d): the file's values, exactly."""
        return self._widen(self.q[ids], self.scale[ids])

    def dequantised(self) -> torch.Tensor:
        """The whole matrix as float32 (rows, d), as :meth:`GGUFFile.tensor` reads it (the tests' and benchmarks' reference)."""
        return self.rows(torch.arange(self.shape[0], device=self.device))

    def head(self, h: torch.Tensor, chunk: int = HEAD_CHUNK_ROWS) -> torch.Tensor:
        """h (..., d) float32 → h Eᵀ (..., rows): ``chunk`` rows dequantised at a time into one float32 buffer, then
        multiplied. Each entry is the dot product of h with the exact float32 row, summed by the BLAS as for the
        float32 matrix (the same numbers, at most a float32 summation order apart)."""
        flat = h.reshape(-1, h.shape[-1])  # (n, d)
        V = self.shape[0]
        out = torch.empty(flat.shape[0], V, dtype=flat.dtype, device=flat.device)  # (n, rows)
        buf = torch.empty(min(chunk, V), self.shape[1], dtype=torch.float32, device=self.device)  # (chunk, d)
        for r0 in range(0, V, chunk):
            r1 = min(V, r0 + chunk)
            w = self._widen(self.q[r0:r1], self.scale[r0:r1], buf[:r1 - r0])  # (r, d)
            out[:, r0:r1] = flat @ w.T
        return out.view(*h.shape[:-1], V)

    def __getitem__(self, ids) -> torch.Tensor:
        return self.rows(torch.as_tensor(ids, device=self.device))

    @property
    def T(self) -> _Transposed:
        return _Transposed(self)


@dataclass(frozen=True, eq=False)
class _Transposed:
    """Eᵀ of a :class:`Q8Rows` E, for ``h @ E.T`` (its :meth:`Q8Rows.head`)."""

    rows: Q8Rows

    @property
    def shape(self) -> torch.Size:
        return torch.Size(reversed(self.rows.shape))

    def __rmatmul__(self, h: torch.Tensor) -> torch.Tensor:
        return self.rows.head(h)
