"""Attention Lab's compute package: pure PyTorch, no UI.

    >>> import core
    >>> tr = core.attention(core.tokens.C18_EMBEDDING, core.tokens.C18_EMBEDDING, core.tokens.C18_EMBEDDING)
    >>> tr.weights.shape
    torch.Size([4, 4])

Inputs may be tensors, numpy arrays or nested lists; results are tensors on the inputs'
device. Every function returns a frozen dataclass trace of its intermediates.

Four sub-packages, in the order they build on each other (none imports a later one):

    core.mechanism   the one attention function and what it is made of: masks, positions (RoPE, ALiBi),
                     norms, heads (multi-head / grouped-query), the KV cache and its pages, tiled attention
    core.variants    attention as newer models change it, each a call of the one function: sinks, gates,
                     QK-norm, soft-capping, DIFF, MLA, sparse top-k, linear attention, the delta rule, schedules
    core.models      real and trained models on top: the decoder engine (SmolLM2), its GGUF reader, MiniLM,
                     the ViT, the seq2seq models, the transformer block
    core.playground  the lab's own experiments: the Playground's trace and facts, the C18 tokens, pitfalls,
                     the scaling experiment

``core.checks`` holds the input checks every module shares. The short names below (``core.attention``,
``core.masks``, ``core.lab``, …) are the public surface; the sub-package paths are where each thing lives.
"""

from core.mechanism import kv_cache, masks, positional
from core.mechanism.attention import (
    CONVENTIONS,
    SCORE_FUNCTIONS,
    AttentionTrace,
    attention,
    default_scale,
    l2_normalize,
    masked_softmax,
    max_abs_diff,
    transpose_gap,
)
from core.mechanism.chunked import TiledTrace, chunked_attention, tiled_attention
from core.mechanism.kv_cache import MODEL_PRESETS, KVCache, ModelShape, attend_with_cache, cached_decode, kv_cache_bytes
from core.mechanism.multihead import (
    MultiHeadTrace,
    fuse_qkv_weights,
    fused_qkv,
    kv_head_map,
    merge_heads,
    multi_head_attention,
    repeat_kv,
    split_heads,
)
from core.mechanism.norms import rms_norm
from core.mechanism.paged import PagedKVCache, PagedMemory, PagePool
from core.mechanism.positional import RopeTables, rope_tables
from core.models import block, pretrained, seq2seq, seq2seq_store, vit
from core.playground import experiments, lab, pitfalls, tokens
from core.seeded import seeded_normal
from core.variants import linear
from core.variants.block_index import BlockIndexTrace, SharedChoice, block_index, shared_choice
from core.variants.compressed import CompressedCache, CompressedTrace, compressed_attention, compressed_step
from core.variants.delta import ChunkedDeltaTrace, DeltaRuleTrace, gated_delta_rule, gated_delta_rule_chunked
from core.variants.gated_deltanet import DeltaNetCache, GatedDeltaNetTrace, KimiDeltaTrace, gated_deltanet, kimi_delta_attention
from core.variants.kept import Kept, kept
from core.variants.kv_sharing import SharedKVTrace, SharingPlan, gemma4_attention, proportional_rope, sharing_plan
from core.variants.linear import LinearAttentionTrace, linear_attention
from core.variants.mamba2 import Mamba2Cache, Mamba2Trace, mamba2
from core.variants.mla import LatentCache, MLACacheSize, MLAStep, MLATrace, mla, mla_cache_values, mla_decode
from core.variants.paper import PaperTrace, paper_attention
from core.variants.schedules import (
    ALL_SCHEDULES,
    DEEPSEEK_V4_FLASH,
    GEMMA2_2B,
    GEMMA3_27B,
    GEMMA4_E2B,
    GPT_OSS_120B,
    KIMI_LINEAR,
    LLAMA4_SCOUT,
    MAMBA2_2_8B,
    QWEN3_5_27B,
    QWEN3_NEXT,
    SCHEDULE_PRESETS,
    LayerKind,
    LayerSchedule,
    ScheduleReach,
    chunk_layer,
    global_layer,
    mla_layer,
    pooled_layer,
    repeat_pattern,
    schedule_of,
    schedule_reach,
    state_layer,
    window_layer,
)
from core.variants.sinks_gates import (
    DifferentialTrace,
    ModernAttentionTrace,
    differential_attention,
    lambda_init,
    modern_attention,
)
from core.variants.sparse import (
    IndexerTrace,
    SparseCost,
    SparseTopKTrace,
    lightning_indexer,
    sparse_topk_attention,
    sparse_topk_macs,
    topk_mask,
)

