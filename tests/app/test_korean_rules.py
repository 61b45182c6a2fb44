"""The Korean text speaks with one voice: particles after a value chosen from the value (one helper,
ui.text.fill), 합니다체 throughout, one term per concept (assets/i18n/terms.json). The scans run
over every Korean string, lesson and exercise, including parts added later; a failure names the
key or file and quotes the text."""

from __future__ import annotations

import json
import re

import pytest

from ui.i18n import ASSETS, t
from ui.text import coda, fill, particle

from .korean_rules import bare_particles, context, ko_strings, templates


# ------------------------------------------------------------------ the helper
@pytest.mark.parametrize(("value", "final"), [
    ("사과", ""), ("책", "ㄱ"), ("서울", "ㄹ"), ("나는", "ㄴ"), ("먹었다", ""), ("사과를", "ㄹ"), ("오늘", "ㄹ"),
    ("0", "ㅇ"), ("1", "ㄹ"), ("2", ""), ("3", "ㅁ"), ("4", ""), ("5", ""), ("6", "ㄱ"), ("7", "ㄹ"), ("8", "ㄹ"),
    ("9", ""), ("10", "ㅂ"), ("20", "ㅂ"), ("100", "ㄱ"), ("1000", "ㄴ"), ("10000", "ㄴ"), ("21", "ㄹ"),
    ("0.360", "ㅇ"), ("0.5", ""), ("1.2e-07", "ㄹ"), ("−3", "ㅁ"), ("50%", ""),
    ("L", "ㄹ"), ("M", "ㅁ"), ("N", "ㄴ"), ("R", "ㄹ"), ("Q", ""), ("K", ""), ("V", ""), ("[CLS]", ""),
    ("cat", "ㅅ"), ("cup", "ㅂ"), ("back", "ㄱ"), ("Instruct", ""), ("fact", ""),
    ("SmolLM2-135M-Instruct", ""), ("sky", ""), ("dog", ""), ("the", ""), ("animal", "ㄹ"),
    ("name", "ㅁ"), ("line", "ㄴ"), ("king", "ㅇ"), ("il", "ㄹ"), ("cielo", ""), ("**사과**", ""), ("“먹었다”", ""),
])
def test_the_final_consonant_is_read_as_spoken(value, final):
    assert coda(value) == final, value


@pytest.mark.parametrize(("value", "forms", "expected"), [
    ("사과", "을(를)", "를"), ("책", "을(를)", "을"), ("1", "을(를)", "을"), ("2", "을(를)", "를"),
    ("사과", "은(는)", "는"), ("헤드", "이(가)", "가"), ("먹었다", "과(와)", "와"), ("사과를", "과(와)", "과"),
    ("서울", "(으)로", "로"), ("사과", "(으)로", "로"), ("책", "(으)로", "으로"), ("1", "(으)로", "로"),
    ("3", "(으)로", "으로"), ("0.360", "(으)로", "으로"), ("7", "(으)로", "로"), ("animal", "(으)로", "로"),
    ("cat", "과(와)", "과"), ("sky", "과(와)", "와"), ("L", "이(가)", "이"), ("[SEP]", "을(를)", "를"),
    ("책", "(이)", "이"), ("사과", "(이)", ""),
])
def test_the_particle_follows_the_value(value, forms, expected):
    assert particle(value, forms) == expected


def test_an_unreadable_value_keeps_the_two_way_form():
    assert particle("", "을(를)") == "을(를)" and particle("→", "(으)로") == "(으)로"


def test_fill_formats_and_chooses_each_particle_from_its_own_value():
    template = "쿼리 {q}과(와) 키 {k}의 점수 {s:.3f}은(는) s = {x}을(를) 곱해 T = {T}(으)로 나눈 값, “{p}”은(는) **{w}**이(가)"
    out = fill(template, q="사과를", k="먹었다", s=0.5, x=1, T=3, p="같은 단어", w="헤드")
    assert out == "쿼리 사과를과 키 먹었다의 점수 0.500은 s = 1을 곱해 T = 3으로 나눈 값, “같은 단어”는 **헤드**가"
    assert fill("{a}을(를) {b}", a="x") == "{a}을(를) {b}"  # a template that does not fit comes back unformatted


def test_t_uses_the_helper():
    assert t("tm.steps", lang="ko", l=5, h=0) == "층 5, 헤드 0의 계산을 한 단계씩 열기"
    for value, shown in (("사과", "사과를"), ("책", "책을")):
        assert fill("{v}을(를)", v=value) == shown


# ------------------------------------------------------------------ the scans
def test_every_particle_after_a_placeholder_goes_through_the_helper():
    found = [f"{key}: “{piece}” in …{context(text, piece)}…" for key, text in templates().items()
             for piece in bare_particles(text)]
    assert not found, "write the particle in its two-way form (을(를), 은(는), 이(가), 과(와), (으)로) so ui.text.fill " \
                      "chooses it:\n" + "\n".join(found)


