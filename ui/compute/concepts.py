"""The Playground and the concept pages (score functions, multi-head, order and position, self vs cross, the block,
the random ViT): the scenario's one core call and the numbers beside it, cached."""

from __future__ import annotations

import numpy as np
import torch

import core
from attention_lab import scenario
from core import block, lab, pitfalls, vit
from core.playground.lab import PlaygroundTrace

from .. import memo
from .common import HOUR, to_cpu


@memo.cached(max_entries=48, ttl=HOUR)
def playground(X_q: np.ndarray, X_kv: np.ndarray, qkv: str, W_q: np.ndarray | None, W_k: np.ndarray | None,
               W_v: np.ndarray | None, Q: np.ndarray | None, K: np.ndarray | None, V: np.ndarray | None, score: str,
               params: dict[str, np.ndarray], scale: float | None, temperature: float, mask: np.ndarray | None,
               convention: str, device: str) -> PlaygroundTrace:
    """core.lab.playground, cached on its inputs; tensors come back on CPU."""
    tr = core.lab.playground(X_q, X_kv, qkv=qkv, W_q=W_q, W_k=W_k, W_v=W_v, Q=Q, K=K, V=V, score=score,
                             params=params or None, scale=scale, temperature=temperature, mask=mask,
                             convention=convention, device=device, dtype=None)
    return to_cpu(tr)


