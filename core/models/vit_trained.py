r"""A small Vision Transformer that has learned something (C32): circle, square or triangle?

The data are procedural 96 × 96 RGB images (:func:`make_shapes`) with exactly one bright shape of
random colour, size, rotation and position on a darker cluttered background (a smooth colour
field, noise blobs, thin lines, pixel noise). The colour says nothing about the class; the *form*
does. The model (:class:`TinyViT`) is a small pre-norm ViT whose attention is the project's own
:func:`core.multi_head_attention`, so every map the page draws comes from ``core``:

    x_p = LN(LN₀(patch_p) W_E + b_E)               patch embedding of N = (96/P)² patches   (N, d)
    z⁰  = [x_cls ; x_1 … x_N] + E_pos              a learned class token and learned positions  (1+N, d)
    z'  = zˡ⁻¹ + MHA(LN₁(zˡ⁻¹))                    pre-norm encoder layer l = 1 … L
    zˡ  = z' + FFN(LN₂(z')),  FFN(u) = GELU(u W_1 + b_1) W_2 + b_2
    logits = LN_f(z^L)_cls W_head + b_head         the class is read from the class token only

LN₀ standardises each flattened patch (its P²C values) without learned parameters, so a token
describes the patch's pattern (edges, corners) rather than its overall brightness.

Everything is seeded with private ``torch.Generator`` objects (never the global RNG), so the
same seed gives the same images, the same training run and the same checkpoint bytes.
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from core.checks import TensorLike, as_tensor, shape_str
from core.mechanism.multihead import MultiHeadTrace, multi_head_attention
from core.models.paths import ASSETS
from core.models.vit import patchify

SIZE = 96  # every image is SIZE × SIZE × 3
CLASSES = ("circle", "square", "triangle")
CHECKPOINT = ASSETS / "checkpoints" / "vit_shapes.pt"

# the generator's settings (pixel values in [0, 1], lengths in pixels)
BACKGROUND = (0.05, 0.3)  # range of the smooth background field's 3 × 3 anchor colours
BLOBS = 0.05  # amplitude of the noise blobs (a 12 × 12 random field, bilinear)
LINES = 2  # thin straight lines per image
LINE_COLOUR = (0.0, 0.35)  # range of each line's R, G, B
AREA = (600.0, 1800.0)  # the shape's area in px², the same range for every class
CONTRAST = 0.5  # the shape is at least this much brighter (mean of R, G, B) than the background under it
NOISE = 0.03  # uniform pixel noise ±NOISE


# ============================================================================ the data
@dataclass(frozen=True, eq=False)
class ShapeBatch:
    """n generated images and their ground truth.

    images (n, 96, 96, 3) float32 in [0, 1], rows × columns × RGB (the page's layout)
    labels (n,) int64, an index into :data:`CLASSES`
    masks  (n, 96, 96) bool, True on the shape's pixels
    boxes  (n, 4) int64, the mask's bounding box (row0, col0, row1, col1), end exclusive
    """

    images: torch.Tensor
    labels: torch.Tensor
    masks: torch.Tensor
    boxes: torch.Tensor

    def __len__(self) -> int:
        return self.labels.shape[0]

    def patch_masks(self, P: int) -> torch.Tensor:
        """(n, 96/P, 96/P) bool: True where patch (r, c) holds at least one pixel of the shape."""
        n, H, W = self.masks.shape
        if P < 1 or H % P or W % P:
            raise ValueError(f"patch size {P} does not divide the image {H}×{W}")
        m = self.masks.reshape(n, H // P, P, W // P, P)  # (n, rows, P, cols, P)
        return m.any(dim=4).any(dim=2)  # (n, rows, cols)


def _pixel_grid(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Pixel centres: y (1, size, size) the row coordinate, x (1, size, size) the column coordinate."""
    c = torch.arange(size, dtype=torch.float32) + 0.5
    y, x = torch.meshgrid(c, c, indexing="ij")  # (size, size) each
    return y[None], x[None]


def _lerp(k: int, size: int, corners: bool) -> torch.Tensor:
    """(size, k): row i holds the bilinear weights that resample k values to ``size`` pixels (as F.interpolate)."""
    eye = torch.eye(k)[:, None, :]  # (k, 1, k): each anchor alone
    return F.interpolate(eye, size=size, mode="linear", align_corners=corners)[:, 0, :].T  # (size, k)


def _uniform(shape, lo: float, hi: float, g: torch.Generator) -> torch.Tensor:
    return lo + (hi - lo) * torch.rand(shape, generator=g)


def make_shapes(n: int, seed: int = 0, *, generator: torch.Generator | None = None,
                labels: TensorLike | None = None) -> ShapeBatch:
    """n images (96 × 96 × 3), each with one circle, square or triangle on clutter; deterministic for a seed.

    Give ``seed`` (a fresh generator is made) or ``generator`` (it is advanced, so successive
    calls give fresh images). ``labels`` (n,) forces the classes (0 circle, 1 square, 2 triangle);
    otherwise they are drawn uniformly. The shape's area is drawn from the same range for every
    class; squares and triangles (equilateral) are rotated at random; the shape lies wholly inside
    the image; its colour is random but brighter than the background under it by ≥ CONTRAST.
    """
    if n < 1:
        raise ValueError(f"n must be a positive number of images, got {n}")
    g = generator if generator is not None else torch.Generator().manual_seed(int(seed))
    H = W = SIZE
    if labels is None:
        lab = torch.randint(0, len(CLASSES), (n,), generator=g)
    else:
        lab = torch.as_tensor(labels, dtype=torch.int64).reshape(-1)
        if lab.shape != (n,) or bool(((lab < 0) | (lab >= len(CLASSES))).any()):
            raise ValueError(f"labels must be {n} class indices in 0..{len(CLASSES) - 1}, got {shape_str(lab.shape)}")

    # background: a smooth colour field (3 × 3 anchors) plus noise blobs (a 12 × 12 field), both bilinear
    anchors = _uniform((n, 3, 3, 3), *BACKGROUND, g)  # (n, 3, 3, C)
    blobs = _uniform((n, 12, 12, 3), -BLOBS, BLOBS, g)  # (n, 12, 12, C)
    I3, I12 = _lerp(3, H, corners=True), _lerp(12, H, corners=False)  # (H, 3), (H, 12)
    img = torch.einsum("hi,nijc,wj->nhwc", I3, anchors, I3)  # (n, H, W, C)
    img = img + torch.einsum("hi,nijc,wj->nhwc", I12, blobs, I12)  # (n, H, W, C)

    # clutter: LINES straight lines of random colour, 1 or 2 pixels wide, painted point by point
    T = 200  # points per line (a line is at most 136 px long)
    p0, p1 = _uniform((n, LINES, 1, 2), 0, H, g), _uniform((n, LINES, 1, 2), 0, H, g)  # endpoints (row, col)
    wide = torch.randint(0, 2, (n, LINES, 1, 1), generator=g).float()  # 0: 1 px, 1: 2 px
    line_colour = _uniform((n, LINES, 3), *LINE_COLOUR, g)  # (n, LINES, C)
    pts = p0 + torch.linspace(0, 1, T)[:, None] * (p1 - p0)  # (n, LINES, T, 2)
    stamp = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])  # (4, 2) offsets of a 2 × 2 stamp
    pix = (pts[:, :, :, None, :] + wide[..., None] * stamp).floor().long().clamp(0, H - 1)  # (n, LINES, T, 4, 2)
    flat = (torch.arange(n)[:, None, None, None] * H + pix[..., 0]) * W + pix[..., 1]  # (n, LINES, T, 4)
    img = img.reshape(n * H * W, 3)  # (n·H·W, C): one row per pixel
    for j in range(LINES):  # later lines cover earlier ones
        idx = flat[:, j].reshape(n, T * 4)  # (n, T·4)
        img[idx.reshape(-1)] = line_colour[:, j, None, :].expand(n, T * 4, 3).reshape(-1, 3)
    img = img.reshape(n, H, W, 3)

    # the shape: area A, then its size, a centre that keeps it inside the image, a rotation θ
    A = _uniform((n,), *AREA, g)
    circle_r = torch.sqrt(A / math.pi)  # πr² = A
    half_side = torch.sqrt(A) / 2  # (2s)² = A
    tri_R = torch.sqrt(A / (3 * math.sqrt(3) / 4))  # circumradius R of an equilateral triangle: A = (3√3/4) R²
    reach = torch.stack([circle_r, half_side * math.sqrt(2), tri_R], dim=1)  # (n, 3): farthest pixel from the centre
    R = reach.gather(1, lab[:, None])[:, 0]  # (n,)
    u = torch.rand((n, 2), generator=g)
    cy, cx = R + 1 + u[:, 0] * (H - 2 * R - 2), R + 1 + u[:, 1] * (W - 2 * R - 2)  # (n,) each
    theta = _uniform((n,), 0.0, 2 * math.pi, g)
    masks = torch.zeros((n, H, W), dtype=torch.bool)
    y, x = _pixel_grid(H)  # (1, H, W)
    for c, name in enumerate(CLASSES):
        i = (lab == c).nonzero()[:, 0]  # the images of class c
        if not len(i):
            continue
        dy, dx = y - cy[i, None, None], x - cx[i, None, None]  # (n_c, H, W): pixel relative to the centre
        if name == "circle":
            masks[i] = dy**2 + dx**2 <= (circle_r[i] ** 2)[:, None, None]
        elif name == "square":
            cos_t, sin_t = torch.cos(theta[i])[:, None, None], torch.sin(theta[i])[:, None, None]
            s = half_side[i, None, None]
            masks[i] = ((cos_t * dx + sin_t * dy).abs() <= s) & ((cos_t * dy - sin_t * dx).abs() <= s)  # in the square's frame
        else:
            ang = theta[i, None] + torch.arange(3) * (2 * math.pi / 3)  # (n_c, 3) vertex angles
            vy, vx = tri_R[i, None] * torch.sin(ang), tri_R[i, None] * torch.cos(ang)  # (n_c, 3) vertices
            inside = torch.ones_like(dy, dtype=torch.bool)
            for k in range(3):  # inside ⇔ on the same side of all three edges
                ay, ax = vy[:, k, None, None], vx[:, k, None, None]
                by, bx = vy[:, (k + 1) % 3, None, None], vx[:, (k + 1) % 3, None, None]
                inside &= (bx - ax) * (dy - ay) - (by - ay) * (dx - ax) >= 0
            masks[i] = inside

    # colour: of 16 random candidates the first that is ≥ CONTRAST brighter (mean of R, G, B) than
    # the background under the shape, else the brightest
    m = masks.float()  # (n, H, W)
    under = torch.einsum("nhwc,nhw->n", img, m) / (3 * m.sum((1, 2)).clamp_min(1))  # (n,) brightness under the shape
    cand = torch.rand((n, 16, 3), generator=g)  # (n, 16, C)
    lift = cand.mean(-1) - under[:, None]  # (n, 16)
    ok = lift >= CONTRAST
    pick = torch.where(ok.any(1), ok.float().argmax(1), lift.argmax(1))  # (n,)
    colour = cand[torch.arange(n), pick]  # (n, C)
    img = torch.where(masks[..., None], colour[:, None, None, :], img)  # (n, H, W, C)
    img = (img + _uniform((n, H, W, 3), -NOISE, NOISE, g)).clamp_(0.0, 1.0)  # pixel noise

    ar = torch.arange(H)
    rows, cols = masks.any(2), masks.any(1)  # (n, H), (n, W)
    boxes = torch.stack([torch.where(rows, ar, H).amin(1), torch.where(cols, ar, W).amin(1),
                         torch.where(rows, ar, -1).amax(1) + 1, torch.where(cols, ar, -1).amax(1) + 1], dim=1)  # (n, 4)
    return ShapeBatch(images=img, labels=lab, masks=masks, boxes=boxes)


