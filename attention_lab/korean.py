"""Korean particles chosen from the value they follow (streamlit-free: the app's strings, the
notebook export and the notebook views share it; ``ui.text`` re-exports it)."""

from __future__ import annotations

import re
from functools import cache

# A Korean string writes a particle that follows a placeholder in its two-way form, e.g. "{q}을(를)",
# "**{top}**(으)로", "{h}은(는)", "{k}과(와)", "{x}(이)라는"; :func:`fill` formats the value and keeps the
# form that fits how the value is read: 을 after a final consonant (받침), 를 after a vowel;
# 으로 after a consonant except ㄹ (서울로, 사과로, 책으로). Latin, digits and symbols are read as a
# Korean speaker reads them aloud (1 일, 3 삼, 10 십, L 엘, "cat" 캣) as well as a simple rule allows.
PARTICLES = {"은(는)": ("은", "는"), "는(은)": ("은", "는"), "이(가)": ("이", "가"), "가(이)": ("이", "가"),
             "을(를)": ("을", "를"), "를(을)": ("을", "를"), "과(와)": ("과", "와"), "와(과)": ("과", "와"),
             "(으)로": ("으로", "로"), "(이)": ("이", "")}
_FIELD = r"\{(?P<name>[A-Za-z_]\w*)(?P<conv>![rsa])?(?::(?P<spec>[^{}]*))?\}"
_PARTICLE_AFTER_FIELD = re.compile(_FIELD + r"(?P<between>[*”’\"'_`]*)(?P<p>"
                                   + "|".join(re.escape(p) for p in sorted(PARTICLES, key=len, reverse=True)) + ")")