HAEYO = re.compile(r"[가-힣]*(?:에요|예요|어요|아요|여요|워요|해요|돼요|래요|지요|죠|네요|군요|까요|나요|거든요|잖아요|데요"
                   r"|게요|걸요|니까요|는요|다고요|이요)(?=$|[^가-힣])")
NOT_HAEYO = ("필요", "중요", "주요", "개요", "요약")


def haeyo(text: str) -> list[str]:
    return [m.group(0) for m in HAEYO.finditer(text) if m.group(0) not in NOT_HAEYO]


def test_the_detector_finds_haeyo_and_lets_hapnida_pass():
    assert haeyo("동점이에요. 평평해져요, 있어요 커지지요 얼마일까요? 아쉽네요")
    assert haeyo("두 점수가 같습니다. 가중치가 평평해집니다. 얼마입니까? 바꿔 보세요. 필요합니다.") == []


def test_korean_is_hapnida_che_throughout():
    found = [f"{key}: “{w}” in …{context(text, w)}…" for key, text in ko_strings().items() for w in haeyo(text)]
    assert not found, "합니다체: rewrite these 해요체 endings:\n" + "\n".join(found)


TERMS = json.loads((ASSETS / "i18n" / "terms.json").read_text(encoding="utf-8"))["terms"]


def test_the_term_table_has_both_languages():
    assert TERMS and all(term["en"] and term["ko"] for term in TERMS)


def test_one_term_per_concept():
    found = []
    for term in TERMS:
        for variant in term["not"]:
            for key, text in ko_strings().items():
                if any(key == e or (e.endswith("*") and key.startswith(e[:-1])) for e in term.get("except", ())):
                    continue  # "i18n:live.*": every key of a prefix
                m = re.search(variant, text)
                if m:
                    found.append(f"{key}: “{m.group(0)}” → {term['ko']} ({term['en']}) in …{context(text, m.group(0))}…")
    assert not found, "one term per concept (assets/i18n/terms.json):\n" + "\n".join(found)


def test_the_term_scan_finds_a_planted_variant():
    planted = {"i18n:x": "이 예제를 플레이그라운드에서 열기", "i18n:y": "값 벡터를 더합니다"}
    hits = {key for term in TERMS for variant in term["not"] for key, text in planted.items() if re.search(variant, text)}
    assert hits == set(planted)


# ------------------------------------------------------------------ words inside formulas
def test_no_english_word_inside_a_korean_formula():
    from ui.widgets import formulas as f

    shown = [*f.WHOLE.values(), *f.SHORT["weights"].values(),
             *(f.qkv_formula(m, c) for m in ("identity", "projection", "direct") for c in (False, True)),
             *(f.scale_text(s) for s in ("auto", "sqrt_dk", "none"))]
    words = re.compile(r"\\text\{([^}]*[A-Za-z]{2,}[^}]*)\}|<mtext>([^<]*[A-Za-z]{2,}[^<]*)</mtext>")
    # the LaTeX and the MathML generated from it (the one-element pipeline's)
    said = [f.localize(s, "ko") for s in shown]
    left = [(s, m.group(0)) for s in said + [f.mathml(s) for s in said] for m in words.finditer(s)]
    assert not left, left
    assert f.localize(f.WHOLE["row"], "en") == f.WHOLE["row"]


# ------------------------------------------------------------------ one register for instructions
# An instruction to the learner ends in -세요 (바꿔 보세요, 여세요), never in the formal -십시오 (바꿔 보십시오);
# questions and statements stay in 합니다체 (얼마입니까?, 바뀝니다).
SIPSIO = re.compile(r"[가-힣]*십시오")


def test_the_detector_finds_sipsio_and_lets_seyo_pass():
    assert SIPSIO.findall("다시 보내십시오. 앞을 봐 주십시오!") == ["보내십시오", "주십시오"]
    assert SIPSIO.findall("다시 보내세요. 얼마입니까? 바뀝니다.") == []


def test_every_korean_file_tells_the_learner_what_to_do_in_seyo():
    files = sorted((ASSETS / "i18n").glob("ko.*.json")) + [ASSETS / "i18n" / "ko.json"]
    assert len(files) >= 10  # every ko.*.json of the app, the live class's included
    found = [f"{path.name}:{key}: “{w}” in …{context(text, w)}…"
             for path in files for key, text in json.loads(path.read_text(encoding="utf-8")).items()
             for w in SIPSIO.findall(text)]
    found += [f"{key}: “{w}” in …{context(text, w)}…" for key, text in ko_strings().items() for w in SIPSIO.findall(text)]
    assert not found, "an instruction ends in -세요 (보내세요), not -십시오:\n" + "\n".join(found)
