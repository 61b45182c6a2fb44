r"""One Transformer encoder block around attention (C28–C31).

Post-norm (the original Transformer, C29):

    Z = LayerNorm(X + MHA(X)),      Y = LayerNorm(Z + FFN(Z))

Pre-norm (C30; source 004 prints it with a typo):

    Z = X + MHA(LayerNorm(X)),      Y = Z + FFN(LayerNorm(Z))

FFN(z) = W_2 φ(W_1 z + b_1) + b_2 with φ = ReLU or GELU, applied to every token on its own.
Row convention: X (n, d_model); weights act as x @ W.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from core.checks import TensorLike, as_tensors, shape_str
from core.mechanism.attention import attention
from core.mechanism.chunked import chunked_attention
from core.mechanism.multihead import multi_head_attention
from core.playground.tokens import projection

ACTIVATIONS = ("relu", "gelu")


def layer_norm(x: torch.Tensor, eps: float = 1e-5) -> torch.Tensor:
    """(x − mean) / √(var + ε) over the features of each token (no learned scale/shift here)."""
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps)


def ffn(z: TensorLike, W_1: TensorLike, b_1: TensorLike, W_2: TensorLike, b_2: TensorLike,
        activation: str = "relu") -> torch.Tensor:
    """FFN(z) = φ(z W_1 + b_1) W_2 + b_2, token by token: (..., n, d) → (..., n, d_out)."""
    if activation not in ACTIVATIONS:
        raise ValueError(f"unknown activation '{activation}'; choose relu or gelu")
    t = as_tensors({"z": z, "W_1": W_1, "b_1": b_1, "W_2": W_2, "b_2": b_2})
    if t["z"].shape[-1] != t["W_1"].shape[0] or t["W_1"].shape[1] != t["W_2"].shape[0]:
        raise ValueError(f"z {shape_str(t['z'].shape)}, W_1 {shape_str(t['W_1'].shape)}, W_2 {shape_str(t['W_2'].shape)}"
                         " do not chain")
    hidden = t["z"] @ t["W_1"] + t["b_1"]  # (..., n, d_ff)
    hidden = torch.relu(hidden) if activation == "relu" else F.gelu(hidden)
    return hidden @ t["W_2"] + t["b_2"]  # (..., n, d)


@dataclass(frozen=True, eq=False)
class BlockTrace:
    """Every intermediate (each (n, d_model)): ``norm1`` is LN(X) for pre-norm and None for
    post-norm; ``attn`` = MHA(…), ``res1`` = first residual sum, ``z``, ``norm2``, ``ffn``,
    ``res2`` and the block output ``y``."""

    kind: str
    x: torch.Tensor
    norm1: torch.Tensor | None
    attn: torch.Tensor
    res1: torch.Tensor
    z: torch.Tensor
    norm2: torch.Tensor | None
    ffn: torch.Tensor
    res2: torch.Tensor
    y: torch.Tensor
    weights: torch.Tensor  # per-head attention weights (H, n, n)


def transformer_block(X: TensorLike, *, W_q, W_k, W_v, W_o, n_heads: int, W_1, b_1, W_2, b_2,
                      activation: str = "relu", norm: str = "post", mask=None) -> BlockTrace:
    """One encoder block on X (n, d_model); ``norm`` is "post" or "pre"."""
    if norm not in ("post", "pre"):
        raise ValueError(f"norm must be 'post' or 'pre', got {norm!r}")
    x = as_tensors({"X": X})["X"]
    if x.dim() != 2:
        raise ValueError(f"X must be (n, d_model), got {shape_str(x.shape)}")

    def mha(inp):
        return multi_head_attention(inp, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads, mask=mask)

    if norm == "post":
        m = mha(x)
        res1 = x + m.output  # residual: shape(X) = shape(MHA(X)) (C31)
        z = layer_norm(res1)  # Z = LayerNorm(X + MHA(X))
        f = ffn(z, W_1, b_1, W_2, b_2, activation)
        res2 = z + f
        y = layer_norm(res2)  # Y = LayerNorm(Z + FFN(Z))
        return BlockTrace("post", x, None, m.output, res1, z, None, f, res2, y, m.weights)
    n1 = layer_norm(x)
    m = mha(n1)
    z = x + m.output  # Z = X + MHA(LayerNorm(X))
    n2 = layer_norm(z)
    f = ffn(n2, W_1, b_1, W_2, b_2, activation)
    y = z + f  # Y = Z + FFN(LayerNorm(Z))
    return BlockTrace("pre", x, n1, m.output, z, z, n2, f, y, y, m.weights)


@dataclass(frozen=True, eq=False)
class FFNIndependence:
    """Evidence that the FFN treats every token on its own (C28).

    ``changed_row`` of Z was replaced by other numbers; ``other_rows_gap`` is the largest change
    this caused in any *other* row of FFN(Z) (0: no token's output depends on another token);
    ``changed_row_gap`` is how much the changed row's own output moved (non-zero, so the change
    was real); ``rowwise_gap`` = max_i |FFN(Z)[i] − FFN(Z[i])| with each token fed alone."""

    changed_row: int
    other_rows_gap: float
    changed_row_gap: float
    rowwise_gap: float


def ffn_independence(z: TensorLike, W_1: TensorLike, b_1: TensorLike, W_2: TensorLike, b_2: TensorLike,
                     activation: str = "relu", *, row: int = 0, seed: int = 0) -> FFNIndependence:
    """Change one row of Z (n, d) and measure which rows of FFN(Z) move; also feed each row alone."""
    zt = as_tensors({"z": z})["z"]
    if zt.dim() != 2 or not 0 <= row < zt.shape[0]:
        raise ValueError(f"z must be (n, d) with row {row} inside it, got {shape_str(zt.shape)}")
    out = ffn(zt, W_1, b_1, W_2, b_2, activation)  # (n, d)
    g = torch.Generator().manual_seed(seed)
    z2 = zt.clone()
    z2[row] = zt[row] + 1.0 + torch.rand(zt.shape[1], generator=g, dtype=zt.dtype)  # a different token in one slot
    out2 = ffn(z2, W_1, b_1, W_2, b_2, activation)  # (n, d)
    others = [i for i in range(zt.shape[0]) if i != row]
    other_gap = float((out2[others] - out[others]).abs().max()) if others else 0.0
    alone = torch.stack([ffn(zt[i:i + 1], W_1, b_1, W_2, b_2, activation)[0] for i in range(zt.shape[0])])  # (n, d)
    return FFNIndependence(changed_row=row, other_rows_gap=other_gap,
                           changed_row_gap=float((out2[row] - out[row]).abs().max()),
                           rowwise_gap=float((alone - out).abs().max()))


@dataclass(frozen=True, eq=False)
class SeededBlock:
    """A block with seeded random (untrained) weights: its trace and the FFN check."""

    trace: BlockTrace
    ffn_check: FFNIndependence


def seeded_block(X: TensorLike, *, seed: int, n_heads: int, d_ff: int, activation: str = "relu",
                 norm: str = "post") -> SeededBlock:
    """:func:`transformer_block` with weights drawn by :func:`core.tokens.projection` (named, seeded)
    and zero biases; X (n, d_model). The page shows what every step does to the shapes and numbers."""
    x = as_tensors({"X": X})["X"]
    d = x.shape[-1]
    W = {n: projection(d, d, seed=seed, name=f"tb.{n}") for n in ("W_q", "W_k", "W_v", "W_o")}
    W |= {"W_1": projection(d, d_ff, seed=seed, name="tb.W_1"), "W_2": projection(d_ff, d, seed=seed, name="tb.W_2"),
          "b_1": torch.zeros(d_ff), "b_2": torch.zeros(d)}
    tr = transformer_block(x, n_heads=n_heads, activation=activation, norm=norm, **W)
    zin = tr.norm2 if norm == "pre" else tr.z  # what the FFN received
    check = ffn_independence(zin, W["W_1"], W["b_1"], W["W_2"], W["b_2"], activation, row=0, seed=seed)
    return SeededBlock(trace=tr, ffn_check=check)


@dataclass(frozen=True, eq=False)
class Complexity:
    """Wall time (s) and bytes of attention scores held at once, per sequence length n."""

    ns: tuple[int, ...]
    time_full: tuple[float, ...]
    time_chunked: tuple[float, ...]
    bytes_full: tuple[int, ...]
    bytes_chunked: tuple[int, ...]


def complexity(ns=(64, 128, 256, 512, 1024, 2048), *, d: int = 64, chunk: int = 128, seed: int = 0,
               repeats: int = 3) -> Complexity:
    """Measure attention (full trace, n × n scores) against chunked attention (n × chunk at a time)."""
    g = torch.Generator().manual_seed(seed)
    tf, tc, bf, bc = [], [], [], []
    for n in ns:
        q, k, v = (torch.randn(n, d, generator=g) for _ in range(3))
        best_f = best_c = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            tr = attention(q, k, v)
            best_f = min(best_f, time.perf_counter() - t0)
            t0 = time.perf_counter()
            chunked_attention(q, k, v, chunk_size=chunk)
            best_c = min(best_c, time.perf_counter() - t0)
        tf.append(best_f)
        tc.append(best_c)
        held = {id(m): m for m in (tr.scores, tr.scaled, tr.logits, tr.weights)}  # distinct n × n tensors
        bf.append(sum(m.numel() * m.element_size() for m in held.values()))
        bc.append(n * min(chunk, n) * q.element_size() * 2)  # one block of scores and its exponentials
    return Complexity(tuple(ns), tuple(tf), tuple(tc), tuple(bf), tuple(bc))
