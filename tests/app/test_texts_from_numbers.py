"""Sentences that state a count, a size or a name say what the code holds, not what someone typed: the number
of lessons, the language model's name and file, the induction measurement's length; tokens are counted from 0
wherever a string counts them; a Korean particle after a name with a digit (Llama 3, GPT-2, float32) is chosen
by the reading rule, never written by hand; the one-term-per-concept scan reads every Korean file."""

from __future__ import annotations

import json
import re

import pytest

from attention_lab.korean import names
from attention_lab.tutorial import LESSONS
from core.models import decoder
from ui.i18n import ASSETS, t, table

from .helpers import no_errors, page, texts
from .korean_rules import ko_strings

LANGS = ("en", "ko")


def _all_strings(lang: str) -> dict[str, str]:
    out = {f"i18n:{k}": v for k, v in table(lang).items()}
    with open(ASSETS / "lessons" / f"exercises.{lang}.json", encoding="utf-8") as f:
        out |= {f"exercises:{k}": v for k, v in json.load(f).items()}
    for folder in ("lessons", "explain"):
        out |= {f"{folder}:{p.name}": p.read_text(encoding="utf-8") for p in sorted((ASSETS / folder).glob(f"*.{lang}.md"))}
    return out


# ---------------------------------------------------------------- how many lessons
@pytest.mark.parametrize("lang", LANGS)
def test_the_lesson_count_is_the_tutorials_own(lang):
    n = len(LESSONS)
    assert n == 15  # lesson 15, "What a 2026 model keeps" (issue 55)
    words = r"\b(nine|ten|eleven|twelve|thirteen|fourteen|fifteen)\b|아홉|열두|열한|열세|열네|열다섯"
    found = {k: v for k, v in _all_strings(lang).items() if re.search(words, v, re.I) and "lesson" in v.lower() + k}
    assert not found, found
    home = page("app_pages/home.py", query={"lang": lang})
    no_errors(home)
    shown = texts(home)
    assert (f"{n} short lessons" if lang == "en" else f"짧은 레슨 {n}개") in shown
    assert shown.count(str(n)) >= 2  # the page map's blurb and "where to start"
    tut = page("app_pages/tutorial.py", query={"lang": lang})
    no_errors(tut)
    assert t("tu.intro", lang, n=n) in [c.value for c in tut.caption]


# ---------------------------------------------------------------- the language model's name and file
def test_the_model_name_and_quantisation_come_from_the_files_name():
    assert (decoder.NAME, decoder.QUANT) == ("SmolLM2-135M-Instruct", "Q4_1")
    assert decoder.FILE == f"{decoder.NAME}.{decoder.QUANT}.gguf"
    for lang in LANGS:
        intro = t("lm.intro", lang, model=decoder.NAME, quant=decoder.QUANT)
        assert "SmolLM2-135M-Instruct" in intro and "Q4_1" in intro and "float32" in intro


@pytest.mark.parametrize("lang", LANGS)
def test_no_string_names_the_base_model_for_the_instruct_file(lang):
    """The page runs SmolLM2-135M-Instruct; a string that names the model says so (the cache presets name the
    architecture, which the base and the instruct model share, in code, not in these strings)."""
    found = {k: v for k, v in _all_strings(lang).items() if re.search(r"SmolLM2-135M(?!-Instruct)", v)}
    assert not found, found


def test_the_file_size_in_the_missing_message_is_the_files():
    try:
        path = decoder.gguf_path()
    except decoder.ModelNotInstalled:
        pytest.skip(f"the model package is not installed ({decoder.INSTALL_HINT}): its file size cannot be checked")
    assert path.stat().st_size == decoder.FILE_BYTES == 98_362_432
    for lang in LANGS:
        msg = t("lm.missing", lang, package=decoder.PACKAGE, mb=round(decoder.FILE_BYTES / 1e6),
                mib=round(decoder.FILE_BYTES / 2**20))
        assert "98 MB" in msg and "94 MiB" in msg


