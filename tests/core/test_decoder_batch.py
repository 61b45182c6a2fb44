"""Continuous batching (core.decoder_batch): a sequence decoded in a batch with others of any lengths gets the
logits, the attention rows and the tokens it gets alone (core.decoder_forward.forward with its own cache), and
transformers' batched generate with left padding writes the same tokens."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from core import decoder, pretrained
from core.decoder_batch import SlotCache, decode_batch
from core.decoder_forward import forward

if importlib.util.find_spec(decoder.MODULE) is None:
    pytest.skip(f"the model package '{decoder.PACKAGE}' is not installed ({decoder.INSTALL_HINT})", allow_module_level=True)

PROMPTS = ["The capital of France is", "def add(a, b):\n    return", "나는 오늘 사과를", "1, 2, 3, 4,"]
ATOL = 1e-4


@pytest.fixture(scope="module")
def model():
    return pretrained.smollm2()


class Alone:
    """One sequence decoded by itself, greedily, through the one-sequence cached pass."""

    def __init__(self, model, text: str):
        self.P, self.c = model.weights_on("cpu"), model.config
        self.ids = model.encode(text)
        with torch.no_grad():
            self.out = forward(torch.tensor(self.ids), self.P, self.c, use_cache=True, keep_qkv=False, logits_for="last")

    @property
    def logits(self) -> torch.Tensor:
        return self.out.logits[-1]  # (vocab,)

    def step(self, token: int) -> None:
        with torch.no_grad():
            self.out = forward(torch.tensor([token]), self.P, self.c, caches=self.out.caches, keep_qkv=False,
                               logits_for="last")


def _run(model, joins: dict[int, list[str]], leaves: dict[int, list[str]], steps: int, slots: int = 6):
    """Decode greedily in one slot cache: ``joins[s]`` enter before step s, ``leaves[s]`` leave before it; every
    step compares each batched sequence with its own Alone twin. Returns the largest logit gap and the tokens."""
    cache = SlotCache(model.config, slots, 96)
    P, c = model.weights_on("cpu"), model.config
    running: dict[str, tuple[int, Alone]] = {}
    tokens: dict[str, list[int]] = {}
    gap = 0.0
    for s in range(steps):
        for text in leaves.get(s, []):
            cache.release(running.pop(text)[0])
        for text in joins.get(s, []):
            alone = Alone(model, text)
            slot = cache.free_slots()[-1]  # from the end: slots are not in the order sequences arrived
            cache.fill(slot, alone.out.caches)
            running[text] = (slot, alone)
            tokens[text] = [int(alone.logits.argmax())]
        names = list(running)
        ids = torch.tensor([tokens[n][-1] for n in names])
        with torch.no_grad():
            batch = decode_batch(ids, [running[n][0] for n in names], cache, P, c)
        for b, n in enumerate(names):
            alone = running[n][1]
            alone.step(tokens[n][-1])
            gap = max(gap, float((batch.logits[b] - alone.logits).abs().max()))
            t = batch.positions[b]
            row = alone.out.attentions[:, :, -1, :]  # (L, H, t + 1)
            assert row.shape[-1] == t + 1
            assert float((batch.attentions[:, b, :, : t + 1] - row).abs().max()) < ATOL
            assert float(batch.attentions[:, b, :, t + 1:].abs().sum()) == 0.0  # no weight on others' rows
            assert int(batch.logits[b].argmax()) == int(alone.logits.argmax())
            tokens[n].append(int(batch.logits[b].argmax()))
    return gap, tokens


def test_a_batch_of_four_lengths_equals_each_alone(model):
    gap, tokens = _run(model, {0: PROMPTS}, {}, steps=5)
    assert gap < ATOL, gap
    assert all(len(t) == 6 for t in tokens.values())


def test_a_sequence_joining_mid_batch_and_one_leaving_early(model):
    gap, tokens = _run(model, {0: PROMPTS[:2], 2: PROMPTS[2:3], 3: PROMPTS[3:]}, {2: PROMPTS[:1]}, steps=5)
    assert gap < ATOL, gap
    assert len(tokens[PROMPTS[0]]) == 3 and len(tokens[PROMPTS[2]]) == 4 and len(tokens[PROMPTS[3]]) == 3


def test_a_freed_slot_reused_by_a_shorter_sequence_hides_the_old_rows(model):
    """The new sequence's mask stops at its own length: the longer sequence's keys left in the slot get no weight."""
    gap, _ = _run(model, {0: [PROMPTS[1] * 3, PROMPTS[0]], 2: ["Hi"]}, {2: [PROMPTS[1] * 3]}, steps=4, slots=2)
    assert gap < ATOL, gap


def test_the_check_sees_a_wrong_row(model):
    """The comparison can fail: a slot whose length is off by one (its new key at the wrong row) is caught."""
    cache = SlotCache(model.config, 2, 64)
    a, b = Alone(model, PROMPTS[0]), Alone(model, PROMPTS[2])
    cache.fill(0, a.out.caches)
    cache.fill(1, b.out.caches)
    cache.lengths[1] -= 1  # forget one of its tokens
    with torch.no_grad():
        batch = decode_batch(torch.tensor([int(a.logits.argmax()), int(b.logits.argmax())]), [0, 1], cache,
                             model.weights_on("cpu"), model.config)
    b.step(int(b.logits.argmax()))
    assert float((batch.logits[1] - b.logits).abs().max()) > 1e-2


def test_bad_batches_are_refused(model):
    cache = SlotCache(model.config, 2, 8)
    P, c = model.weights_on("cpu"), model.config
    with pytest.raises(ValueError, match="each needs 1"):
        decode_batch(torch.tensor([1]), [0], cache, P, c)  # an empty slot
    with pytest.raises(ValueError, match="one new token per distinct slot"):
        decode_batch(torch.tensor([1, 2]), [0, 0], cache, P, c)
    with pytest.raises(ValueError, match="does not fit a slot of 8 positions"):
        cache.fill(0, Alone(model, "one two three four five six seven eight nine").out.caches)
    with pytest.raises(ValueError, match="at least 1 slot"):
        SlotCache(c, 0, 8)
    assert SlotCache(c, 3, 8).nbytes == SlotCache.bytes_for(c, 3, 8) == 2 * 30 * 3 * 3 * 8 * 64 * 4


@pytest.mark.slow
def test_batched_greedy_tokens_equal_transformers_left_padded_generate(model):
    """transformers' own batched generate (left padding, an attention mask) writes the same tokens as our batch."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    path = decoder.gguf_path()
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                           attn_implementation="eager", dtype=torch.float32).eval()
    ids = [model.encode(p) for p in PROMPTS]
    width = max(map(len, ids))
    pad = model.config.eos_id
    batch = torch.tensor([[pad] * (width - len(i)) + i for i in ids])
    seen = torch.tensor([[0] * (width - len(i)) + [1] * len(i) for i in ids])
    with torch.no_grad():
        want = hf.generate(batch, attention_mask=seen, max_new_tokens=6, do_sample=False, pad_token_id=pad,
                           eos_token_id=None)[:, width:].tolist()
    _, tokens = _run(model, {0: PROMPTS}, {}, steps=5)
    assert [tokens[p] for p in PROMPTS] == want
