"""Home page, shared settings across pages, and complete translation tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attention_lab.tutorial import lesson_title
from ui import nav, state
from ui.i18n import table

from .helpers import PG_WEIGHTS, PLAYGROUND, no_errors, open_tab, page

ROOT = Path(__file__).resolve().parents[2]


def test_both_languages_have_exactly_the_same_keys_and_placeholders():
    en, ko = table("en"), table("ko")
    assert set(en) == set(ko), (set(en) ^ set(ko))
    for k in en:
        assert set(re.findall(r"{(\w+)}", en[k])) == set(re.findall(r"{(\w+)}", ko[k])), k
        assert ko[k].strip(), k


def test_every_literal_key_used_in_code_exists():
    en = table("en")
    used = set()
    for path in list((ROOT / "ui").rglob("*.py")) + [ROOT / "app.py"] + list((ROOT / "app_pages").glob("*.py")):
        if path.name == "i18n.py":  # its docstring shows t("key")
            continue
        found = re.findall(r"""\bt\(\s*["']([\w.]+)["']""", path.read_text(encoding="utf-8"))
        used |= {k for k in found if not k.endswith(".")}  # 'preset.' + p is a dynamic prefix
    missing = sorted(k for k in used if k not in en)
    assert not missing, missing


SOURCE_NUMBER = re.compile(r"(source|자료)\s*#?\s*0\d\d", re.IGNORECASE)  # the documents' numbers: for code comments


def test_the_number_pattern_finds_a_planted_citation():
    for text in ("위키 문서 “어텐션”(자료 000)에서는", "The blog post (source 003) scales", "Source 004: lecture notes"):
        assert SOURCE_NUMBER.search(text), text
    assert not SOURCE_NUMBER.search("블로그 글 “트랜스포머는 어떻게 동작할까? – 2편”은 7개 토큰 예제를")


def test_sources_are_cited_by_their_titles_not_by_number():
    """Learners read a source's title ('the wiki article “Attention”'), never an internal number
    ('source 000', '자료 000'): in the string tables, the start texts and the lessons."""
    files = [*sorted((ROOT / "assets" / "i18n").glob("*.json")), *sorted((ROOT / "assets" / "explain").glob("*.md")),
             *sorted((ROOT / "assets" / "lessons").glob("*"))]
    found = [(p.name, m.group(0)) for p in files for m in SOURCE_NUMBER.finditer(p.read_text(encoding="utf-8"))]
    found += [(lang, k) for lang in ("en", "ko") for k, v in table(lang).items() if SOURCE_NUMBER.search(v)]
    assert found == [], found
    # the home page's list of sources names each by its title
    for lang, title in (("en", "“How does the Transformer work? – Part 2”"), ("ko", "“트랜스포머는 어떻게 동작할까? – 2편”")):
        at = page("app.py", query={"lang": lang})
        no_errors(at)
        shown = "\n".join(m.value for m in at.markdown) + "\n".join(c.value for c in at.caption)
        assert title in shown and table(lang)["sources.help"] in shown, lang
        assert not SOURCE_NUMBER.search(shown), SOURCE_NUMBER.findall(shown)


def test_dynamic_keys_exist_for_every_option():
    import core
    from attention_lab import scenario
    from ui.nav import PAGES

    en = table("en")
    expected = [f"score.{s}" for s in core.SCORE_FUNCTIONS] + [f"pg.qkv.{m}" for m in core.lab.QKV_MODES]
    expected += [f"pg.embedding.{e}" for e in scenario.EMBEDDINGS] + [f"scale.{s}" for s in scenario.SCALES]
    expected += [f"conv.{c}" for c in scenario.CONVENTIONS] + [f"pg.mode.{m}" for m in scenario.MODES]
    expected += [f"preset.{p}" for p in scenario.PRESETS]
    expected += [f"page.{p.name}.title" for p in PAGES] + [f"page.{p.name}.blurb" for p in PAGES]
    expected += [f"nt.m.{m}" for m in ("Q", "scores", "logits", "weights", "output")]
    expected += [f"nt.axes.{a}.{s}" for a in ("tokens", "qk") for s in ("row", "col")]
    expected += ["nt.selected.qk", "nt.selected.tok"] + [f"mk.step.{s}" for s in ("M", "scaled", "logits", "weights")]
    expected += [f"mk.order.{k}{c}" for k in ("right", "after", "big") for c in ("", ".code")]
    expected += [f"sc.exp.{k}" for k in ("max", "entropy", "grad")]
    assert [k for k in expected if k not in en] == []


@pytest.mark.parametrize("lang, word", [("en", "query"), ("ko", "쿼리")])
def test_home_page_in_both_languages(lang, word):
    at = page("app.py", query={"lang": lang})  # (on reruns of the default page AppTest loses the sidebar)
    no_errors(at)
    assert any(word in m.value for m in at.markdown)
    assert any("Attention" in str(l.value) for l in at.latex)
    assert at.title[0].value.endswith(table(lang)["page.home.title"])
    # learners read plain titles; the curriculum ids are for teachers, in their own panel
    assert not any(re.search(r"\bC\d+\b", m.value) for m in at.markdown)
    assert at.expander[-1].label == table(lang)["home.teachers"]


def test_the_offer_to_go_back_is_worded_once_per_language_per_server():
    """The frame reruns on every click of every student: its words for the offer (a title per page and lesson, read
    from the lessons' files) are built once per language, not again on each run."""
    at = page("app_pages/masks.py")
    at.radio(key=state.setting_widget("lang")).set_value("ko").run()  # both languages built by now
    built = nav.offer_words.cache_info().misses
    for lang in ("en", "ko", "en"):
        at.radio(key=state.setting_widget("lang")).set_value(lang).run()
    no_errors(at)
    assert nav.offer_words.cache_info().misses == built
    lessons = nav.offer_words("ko")[1]
    first = next(iter(lessons))
    assert lessons[first].endswith(lesson_title(first, "ko"))


def test_settings_survive_a_page_switch():
    at = page("app_pages/masks.py")
    at.radio(key=state.setting_widget("lang")).set_value("ko").run()
    at.number_input(key=state.setting_widget("seed")).set_value(42).run()
    at.slider(key=state.setting_widget("precision")).set_value(2).run()
    at.switch_page(PLAYGROUND).run()
    no_errors(at)
    assert at.radio(key=state.setting_widget("lang")).value == "ko"
    assert at.number_input(key=state.setting_widget("seed")).value == 42
    assert at.slider(key=state.setting_widget("precision")).value == 2
    assert at.title[0].value.endswith(table("ko")["page.playground.title"])


def test_korean_default_from_browser_locale_is_not_forced_in_apptest():
    # AppTest has no browser locale: the default must be English, and JSON tables must parse
    for lang in ("en", "ko"):
        json.loads((ROOT / "assets" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    at = page("app.py", run=False)
    del at.session_state[state.SETTINGS._init]
    del at.session_state[state.setting("lang")]
    at.run()
    assert at.session_state[state.setting("lang")] == "en"


def test_the_playground_scenario_and_edits_survive_a_page_switch():
    import core
    from core import masks, tokens

    from .helpers import close, edit, heat

    at = page()
    open_tab(at, "mask")
    at.checkbox(key=state.SCENARIO.causal).check().run()
    open_tab(at, "embed")
    edit(at, "X", {0: {"d2": 3.0}})
    at.switch_page("app_pages/home.py").run()
    no_errors(at)
    at.switch_page(PLAYGROUND).run()
    no_errors(at)
    open_tab(at, "mask")
    assert at.checkbox(key=state.SCENARIO.causal).value is True
    X = tokens.c18_embedding().numpy()
    X[0, 2] = 3.0
    close(heat(at, PG_WEIGHTS), core.attention(X, X, X, mask=masks.causal(4)).weights)


@pytest.mark.parametrize("info", nav.PAGES, ids=[p.name for p in nav.PAGES])
def test_every_page_in_korean(info):
    at = page("app.py" if info.name == "home" else info.file, query={"lang": "ko"})
    no_errors(at)
    title = at.title[0].value
    assert title.endswith(table("ko")[f"page.{info.name}.title"]) and re.search("[가-힣]", title)
    assert at.sidebar.radio(key=state.setting_widget("lang")).label == table("ko")["settings.lang"]