# A name written in the text itself with a digit in it ("Mistral-7B", "GPT-2", "float32", "Llama 3"), then a
# two-way particle: :func:`names` chooses it from how the name is read, as for a placeholder's value.
_PARTICLE_AFTER_NAME = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_.]*(?:[ -][A-Za-z0-9_.]+)*)(?P<between>[*”’\"'_`]*)(?P<p>"
                                  + "|".join(re.escape(p) for p in sorted(PARTICLES, key=len, reverse=True)) + ")")
# final consonant of how a digit is read: 0 영, 1 일, 2 이, 3 삼, 4 사, 5 오, 6 육, 7 칠, 8 팔, 9 구
_DIGIT_CODA = {"0": "ㅇ", "1": "ㄹ", "2": "", "3": "ㅁ", "4": "", "5": "", "6": "ㄱ", "7": "ㄹ", "8": "ㄹ", "9": ""}
# 10 십, 100 백, 1000 천, 10⁴ 만 (…10⁷ 천만), 10⁸ 억
_ZEROS_CODA = {1: "ㅂ", 2: "ㄱ", 3: "ㄴ"}
# letters read alone: L 엘, M 엠, N 엔, R 알 end in a consonant; the others (에이, 비, 씨, …) in a vowel
_LETTER_CODA = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ", "r": "ㄹ"}
_CODAS = "ㄱㄲㄳㄴㄵㄶㄷㄹㄺㄻㄼㄽㄾㄿㅀㅁㅂㅄㅅㅆㅇㅈㅊㅋㅌㅍㅎ"
_SYMBOL_CODA = {"%": "", "∞": "", "°": ""}  # 퍼센트, 무한대, 도
# a version tag, one capital letter and one digit glued (V3 브이쓰리, K2 케이투), is read in English: one 원,
# seven 세븐, nine 나인 end in ㄴ, eight 에잇 in ㅅ, the others (제로, 투, 쓰리, 포, 파이브, 식스) in a vowel
_ENGLISH_DIGIT_CODA = {"1": "ㄴ", "7": "ㄴ", "8": "ㅅ", "9": "ㄴ"}
_VERSION_TAG = re.compile(r"(?:^|[^A-Za-z0-9.])[A-Z](?P<digit>\d)$")


def _latin_coda(word: str) -> str:
    """The final consonant of a Latin word as Korean writes it: 캣 (cat) ㅅ, 라인 (line) ㄴ, 스카이 (sky) none."""
    w = word.lower()
    if len(w) == 1 or (word.isupper() and len(w) <= 3):  # a letter, or an acronym spelled out (CLS 씨엘에스)
        return _LETTER_CODA.get(w[-1], "")
    if w.endswith("ng"):
        return "ㅇ"
    if w.endswith("e") and len(w) >= 3 and w[-2] not in "aeiouy" and w[-3] in "aeiouy":  # magic e: name 네임, sale 세일
        return {"m": "ㅁ", "n": "ㄴ", "l": "ㄹ"}.get(w[-2], "")
    last = w[-1]
    if last in "mn":
        return "ㅁ" if last == "m" else "ㄴ"
    if last == "l":
        return "ㄹ"
    short = len(w) >= 2 and (w[-2] in "aeiou" or w[-2:] == "ck")  # a short vowel (or "ck") before it; not "ct": 팩트
    if last in "kptb" and short and w[-3:-1] not in ("oo", "ee", "ea", "ai", "oa"):
        return {"k": "ㄱ", "p": "ㅂ", "t": "ㅅ", "b": "ㅂ"}[last]  # a short vowel before it: cat 캣, cup 컵, back 백, lab 랩
    return ""  # vowels, r (car 카) and the consonants Korean follows with 으 (dog 도그, bus 버스)


def _number_coda(text: str) -> str:
    """The final consonant of a number read in Korean: 0.360 (…영) ㅇ, 21 (이십일) ㄹ, 20 (이십) ㅂ, 1e-07 (…칠) ㄹ."""
    body = re.split(r"[eE]", text)[-1] if re.search(r"\d[eE][+-]?\d+$", text) else text
    digits = re.sub(r"[^\d.]", "", body)
    if "." in digits or not digits.strip("0"):
        return _DIGIT_CODA[digits[-1]]  # after the point each digit is read alone; 0 is 영
    zeros = len(digits) - len(digits.rstrip("0"))
    if zeros == 0:
        return _DIGIT_CODA[digits[-1]]
    return "ㄱ" if zeros >= 8 else _ZEROS_CODA.get(zeros, "ㄴ")


def coda(text) -> str | None:
    """The final consonant (받침) of ``text`` as it is read aloud: a jamo such as "ㄴ" or "ㄹ", ""
    for none (a final vowel), None when it cannot be told (nothing readable). Trailing spaces,
    quotes, brackets and markdown escapes are skipped; a number is read as a number."""
    s = str(text).rstrip()
    s = re.sub(r"[\s\\*_`'\"”’“‘)\]}>.,;:!?…·]+$", "", s)
    if not s:
        return None
    last = s[-1]
    if "가" <= last <= "힣":
        i = (ord(last) - 0xAC00) % 28
        return "" if i == 0 else _CODAS[i - 1]
    if "ㄱ" <= last <= "ㅎ":  # a bare consonant jamo (ㄱ 기역 … ends in a consonant)
        return last
    if "ㅏ" <= last <= "ㅣ" or "\u1161" <= last <= "\u11a7":  # a vowel jamo
        return ""
    if "\u11a8" <= last <= "\u11ff":  # a final-consonant jamo (NFD Korean)
        return "ㄹ" if last == "\u11af" else "ㄱ"
    if last in _SYMBOL_CODA:
        return _SYMBOL_CODA[last]
    tag = _VERSION_TAG.search(s)
    if tag:
        return _ENGLISH_DIGIT_CODA.get(tag.group("digit"), "")
    number = re.search(r"[+\-−]?\d[\d,]*(?:\.\d+)?(?:[eE][+\-−]?\d+)?$", s)
    if number:
        return _number_coda(number.group(0).replace("−", "-"))
    word = re.search(r"[A-Za-z]+$", s)
    if word:
        return _latin_coda(word.group(0))
    return None


def particle(value, forms: str) -> str:
    """The particle of ``forms`` ("을(를)", "은(는)", "이(가)", "과(와)", "(으)로", "(이)…") that follows
    ``value``: 사과를, 책을, 1을, 2를, 서울로, 집으로, cat과, sky와. Unknown: the two-way form itself."""
    consonant, vowel = PARTICLES[forms]
    c = coda(value)
    if c is None:
        return forms
    if forms == "(으)로":
        return "로" if c in ("", "ㄹ") else "으로"
    return consonant if c else vowel


@cache
def names(text: str) -> str:
    """``text`` with every two-way particle after a Latin name chosen from how the name is read:
    "Mistral-7B은(는)" → "Mistral-7B는", "GPT-2은(는)" → "GPT-2는", "float32(으)로" → "float32로",
    "Llama 3은(는)" → "Llama 3은", "DeepSeek-V3과(와)" → "DeepSeek-V3와" (V3 브이쓰리), "DeepSeek은(는)" →
    "DeepSeek는" (딥시크). The strings write a name's particle in the two-way form, never by hand (tests hold it for
    names with a digit and for the names the rule reads), so the particle follows the rule that reads the name."""
    def one(m: re.Match) -> str:
        name = m.group("name")
        return name + m.group("between") + particle(name, m.group("p"))

    return _PARTICLE_AFTER_NAME.sub(one, text)


def fill(template: str, /, **values) -> str:
    """``template.format(**values)`` with every two-way particle after a placeholder chosen from the
    value it follows (:func:`particle`), and after a name with a digit written in the text (:func:`names`).
    A template that does not fit its values comes back as it is."""
    template = names(template)
    def one(m: re.Match) -> str:
        name, conv, spec = m.group("name"), m.group("conv"), m.group("spec") or ""
        if name not in values:
            return m.group(0)
        v = values[name]
        v = repr(v) if conv == "!r" else (str(v) if conv == "!s" else v)
        try:
            shown = format(v, spec)
        except (TypeError, ValueError):
            return m.group(0)
        chosen = particle(shown, m.group("p"))
        return "{" + name + (conv or "") + (":" + spec if spec else "") + "}" + m.group("between") + chosen

    try:
        return _PARTICLE_AFTER_FIELD.sub(one, template).format(**values)
    except (KeyError, IndexError, ValueError, AttributeError):
        return template
