"""AppTest: the language-model page (SmolLM2-135M; Gemma 3 270M, the Korean page's model) against
core.models.decoder: the numbers on screen are the model's own
(next-token bars, the model view, the written tokens, the changed mechanism), in both languages;
bad prompts give a message, never a traceback; the model is loaded once per server."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from pathlib import Path

import numpy as np
import pytest

from core import pretrained
from core.models import decoder
from ui import compute, state
from ui.i18n import t, table
from ui.widgets.model_views import model_view_weights

from .helpers import heat, no_errors, page, spec

try:
    decoder.gguf_path()
except decoder.ModelNotInstalled:
    pytest.skip(f"the model package is not installed ({decoder.INSTALL_HINT})", allow_module_level=True)

LM = "app_pages/language_model.py"
KEYS = state.LANGUAGE_MODEL
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def model():
    return pretrained.smollm2()


def _run_with(at, **values):
    for key, value in values.items():
        at.session_state[key] = value
    return at.run()


def _written(at, n: int, T: float = 0.0, k=None, p=None, seed: int = 0):
    """Rerun once the server's batch has written these n tokens (compute.lm_generate returns when it has; the page's
    own run waits for the same writing, so both read one result)."""
    compute.lm_generate(PROMPT, n, T, k, p, seed, "cpu")
    return at.run()


def _bar_values(at, key):
    return np.array([row["segments"][0]["value"] for row in spec(at, key)["rows"]])


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_page_shows_the_models_own_numbers(lang, model):
    at = page(LM, run=False)
    _run_with(at, **{state.setting("lang"): lang, KEYS.model: "smollm2", KEYS.prompt: PROMPT})
    no_errors(at)
    tr = table(lang)
    assert at.title[0].value.endswith(tr["page.language_model.title"])
    nt = model.next_token(PROMPT)
    labels = [row["label"] for row in spec(at, KEYS.bars_model)["rows"]]
    assert labels[0] == "␣Paris" and len(labels) == 10
    assert np.abs(_bar_values(at, KEYS.bars_model) - nt.top_probs.numpy()).max() <= 0.5e-3 + 1e-7
    want = decoder.next_token_probs(nt.probs.log(), 0.7)[nt.top_ids].numpy()  # the default temperature 0.7
    assert np.abs(_bar_values(at, KEYS.bars_sampled) - want).max() <= 0.5e-3 + 1e-6
    s = spec(at, KEYS.grid)
    assert (s["layers"], s["heads"], s["n"]) == (30, 9, 5)
    trace = model.trace(PROMPT)
    assert np.abs(model_view_weights(s) - trace.attentions.numpy()).max() <= 0.5e-4 + 1e-7
    assert any(tr["lm.steps.check"].split("{")[0] in str(x.value) for x in at.success)  # the pipeline reproduces the head


def test_writing_one_token_then_more_matches_generate(model):
    at = page(LM)
    _run_with(at, **{KEYS.temperature: 0.0})
    at.button(key=KEYS.one).click().run()
    _written(at, 1)
    no_errors(at)
    assert at.session_state[KEYS.n_new] == 1
    assert PROMPT + " Paris" in at.code[0].value
    at.button(key=KEYS.run).click().run()  # write up to 16 (the slider's default)
    _written(at, 16)
    no_errors(at)
    g = model.generate(PROMPT, 16, 0.0, max_tokens=compute.LM_MAX_TOKENS)
    assert at.code[0].value == g.text
    assert at.session_state[KEYS.n_new] == 16
    # the cache after the last step, beside one K/V head per query head: one table of core's numbers
    last, c = g.steps[-1], model.config
    mha = decoder.cache_bytes(c, last.cache_positions, kv_heads=c.n_heads)
    assert c.n_heads // c.n_kv_heads == 3
    figures = [m.value for m in at.markdown if m.value.startswith("| " + t("lm.cache.tokens", "en") + " |")]
    assert len(figures) == 1
    assert figures[0].splitlines()[-1] == (f"| {last.cache_positions} | {last.cache_bytes / 1024:.0f} KiB | "
                                           f"{mha / 1024:.0f} KiB (×3) |")
    at.button(key=KEYS.reset).click().run()
    assert at.session_state[KEYS.n_new] == 0 and not at.code


def test_seeded_sampling_on_the_page_repeats(model):
    at = page(LM)
    _run_with(at, **{KEYS.temperature: 1.0, KEYS.seed: 5, KEYS.n_new: 6})
    _written(at, 6, 1.0, seed=5)
    no_errors(at)
    g = model.generate(PROMPT, 6, 1.0, None, None, 5, max_tokens=compute.LM_MAX_TOKENS)
    assert at.code[0].value == g.text
    again = page(LM)
    _run_with(again, **{KEYS.temperature: 1.0, KEYS.seed: 5, KEYS.n_new: 6})  # the server's result, kept
    assert again.code[0].value == g.text


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_korean_is_shown_as_byte_tokens_and_why(lang):
    at = page(LM, run=False)
    _run_with(at, **{state.setting("lang"): lang, KEYS.prompt: "나는 오늘 사과를", KEYS.model: "smollm2"})
    no_errors(at)
    n = sum(decoder_model_bytes("나는 오늘 사과를"))
    assert any(t("lm.bytes_note", lang, n=n) == i.value for i in at.info)  # t: "UTF-8(으)로" read as UTF-8로
    assert any(r"\<EB\>" in m.value for m in at.markdown)  # the byte pieces, escaped as text


def decoder_model_bytes(text: str) -> list[bool]:
    m = pretrained.smollm2()
    return [m.is_byte_piece(i) for i in m.encode(text)]


def test_a_layer_off_changes_the_next_token_as_core_says(model):
    at = page(LM)
    _run_with(at, **{KEYS.off_layers: [0]})
    no_errors(at)
    want = model.next_token(PROMPT, mech=decoder.Mechanism(layers_off=frozenset({0})))
    assert [row["label"] for row in spec(at, KEYS.bars_after)["rows"]] == want.top_tokens
    assert np.abs(_bar_values(at, KEYS.bars_after) - want.top_probs.numpy()).max() <= 0.5e-3 + 1e-7
    assert [row["label"] for row in spec(at, KEYS.bars_before)["rows"]][0] == "␣Paris"


def test_heads_table_measures_sinks_previous_and_induction_as_core(model):
    at = page(LM)
    _run_with(at, **{KEYS.running: True})
    no_errors(at)
    en = table("en")
    df = at.dataframe[0].value.sort_values(en["lm.col.induction"], ascending=False, kind="stable")
    assert len(df) == 270
    tr = model.trace(PROMPT)
    hs = decoder.head_stats(tr.attentions)
    ind = decoder.induction(model, 32, 0)
    row = df.iloc[0]  # the strongest induction head
    l, h = int(row[en["tm.col.layer"]]), int(row[en["tm.col.head"]])
    assert (l, h) == divmod(int(ind.scores.argmax()), 9)
    assert abs(row[en["lm.col.induction"]] - float(ind.scores[l, h])) < 1e-6
    assert abs(row[en["lm.col.sink"]] - float(hs.sink[l, h])) < 1e-6
    assert abs(row[en["lm.col.previous"]] - float(hs.previous[l, h])) < 1e-6


@pytest.mark.parametrize("prompt,message", [
    ("x " * 10_000, "lm.too_long"),  # 20,000 characters
    ("", "lm.empty"),
    ("<script>alert('x')</script><b>bold</b>", None),
    ("tab\there\x00nul\x07bell\x1b[31m", None),
])
def test_hostile_prompts_give_a_message_or_are_text(prompt, message):
    at = page(LM)
    _run_with(at, **{KEYS.prompt: prompt})
    assert not at.exception
    if message == "lm.too_long":
        n = compute.lm_token_count(prompt)
        assert [e.value for e in at.error] == [table("en")["lm.too_long"].format(n=n, limit=compute.LM_MAX_TOKENS)]
    elif message:
        assert [w.value for w in at.warning] == [table("en")[message]]
    else:
        no_errors(at)
        assert all("<script>" not in m.value and "<b>" not in m.value for m in at.markdown)  # escaped: shown as text


def test_the_model_loads_once_per_server(monkeypatch):
    calls = []
    real = pretrained.smollm2

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(pretrained, "smollm2", counting)
    compute.language_model.clear()
    first = page(LM)
    no_errors(first)
    second = page(LM)  # a second browser session on the same server
    no_errors(second)
    assert len(calls) == 1
    assert pretrained._cached_smollm2.cache_info().misses <= 1
    assert compute.language_model() is real()


def test_a_links_preset_loads_its_example_once_and_leaves_the_link(model):
    from attention_lab import tutorial as tut

    at = page(LM, run=False)
    at.session_state[KEYS.prompt] = "my own words"
    at.query_params["preset"] = tut.L12_PRESET  # the model-writing lesson's link
    at.run()
    no_errors(at)
    assert at.session_state[KEYS.prompt] == tut.L12_PROMPT and "preset" not in at.query_params
    at.session_state[KEYS.prompt] = "typed after arriving"
    at.run()
    assert at.session_state[KEYS.prompt] == "typed after arriving"  # the link's example is not loaded again


@pytest.mark.parametrize("bad", ["<script>alert(1)</script>", "nope", ""])
def test_a_tampered_preset_gets_a_message_and_keeps_the_text(bad):
    at = page(LM, run=False)
    at.session_state[KEYS.prompt] = "my own words"
    at.query_params["preset"] = bad
    at.run()
    assert not at.exception
    assert at.session_state[KEYS.prompt] == "my own words"
    assert any("does not have" in w.value for w in at.warning)
    assert not any("<script>" in m.value for m in at.markdown)


def test_missing_model_package_shows_the_install_command(monkeypatch):
    def missing():
        raise decoder.ModelNotInstalled("not installed")

    monkeypatch.setattr(pretrained, "smollm2", missing)
    compute.language_model.clear()
    try:
        at = page(LM)
        assert not at.exception
        assert [e.value for e in at.error] == [table("en")["lm.missing"].format(
            package=decoder.PACKAGE, mb=round(decoder.FILE_BYTES / 1e6), mib=round(decoder.FILE_BYTES / 2**20))]
        assert [c.value for c in at.code] == [decoder.INSTALL_HINT]
    finally:
        compute.language_model.clear()


def test_the_pages_large_part_waits_for_a_turn_and_is_drawn_once_one_is_free():
    """Every turn taken (forty students opening the page at once): the page waits in its own run, then draws the
    model's bars and views once a turn is given back."""
    at = page(LM, run=False)
    gate = compute.LM_DRAWING
    th = threading.Thread(target=at.run)
    with ExitStack() as held:
        for _ in range(gate.n):
            held.enter_context(gate.turn())
        th.start()
        deadline = time.monotonic() + 120
        while gate.waiting != 1:  # the page's run reached the turn and waits (a bound, never a pace)
            assert time.monotonic() < deadline, "the page never waited for a turn"
            time.sleep(0.01)
        assert th.is_alive()
    th.join(120)
    assert not th.is_alive() and gate.waiting == 0
    no_errors(at)
    assert [row["label"] for row in spec(at, KEYS.bars_model)["rows"]][0] == "␣Paris"
    assert not [m for m in at.info if "at a time" in m.value]  # the wait's message went with the wait


