"""The language model's weights in one memory file (core.models.decoder_memory.share_weights): the model reads the same
numbers from it, another mapping of the file (what the decoding process does, SmolLM2.from_shared) gives the same
logits without a copy, and the tensors it came from are emptied (never two copies at once)."""

from __future__ import annotations

import importlib.util
import os

import pytest
import torch

from core.models import decoder
from core.models.decoder_forward import forward
from core.models.decoder_load import gguf_path, read_config, read_weights
from core.models.decoder_memory import share_weights, shared_weights
from core.models.gguf_file import GGUFFile

if importlib.util.find_spec(decoder.MODULE) is None:
    pytest.skip(f"the model package '{decoder.PACKAGE}' is not installed ({decoder.INSTALL_HINT})", allow_module_level=True)
if not hasattr(os, "memfd_create"):
    pytest.skip("a memory file (memfd) is Linux's", allow_module_level=True)

TEXT = "The capital of France is"


def test_shared_weights_give_the_same_logits_and_the_originals_are_released():
    from core import pretrained

    model = pretrained.smollm2()
    before = model.next_token(TEXT, 64).probs.clone()
    fd, layout = model.share_memory()
    assert model.share_memory() == (fd, layout)  # once
    assert torch.equal(model.next_token(TEXT, 64).probs, before)
    other = decoder.SmolLM2.from_shared(fd, layout, *model.parts())  # a second mapping of the same file
    ids = torch.tensor(model.encode(TEXT))
    with torch.no_grad():
        logits = forward(ids, other.weights, other.config, keep_qkv=False, logits_for="last").logits[-1]
    assert torch.equal(torch.softmax(logits.float(), dim=-1), before)
    assert other.weights.E.q.data_ptr() != model.weights.E.q.data_ptr()  # mapped again, same numbers (its Q8_0 blocks)
    assert os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:attention-lab-weights")
    assert other.weights.nbytes() <= os.fstat(fd).st_size < other.weights.nbytes() + 64 * len(layout)  # + alignment
    assert [t.dtype for t in other.weights.tensors()] == [t.dtype for t in model.weights.tensors()]  # int8 blocks kept


def test_sharing_empties_the_tensors_it_copied_and_refuses_what_it_cannot_share():
    reader = GGUFFile(gguf_path())
    w = read_weights(reader, read_config(reader))
    n = sum(t.numel() for t in w.tensors())
    fd, layout, shared = share_weights(w)
    try:
        assert all(t.numel() == 0 for t in w.tensors())  # released as copied
        assert sum(t.numel() for t in shared.tensors()) == n
        assert shared.E.q.dtype == torch.int8 and shared.E.scale.dtype == torch.float16  # the embedding's blocks travel
        again = shared_weights(fd, layout)
        assert all(torch.equal(a, b) for a, b in zip(again.tensors(), shared.tensors(), strict=True))
    finally:
        os.close(fd)
    with pytest.raises(ValueError, match="only contiguous float32 or float16"):
        share_weights(type(w)(E=torch.zeros(4, 2).T, g_final=torch.zeros(2), layers=()))
    with pytest.raises(ValueError, match="only contiguous float32 or float16"):
        share_weights(type(w)(E=torch.zeros(4, 2, dtype=torch.float64), g_final=torch.zeros(2), layers=()))


def test_the_writing_copy_has_the_token_strings_not_the_tokenizer():
    """What the decoding process gets (SmolLM2.parts): the token strings, not the tokenizer (32 MB of its memory
    unpickled). It writes the same token texts and the same steps, and refuses to read text."""
    from core import pretrained

    model = pretrained.smollm2()
    config, vocab, byte_of = model.parts()
    assert not any(type(p).__module__.startswith("tokenizers") for p in (config, vocab, byte_of))
    fd, layout = model.share_memory()
    other = decoder.SmolLM2.from_shared(fd, layout, config, vocab, byte_of)
    ids = model.encode("서울은 한국의 수도입니다 <|im_end|> 42")
    assert other.tokens(ids) == model.tokens(ids) and other.decode(ids) == model.decode(ids)
    assert [other.is_byte_piece(i) for i in ids] == [model.is_byte_piece(i) for i in ids]
    logits, attention = torch.randn(config.vocab_size, generator=torch.Generator().manual_seed(0)), torch.zeros(1, 1, 3)
    mine, theirs = (m.choose(logits, attention, 3, 0.8, 40, None, torch.Generator().manual_seed(1)) for m in (model, other))
    assert mine.token_id == theirs.token_id and mine.token == theirs.token and mine.top_tokens == theirs.top_tokens
    with pytest.raises(RuntimeError, match="token strings"):
        other.encode(TEXT)
    with pytest.raises(ValueError, match="vocab"):
        decoder.SmolLM2(config, other.weights, None, byte_of)
