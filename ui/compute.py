"""Cached wrappers around core: the only place pages reach compute. Results are copied by
st.cache_data, so no page can mutate a cached trace."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core
from core.lab import PlaygroundTrace


def _np(x):
    return None if x is None else np.asarray(x, dtype=np.float32)


@st.cache_data(max_entries=128, show_spinner=False)
def playground(
    X_q: np.ndarray,
    X_kv: np.ndarray,
    qkv: str,
    W_q: np.ndarray | None,
    W_k: np.ndarray | None,
    W_v: np.ndarray | None,
    Q: np.ndarray | None,
    K: np.ndarray | None,
    V: np.ndarray | None,
    score: str,
    params: dict[str, np.ndarray],
    scale: float | None,
    temperature: float,
    mask: np.ndarray | None,
    convention: str,
    device: str,
) -> PlaygroundTrace:
    """core.lab.playground, cached on its inputs; tensors come back on CPU."""
    tr = core.lab.playground(
        X_q, X_kv, qkv=qkv, W_q=W_q, W_k=W_k, W_v=W_v, Q=Q, K=K, V=V, score=score,
        params=params or None, scale=scale, temperature=temperature, mask=mask, convention=convention,
        device=device, dtype=None,
    )
    return _to_cpu(tr)


def _to_cpu(obj):
    import dataclasses

    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{f.name: _to_cpu(getattr(obj, f.name)) for f in dataclasses.fields(obj)})
    if isinstance(obj, dict):
        return {k: _to_cpu(v) for k, v in obj.items()}
    return obj


@st.cache_data(max_entries=256, show_spinner=False)
def embedding(kind: str, tokens: tuple[str, ...], d_model: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """X for the tokens: C18 table lookup, per-token seeded random, or one-hot. Returns (X, unknown tokens)."""
    if kind == "c18":
        X, unknown = core.lab.c18_lookup(tokens, fallback_seed=seed)
        return X.numpy(), unknown
    if kind == "onehot":
        return core.tokens.one_hot(tokens).numpy(), []
    return core.tokens.embed(tokens, d_model, seed=seed).numpy(), []


@st.cache_data(max_entries=256, show_spinner=False)
def projection(d_in: int, d_out: int, seed: int, name: str) -> np.ndarray:
    return core.tokens.projection(d_in, d_out, seed=seed, name=name).numpy()


def mask(n_q: int, n_k: int, causal: bool, pad: tuple[int, ...], blocked: tuple[tuple[int, int], ...]) -> np.ndarray | None:
    """Row-convention boolean mask (n_q, n_k) combining causal & padding & custom, or None."""
    if not (causal or pad or blocked):
        return None
    m = core.masks.none(n_q, n_k)
    if causal:
        m = m & core.masks.causal(n_q, n_k)
    if pad:
        valid = [i not in set(pad) for i in range(n_k)]
        m = m & core.masks.padding(valid, n_q)
    for i, j in blocked:
        if i < n_q and j < n_k:
            m[i, j] = False
    return m.numpy()


@st.cache_data(max_entries=64, show_spinner=False)
def multihead(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, W_o: np.ndarray, n_heads: int,
              causal: bool, score: str, device: str):
    """core.multi_head_attention (self-attention, one batch), cached; tensors come back on CPU."""
    n = x.shape[-2]
    mask = core.masks.causal(n) if causal else None
    tr = core.multi_head_attention(x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads, mask=mask, score=score,
                                   device=device)
    return _to_cpu(tr)
