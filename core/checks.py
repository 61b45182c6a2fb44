"""Turning learner input (tensors, numpy arrays, nested lists) into checked tensors.

Every public function in ``core`` funnels its inputs through :func:`as_tensor` so the
rules are the same everywhere:

* torch tensors keep their dtype and device (unless ``device=``/``dtype=`` is given);
* numpy arrays keep their float dtype; nested lists of floats, and integers or booleans
  of any origin, become the default floating dtype (``torch.get_default_dtype()``,
  float32 unless changed) — as ``torch.tensor`` does;
* non-numeric or ragged input raises :class:`ValueError` with the argument's name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

TensorLike = Any  # torch.Tensor | np.ndarray | nested sequences of numbers

_FLOAT_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def shape_str(shape: Sequence[int]) -> str:
    """``(4, 3)`` style shape text used in every error message."""
    parts = [str(int(s)) for s in shape]
    return "(" + parts[0] + ",)" if len(parts) == 1 else "(" + ", ".join(parts) + ")"


def _raw_tensor(x: TensorLike, name: str) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    if x is None:
        raise ValueError(f"{name} is missing")
    try:
        arr = np.asarray(x)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise ValueError(f"{name} is not a rectangular array of numbers: {exc}") from None
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise ValueError(f"{name} must contain only numbers (got dtype {arr.dtype})")
    if not isinstance(x, np.ndarray) and arr.dtype.kind == "f":
        # nested lists follow torch.tensor: Python floats become the default dtype
        arr = arr.astype(torch_to_numpy_dtype(torch.get_default_dtype()))
    return torch.from_numpy(np.ascontiguousarray(arr))


def torch_to_numpy_dtype(dtype: torch.dtype):
    return torch.empty((), dtype=dtype).numpy().dtype


def resolve_device(device: str | torch.device | None, *inputs: Any) -> torch.device:
    """The explicit ``device`` if given, else the device of the first tensor input, else CPU."""
    if device is not None:
        return torch.device(device)
    for x in inputs:
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")


def resolve_dtype(dtype: torch.dtype | None, *tensors: torch.Tensor) -> torch.dtype:
    """Common floating dtype: the widest float among the inputs, or the default float dtype."""
    if dtype is not None:
        if dtype not in _FLOAT_DTYPES:
            raise ValueError(f"dtype must be a floating type, got {dtype}")
        return dtype
    floats = [t.dtype for t in tensors if t.dtype in _FLOAT_DTYPES]
    if not floats:
        return torch.get_default_dtype()
    out = floats[0]
    for d in floats[1:]:
        out = torch.promote_types(out, d)
    return out


def as_tensors(
    named: dict[str, TensorLike],
    *,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    finite: bool = True,
) -> dict[str, torch.Tensor]:
    """Convert several named inputs to tensors sharing one float dtype and one device.

    Raises ValueError naming the argument when an input is not numeric or (with
    ``finite=True``) contains NaN or ±inf.
    """
    dev = resolve_device(device, *named.values())
    raw = {name: _raw_tensor(x, name) for name, x in named.items()}
    dt = resolve_dtype(dtype, *raw.values())
    out = {}
    for name, t in raw.items():
        t = t.to(device=dev, dtype=dt)
        if finite and t.numel() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{name} {shape_str(t.shape)} contains NaN or infinity")
        out[name] = t
    return out


def as_tensor(
    x: TensorLike,
    name: str = "input",
    *,
    device: str | torch.device | None = None,
    dtype: torch.dtype | None = None,
    finite: bool = True,
) -> torch.Tensor:
    """Single-input form of :func:`as_tensors`."""
    return as_tensors({name: x}, device=device, dtype=dtype, finite=finite)[name]


def as_bool_mask(mask: TensorLike, *, device: torch.device) -> torch.Tensor:
    """A boolean mask (True = may attend). 0/1 numbers are accepted; anything else is refused."""
    if isinstance(mask, torch.Tensor) and mask.dtype == torch.bool:
        return mask.to(device)
    t = _raw_tensor(mask, "mask")
    if t.dtype != torch.bool:
        if t.numel() and not bool(((t == 0) | (t == 1)).all()):
            raise ValueError("mask must be boolean (True = may attend) or contain only 0 and 1")
        t = t != 0
    return t.to(device)


def int_at_least(name: str, n, *, minimum: int = 1) -> int:
    """n itself when it is an integer ≥ ``minimum`` (not a bool), else ValueError naming it."""
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum:
        raise ValueError(f"{name} must be an integer ≥ {minimum}, got {n!r}")
    return n


def positive_number(name: str, value) -> float:
    """value as a float when it is a positive finite number, else ValueError naming it."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return v


def given(**named) -> dict:
    """The keyword arguments that are not None (the optional tensors a caller passed)."""
    return {k: v for k, v in named.items() if v is not None}


def qkv_tensors(q: TensorLike, k: TensorLike, v: TensorLike, *, device=None, dtype=None):
    """Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v) as checked tensors, or ValueError naming the shapes."""
    t = as_tensors({"Q": q, "K": k, "V": v}, device=device, dtype=dtype)
    Q, K, V = t["Q"], t["K"], t["V"]
    if min(Q.dim(), K.dim(), V.dim()) < 2:
        raise ValueError(f"Q, K, V must be (..., n, d): {shape_str(Q.shape)}, {shape_str(K.shape)}, {shape_str(V.shape)}")
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(f"K has d_k={K.shape[-1]} but Q has d_k={Q.shape[-1]}")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"K has n_k={K.shape[-2]} keys but V has {V.shape[-2]} values")
    return Q, K, V