def test_the_induction_text_says_how_many_random_tokens_were_written_twice():
    assert decoder.INDUCTION_LENGTH == 32
    assert decoder.induction.__defaults__[0] == decoder.INDUCTION_LENGTH
    en = t("lm.measure_induction", "en", n=decoder.INDUCTION_LENGTH)
    assert "32 random tokens written twice" in en and "64" not in en
    assert "32 random tokens written twice" in t("lm.heads.text", "en", n=decoder.INDUCTION_LENGTH)
    assert "무작위 토큰 32개를 두 번" in t("lm.measure_induction", "ko", n=decoder.INDUCTION_LENGTH)


# ---------------------------------------------------------------- counting tokens and steps from 0
OLD_COUNTING = [r"tokens 1 …", r"1 … \{t\}", r"token number", r"1부터 t", r"토큰 1부터", r"\{t\}번째 토큰", r"\{t\}번째 행",
                r"k_1 \\dots", r"steps go from 1", r"단계는 1부터"]


@pytest.mark.parametrize("lang", LANGS)
def test_tokens_and_steps_are_counted_from_0_everywhere(lang):
    found = {k: v for k, v in _all_strings(lang).items() for pat in OLD_COUNTING if re.search(pat, v)}
    assert not found, found
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ASSETS.parent / "app_pages").glob("*.py"))
    assert r"[k_0 \dots k_t]" in code and r"k_1 \dots" not in code
    # the convention is said where it starts: the KV lesson and the KV page
    start = "counted from 0" if lang == "en" else "0부터"
    assert start in (ASSETS / "lessons" / f"kv-cache.{lang}.md").read_text(encoding="utf-8")
    assert start in t("kv.intro", lang)


# ---------------------------------------------------------------- Korean particles after names with digits
HAND_WRITTEN = re.compile(r"[A-Za-z][A-Za-z-]*[ -]?\d+[A-Za-z]*(은|는|이|가|을|를|과|와|으로|로)(?![가-힣(])")


def test_no_particle_is_written_by_hand_after_a_name_with_a_digit():
    found = [f"{k}: …{v[max(0, m.start() - 15): m.end() + 5]}…" for k, v in ko_strings().items()
             for m in HAND_WRITTEN.finditer(v)]
    assert not found, "write the two-way form (Llama 3은(는)) so the reading rule chooses:\n" + "\n".join(found)


def test_the_scan_finds_a_planted_hand_written_particle():
    assert HAND_WRITTEN.search("Llama 3는 500000을 씁니다") and HAND_WRITTEN.search("GPT-2와 BERT")
    assert not HAND_WRITTEN.search("Llama 3은(는) 씁니다")


@pytest.mark.parametrize(("written", "read"), [
    ("Llama 3은(는)", "Llama 3은"), ("Llama 2은(는)", "Llama 2는"), ("GPT-2은(는)", "GPT-2는"),
    ("Mistral-7B은(는)", "Mistral-7B는"), ("float32(으)로", "float32로"), ("UTF-8(으)로", "UTF-8로"),
    ("bfloat16은(는)", "bfloat16은"), ("Llama-3-8B와(과)", "Llama-3-8B와"),
    ("FlashAttention-1은(는)", "FlashAttention-1은"), ("SmolLM2이(가)", "SmolLM2가"),
    # a version tag, one capital and one digit, is read in English: V3 브이쓰리, K2 케이투, V1 브이원
    ("DeepSeek-V3과(와)", "DeepSeek-V3와"), ("DeepSeek-V3은(는)", "DeepSeek-V3는"), ("V3이(가)", "V3가"),
    ("Kimi K2은(는)", "Kimi K2는"), ("DeepSeek-V1은(는)", "DeepSeek-V1은"), ("DeepSeek-V3.2이(가)", "DeepSeek-V3.2가"),
    # a name without a digit is read by the same rule: DeepSeek 딥시크, Lab 랩, Terminus 터미너스
    ("DeepSeek은(는)", "DeepSeek는"), ("DeepSeek과(와)", "DeepSeek와"), ("Attention Lab을(를)", "Attention Lab을"),
])
def test_a_names_particle_follows_how_it_is_read(written, read):
    assert names(written) == read


