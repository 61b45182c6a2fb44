"""Issue 56: sentences that said more than the page measures, said as measured or as the source's claim, in both
languages; the plural of a count of one. Each test fails on the old wording."""

from __future__ import annotations

import ast

import pytest

from ui.i18n import ASSETS, count, t

from .helpers import no_errors, page, texts


@pytest.mark.parametrize(("lang", "one", "two"), [
    ("en", "1 request is ahead", "2 requests are ahead"), ("ko", "요청 1개가 있습니다", "요청 2개가 있습니다")])
def test_the_place_in_the_line_says_one_request_in_the_singular(lang, one, two):
    assert one in count("lm.batch.line", 1, lang) and two in count("lm.batch.line", 2, lang)
    assert "1 requests" not in count("lm.batch.line", 1, lang)


def test_the_language_model_page_counts_the_requests_ahead_with_count():
    """The page's waiting line goes through ui.i18n.count (the old code formatted lm.batch.line for every k)."""
    tree = ast.parse((ASSETS.parent / "app_pages" / "language_model.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant)
             and n.args[0].value == "lm.batch.line"]
    assert calls and all(getattr(c.func, "id", None) == "count" for c in calls)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_batching_is_said_to_match_alone_up_to_rounding(lang):
    said = t("lm.batch.ran", lang, b=4)
    assert ("float rounding" in said and "nearly tied" in said) if lang == "en" else ("반올림" in said and "동점" in said)
    assert "the tokens it would get alone" not in said and "같은 토큰을 얻습니다" not in said


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_indexer_target_is_the_summed_probabilities(lang):
    said = t("sp.chooser.help", lang)
    assert ("*probabilities*" in said and "can differ" in said) if lang == "en" else ("*확률*" in said and "다를 수" in said)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_mla_says_what_rope_breaks_absorption(lang):
    said = t("mla.intro", lang)
    assert "would not survive" not in said and "그대로 쓸 수 없으므로" not in said
    words = ("absorption", "between the query and W_UK") if lang == "en" else ("흡수가 깨집니다", "쿼리와 W_UK 사이")
    assert all(w in said for w in words)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_gate_page_says_which_gate_it_draws(lang):
    """Qwen3-Next's gate has H·d_h sigmoids; the page draws Qiu et al.'s per-head variant and says so, beside both
    formulas."""
    intro = t("sg.intro", lang)
    assert "H·d_h" in intro and ("per-head variant" in intro if lang == "en" else "헤드별 변형" in intro)
    assert "each head's output by a sigmoid" not in intro and "보는 키(인과)" not in intro
    at = page("app_pages/sinks_gates.py", query={"lang": lang})
    no_errors(at)
    assert t("sg.gate.which", lang) in texts(at)
    latex = "\n".join(str(x.value) for x in at.latex)
    assert r"o \odot \sigma(x\, W^{\sigma})" in latex and r"o_h \cdot \sigma(x\, w^{\sigma}_h)" in latex