def test_the_streaming_measurement_sits_between_the_changed_mechanism_and_the_lens(model):
    """Drawn after the page's turn, in its own place: the seven losses of the shipped text, the full cache's first,
    then the logit lens (one row per hidden state: the embedding and each block)."""
    at = page(LM)
    _run_with(at, **{KEYS.measure: True})
    no_errors(at)
    en = table("en")
    losses, lens = at.dataframe[1].value, at.dataframe[2].value
    assert len(losses) == 1 + 3 * len(compute.LM_WINDOWS) and len(lens) == model.config.n_layers + 1
    text = (Path(__file__).resolve().parents[2] / "assets" / "texts" / "alice.en.txt").read_text(encoding="utf-8")
    full = decoder.text_loss(model, text, decoder.Mechanism())
    assert losses.iloc[0][en["lm.col.cache"]] == en["lm.cache.full"]
    assert abs(losses.iloc[0][en["lm.col.loss"]] - full.loss) < 1e-5
    w, s = compute.LM_WINDOWS[0], compute.LM_SINKS  # StreamingLLM's numbering (issue 56), beside the original one
    ours = decoder.text_loss(model, text, decoder.Mechanism(window=w, sinks=s, reindex=True))
    row = losses.iloc[3]
    assert row[en["lm.col.cache"]] == en["lm.cache.window_sinks_reindexed"].format(w=w, s=s)
    assert abs(row[en["lm.col.loss"]] - ours.loss) < 1e-5 and abs(losses.iloc[2][en["lm.col.loss"]] - ours.loss) > 1e-4


