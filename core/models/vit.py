r"""Vision Transformer front end (C32): an H × W × C image as a sequence of patch tokens.

    N = (H / P)(W / P) patches of P²C values each, flattened in row-major patch order,
    linearly projected to d_model; a class token is prepended (or the patch outputs are pooled)
    and self-attention runs over the N (+1) tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensor, shape_str
from core.mechanism.attention import AttentionTrace, attention
from core.mechanism.positional import sinusoidal
from core.seeded import seeded_normal


def patch_sizes(H: int, W: int) -> list[int]:
    """Patch sizes P that tile the image exactly (P divides both H and W), excluding P = 1."""
    return [p for p in range(2, min(H, W) + 1) if H % p == 0 and W % p == 0]


def patchify(img: TensorLike, P: int) -> torch.Tensor:
    """(H, W, C) → (N, P²C) with N = (H/P)(W/P); patch (r, c) is row r·(W/P) + c."""
    x = as_tensor(img, "image")
    if x.dim() != 3:
        raise ValueError(f"image must be (H, W, C), got {shape_str(x.shape)}")
    H, W, C = x.shape
    if P < 1 or H % P or W % P:
        raise ValueError(f"patch size {P} does not divide the image {H}×{W}")
    x = x.reshape(H // P, P, W // P, P, C)  # (rows, P, cols, P, C)
    x = x.permute(0, 2, 1, 3, 4)  # (rows, cols, P, P, C)
    return x.reshape((H // P) * (W // P), P * P * C)  # (N, P²C)


def unpatchify(patches: TensorLike, H: int, W: int, C: int, P: int) -> torch.Tensor:
    """The inverse of :func:`patchify`: (N, P²C) → (H, W, C)."""
    x = as_tensor(patches, "patches")
    if x.shape != ((H // P) * (W // P), P * P * C):
        raise ValueError(f"patches {shape_str(x.shape)} do not fit a {H}×{W}×{C} image with P={P}")
    x = x.reshape(H // P, W // P, P, P, C).permute(0, 2, 1, 3, 4)  # (rows, P, cols, P, C)
    return x.reshape(H, W, C)


@dataclass(frozen=True, eq=False)
class ViTTrace:
    """patches (N, P²C), embedded (N, d), tokens (N+1 or N, d) after the class token and
    positions, attention over the tokens, and ``grid`` = (H/P, W/P)."""

    patches: torch.Tensor
    embedded: torch.Tensor
    tokens: torch.Tensor
    attn: AttentionTrace
    grid: tuple[int, int]
    cls: bool

    def attention_map(self, query: int) -> torch.Tensor:
        """The weights of token ``query`` over the patches, laid out as the patch grid (rows, cols).
        With a class token, query 0 is the class token and patch p is token p + 1."""
        w = self.attn.weights[query]
        if self.cls:
            w = w[1:]
        return w.reshape(self.grid)


def vit_attention(img: TensorLike, P: int, *, d_model: int = 16, seed: int = 0, cls: bool = True) -> ViTTrace:
    """Patch embedding (seeded W_E), optional class token, sinusoidal positions, one seeded
    attention head (scaled dot product) over the patch tokens."""
    x = as_tensor(img, "image")
    H, W, C = x.shape
    patches = patchify(x, P)  # (N, P²C)
    W_E = seeded_normal((P * P * C, d_model), seed=seed, salt=f"vit.W_E.{P}.{C}", std=(P * P * C) ** -0.5,
                        dtype=patches.dtype)
    embedded = patches @ W_E  # (N, P²C)(P²C, d) → (N, d)
    tokens = embedded
    if cls:
        cls_tok = seeded_normal((1, d_model), seed=seed, salt="vit.cls", dtype=patches.dtype)
        tokens = torch.cat([cls_tok, embedded], dim=0)  # (N+1, d)
    tokens = tokens + sinusoidal(tokens.shape[0], d_model, dtype=patches.dtype)
    Wq, Wk, Wv = (seeded_normal((d_model, d_model), seed=seed, salt=f"vit.{n}", std=d_model ** -0.5,
                                dtype=patches.dtype) for n in ("W_q", "W_k", "W_v"))
    tr = attention(tokens @ Wq, tokens @ Wk, tokens @ Wv)  # weights (N(+1), N(+1))
    return ViTTrace(patches=patches, embedded=embedded, tokens=tokens, attn=tr, grid=(H // P, W // P), cls=cls)
