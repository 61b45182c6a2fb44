r"""Positional information (C23, C24).

Sinusoidal encoding of the Transformer:

    PE[pos, 2i]   = sin(pos / 10000^{2i/d})
    PE[pos, 2i+1] = cos(pos / 10000^{2i/d})

Rotary position embedding (RoPE) rotates q and k instead (:func:`rope`); ALiBi adds a linear bias
to the scores (:func:`alibi_slopes`, :func:`alibi_bias`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_tensor, as_tensors, int_at_least, shape_str
from core.seeded import seeded_normal


def _check(n: int, d: int) -> None:
    for name, val in (("n", n), ("d", d)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")


def sinusoidal(n: int, d: int, *, base: float = 10000.0, dtype=torch.float32, device=None) -> torch.Tensor:
    """Sinusoidal table (n, d): row = position, column = dimension (odd d drops the last cosine)."""
    _check(n, d)
    pos = torch.arange(n, dtype=torch.float64, device=device).unsqueeze(1)  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float64, device=device)  # (⌈d/2⌉,)
    angle = pos / base ** (two_i / d)  # (n, ⌈d/2⌉)
    pe = torch.zeros(n, d, dtype=torch.float64, device=device)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe.to(dtype)


def learned(n: int, d: int, *, seed: int = 0, std: float = 0.5, dtype=torch.float32, device=None) -> torch.Tensor:
    """A learned-style table (n, d): one trainable vector per position, here seeded random N(0, std²)."""
    _check(n, d)
    return seeded_normal((n, d), seed=seed, salt="positional.learned", std=std, dtype=dtype, device=device)


def add(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """x̃_i = x_i + p_i  (n, d) + (n, d) → (n, d)."""
    if x.shape != pe.shape:
        raise ValueError(f"cannot add positions {tuple(pe.shape)} to embeddings {tuple(x.shape)}")
    return x + pe


def concat(x: torch.Tensor, pe: torch.Tensor) -> torch.Tensor:
    """x̃_i = [x_i ; p_i]  (n, d) ⊕ (n, d_p) → (n, d + d_p)."""
    if x.shape[:-1] != pe.shape[:-1]:
        raise ValueError(f"cannot concatenate positions {tuple(pe.shape)} to embeddings {tuple(x.shape)}")
    return torch.cat([x, pe], dim=-1)


# ---------------------------------------------------------------------------
# Rotary position embedding (RoPE, Su et al. 2021)
# ---------------------------------------------------------------------------
ROPE_PAIRINGS = ("adjacent", "half")


def check_rope(d: int, base: float, pairing: str) -> None:
    """ValueError unless d is even, the base θ positive and finite, and the pairing "adjacent" or "half"."""
    if d % 2:
        raise ValueError(f"RoPE needs an even width d, got d={d}")
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or base <= 0:
        raise ValueError(f"the RoPE base θ must be a positive finite number, got {base!r}")
    if pairing not in ROPE_PAIRINGS:
        raise ValueError(f"unknown RoPE pairing '{pairing}'; choose 'adjacent' or 'half'")


def rope_frequencies(d: int, *, base: float = 10000.0, device=None) -> torch.Tensor:
    """θ_i = base^(−2i/d) for the d/2 pairs i = 0 … d/2 − 1, float64 (d/2,): pair i turns θ_i radians per position."""
    _check(1, d)
    check_rope(d, base, "adjacent")
    return float(base) ** (-torch.arange(0, d, 2, dtype=torch.float64, device=device) / d)  # (d/2,)


def rope_angles(positions: TensorLike, d: int, *, base: float = 10000.0) -> torch.Tensor:
    """Rotation angles m · θ_i (float64, on the CPU): positions (...,) → (..., d/2)."""
    pos = as_tensor(positions, "positions", dtype=torch.float64, device="cpu")
    return pos.unsqueeze(-1) * rope_frequencies(d, base=base)  # (..., d/2)


def rope_permutation(d: int) -> torch.Tensor:
    """The dimension order that turns the adjacent pairing into the half pairing, (d,) long.

    ``perm = [0, 2, 4, …, d−2, 1, 3, …, d−1]``: pair i is dims (2i, 2i+1) in the adjacent layout and
    dims (i, i + d/2) in the half layout, so for every x
    ``rope(x[..., perm], pairing="half") == rope(x, pairing="adjacent")[..., perm]`` — the same
    rotation with the dimensions permuted. (This is why GGUF files store W_q and W_k rows permuted
    relative to Hugging Face's Llama checkpoints.)
    """
    _check(1, d)
    check_rope(d, 10000.0, "adjacent")
    return torch.cat([torch.arange(0, d, 2), torch.arange(1, d, 2)])  # (d,)


def rope(x: TensorLike, *, positions: TensorLike | None = None, base: float = 10000.0,
         pairing: str = "adjacent") -> torch.Tensor:
    r"""Rotate each pair of dimensions of x by the angle m·θ_i of its position m (RoPE).

    x (..., n, d) with d even — queries or keys, per head; positions (n,) or broadcastable to
    x.shape[:-1] (default 0 … n−1; any numbers, e.g. a cache offset t … t+n−1); base θ > 0.
    Pair i (frequency θ_i = base^(−2i/d)) is rotated as a 2-D vector:

        x'_a = x_a cos(mθ_i) − x_b sin(mθ_i),   x'_b = x_a sin(mθ_i) + x_b cos(mθ_i)

    with (a, b) = (2i, 2i+1) for ``pairing="adjacent"`` (RoFormer, GGUF / llama.cpp) and
    (a, b) = (i, i + d/2) for ``pairing="half"`` (Hugging Face's Llama ``rotate_half``).
    Rotations keep lengths, and R(m)ᵀR(n) = R(n − m): the score q_mᵀ k_n after RoPE depends on the
    positions only through m − n. Returns a tensor of x's shape, dtype and device (angles are
    computed in float64, then rounded to x's dtype).
    """
    t = as_tensor(x, "x")
    if t.dim() < 2:
        raise ValueError(f"x must be (..., n, d) but has shape {shape_str(t.shape)}")
    n, d = t.shape[-2], t.shape[-1]
    check_rope(d, base, pairing)
    pos = torch.arange(n) if positions is None else as_tensor(positions, "positions", dtype=torch.float64, device="cpu")
    try:
        torch.broadcast_shapes(pos.shape, t.shape[:-1])
    except RuntimeError:
        raise ValueError(f"positions {shape_str(pos.shape)} do not match x {shape_str(t.shape)}: "
                         f"give one position per row, ({n},)") from None
    cos, sin = rope_cos_sin(pos, d, base=base, device=t.device, dtype=t.dtype)
    return rotate(t, cos, sin, pairing=pairing)


def rope_cos_sin(positions: TensorLike, d: int, *, base: float = 10000.0, device=None,
                 dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """cos(m·θ_i) and sin(m·θ_i) for positions (...,) → two (..., d/2) tensors (angles in float64, then
    rounded to ``dtype``): compute them once for a whole sequence and slice them per step."""
    angle = rope_angles(positions, d, base=base)  # (..., d/2)
    return (torch.cos(angle).to(device=device, dtype=dtype), torch.sin(angle).to(device=device, dtype=dtype))


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, *, pairing: str = "adjacent") -> torch.Tensor:
    """RoPE's rotation with precomputed cos, sin (..., n, d/2) (:func:`rope_cos_sin`): x (..., n, d) → (..., n, d).

    No input checks: :func:`rope` is the checked entry point.
    """
    d = x.shape[-1]
    if pairing == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]  # (..., n, d/2) each
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)  # (..., n, d)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)  # (..., n, d)


@dataclass(frozen=True, eq=False)
class RopeTables:
    """RoPE's cos and sin at a run of positions, in the one layout core rotates with: half width.

    cos, sin (..., n, r/2): the angle m·θ_i of position m and frequency i (one (B, n, r/2) table per batch row, or
    (n, r/2) for all); r ≤ d_head dims of every head are rotated, the rest pass ("partial rotary"). ``pairing``:
    which dims form a rotated pair — "adjacent" (2i, 2i+1; the GGUF/Meta layout) or "half" (i, i + r/2; Hugging
    Face's ``rotate_half``).

    Tables from elsewhere say their layout by the constructor they go through, so none is read the wrong way:
    :meth:`duplicated` for Hugging Face's ``cat(freqs, freqs)`` tables of width r (most models), :meth:`half` for
    tables of width r/2 (gpt-oss's rotary embedding, or core's own :func:`rope_cos_sin`); both name the pairing.
    """

    cos: torch.Tensor
    sin: torch.Tensor
    pairing: str = "half"

    def __post_init__(self):
        check_pairing(self.pairing)
        if self.cos.shape != self.sin.shape or self.cos.dim() < 2:
            raise ValueError(f"RoPE tables cos {shape_str(self.cos.shape)} and sin {shape_str(self.sin.shape)} must "
                             "have one shape (n, r/2) or (B, n, r/2)")

    @classmethod
    def half(cls, cos: TensorLike, sin: TensorLike, *, pairing: str) -> RopeTables:
        """Tables of width r/2: one entry per rotated pair (gpt-oss, :func:`rope_cos_sin`)."""
        t = as_tensors({"cos": cos, "sin": sin})
        return cls(t["cos"], t["sin"], pairing)

    @classmethod
    def duplicated(cls, cos: TensorLike, sin: TensorLike, *, pairing: str) -> RopeTables:
        """Hugging Face's tables of width r, ``cat(freqs, freqs)``: each angle twice. Their first half is kept,
        after checking that the second half repeats it (a table that does not is refused, not misread)."""
        t = as_tensors({"cos": cos, "sin": sin})
        c, s = t["cos"], t["sin"]
        r = c.shape[-1]
        if r % 2 or not (torch.equal(c[..., : r // 2], c[..., r // 2:]) and torch.equal(s[..., : r // 2], s[..., r // 2:])):
            raise ValueError(f"RoPE tables of width {r} are not cat(freqs, freqs) (their halves differ): pass tables "
                             "of width r/2 with RopeTables.half(cos, sin)")
        return cls(c[..., : r // 2], s[..., : r // 2], pairing)

    @property
    def n(self) -> int:
        return self.cos.shape[-2]

    @property
    def rotated_dims(self) -> int:
        """r: how many dims of each head the tables rotate."""
        return 2 * self.cos.shape[-1]

    def at(self, positions: slice) -> RopeTables:
        """The tables of some of the positions (a slice of the n rows)."""
        return RopeTables(self.cos[..., positions, :], self.sin[..., positions, :], self.pairing)

    def last(self, n: int) -> RopeTables:
        """The tables of the last n positions (queries that sit at the end of the keys)."""
        return self if n == self.n else RopeTables(self.cos[..., -n:, :], self.sin[..., -n:, :], self.pairing)

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        """Rotate the first r dims of x (..., H, n, d) (or (..., n, d)); the rest pass. (B, n, r/2) tables serve
        every head."""
        cos, sin = self.cos, self.sin
        if cos.dim() >= 3 and x.dim() >= 4:  # (B, n, r/2) → (B, 1, n, r/2): one table for every head
            cos, sin = cos.unsqueeze(-3), sin.unsqueeze(-3)
        r = self.rotated_dims
        if r == x.shape[-1]:
            return rotate(x, cos, sin, pairing=self.pairing)
        return torch.cat([rotate(x[..., :r], cos, sin, pairing=self.pairing), x[..., r:]], dim=-1)  # (..., n, d)


def check_pairing(pairing: str) -> str:
    if pairing not in ROPE_PAIRINGS:
        raise ValueError(f"unknown RoPE pairing '{pairing}'; choose 'adjacent' or 'half'")
    return pairing


def rope_tables(n: int, d: int, *, base: float, pairing: str = "adjacent", start: int = 0, rotated_dims: int | None = None,
                device=None, dtype=torch.float32) -> RopeTables:
    """The one table builder: RoPE's tables for positions start … start + n − 1, rotating r = ``rotated_dims`` (default
    d) of d dims per head, after checking r (even, ≤ d), the base θ and the pairing."""
    r = d if rotated_dims is None else int_at_least("rope_dims", rotated_dims)
    if rotated_dims is not None and (r % 2 or r > d):
        raise ValueError(f"rope_dims must be even and ≤ the head width {d}, got {r}")
    check_rope(r, base, pairing)
    cos, sin = rope_cos_sin(torch.arange(start, start + n), r, base=base, device=device, dtype=dtype)  # (n, r/2)
    return RopeTables(cos, sin, pairing)


def rope_for(rope, n: int, d: int, *, pairing: str, rope_dims: int | None = None, device=None,
             dtype=torch.float32) -> RopeTables | None:
    """What a layer's ``rope=`` argument means for n positions 0 … n − 1 and head width d: None (no RoPE), a base θ
    (tables built here, with ``pairing`` and ``rope_dims``), or :class:`RopeTables` (checked against n and d; they
    carry their own pairing).
    A bare (cos, sin) pair is refused: its width alone cannot say whether it is r or r/2."""
    if rope is None:
        return None
    if isinstance(rope, RopeTables):
        if rope.n != n or rope.rotated_dims > d:
            raise ValueError(f"RoPE tables for {rope.n} positions rotating {rope.rotated_dims} dims do not fit n={n} "
                             f"positions of width d={d}")
        return RopeTables(rope.cos.to(device=device, dtype=dtype), rope.sin.to(device=device, dtype=dtype), rope.pairing)
    if isinstance(rope, (tuple, list)):
        raise ValueError("bare (cos, sin) tables are ambiguous: pass RopeTables.duplicated(cos, sin) for Hugging Face's "
                         "cat(freqs, freqs) tables (width r) or RopeTables.half(cos, sin) for tables of width r/2 (gpt-oss)")
    if isinstance(rope, bool) or not isinstance(rope, (int, float)) or not math.isfinite(rope) or rope <= 0:
        raise ValueError(f"the RoPE base θ must be a positive finite number, got {rope!r}")
    return rope_tables(n, d, base=float(rope), pairing=pairing, rotated_dims=rope_dims, device=device, dtype=dtype)


def rope_pair_track(x: TensorLike, pair: int, positions: TensorLike, *, base: float = 10000.0,
                    pairing: str = "adjacent") -> torch.Tensor:
    """One 2-D pair of a vector x (d,) as RoPE turns it: its coordinates at each position, (len(positions), 2)."""
    t = as_tensor(x, "x")
    if t.dim() != 1:
        raise ValueError(f"x must be one vector (d,) but has shape {shape_str(t.shape)}")
    d = t.shape[0]
    check_rope(d, base, pairing)
    if isinstance(pair, bool) or not isinstance(pair, int) or not 0 <= pair < d // 2:
        raise ValueError(f"pair must be an integer in 0 … {d // 2 - 1}, got {pair!r}")
    pos = as_tensor(positions, "positions", dtype=torch.float64, device="cpu").reshape(-1)  # (m,)
    rotated = rope(t.expand(pos.shape[0], d), positions=pos, base=base, pairing=pairing)  # (m, d)
    a, b = (2 * pair, 2 * pair + 1) if pairing == "adjacent" else (pair, pair + d // 2)
    return rotated[:, [a, b]]  # (m, 2)


def rope_scores_by_offset(q: TensorLike, k: TensorLike, offsets: TensorLike, *, base: float = 10000.0,
                          pairing: str = "adjacent", start: float = 0.0) -> torch.Tensor:
    """The score rope(q at start + m) · rope(k at start) for each offset m, (len(offsets),).

    q, k (d,). The same numbers come out for every ``start`` (only m counts), which is RoPE's promise.
    """
    t = as_tensors({"q": q, "k": k})
    if t["q"].dim() != 1 or t["q"].shape != t["k"].shape:
        raise ValueError(f"q and k must be vectors of one width, got {shape_str(t['q'].shape)} and "
                         f"{shape_str(t['k'].shape)}")
    off = as_tensor(offsets, "offsets", dtype=torch.float64, device="cpu").reshape(-1)  # (m,)
    d = t["q"].shape[0]
    q_rot = rope(t["q"].expand(off.shape[0], d), positions=off + start, base=base, pairing=pairing)  # (m, d)
    k_rot = rope(t["k"].unsqueeze(0), positions=torch.tensor([float(start)]), base=base, pairing=pairing)  # (1, d)
    return q_rot @ k_rot[0]  # (m,)


# ---------------------------------------------------------------------------
# ALiBi (Press et al. 2022): a linear bias on the scores instead of position vectors
# ---------------------------------------------------------------------------

def _power_of_two_slopes(n: int) -> list[float]:
    start = 2.0 ** (-8.0 / n)  # 2^(−8/n), then geometric with the same ratio
    return [start ** (h + 1) for h in range(n)]


def alibi_slopes(n_heads: int, *, dtype=torch.float32, device=None) -> torch.Tensor:
    """ALiBi's per-head slopes m_h, (H,).

    H a power of two: the geometric sequence 2^(−8/H), 2^(−16/H), …, 2^(−8) (H = 8: 1/2, 1/4, …, 1/256).
    Other H (the paper's rule): the slopes of the largest power of two P < H, then every other slope
    of 2P for the remaining H − P heads.
    """
    if isinstance(n_heads, bool) or not isinstance(n_heads, int) or n_heads < 1:
        raise ValueError(f"n_heads must be a positive integer, got {n_heads!r}")
    if n_heads & (n_heads - 1) == 0:
        slopes = _power_of_two_slopes(n_heads)
    else:
        P = 2 ** int(math.floor(math.log2(n_heads)))
        slopes = _power_of_two_slopes(P) + _power_of_two_slopes(2 * P)[0::2][: n_heads - P]
    return torch.tensor(slopes, dtype=torch.float64, device=device).to(dtype)  # (H,)


def alibi_bias(n_heads: int, n_q: int, n_k: int | None = None, *, symmetric: bool = False,
               slope: float | None = None, dtype=torch.float32, device=None) -> torch.Tensor:
    """ALiBi's bias −m_h·(i − j) for every head, query i and key j, (H, n_q, n_k).

    Keys sit at positions 0 … n_k−1, queries at the last n_q of them (as :func:`core.masks.causal`
    and a KV cache count). Meant with a causal mask: keys after the query (j > i) get a positive
    bias that the mask removes. ``symmetric=True`` gives −m_h·|i − j| (the encoder variant).
    ``slope`` (> 0) gives every head that one slope m instead of :func:`alibi_slopes`' (the
    position experiment's single head). Pass it as ``bias=`` to :func:`core.attention` or
    :func:`core.multi_head_attention`.
    """
    n_k = n_q if n_k is None else n_k
    for name, val in (("n_q", n_q), ("n_k", n_k)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ValueError(f"{name} must be a positive integer, got {val!r}")
    if n_k < n_q:
        raise ValueError(f"n_k={n_k} keys cannot be fewer than n_q={n_q} queries (queries are the last positions)")
    if slope is None:
        m = alibi_slopes(n_heads, dtype=torch.float64, device=device)  # (H,)
    elif isinstance(slope, bool) or not float(slope) > 0:
        raise ValueError(f"the ALiBi slope m must be positive, got {slope!r}")
    else:
        m = torch.full((n_heads,), float(slope), dtype=torch.float64, device=device)  # (H,)
    i = torch.arange(n_k - n_q, n_k, dtype=torch.float64, device=device).unsqueeze(1)  # (n_q, 1)
    j = torch.arange(n_k, dtype=torch.float64, device=device).unsqueeze(0)  # (1, n_k)
    dist = (i - j).abs() if symmetric else i - j  # (n_q, n_k)
    return (0.0 - m[:, None, None] * dist + 0.0).to(dtype)  # (H, n_q, n_k); + 0.0 turns −0 into 0


def relative_position_bias(table: TensorLike, n: int) -> torch.Tensor:
    """A learned relative-position bias: one number per offset j − i, spread over the (n, n) grid.

    table (..., 2n − 1): entry r holds the bias of offset r − (n − 1) (from −(n−1) to n−1); returns
    (..., n, n) with bias[..., i, j] = table[..., j − i + n − 1]. ALiBi is the table −m·(−offset).
    """
    _check(n, 1)
    t = as_tensor(table, "table")
    if t.dim() < 1 or t.shape[-1] != 2 * n - 1:
        raise ValueError(f"table must be (..., {2 * n - 1}) for n={n} (one entry per offset), got {shape_str(t.shape)}")
    i = torch.arange(n, device=t.device).unsqueeze(1)
    j = torch.arange(n, device=t.device).unsqueeze(0)
    return t[..., j - i + n - 1]  # (..., n, n)