# ------------------------------------------------------------------ Gemma 3 270M (issue 54): the Korean page's model
KO_PROMPT = "서울은 한국의"


@pytest.fixture(scope="module")
def gemma():
    try:
        return pretrained.gemma3()  # one load per process
    except decoder.ModelNotInstalled:
        pytest.skip(f"Gemma 3 is not installed ({pretrained.GEMMA3_INSTALL_HINT})")


def test_the_korean_page_opens_on_gemma_and_shows_its_own_numbers(gemma):
    at = page(LM, run=False)
    _run_with(at, **{state.setting("lang"): "ko"})
    no_errors(at)
    assert at.session_state[KEYS.model] == "gemma3" and at.session_state[KEYS.prompt] == KO_PROMPT
    assert t("lm.gemma3.terms", "ko") in [c.value for c in at.caption]
    nt = gemma.next_token(KO_PROMPT)
    assert [row["label"] for row in spec(at, KEYS.bars_model)["rows"]] == nt.top_tokens
    assert np.abs(_bar_values(at, KEYS.bars_model) - nt.top_probs.numpy()).max() <= 0.5e-3 + 1e-7
    tr = gemma.trace(KO_PROMPT)
    s = spec(at, KEYS.grid)
    assert (s["layers"], s["heads"], s["n"]) == (18, 4, tr.n_tokens)  # the model's own shapes, not SmolLM2's
    assert np.abs(model_view_weights(s) - tr.attentions.numpy()).max() <= 0.5e-4 + 1e-7
    c = gemma.config
    glob = [l for l in range(c.n_layers) if c.window_of(l) is None]
    sink = decoder_local_global(decoder.head_stats(tr.attentions).sink, c)
    prev = decoder_local_global(decoder.head_stats(tr.attentions).previous, c)
    want = t("lm.layers.measured", "ko", local=f"{sink.local_mean:.0%}", glob=f"{sink.global_mean:.0%}",
             local_prev=f"{prev.local_mean:.0%}", glob_prev=f"{prev.global_mean:.0%}")
    assert want in [m.value for m in at.markdown] and tuple(glob) == sink.global_
    assert any(", ".join(map(str, glob)) in m.value for m in at.markdown)
    q = decoder.qk_norm(gemma, tr, 0, 0)  # the open head's QK-norm view
    shown = heat(at, state.item(KEYS.qk_maps, "k_normed"))  # shown to 2 decimals
    assert np.abs(shown - q.k_normed.numpy()).max() <= 0.5e-2 + 1e-6


