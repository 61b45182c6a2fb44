r"""Small, seeded, *untrained* layers for the delta-rule page (issue 55, point 3): one Gated DeltaNet layer, one Kimi
Delta Attention layer and one Mamba-2 mixer over the same embeddings, each through its core function
(:func:`core.variants.gated_deltanet.gated_deltanet`, :func:`~core.variants.gated_deltanet.kimi_delta_attention`,
:func:`core.variants.mamba2.mamba2`); nothing here computes attention itself.

Sizes (:data:`DEMO`): d_model 8, 1 key head and 2 value heads of d_k = d_v = 4 for GDN (fewer key heads than value
heads); 2 heads of d = 4 for KDA; 2 heads of P = 4 with one group of N = 4 for Mamba-2; conv kernel κ = 4.
Weights: N(0, 1/d_in) matrices and N(0, 1) vectors and embeddings (one per distinct token), all
:func:`core.seeded.seeded_normal` named by salt, so a seed gives the same layer on every machine.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.mechanism.positional import rope_tables
from core.seeded import seeded_normal
from core.variants.block_index import block_index, shared_choice
from core.variants.gated_deltanet import GatedDeltaNetTrace, KimiDeltaTrace, gated_deltanet, kimi_delta_attention
from core.variants.mamba2 import Mamba2Trace, mamba2


@dataclass(frozen=True)
class DemoSizes:
    d_model: int = 8
    d: int = 4  # d_k = d_v (GDN, KDA); P = N (Mamba-2)
    key_heads: int = 1
    value_heads: int = 2
    kappa: int = 4


DEMO = DemoSizes()
BETA_MAXES = (1.0, 2.0)  # β in (0, 1), or (0, 2) with negative eigenvalues (OLMo's option)
A_LOG_CENTRE = -1.5  # the untrained layers' log rate: fades of a few tokens' memory, readable on a map


def weight(d_in: int, d_out: int, seed: int, name: str) -> torch.Tensor:
    """The seeded N(0, 1/d_in) matrix (d_in, d_out) named ``name`` (float64)."""
    return seeded_normal((d_in, d_out), seed=seed, salt=f"demo.{name}", std=d_in ** -0.5, dtype=torch.float64)


_w = weight


def _v(shape, seed: int, name: str) -> torch.Tensor:
    return seeded_normal(shape, seed=seed, salt=f"demo.{name}", dtype=torch.float64)


def _a_log(n: int, seed: int, name: str) -> torch.Tensor:
    """A_log around −1.5 (a rate exp(A_log) ≈ 0.2): untrained fades that neither vanish nor stay at 1 on screen."""
    return _v((n,), seed, name) / 2 + A_LOG_CENTRE


def demo_x(tokens, seed: int) -> torch.Tensor:
    """The tokens' seeded embeddings as a batch of one, (1, n, d_model), float64: a token's row depends on the token
    and the seed only."""
    rows = [seeded_normal((DEMO.d_model,), seed=seed, salt=f"demo.x.{tok}", dtype=torch.float64) for tok in tokens]
    return torch.stack(rows)[None]


def gdn_demo(tokens, seed: int, beta_max: float = 1.0) -> GatedDeltaNetTrace:
    """One untrained Gated DeltaNet layer over the tokens (β_max 1 or 2; ValueError otherwise, from core)."""
    s, D = DEMO, DEMO.d_model
    C = 2 * s.key_heads * s.d + s.value_heads * s.d
    return gated_deltanet(
        demo_x(tokens, seed), W_q=_w(D, s.key_heads * s.d, seed, "gdn.W_q"), W_k=_w(D, s.key_heads * s.d, seed, "gdn.W_k"),
        W_v=_w(D, s.value_heads * s.d, seed, "gdn.W_v"), W_z=_w(D, s.value_heads * s.d, seed, "gdn.W_z"),
        W_b=_w(D, s.value_heads, seed, "gdn.W_b"), W_a=_w(D, s.value_heads, seed, "gdn.W_a"),
        conv_taps=_v((C, s.kappa), seed, "gdn.taps") / s.kappa, A_log=_a_log(s.value_heads, seed, "gdn.A_log"),
        dt_bias=_v((s.value_heads,), seed, "gdn.dt_bias"), norm_weight=torch.ones(s.d, dtype=torch.float64),
        W_out=_w(s.value_heads * s.d, D, seed, "gdn.W_out"), n_key_heads=s.key_heads, n_value_heads=s.value_heads,
        beta_max=beta_max)


def kda_demo(tokens, seed: int) -> KimiDeltaTrace:
    """One untrained Kimi Delta Attention layer over the tokens: a decay per key channel."""
    s, D, H = DEMO, DEMO.d_model, DEMO.value_heads
    return kimi_delta_attention(
        demo_x(tokens, seed), W_q=_w(D, H * s.d, seed, "kda.W_q"), W_k=_w(D, H * s.d, seed, "kda.W_k"),
        W_v=_w(D, H * s.d, seed, "kda.W_v"), conv_taps=_v((3 * H * s.d, s.kappa), seed, "kda.taps") / s.kappa,
        W_fa=_w(D, s.d, seed, "kda.W_fa"), W_fb=_w(s.d, H * s.d, seed, "kda.W_fb"),
        dt_bias=_v((H * s.d,), seed, "kda.dt_bias") - 2,
        A_log=_a_log(H, seed, "kda.A_log"), W_b=_w(D, H, seed, "kda.W_b"),  # dt_bias − 2: slower untrained fades
        W_ga=_w(D, s.d, seed, "kda.W_ga"), W_gb=_w(s.d, H * s.d, seed, "kda.W_gb"),
        norm_weight=torch.ones(s.d, dtype=torch.float64), W_out=_w(H * s.d, D, seed, "kda.W_out"), n_heads=H)


def mamba2_demo(tokens, seed: int) -> Mamba2Trace:
    """One untrained Mamba-2 mixer over the tokens; its scan is core's gated linear attention with q = C, k = B, v = x."""
    s, D, H, G = DEMO, DEMO.d_model, DEMO.value_heads, 1
    inner, C = H * s.d, H * s.d + 2 * G * s.d
    return mamba2(
        demo_x(tokens, seed), W_z=_w(D, inner, seed, "m2.W_z"), W_xBC=_w(D, C, seed, "m2.W_xBC"),
        W_dt=_w(D, H, seed, "m2.W_dt"), conv_taps=_v((C, s.kappa), seed, "m2.taps") / s.kappa,
        dt_bias=_v((H,), seed, "m2.dt_bias"), A_log=_a_log(H, seed, "m2.A_log"), D=torch.ones(H, dtype=torch.float64),
        norm_weight=torch.ones(inner, dtype=torch.float64), W_out=_w(inner, D, seed, "m2.W_out"), n_heads=H, n_groups=G)


