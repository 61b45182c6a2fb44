"""Home page, shared settings across pages, and complete translation tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ui.i18n import table

from .helpers import PLAYGROUND, no_errors, open_tab, page

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
    for path in list((ROOT / "ui").glob("*.py")) + [ROOT / "app.py"] + list((ROOT / "pages").glob("*.py")):
        if path.name == "i18n.py":  # its docstring shows t("key")
            continue
        found = re.findall(r"""\bt\(\s*["']([\w.]+)["']""", path.read_text(encoding="utf-8"))
        used |= {k for k in found if not k.endswith(".")}  # 'preset.' + p is a dynamic prefix
    missing = sorted(k for k in used if k not in en)
    assert not missing, missing


def test_dynamic_keys_exist_for_every_option():
    import core
    from ui import scenario
    from ui.settings import PAGES

    en = table("en")
    expected = [f"score.{s}" for s in core.SCORE_FUNCTIONS] + [f"pg.qkv.{m}" for m in core.lab.QKV_MODES]
    expected += [f"pg.embedding.{e}" for e in scenario.EMBEDDINGS] + [f"scale.{s}" for s in scenario.SCALES]
    expected += [f"conv.{c}" for c in scenario.CONVENTIONS] + [f"pg.mode.{m}" for m in scenario.MODES]
    expected += [f"preset.{p}" for p in scenario.PRESETS]
    expected += [f"page.{p.id}.title" for p in PAGES] + [f"page.{p.id}.blurb" for p in PAGES]
    expected += [f"nt.m.{m}" for m in ("Q", "scores", "logits", "weights", "output")]
    expected += [f"nt.axes.{a}.{s}" for a in ("tokens", "qk") for s in ("row", "col")]
    expected += ["nt.selected.qk", "nt.selected.tok"] + [f"mk.step.{s}" for s in ("M", "scaled", "logits", "weights")]
    expected += [f"mk.order.{k}{c}" for k in ("right", "after", "big") for c in ("", ".code")]
    expected += [f"sc.exp.{k}" for k in ("max", "entropy", "grad")]
    assert [k for k in expected if k not in en] == []


def test_home_page_in_both_languages():
    at = page("app.py")
    no_errors(at)
    assert "Attention" in at.markdown[1].value or any("query" in m.value for m in at.markdown)
    assert any("Attention(Q, K, V)" in str(l.value) or "Attention" in str(l.value) for l in at.latex)
    assert any("C18" in m.value for m in at.markdown)
    at.radio(key="_w.settings.lang").set_value("ko").run()
    no_errors(at)
    assert any("쿼리" in m.value for m in at.markdown)
    assert at.title[0].value.endswith("홈")


def test_settings_survive_a_page_switch():
    at = page("app.py")
    at.radio(key="_w.settings.lang").set_value("ko").run()
    at.number_input(key="_w.settings.seed").set_value(42).run()
    at.slider(key="_w.settings.precision").set_value(2).run()
    at.switch_page(PLAYGROUND).run()
    no_errors(at)
    assert at.radio(key="_w.settings.lang").value == "ko"
    assert at.number_input(key="_w.settings.seed").value == 42
    assert at.slider(key="_w.settings.precision").value == 2
    assert at.title[0].value.endswith("어텐션 놀이터")


def test_korean_default_from_browser_locale_is_not_forced_in_apptest():
    # AppTest has no browser locale: the default must be English, and JSON tables must parse
    for lang in ("en", "ko"):
        json.loads((ROOT / "assets" / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))
    at = page("app.py", run=False)
    del at.session_state["settings._init"]
    del at.session_state["settings.lang"]
    at.run()
    assert at.session_state["settings.lang"] == "en"


def test_the_playground_scenario_and_edits_survive_a_page_switch():
    import core
    from core import masks, tokens

    from .helpers import close, edit, heat

    at = page()
    open_tab(at, "mask")
    at.checkbox(key="pg.causal").check().run()
    open_tab(at, "embed")
    edit(at, "X", {0: {"d2": 3.0}})
    at.switch_page("app.py").run()
    no_errors(at)
    at.switch_page(PLAYGROUND).run()
    no_errors(at)
    open_tab(at, "mask")
    assert at.checkbox(key="pg.causal").value is True
    X = tokens.c18_embedding().numpy()
    X[0, 2] = 3.0
    close(heat(at, "pg.chart.weights"), core.attention(X, X, X, mask=masks.causal(4)).weights)
