"""Attention Lab's compute package: pure PyTorch, no UI.

    >>> import core
    >>> tr = core.attention(core.tokens.C18_EMBEDDING, core.tokens.C18_EMBEDDING, core.tokens.C18_EMBEDDING)
    >>> tr.weights.shape
    torch.Size([4, 4])

Inputs may be tensors, numpy arrays or nested lists; results are tensors on the inputs'
device. Every function returns a frozen dataclass trace of its intermediates.
"""

from . import (
    block,
    experiments,
    kv_cache,
    lab,
    linear,
    masks,
    pitfalls,
    positional,
    pretrained,
    seq2seq,
    seq2seq_store,
    tokens,
    vit,
)
from .attention import (
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
from .chunked import TiledTrace, chunked_attention, tiled_attention
from .kv_cache import MODEL_PRESETS, KVCache, ModelShape, attend_with_cache, cached_decode, kv_cache_bytes
from .linear import LinearAttentionTrace, linear_attention
from .modern import DifferentialTrace, ModernAttentionTrace, differential_attention, lambda_init, modern_attention, rms_norm
from .modern_delta import ChunkedDeltaTrace, DeltaRuleTrace, gated_delta_rule, gated_delta_rule_chunked
from .modern_layers import (
    GEMMA3_27B,
    GPT_OSS_120B,
    LLAMA4_SCOUT,
    SCHEDULE_PRESETS,
    LayerKind,
    LayerSchedule,
    ScheduleReach,
    chunk_layer,
    global_layer,
    repeat_pattern,
    schedule_reach,
    window_layer,
)
from .modern_mla import MLACacheSize, MLATrace, mla, mla_cache_values
from .modern_paged import PagedKVCache, PagedMemory, PagePool
from .modern_sparse import (
    IndexerTrace,
    SparseCost,
    SparseTopKTrace,
    lightning_indexer,
    sparse_topk_attention,
    sparse_topk_macs,
    topk_mask,
)
from .multihead import (
    MultiHeadTrace,
    fuse_qkv_weights,
    fused_qkv,
    kv_head_map,
    merge_heads,
    multi_head_attention,
    repeat_kv,
    split_heads,
)
from .paper import PaperTrace, paper_attention
from .seeded import seeded_normal

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
    "MLACacheSize", "MLATrace", "mla", "mla_cache_values",
    "ChunkedDeltaTrace", "DeltaRuleTrace", "gated_delta_rule", "gated_delta_rule_chunked",
    "IndexerTrace", "SparseCost", "SparseTopKTrace", "lightning_indexer", "sparse_topk_attention", "sparse_topk_macs",
    "topk_mask",
    "GEMMA3_27B", "GPT_OSS_120B", "LLAMA4_SCOUT", "SCHEDULE_PRESETS", "LayerKind", "LayerSchedule", "ScheduleReach",
    "chunk_layer", "global_layer", "repeat_pattern", "schedule_reach", "window_layer",
    "PagedKVCache", "PagedMemory", "PagePool",
]


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