def test_the_shown_korean_has_no_two_way_particle_left_after_a_name():
    for key in ("lc.mem.caption", "lp.intro", "ta.intro", "settings.precision.help"):
        shown = t(key, "ko")
        assert not re.search(r"\d[A-Za-z]*(은\(는\)|\(으\)로|이\(가\)|와\(과\))", shown), (key, shown)
    assert "Mistral-7B는" in t("lc.mem.caption", "ko") and "GPT-2는" in t("lp.intro", "ko")
    assert "Llama-3-8B와 Mistral-7B는" in t("kvs.intro", "ko", m1="Llama-3-8B", m2="Mistral-7B", H=32, G=8)
    assert "Llama 2는" in t("lp.base.help", "ko", l2="Llama 2", l3="Llama 3")
    assert "Llama 3은" in t("lp.base.help", "ko", l2="Llama 2", l3="Llama 3")


# ---------------------------------------------------------------- the term scan reads every Korean file
def test_the_term_scan_reads_every_korean_file():
    scanned = ko_strings()
    for p in sorted((ASSETS / "i18n").glob("ko*.json")):
        keys = json.loads(p.read_text(encoding="utf-8")).keys()
        assert all(f"i18n:{k}" in scanned for k in keys), p.name
    for folder, prefix in (("lessons", "lesson"), ("explain", "explain")):
        for p in (ASSETS / folder).glob("*.ko.md"):
            assert f"{prefix}:{p.name}" in scanned
    assert all(f"exercises:{k}" in scanned for k in json.loads((ASSETS / "lessons" / "exercises.ko.json").read_text("utf-8")))
    terms = {term["ko"] for term in json.loads((ASSETS / "i18n" / "terms.json").read_text("utf-8"))["terms"]}
    assert {"멀티헤드", "윈도우", "키/밸류 헤드", "특성 맵"} <= terms


# A particle written by hand after a Latin name (no digit) that the reading rule reads otherwise; ViT is read 비트
# (the rule would read "vit" like "cat": 빗).
HAND_AFTER_NAME = re.compile(r"(?<![A-Za-z0-9{}_])(?P<name>[A-Za-z][A-Za-z]+)(?P<p>은|는|이|가|을|를|과|와|으로|로)(?![가-힣(])")
READ_OTHERWISE = {"ViT", "KiB", "MiB", "GiB"}  # and units read as their Korean names: 키비바이트 …
_FORMS = {"은": "은(는)", "는": "은(는)", "이": "이(가)", "가": "이(가)", "을": "을(를)", "를": "을(를)", "과": "과(와)",
          "와": "과(와)", "으로": "(으)로", "로": "(으)로"}


def test_a_hand_written_particle_after_a_name_agrees_with_how_it_is_read():
    from ui.text import particle

    found = [f"{k}: {m.group(0)} (read: {m.group('name')}{particle(m.group('name'), _FORMS[m.group('p')])})"
             for k, v in ko_strings().items() for m in HAND_AFTER_NAME.finditer(v)
             if m.group("name") not in READ_OTHERWISE and particle(m.group("name"), _FORMS[m.group("p")]) != m.group("p")]
    assert not found, "write the two-way form (DeepSeek은(는)) so the reading rule chooses:\n" + "\n".join(found)
    assert HAND_AFTER_NAME.search("DeepSeek은 인덱서") and particle("DeepSeek", "은(는)") == "는"  # the old text is caught


def test_the_shown_korean_reads_deepseek_and_v3_as_spoken():
    for lang_text in (t("sp.carry.untrained", "ko"), tut_markdown("mla-cache"), t("mla.intro", "ko"),
                      t("mla.models.note", "ko", model="DeepSeek-V3", mla="576", mha="32,768", ratio="57")):
        assert "DeepSeek은" not in lang_text and "V3과" not in lang_text and "V3은" not in lang_text, lang_text
    assert "DeepSeek는" in t("sp.carry.untrained", "ko") and "DeepSeek-V3와" in tut_markdown("mla-cache")
    assert "DeepSeek-V3는" in t("mla.models.note", "ko", model="DeepSeek-V3", mla="576", mha="32,768", ratio="57")


def tut_markdown(lesson_id: str) -> str:
    from attention_lab.tutorial import lesson_markdown

    return lesson_markdown(lesson_id, "ko")
