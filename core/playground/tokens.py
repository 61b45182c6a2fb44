"""Tokens and their embeddings.

* :func:`tokenize` splits on any Unicode whitespace and keeps every token intact
  (Korean, emoji, punctuation and HTML-looking text are just strings).
* :func:`embed` gives each distinct token a deterministic vector: the same token gets the
  same vector for a given ``seed`` and ``d_model``, whatever else is in the sentence.
* The worked examples of the sources: C18 (001) and C19 (003).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from core.seeded import seeded_normal

# C18 (source 001): "나는 오늘 사과를 먹었다", 3-dim embeddings, Q = K = V = X
C18_TOKENS: tuple[str, ...] = ("나는", "오늘", "사과를", "먹었다")
C18_EMBEDDING: tuple[tuple[float, ...], ...] = (
    (1.0, 0.0, 1.0),  # 나는
    (0.0, 1.0, 1.0),  # 오늘
    (1.0, 1.0, 0.0),  # 사과를
    (1.0, 1.0, 1.0),  # 먹었다
)
# C19 (source 003): 7 tokens, Q, K, V of 7 × 3
C19_TOKENS: tuple[str, ...] = ("when", "you", "play", "the", "game", "of", "thrones")


def tokenize(text: str) -> list[str]:
    """Split ``text`` on whitespace; every non-space run is one token."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a string, got {type(text).__name__}")
    return text.split()


def c18_embedding(dtype=torch.float32, device=None) -> torch.Tensor:
    """X of the C18 example, (4, 3)."""
    return torch.tensor(C18_EMBEDDING, dtype=dtype, device=device)


def embed(
    tokens: Sequence[str], d_model: int, *, seed: int = 0, std: float = 1.0, dtype=torch.float32, device=None
) -> torch.Tensor:
    """Deterministic per-token embedding (n, d_model): row i depends only on (tokens[i], seed, d_model)."""
    if isinstance(d_model, bool) or not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"d_model must be a positive integer, got {d_model!r}")
    rows = [seeded_normal((d_model,), seed=seed, salt=f"token:{d_model}:{tok}", std=std, dtype=torch.float64)
            for tok in tokens]
    if not rows:
        return torch.zeros(0, d_model, dtype=dtype, device=device)
    return torch.stack(rows).to(dtype=dtype, device=device)  # (n, d_model)


def vocabulary(tokens: Sequence[str]) -> list[str]:
    """Distinct tokens in order of first appearance."""
    return list(dict.fromkeys(tokens))


def one_hot(tokens: Sequence[str], dtype=torch.float32, device=None) -> torch.Tensor:
    """One-hot rows over the sentence's own vocabulary: (n, |vocab|)."""
    vocab = {tok: i for i, tok in enumerate(vocabulary(tokens))}
    out = torch.zeros(len(tokens), len(vocab), dtype=dtype, device=device)
    for i, tok in enumerate(tokens):
        out[i, vocab[tok]] = 1.0
    return out


def projection(d_in: int, d_out: int, *, seed: int, name: str, dtype=torch.float32, device=None) -> torch.Tensor:
    """A seeded weight matrix (d_in, d_out) with N(0, 1/d_in) entries, e.g. ``projection(3, 2, seed=0, name="W_q")``."""
    for label, val in (("d_in", d_in), ("d_out", d_out)):
        if isinstance(val, bool) or not isinstance(val, int) or val < 1:
            raise ValueError(f"{label} must be a positive integer, got {val!r}")
    return seeded_normal((d_in, d_out), seed=seed, salt=f"projection:{name}", std=d_in ** -0.5, dtype=dtype, device=device)