# ============================================================================ the model
@dataclass(frozen=True)
class ViTConfig:
    """Sizes of the tiny ViT: N = (image/patch)² patches of P²C values, tokens of width d_model."""

    image: int = SIZE
    patch: int = 16
    channels: int = 3
    d_model: int = 32
    n_heads: int = 2
    n_layers: int = 2
    d_ff: int = 64
    n_classes: int = len(CLASSES)

    @property
    def grid(self) -> tuple[int, int]:
        """(rows, cols) of the patch grid."""
        return (self.image // self.patch, self.image // self.patch)

    @property
    def n_patches(self) -> int:
        return (self.image // self.patch) ** 2

    @property
    def patch_dim(self) -> int:
        return self.patch * self.patch * self.channels


def patchify_batch(images: torch.Tensor, P: int) -> torch.Tensor:
    """(B, H, W, C) → (B, N, P²C), the same patch order and pixel order as :func:`core.vit.patchify`."""
    B, H, W, C = images.shape
    x = images.reshape(B, H // P, P, W // P, P, C)  # (B, rows, P, cols, P, C)
    x = x.permute(0, 1, 3, 2, 4, 5)  # (B, rows, cols, P, P, C)
    return x.reshape(B, (H // P) * (W // P), P * P * C)  # (B, N, P²C)


def _init(shape, g: torch.Generator, std: float | None = None) -> torch.Tensor:
    """N(0, std²), std = 1/√fan_in by default (fan_in = the rows of an x @ W matrix), from a private generator."""
    std = shape[0] ** -0.5 if std is None else std
    return torch.randn(shape, generator=g) * std


class EncoderLayer(nn.Module):
    """Pre-norm encoder layer: z' = z + MHA(LN₁(z)), out = z' + FFN(LN₂(z')); weights act as x @ W."""

    def __init__(self, d: int, n_heads: int, d_ff: int, g: torch.Generator):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Parameter(_init((d, d), g)) for _ in range(4))  # (d, d) each
        self.b_q, self.b_k, self.b_v, self.b_o = (nn.Parameter(torch.zeros(d)) for _ in range(4))
        self.W_1, self.b_1 = nn.Parameter(_init((d, d_ff), g)), nn.Parameter(torch.zeros(d_ff))
        self.W_2, self.b_2 = nn.Parameter(_init((d_ff, d), g)), nn.Parameter(torch.zeros(d))

    def forward(self, z: torch.Tensor) -> tuple[torch.Tensor, MultiHeadTrace]:
        """z (B, 1+N, d) → (B, 1+N, d) and the attention trace (weights (B, H, 1+N, 1+N))."""
        mha = multi_head_attention(self.ln1(z), W_q=self.W_q, W_k=self.W_k, W_v=self.W_v, W_o=self.W_o,
                                   b_q=self.b_q, b_k=self.b_k, b_v=self.b_v, b_o=self.b_o, n_heads=self.n_heads)
        z = z + mha.output  # (B, 1+N, d): residual
        hidden = F.gelu(self.ln2(z) @ self.W_1 + self.b_1)  # (B, 1+N, d_ff)
        return z + hidden @ self.W_2 + self.b_2, mha  # (B, 1+N, d): residual


class TinyViT(nn.Module):
    """Patch embedding W_E, class token x_cls, positions E_pos, ``n_layers`` encoder layers, head on the class token."""

    def __init__(self, cfg: ViTConfig | None = None, seed: int = 0):
        super().__init__()
        cfg = cfg or ViTConfig()
        if cfg.image % cfg.patch or cfg.d_model % cfg.n_heads:
            raise ValueError(f"patch {cfg.patch} must divide {cfg.image} and n_heads {cfg.n_heads} divide d_model {cfg.d_model}")
        self.cfg = cfg
        g = torch.Generator().manual_seed(int(seed))
        d = cfg.d_model
        self.W_E = nn.Parameter(_init((cfg.patch_dim, d), g))  # (P²C, d)
        self.b_E = nn.Parameter(torch.zeros(d))
        self.ln_E = nn.LayerNorm(d)
        self.x_cls = nn.Parameter(_init((1, 1, d), g, std=0.02))  # (1, 1, d)
        self.E_pos = nn.Parameter(_init((1, 1 + cfg.n_patches, d), g, std=0.02))  # (1, 1+N, d)
        self.layers = nn.ModuleList(EncoderLayer(d, cfg.n_heads, cfg.d_ff, g) for _ in range(cfg.n_layers))
        self.ln_f = nn.LayerNorm(d)
        self.W_head = nn.Parameter(_init((d, cfg.n_classes), g))  # (d, classes)
        self.b_head = nn.Parameter(torch.zeros(cfg.n_classes))

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, list[MultiHeadTrace]]:
        """images (B, H, W, C) in [0, 1] → logits (B, classes) and one MultiHeadTrace per layer."""
        x = patchify_batch(images, self.cfg.patch)  # (B, N, P²C)
        x = F.layer_norm(x, x.shape[-1:])  # (B, N, P²C): LN₀, each patch standardised
        x = self.ln_E(x @ self.W_E + self.b_E)  # (B, N, d): patch embedding
        cls = self.x_cls.expand(x.shape[0], -1, -1)  # (B, 1, d)
        z = torch.cat([cls, x], dim=1) + self.E_pos  # (B, 1+N, d)
        traces = []
        for layer in self.layers:
            z, tr = layer(z)  # (B, 1+N, d)
            traces.append(tr)
        logits = self.ln_f(z[:, 0]) @ self.W_head + self.b_head  # (B, classes): the class token only
        return logits, traces


# ============================================================================ training
@dataclass(frozen=True, eq=False)
class TrainResult:
    """The trained model (eval mode), the loss of every step, wall time and the run's settings."""

    model: TinyViT
    losses: tuple[float, ...]
    seconds: float
    settings: dict = field(default_factory=dict)


def _dihedral(x: torch.Tensor, k: int) -> torch.Tensor:
    """One of the 8 rotations/reflections of images (B, H, W, C); none of them changes a shape's class."""
    x = torch.rot90(x, k % 4, dims=(1, 2))  # (B, H, W, C)
    return x.flip(2) if k >= 4 else x


def train(steps: int = 600, seed: int = 0, *, cfg: ViTConfig | None = None, batch: int = 64, pool: int = 2048,
          lr: float = 1e-3, weight_decay: float = 0.05, threads: int = 1,
          callback: Callable[[int, float], None] | None = None) -> TrainResult:
    """AdamW with cross-entropy on a pool of ``pool`` generated images, shuffled every epoch, each
    batch turned by a random rotation/reflection; the learning rate warms up for 5% of the steps,
    stays at ``lr`` until 70%, then follows a cosine down to 0.

    Deterministic: the weights come from ``seed``, the images and the order from a generator seeded
    with ``seed + 1``; nothing draws from the global RNG. Runs on the CPU with at most ``threads``
    threads (default 1: on a busy 2-core machine two threads are slower, and one thread keeps the
    arithmetic order fixed); the previous thread setting is restored.
    """
    cfg = cfg or ViTConfig()
    if steps < 1 or batch < 1 or pool < batch:
        raise ValueError(f"need steps ≥ 1 and pool ≥ batch ≥ 1, got steps={steps}, batch={batch}, pool={pool}")
    old_threads, old_det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(max(1, min(int(threads), 2)))
    torch.use_deterministic_algorithms(True)
    try:
        t0 = time.perf_counter()
        g = torch.Generator().manual_seed(int(seed) + 1)
        parts = [make_shapes(min(512, pool - i), generator=g) for i in range(0, pool, 512)]
        X = torch.cat([p.images for p in parts])  # (pool, H, W, C)
        Y = torch.cat([p.labels for p in parts])  # (pool,)
        model = TinyViT(cfg, seed=seed)
        matrices = [p for n, p in model.named_parameters() if n.rsplit(".", 1)[-1].startswith("W_")]
        others = [p for n, p in model.named_parameters() if not n.rsplit(".", 1)[-1].startswith("W_")]
        opt = torch.optim.AdamW([{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}],
                                lr=lr, betas=(0.9, 0.99), foreach=True)
        warm, flat = max(1, steps // 20), int(0.7 * steps)

        def lr_factor(i: int) -> float:
            if i < flat:
                return min(1.0, (i + 1) / warm)
            return 0.5 * (1 + math.cos(math.pi * (i - flat) / max(1, steps - flat)))

        sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
        order, pos = torch.randperm(pool, generator=g), 0
        losses = []
        model.train()
        for step in range(steps):
            if pos + batch > pool:  # a new epoch: a new order
                order, pos = torch.randperm(pool, generator=g), 0
            idx = order[pos:pos + batch]
            pos += batch
            k = int(torch.randint(0, 8, (1,), generator=g))
            logits, _ = model(_dihedral(X[idx], k))  # (batch, classes)
            loss = F.cross_entropy(logits, Y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            if callback is not None:
                callback(step, losses[-1])
        model.eval()
        settings = {"steps": steps, "seed": seed, "batch": batch, "pool": pool, "lr": lr, "weight_decay": weight_decay}
        return TrainResult(model=model, losses=tuple(losses), seconds=time.perf_counter() - t0, settings=settings)
    finally:
        torch.set_num_threads(old_threads)
        torch.use_deterministic_algorithms(old_det)


# ============================================================================ checkpoints
def save(model: TinyViT, path: str | Path, *, meta: dict | None = None) -> Path:
    """One file: {"config": ViTConfig as a dict, "state_dict": float32 weights, "meta": plain values}."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float32).clone() for k, v in model.state_dict().items()}
    buf = io.BytesIO()
    torch.save({"config": asdict(model.cfg), "state_dict": state, "meta": dict(meta or {})}, buf)
    path.write_bytes(buf.getvalue())
    return path


def load(path: str | Path = CHECKPOINT) -> TinyViT:
    """The model saved by :func:`save`, in eval mode (read with ``weights_only=True``); its ``meta`` dict
    is kept as ``model.meta``."""
    ckpt = torch.load(Path(path), map_location="cpu", weights_only=True)
    model = TinyViT(ViTConfig(**ckpt["config"]))
    model.load_state_dict(ckpt["state_dict"])
    model.meta = dict(ckpt.get("meta", {}))
    return model.eval()


# ============================================================================ reading the model
@dataclass(frozen=True, eq=False)
class TrainedTrace:
    """One image through the trained ViT.

    logits (classes,); probs (classes,) = softmax(logits); pred = argmax, ``label`` = CLASSES[pred];
    patches (N, P²C) as :func:`core.vit.patchify` cuts them; attn (layers, H, 1+N, 1+N): every
    layer's and head's attention weights, rows = queries (sum to 1), token 0 = the class token,
    token p + 1 = patch p (row-major); grid = (rows, cols) = (96/P, 96/P).
    """

    logits: torch.Tensor
    probs: torch.Tensor
    pred: int
    patches: torch.Tensor
    attn: torch.Tensor
    grid: tuple[int, int]

    @property
    def label(self) -> str:
        return CLASSES[self.pred]

    def cls_map(self, layer: int = -1) -> torch.Tensor:
        """The class token's attention over the patches in one layer (default: the last, the one the
        classifier reads), averaged over heads, as the patch grid (rows, cols). It sums to
        1 − (the class token's weight on itself)."""
        w = self.attn[layer, :, 0, 1:].mean(dim=0)  # (N,): the class token's row, heads averaged
        return w.reshape(self.grid)  # (rows, cols)

    def patch_map(self, patch: int, layer: int = -1) -> torch.Tensor:
        """Patch ``patch``'s (row-major index) attention over the patches, heads averaged, (rows, cols)."""
        return self.attn[layer, :, 1 + patch, 1:].mean(dim=0).reshape(self.grid)

    def rollout(self) -> torch.Tensor:
        """Attention rollout (Abnar & Zuidema 2020), the class token's row over the patches (rows, cols):
        R = Πₗ ½(Āₗ + I) with Āₗ the head average of layer l, the ½ I for the residual path."""
        eye = torch.eye(self.attn.shape[-1], dtype=self.attn.dtype)
        R = eye
        for A in self.attn.mean(dim=1):  # A (1+N, 1+N): one layer, heads averaged
            R = (0.5 * (A + eye)) @ R  # (1+N, 1+N)
        return R[0, 1:].reshape(self.grid)  # (rows, cols)


@torch.no_grad()
def trace(model: TinyViT, img: TensorLike) -> TrainedTrace:
    """Classify one image (96, 96, 3) with values in [0, 1] (tensor, numpy array or nested lists)
    and keep every attention map."""
    cfg = model.cfg
    x = as_tensor(img, "image", dtype=torch.float32)
    if x.shape != (cfg.image, cfg.image, cfg.channels):
        raise ValueError(f"image must be ({cfg.image}, {cfg.image}, {cfg.channels}) with values in [0, 1], "
                         f"got {shape_str(x.shape)}")
    logits, traces = model(x[None])  # (1, classes)
    attn = torch.stack([t.weights[0] for t in traces])  # (layers, H, 1+N, 1+N)
    return TrainedTrace(logits=logits[0], probs=torch.softmax(logits[0], dim=-1), pred=int(logits[0].argmax()),
                        patches=patchify(x, cfg.patch), attn=attn, grid=cfg.grid)


@torch.no_grad()
def predict(model: TinyViT, images: torch.Tensor, chunk: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """images (n, 96, 96, 3) → predicted classes (n,) and the last layer's class-token attention over
    the patches, heads averaged, (n, rows, cols)."""
    preds, maps = [], []
    for part in images.split(chunk):
        logits, traces = model(part)  # (b, classes)
        preds.append(logits.argmax(-1))
        w = traces[-1].weights[:, :, 0, 1:].mean(dim=1)  # (b, N)
        maps.append(w.reshape(-1, *model.cfg.grid))  # (b, rows, cols)
    return torch.cat(preds), torch.cat(maps)


def accuracy(model: TinyViT, n: int = 500, seed: int = 12345) -> float:
    """Share of ``n`` fresh images (generated from ``seed``) classified correctly."""
    g = torch.Generator().manual_seed(int(seed))
    correct = 0
    for start in range(0, n, 256):
        data = make_shapes(min(256, n - start), generator=g)
        correct += int((predict(model, data.images)[0] == data.labels).sum())
    return correct / n


@dataclass(frozen=True)
class Focus:
    """Where the class token looks (last layer, heads averaged), over n fresh images.

    on_shape: mean share of its patch attention on patches that overlap the shape;
    area: mean share of the patches that overlap the shape (what uniform attention would give);
    ratio = on_shape / area (1 = no preference for the shape)."""

    on_shape: float
    area: float
    ratio: float


def attention_focus(model: TinyViT, n: int = 300, seed: int = 54321) -> Focus:
    """Measure :class:`Focus` on ``n`` fresh images generated from ``seed``."""
    data = make_shapes(n, seed)
    _, maps = predict(model, data.images)  # (n, rows, cols)
    on = data.patch_masks(model.cfg.patch).float()  # (n, rows, cols)
    share = (maps * on).sum((1, 2)) / maps.sum((1, 2))  # (n,)
    area = on.mean((1, 2))  # (n,)
    return Focus(on_shape=float(share.mean()), area=float(area.mean()), ratio=float(share.mean() / area.mean()))