@dataclass(frozen=True)
class Fades:
    """What each layer keeps of its state per token, head 0: GDN one α_t for every key channel (n,); KDA one per
    channel (n, d); Mamba-2 exp(Δ_t A) (n,). Each is exp of the layer's own log decay (its trace)."""

    gdn: torch.Tensor
    kda: torch.Tensor
    mamba2: torch.Tensor


def fades(gdn: GatedDeltaNetTrace, kda: KimiDeltaTrace, m2: Mamba2Trace, head: int = 0) -> Fades:
    """The three layers' decays for one head, from their traces (GDN and Mamba-2 keep α itself; KDA its log)."""
    return Fades(gdn=gdn.decay[0, head], kda=torch.exp(kda.log_decay[0, head]), mamba2=m2.scan.decay[0, head])


def cache_values(trace: GatedDeltaNetTrace | KimiDeltaTrace | Mamba2Trace) -> tuple[int, int]:
    """The layer's cache for one sequence: (numbers in its states, numbers in the conv's last κ − 1 inputs)."""
    return int(trace.cache.state[0].numel()), int(trace.cache.conv[0].numel())


# ------------------------------------------------------------------ blocks and a shared choice (the sparse page)
INDEXER_PATTERNS = ("FSSF", "FSFS", "FFFF", "FSSS")  # F: a layer with its own indexer, S: it reads the last F's choice
INDEX_HEADS, INDEX_D, INDEX_ROPE_BASE = 2, 4, 10000.0  # the untrained indexers' sizes


@dataclass(frozen=True)
class SharedBlocks:
    """Untrained block indexers on a stack of layers (``pattern``: F runs its own, S copies the last F's choice,
    :func:`core.variants.block_index.shared_choice`): chosen_blocks[l] (n, n_blocks) and chosen[l] (n, n) of layer
    l, scores[l] (n, n_blocks) of the layer whose choice it reads; source[l] that layer."""

    source: tuple[int, ...]
    scores: tuple[torch.Tensor, ...]
    chosen_blocks: tuple[torch.Tensor, ...]
    chosen: tuple[torch.Tensor, ...]
    block: int
    n_blocks: int


def shared_blocks_demo(tokens, seed: int, block: int, keep_blocks: int, pattern: str) -> SharedBlocks:
    """Each F layer's block indexer (c = ``block`` tokens, the top ``keep_blocks`` closed blocks) on the tokens; each S
    layer reads the choice of the last F before it. ValueError for an unknown pattern, a first layer that is S (no
    choice to read), or more blocks than the sequence closes."""
    if not pattern or set(pattern) - {"F", "S"}:
        raise ValueError(f"a layer pattern is F and S letters, got {pattern!r}")
    plan = shared_choice(["full" if k == "F" else "shared" for k in pattern])
    x = demo_x(tokens, seed)
    n, n_blocks = x.shape[1], x.shape[1] // max(1, block)
    if not 1 <= keep_blocks <= n_blocks:
        raise ValueError(f"top-k of {keep_blocks} blocks, but {n} tokens close {n_blocks} blocks of {block}")
    rope = rope_tables(n, INDEX_D, base=INDEX_ROPE_BASE, dtype=torch.float64)
    own = {layer: block_index(x, W_q=_w(DEMO.d_model, INDEX_HEADS * INDEX_D, seed, f"bi.{layer}.W_q"),
                              W_k=_w(DEMO.d_model, INDEX_D, seed, f"bi.{layer}.W_k"),
                              q_norm=torch.ones(INDEX_D, dtype=torch.float64), k_norm=torch.ones(INDEX_D, dtype=torch.float64),
                              n_heads=INDEX_HEADS, block=block, budget=keep_blocks * block, rope=rope)
           for layer in sorted(set(plan.source))}
    return SharedBlocks(plan.source, tuple(own[s].scores[0] for s in plan.source),
                        tuple(own[s].chosen_blocks[0] for s in plan.source), tuple(own[s].chosen[0] for s in plan.source),
                        block, n_blocks)


def closed_blocks(n: int, block: int) -> int:
    """How many whole blocks of ``block`` tokens n tokens close (at least 1 for the controls' bound)."""
    return max(1, n // max(1, block))
