"""Boolean attention masks. **True = may attend** (PyTorch SDPA's convention).

Row convention: a mask has the weights' shape ``(n_q, n_k)``, entry (i, j) says whether
query i may look at key j. Column convention: ``(n_k, n_q)``, entry (i, j) says whether
query j may look at key i — the transpose. Combine masks with ``&`` (both must allow)
or ``|``. The additive form used inside softmax is :func:`additive` (0 / −∞).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.checks import TensorLike, as_bool_mask, int_at_least, shape_str


def _check_n(name: str, n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{name} must be a positive integer, got {n!r}")
    return n


def _orient(m: torch.Tensor, convention: str) -> torch.Tensor:
    if convention == "row":
        return m
    if convention == "column":
        return m.T
    raise ValueError(f"unknown convention '{convention}'; choose 'row' or 'column'")


def causal(n_q: int, n_k: int | None = None, convention: str = "row", *, device=None) -> torch.Tensor:
    """Causal (look-ahead) mask, C11.

    Row: ``(n_q, n_k)``, True where key j ≤ query i (the lower triangle). With n_k > n_q
    the queries are taken as the last n_q positions (as in decoding with a cache), so
    query i sees keys up to ``i + n_k − n_q``. Column: the transpose ``(n_k, n_q)``.
    """
    n_q = _check_n("n_q", n_q)
    n_k = n_q if n_k is None else _check_n("n_k", n_k)
    i = torch.arange(n_q, device=device).unsqueeze(1)  # (n_q, 1)
    j = torch.arange(n_k, device=device).unsqueeze(0)  # (1, n_k)
    m = j <= i + (n_k - n_q)  # (n_q, n_k)
    return _orient(m, convention)


def padding(key_valid: TensorLike, n_q: int, convention: str = "row", *, device=None) -> torch.Tensor:
    """Padding mask from a per-key validity vector (True/1 = real token, False/0 = PAD), C12.

    ``key_valid`` ``(n_k,)`` or ``(B, n_k)`` → row ``(n_q, n_k)`` or ``(B, n_q, n_k)``; every
    query ignores the PAD keys. Column convention gives the transpose of the last two axes.
    """
    n_q = _check_n("n_q", n_q)
    valid = as_bool_mask(key_valid, device=torch.device(device or "cpu"))
    if valid.dim() not in (1, 2):
        raise ValueError(f"key_valid must be (n_k,) or (B, n_k), got {shape_str(valid.shape)}")
    m = valid.unsqueeze(-2).expand(*valid.shape[:-1], n_q, valid.shape[-1])  # (..., n_q, n_k)
    if convention not in ("row", "column"):
        raise ValueError(f"unknown convention '{convention}'; choose 'row' or 'column'")
    return (m if convention == "row" else m.transpose(-1, -2)).clone()


def window(n: int, size: int, *, causal_only: bool = False, sinks: int = 0, convention: str = "row",
           device=None) -> torch.Tensor:
    """Sliding-window (local) mask ``(n, n)``: query i sees keys with |i − j| < size.

    With ``causal_only=True`` it sees only the ``size`` most recent keys, i − size < j ≤ i.
    ``sinks`` = s keeps the first s keys visible to every query as well (StreamingLLM's attention
    sinks), within causality when ``causal_only``: j < s (and j ≤ i). A decoder with this mask
    caches at most size + s keys.
    Symmetric windows are their own transpose, so the convention matters only for causal ones.
    """
    n = _check_n("n", n)
    size = _check_n("size", size)
    if isinstance(sinks, bool) or not isinstance(sinks, int) or sinks < 0:
        raise ValueError(f"sinks must be an integer ≥ 0, got {sinks!r}")
    i = torch.arange(n, device=device).unsqueeze(1)
    j = torch.arange(n, device=device).unsqueeze(0)
    m = (j <= i) & (i - j < size) if causal_only else (i - j).abs() < size  # (n, n)
    if sinks:
        sink = (j < sinks) & (j <= i) if causal_only else (j < sinks).expand(n, n)  # (n, n)
        m = m | sink
    return _orient(m, convention)


_causal, _window = causal, window  # the mask builders, under names self_attention's flags do not shadow


def self_attention(n: int, *, causal: bool = True, window: int | None = None, mask: TensorLike | None = None,
                   device=None) -> torch.Tensor | None:
    """A layer's self-attention mask (n, n), True = may attend, or None when nothing is masked: :func:`causal` and
    the symmetric :func:`window` (|i − j| < w; with causal, the w most recent keys) and ``mask`` (broadcastable to
    (…, n, n)), combined with "and"."""
    m = _causal(n, device=device) if causal else None  # (n, n)
    if window is not None:
        band = _window(n, int_at_least("window", window), device=device)  # (n, n): |i − j| < w
        m = band if m is None else m & band
    if mask is not None:
        user = as_bool_mask(mask, device=device)
        try:
            m = user & torch.ones(n, n, dtype=torch.bool, device=device) if m is None else m & user  # (…, n, n)
        except RuntimeError:
            raise ValueError(f"mask {shape_str(user.shape)} does not broadcast to the ({n}, {n}) weights") from None
    return m


def none(n_q: int, n_k: int | None = None, convention: str = "row", *, device=None) -> torch.Tensor:
    """The all-True mask (everything may attend)."""
    n_q = _check_n("n_q", n_q)
    n_k = n_q if n_k is None else _check_n("n_k", n_k)
    return _orient(torch.ones(n_q, n_k, dtype=torch.bool, device=device), convention)


def additive(mask: TensorLike, *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The additive form of a boolean mask: 0 where allowed, −∞ where forbidden (C11)."""
    m = as_bool_mask(mask, device=mask.device if isinstance(mask, torch.Tensor) else torch.device("cpu"))
    zeros = torch.zeros(m.shape, dtype=dtype, device=m.device)
    return zeros.masked_fill(~m, float("-inf"))


