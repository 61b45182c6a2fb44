"""transformers' LlamaForCausalLM loaded from the language model's GGUF file: the reference of the decoder tests."""

from __future__ import annotations

import pytest
import torch

from core.models import decoder


def load_transformers_llama():
    """transformers' model and tokenizer from the same GGUF file (float32, eager attention); skips without them."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    pytest.importorskip("gguf")
    path = decoder.gguf_path()
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return hf, tok


def round_blocks_to_float16(hf) -> None:
    """Every block matrix of ``hf`` rounded to float16 and back, in place: the values core keeps
    (``core.models.decoder_load.LlamaLayer``); the embedding and the norms' gains stay float32, as in core."""
    with torch.no_grad():
        for block in hf.model.layers:
            a, m = block.self_attn, block.mlp
            for linear in (a.q_proj, a.k_proj, a.v_proj, a.o_proj, m.gate_proj, m.up_proj, m.down_proj):
                linear.weight.copy_(linear.weight.half().float())
