"""transformers loading a decoder's GGUF file (SmolLM2's LlamaForCausalLM, Gemma 3's Gemma3ForCausalLM): the reference
of the decoder tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core.models import decoder


def load_transformers_gguf(path: Path):
    """transformers' model and tokenizer from the GGUF file at ``path`` (float32, eager attention, the file's values
    unchanged); skips without transformers, accelerate or gguf."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("accelerate")
    pytest.importorskip("gguf")
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, attn_implementation="eager", dtype=torch.float32).eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    return hf, tok


def load_transformers_llama():
    """transformers' SmolLM2 and its tokenizer from the language model's GGUF file."""
    return load_transformers_gguf(decoder.gguf_path())