def decoder_local_global(values, config):
    from core.models.decoder_heads import local_global

    return local_global(values, config)


def test_gemma_writing_through_the_page_equals_generate_greedy(gemma):
    at = page(LM, run=False)
    _run_with(at, **{KEYS.model: "gemma3", KEYS.prompt: KO_PROMPT, KEYS.temperature: 0.0, KEYS.n_new: 5})
    got = compute.lm_generate(KO_PROMPT, 5, 0.0, None, None, 0, "cpu", "gemma3")  # the server's batch for Gemma
    at.run()
    no_errors(at)
    g = gemma.generate(KO_PROMPT, 5, 0.0, max_tokens=compute.LM_MAX_TOKENS)
    assert [s["token"] for s in got["steps"]] == [s.token for s in g.steps]
    assert at.code[0].value == KO_PROMPT + "".join(s.token for s in g.steps).replace("␣", " ").replace("↵", "\n")
    assert got["kv_heads"] == 1 and got["attention"].shape[:2] == (18, 4)


def test_a_narrowed_local_window_changes_the_text_and_the_maps_as_core_says(gemma):
    at = page(LM, run=False)
    _run_with(at, **{KEYS.model: "gemma3", KEYS.prompt: KO_PROMPT, KEYS.tab_id: "mechanism", KEYS.local_window: 4})
    no_errors(at)
    mech = decoder.Mechanism(local_window=4)  # shorter than the prompt: the maps change too
    plain, narrow = (gemma.generate(KO_PROMPT, 16, 0.0, max_tokens=compute.LM_MAX_TOKENS, mech=m)
                     for m in (decoder.PLAIN, mech))
    codes = [c.value for c in at.code]
    for g in (plain, narrow):
        assert KO_PROMPT + "".join(s.token for s in g.steps).replace("␣", " ").replace("↵", "\n") in codes
    tr = gemma.trace(KO_PROMPT, mech=mech)
    block = gemma.config.window_of(0) and 0
    shown = heat(at, state.item(KEYS.local_maps, 1, "narrowed"))
    assert np.abs(np.nan_to_num(shown) - tr.attentions[block, 1].numpy()).max() <= 0.5e-2 + 1e-6
    assert np.abs(tr.attentions[block, 1] - gemma.trace(KO_PROMPT).attentions[block, 1]).max() > 0.01  # it changed