@memo.cached(max_entries=128, ttl=HOUR)
def embedding(kind: str, tokens: tuple[str, ...], d_model: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """attention_lab.scenario.embedding, cached: X for the tokens and the tokens not in the C18 table."""
    return scenario.embedding(kind, tokens, d_model, seed)


def token_vectors(tokens: tuple[str, ...], d_model: int, seed: int) -> torch.Tensor:
    """X (n, d_model) for a page that uses only the tokens, at a width of its own: the X the scenario builds for them
    (``attention_lab.scenario.embedding``, per-token seeded random vectors; cached by :func:`embedding`), a tensor."""
    return torch.from_numpy(embedding("random", tuple(tokens), d_model, seed)[0])


@memo.cached(max_entries=256, ttl=HOUR)
def projection(d_in: int, d_out: int, seed: int, name: str) -> np.ndarray:
    """attention_lab.scenario.projection, cached: a seeded (d_in, d_out) projection."""
    return scenario.projection(d_in, d_out, seed, name)


@memo.cached(max_entries=32, ttl=HOUR)
def multihead(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, W_o: np.ndarray, n_heads: int,
              causal: bool, score: str, device: str):
    """core.multi_head_attention (self-attention, one batch), cached; tensors come back on CPU."""
    mask = core.masks.causal(x.shape[-2]) if causal else None
    tr = core.multi_head_attention(x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads, mask=mask, score=score,
                                   device=device)
    return to_cpu(tr)


@memo.cached(max_entries=32, ttl=HOUR)
def multihead_checks(x: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, W_o: np.ndarray,
                     n_heads: int) -> dict:
    """The fused-QKV gap, the paper form beside unscaled MHA, and the no-transpose table of head 0."""
    paper = lab.paper_check(x[0], W_q, W_k, W_v, W_o, n_heads)
    return {"fused_gap": core.mechanism.multihead.fused_qkv_gap(x, W_q, W_k, W_v),
            "paper": to_cpu(paper),
            "wrong_output_gap": core.max_abs_diff(
                pitfalls.multi_head_without_transpose(x, n_heads=n_heads, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o),
                core.multi_head_attention(x, W_q=W_q, W_k=W_k, W_v=W_v, W_o=W_o, n_heads=n_heads).output),
            "scrambled": to_cpu(core.attention(*(pitfalls.split_heads_without_transpose(x @ W, n_heads)
                                                  for W in (W_q, W_k, W_v)))),
            "table": pitfalls.scramble_table(x.shape[-2], W_q.shape[1], n_heads, head=0)}


@memo.cached(max_entries=32, ttl=HOUR)
def normalized_dot(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    """q̂ᵀk̂ for every pair: core's dot score on L2-normalised vectors (equals the cosine score)."""
    Qn, Kn = core.l2_normalize(Q), core.l2_normalize(K)
    return core.attention(Qn, Kn, Kn, score="dot").scores.numpy()


@memo.cached(max_entries=4, ttl=HOUR)
def scaling_experiment(seed: int) -> dict:
    """The √d_k experiment: variance of qᵀk, peak weight, entropy and gradient against d."""
    e = core.experiments.scaling_experiment(seed=seed)
    return {f: getattr(e, f) if f in ("dims", "n_keys") else getattr(e, f).numpy()
            for f in ("dims", "n_keys", "var_dot", "dots", "max_weight", "max_weight_scaled", "entropy",
                      "entropy_scaled", "grad_norm", "grad_norm_scaled", "dots_scaled")}


@memo.cached(max_entries=16, ttl=HOUR)
def self_attention_weights(X: np.ndarray, scale: float | None) -> np.ndarray:
    """Weights with Q = K = V = X at the default 1/√d_k or a given scale."""
    return core.attention(X, X, X, scale=scale).weights.numpy()


@memo.cached(max_entries=32, ttl=HOUR)
def permutation_check(X: np.ndarray, perm: tuple[int, ...], W_q, W_k, W_v, *, positions: np.ndarray | None = None,
                      rope_base: float | None = None, alibi_slope: float | None = None) -> dict:
    """The one permutation experiment (``core.lab.permutation_check``), for the position page, the LLM positions
    page and their lessons: SA(PX), P·SA(X) and max |SA(PX) − P·SA(X)| with at most one kind of positions."""
    c = core.lab.permutation_check(X, perm, W_q=W_q, W_k=W_k, W_v=W_v, positions=positions, rope_base=rope_base,
                                   alibi_slope=alibi_slope)
    return {"sa_x": c.sa_x.numpy(), "sa_px": c.sa_px.numpy(), "p_sa_x": c.p_sa_x.numpy(), "max_diff": c.max_diff}


@memo.cached(max_entries=16, ttl=HOUR)
def seeded_block(X: np.ndarray, seed: int, n_heads: int, d_ff: int, activation: str, norm: str):
    """One Transformer block with seeded random weights and its FFN check."""
    return to_cpu(block.seeded_block(X, seed=seed, n_heads=n_heads, d_ff=d_ff, activation=activation, norm=norm))


@memo.cached(max_entries=16, ttl=HOUR)
def vit_attention(img: np.ndarray, P: int, cls: bool, seed: int) -> dict:
    """Patches of an image and the attention of every token over the patch grid (random weights)."""
    tr = vit.vit_attention(img, P, d_model=16, seed=seed, cls=cls)
    maps = np.stack([tr.attention_map(q).numpy() for q in range(tr.attn.weights.shape[0])])  # (tokens, rows, cols)
    return {"N": tr.patches.shape[0], "dim": tr.patches.shape[1], "grid": tr.grid, "maps": maps,
            "tokens": tuple(tr.tokens.shape)}


def position_table(kind: str, n: int, d: int, seed: int) -> torch.Tensor | None:
    """The added positions (n, d) of ``kind`` ("sinusoidal" or "learned", seeded); None for the other kinds."""
    if kind == "sinusoidal":
        return core.positional.sinusoidal(n, d)
    return core.positional.learned(n, d, seed=seed) if kind == "learned" else None


@memo.cached(max_entries=16, ttl=HOUR)
def one_token_projection(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """q = x W (d_out,): one token's embedding x (d_model,) through a linear layer W (d_model × d_out),
    as the Playground's projection step computes it (``core.lab.playground``)."""
    return core.lab.playground(x[None], qkv="projection", W_q=W, W_k=W, W_v=W).Q[0].numpy()


@memo.cached(max_entries=32, ttl=HOUR)
def added_positions(X: np.ndarray, kind: str, seed: int) -> np.ndarray:
    """X + P (n, d): the positions of ``kind`` ("sinusoidal" or "learned") added to every row (C22)."""
    x = torch.as_tensor(X)
    return core.positional.add(x, position_table(kind, *x.shape, seed).to(x.dtype)).numpy()
