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