_causal_mask, _window_mask = causal, window  # combine() has parameters with these names


def combine(n_q: int, n_k: int | None = None, *, causal: bool = False, pad=(), blocked=(), window: int = 0,
            convention: str = "row") -> torch.Tensor | None:
    """The scenario's mask: causal & padding & custom blocked cells & a symmetric window.

    ``pad`` lists the PAD key indices; ``blocked`` lists (query, key) pairs that may not attend;
    ``window`` > 0 keeps |i − j| < window (square masks only). Indices outside the matrix are
    ignored (they belong to tokens that no longer exist). Returns ``None`` when nothing is
    masked, else a boolean ``(n_q, n_k)`` mask (row) or its transpose (column).
    """
    n_q = _check_n("n_q", n_q)
    n_k = n_q if n_k is None else _check_n("n_k", n_k)
    pad = sorted({int(j) for j in pad if 0 <= int(j) < n_k})
    blocked = sorted({(int(i), int(j)) for i, j in blocked if 0 <= int(i) < n_q and 0 <= int(j) < n_k})
    use_window = bool(window) and n_q == n_k
    if not (causal or pad or blocked or use_window):
        return None
    m = none(n_q, n_k)  # (n_q, n_k), all True
    if causal:
        m = m & _causal_mask(n_q, n_k)
    if pad:
        m = m & padding([j not in pad for j in range(n_k)], n_q)
    if use_window:
        m = m & _window_mask(n_q, int(window))
    for i, j in blocked:
        m[i, j] = False
    return _orient(m, convention)


# ---------------------------------------------------------------------------
# What a stack of layers can reach
# ---------------------------------------------------------------------------

def reach(mask: TensorLike, layers: int) -> torch.Tensor:
    """Which tokens can influence which after 1 … L layers with the same mask, ``(L, n, n)`` boolean (row).

    Layer 1 is the mask itself; token i at layer l + 1 reads every j it may attend to, and j already
    carries what it reached at layer l: R_{l+1} = (M · R_l > 0). Entry [l, i, k] is True when key k's
    information can reach query i after l + 1 layers.
    """
    layers = _check_n("layers", layers)
    m = as_bool_mask(mask, device=mask.device if isinstance(mask, torch.Tensor) else torch.device("cpu"))
    if m.dim() != 2 or m.shape[0] != m.shape[1]:
        raise ValueError(f"reach needs a square (n, n) self-attention mask, got {shape_str(m.shape)}")
    step = m.to(torch.float32)  # (n, n)
    out = [m]
    for _ in range(layers - 1):
        out.append((step @ out[-1].to(torch.float32)) > 0)  # (n, n): i → j → k
    return torch.stack(out)  # (L, n, n)


@dataclass(frozen=True, eq=False)
class WindowReach:
    """A causal sliding window of ``size`` keys (plus ``sinks``) stacked ``layers`` times, for n tokens.

    mask (n, n); reach (L, n, n) from :func:`reach`; for the last query (token n − 1), after each
    layer: ``farthest[l]`` how many tokens back the window chain reaches (sinks aside: the oldest
    reachable non-sink token), ``reachable[l]`` how many tokens it can draw on, ``all_reached_at``
    the first layer count that reaches every token (None if L layers do not). Without sinks a layer
    adds size − 1 tokens of reach, so L layers reach L·(size − 1) back (the "L × w" of the papers).
    """

    n: int
    size: int
    sinks: int
    layers: int
    mask: torch.Tensor
    reach: torch.Tensor
    farthest: tuple[int, ...]
    reachable: tuple[int, ...]
    all_reached_at: int | None


def window_reach(n: int, size: int, layers: int, *, sinks: int = 0) -> WindowReach:
    """What the last of n tokens can draw on through L layers of a causal window (computed from the masks)."""
    m = window(n, size, causal_only=True, sinks=sinks)  # (n, n)
    R = reach(m, layers)  # (L, n, n)
    last = R[:, n - 1, :]  # (L, n): what the last token reaches after each layer
    non_sink = last[:, min(sinks, n):]  # (L, n − s)
    oldest = [int(row.nonzero()[0]) + min(sinks, n) if row.any() else n - 1 for row in non_sink]
    counts = [int(row.sum()) for row in last]
    full = next((l + 1 for l, c in enumerate(counts) if c == n), None)
    return WindowReach(n=n, size=size, sinks=sinks, layers=layers, mask=m, reach=R,
                       farthest=tuple(n - 1 - o for o in oldest), reachable=tuple(counts), all_reached_at=full)