def test_a_tampered_model_is_named_and_the_languages_model_shown_instead():
    at = page(LM, run=False)
    at.query_params["model"] = "<script>gpt5</script>"
    at.run()
    assert not at.exception
    assert at.session_state[KEYS.model] == "smollm2"
    want = t("lm.model.bad", "en", name="\\<script\\>gpt5\\</script\\>", model=t("lm.model.smollm2", "en"))
    shown = [w.value for w in at.warning]
    assert any(w.startswith(want.split("“")[0]) and "gpt5" in w and t("lm.model.smollm2", "en") in w for w in shown), shown
    assert not any("<script>" in m.value for m in at.markdown)


def test_a_gemma_prompt_over_the_context_gets_a_message(gemma):
    prompt = "서울은 한국의 수도입니다. " * 40
    at = page(LM, run=False)
    _run_with(at, **{KEYS.model: "gemma3", KEYS.prompt: prompt})
    assert not at.exception
    n = compute.lm_token_count(prompt, "gemma3")
    assert [e.value for e in at.error] == [table("en")["lm.too_long"].format(n=n, limit=compute.LM_MAX_TOKENS)]


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_missing_gemma_shows_its_install_line_and_smollm2_still_works(monkeypatch, lang):
    def missing():
        raise decoder.ModelNotInstalled("not installed")

    monkeypatch.setattr(pretrained, "gemma3", missing)
    compute.language_model.clear()
    try:
        at = page(LM, run=False)
        _run_with(at, **{state.setting("lang"): lang, KEYS.model: "gemma3"})
        assert not at.exception
        size = pretrained.GEMMA3_FILE_BYTES
        assert [e.value for e in at.error] == [table(lang)["lm.missing"].format(
            package=pretrained.GEMMA3_PACKAGE, mb=round(size / 1e6), mib=round(size / 2**20))]
        assert [c.value for c in at.code] == [pretrained.GEMMA3_INSTALL_HINT]
        at.selectbox(key=KEYS.model).set_value("smollm2").run()  # the rest of the page works
        no_errors(at)
        assert spec(at, KEYS.grid)["layers"] == 30
    finally:
        compute.language_model.clear()


def _unusable_file(kind: str, folder: Path) -> Path:
    """A real file the loader is handed instead of the model's: a GGUF of another family (written by the ``gguf``
    package: a Mamba model's metadata and one tensor), SmolLM2's own file cut in half, or bytes that are no GGUF."""
    path = folder / f"{kind}.gguf"
    if kind == "architecture":
        import gguf

        w = gguf.GGUFWriter(str(path), "mamba")
        w.add_block_count(1)
        w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
    elif kind == "truncated":
        whole = Path(decoder.gguf_path())
        with whole.open("rb") as f:
            path.write_bytes(f.read(whole.stat().st_size // 2))
    else:
        path.write_bytes(b"<html>not a model</html>" * 100)
    return path


@pytest.mark.parametrize("lang", ["en", "ko"])
@pytest.mark.parametrize("kind", ["architecture", "truncated", "garbage"])
def test_a_file_of_another_architecture_or_a_broken_one_gets_a_message_and_the_install_line(monkeypatch, tmp_path,
                                                                                           lang, kind):
    """The real loader (core.models.decoder.load_decoder) on a real file that cannot be used: a message in the
    learner's language that says which (another family, named; or unreadable) and the one pip line, no traceback."""
    path = _unusable_file(kind, tmp_path)
    monkeypatch.setattr(pretrained, "smollm2", lambda: decoder.load_decoder(path))
    compute.language_model.clear()
    try:
        at = page(LM, run=False)
        _run_with(at, **{state.setting("lang"): lang, KEYS.model: "smollm2"})
        assert not at.exception
        why = "architecture" if kind == "architecture" else "unreadable"
        assert [e.value for e in at.error] == [table(lang)[f"lm.file.{why}"].format(arch="mamba")]
        assert [c.value for c in at.code] == [decoder.INSTALL_HINT]
    finally:
        compute.language_model.clear()