__all__ = [
    "AttentionTrace", "CONVENTIONS", "MultiHeadTrace", "PaperTrace", "SCORE_FUNCTIONS", "attention", "block",
    "chunked_attention", "default_scale", "experiments", "fuse_qkv_weights", "fused_qkv", "l2_normalize", "lab",
    "masked_softmax", "masks", "max_abs_diff", "merge_heads", "multi_head_attention", "paper_attention", "pitfalls", "positional",
    "pretrained", "seeded_normal", "seq2seq", "seq2seq_store", "split_heads", "tokens", "transpose_gap", "vit",
]
# attention as today's language models run it (issue 22)
__all__ += [
    "KVCache", "MODEL_PRESETS", "ModelShape", "TiledTrace", "attend_with_cache", "cached_decode", "kv_cache", "kv_cache_bytes",
    "LinearAttentionTrace", "kv_head_map", "linear", "linear_attention", "repeat_kv", "tiled_attention",
]

# modern attention variants (issue 33)
__all__ += [
    "DifferentialTrace", "ModernAttentionTrace", "differential_attention", "lambda_init", "modern_attention", "rms_norm",
    "MLACacheSize", "MLATrace", "mla", "mla_cache_values", "LatentCache", "MLAStep", "mla_decode",
    "ChunkedDeltaTrace", "DeltaRuleTrace", "gated_delta_rule", "gated_delta_rule_chunked",
    "DeltaNetCache", "GatedDeltaNetTrace", "gated_deltanet", "KimiDeltaTrace", "kimi_delta_attention",
    "Mamba2Cache", "Mamba2Trace", "mamba2",
    "SharedKVTrace", "SharingPlan", "gemma4_attention", "proportional_rope", "sharing_plan",
    "CompressedCache", "CompressedTrace", "compressed_attention", "compressed_step",
    "BlockIndexTrace", "SharedChoice", "block_index", "shared_choice",
    "Kept", "kept",
    "IndexerTrace", "SparseCost", "SparseTopKTrace", "lightning_indexer", "sparse_topk_attention", "sparse_topk_macs",
    "topk_mask",
    "GEMMA3_27B", "GPT_OSS_120B", "LLAMA4_SCOUT", "SCHEDULE_PRESETS", "LayerKind", "LayerSchedule", "ScheduleReach",
    "chunk_layer", "global_layer", "repeat_pattern", "schedule_reach", "window_layer",
    "ALL_SCHEDULES", "GEMMA2_2B", "QWEN3_NEXT", "QWEN3_5_27B", "DEEPSEEK_V4_FLASH", "GEMMA4_E2B", "KIMI_LINEAR", "MAMBA2_2_8B",
    "mla_layer", "pooled_layer", "state_layer", "schedule_of",
    "PagedKVCache", "PagedMemory", "PagePool",
]
# the one attention function's parts (issue 53)
__all__ += ["RopeTables", "rope_tables"]


def available_devices() -> list[str]:
    """'cpu' plus 'cuda' and/or 'mps' when present."""
    import torch

    out = ["cpu"]
    if torch.cuda.is_available():
        out.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        out.append("mps")
    return out


__all__.append("available_devices")
