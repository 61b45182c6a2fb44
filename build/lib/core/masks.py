"""Boolean attention masks. **True = may attend** (PyTorch SDPA's convention).

Row convention: a mask has the weights' shape ``(n_q, n_k)``, entry (i, j) says whether
query i may look at key j. Column convention: ``(n_k, n_q)``, entry (i, j) says whether
query j may look at key i — the transpose. Combine masks with ``&`` (both must allow)
or ``|``. The additive form used inside softmax is :func:`additive` (0 / −∞).
"""

from __future__ import annotations

import torch

from ._tensor import TensorLike, as_bool_mask, shape_str


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


def window(n: int, size: int, *, causal_only: bool = False, convention: str = "row", device=None) -> torch.Tensor:
    """Sliding-window (local) mask ``(n, n)``: query i sees keys with |i − j| < size.

    With ``causal_only=True`` it sees only the ``size`` most recent keys, i − size < j ≤ i.
    Symmetric windows are their own transpose, so the convention matters only for causal ones.
    """
    n = _check_n("n", n)
    size = _check_n("size", size)
    i = torch.arange(n, device=device).unsqueeze(1)
    j = torch.arange(n, device=device).unsqueeze(0)
    m = (j <= i) & (i - j < size) if causal_only else (i - j).abs() < size  # (n, n)
    return _orient(m, convention)


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
