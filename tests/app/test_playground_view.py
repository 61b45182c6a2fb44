"""AppTest: the Playground for a class — presenter view, the step-through and focused lesson links,
with bad and tampered parameters."""

from __future__ import annotations

import numpy as np
import pytest

import core
from core import tokens
from ui import state, view
from ui.i18n import table

from .helpers import PG_WEIGHTS, address, close, heat, inspector, no_errors, page, panels, pg_map, spec

KEYS = state.PLAYGROUND
C18_X = tokens.c18_embedding()


def maps(at) -> set[str]:
    """The pipeline maps on the page (maps of their own, or panels of the pipeline's one element)."""
    found = {el.proto.id.rsplit("-", 1)[-1] for el in at.get("bidi_component")} | set(panels(at))
    return {s for s in ("scores", "scaled", "masked", "weights", "output") if pg_map(s) in found}


def test_presenter_view_from_the_link_enlarges_the_maps_and_hides_the_sidebar():
    at = page(query={"present": "1"})
    no_errors(at)
    assert at.toggle(key=KEYS.present).value is True
    assert spec(at, PG_WEIGHTS)["present"] is True
    # the frame's presenter view (ui/presenter.py): its style, out of the page's flow
    assert any("stSidebar" in m.proto.body and "display: none" in m.proto.body for m in at.get("html"))
    at.toggle(key=KEYS.present).set_value(False).run()
    assert spec(at, PG_WEIGHTS)["present"] is False
    assert "present" not in address(at)


def test_step_through_shows_one_more_step_per_click_with_a_sentence_about_the_numbers():
    at = page()
    assert maps(at) == {"scores", "scaled", "masked", "weights", "output"}
    at.button(key=KEYS.step_start).click().run()
    no_errors(at)
    assert maps(at) == {"scores"}
    S = (C18_X @ C18_X.T).numpy()  # by hand: the largest score and its pair
    i, j = np.unravel_index(np.argmax(S), S.shape)
    sentence = at.info[0].value
    assert f"{S[i, j]:.6f}" in sentence and tokens.C18_TOKENS[i] in sentence
    shown = []
    for _ in range(5):
        at.button(key=KEYS.step_next).click().run()
        shown.append(len(maps(at)))
    assert shown == [2, 3, 4, 5, 5]  # the sixth step is the inspector
    assert address(at)["step"] == "6"
    at.button(key=KEYS.step_prev).click().run()
    assert len(maps(at)) == 5 and "Step 5" in at.info[0].value
    at.button(key=KEYS.step_all).click().run()
    assert maps(at) == {"scores", "scaled", "masked", "weights", "output"} and "step" not in address(at)


def test_a_lesson_link_hides_controls_keeps_their_values_and_shows_only_its_panels():
    at = page(query={"causal": "1", "T": "0.5", "hide": "embed,qkv,score,mask,notation", "panels": "weights,inspector"})
    no_errors(at)
    assert maps(at) == {"weights"}
    setup = [t.label for t in at.tabs if t.label.startswith(("①", "②", "③", "④", "⑤"))]
    assert setup == ["① " + table("en")["class.tab.share"]]  # of the setup tabs only the share tab is left, as ①
    assert not [r for r in at.radio if r.key == state.SCENARIO.convention]
    ref = core.attention(C18_X, C18_X, C18_X, mask=core.masks.causal(4), temperature=0.5)  # hidden values still apply
    close(heat(at, PG_WEIGHTS), ref.weights)
    assert [s["key"] for s in inspector(at)["sections"]] == [KEYS.fig_alpha, KEYS.fig_contrib]  # the inspector


@pytest.mark.parametrize("bad", [{"step": "abc"}, {"present": "maybe"}, {"panels": "<script>"}, {"hide": "everything"},
                                 {"step": "99", "panels": ""}])
def test_tampered_view_parameters_give_a_message_and_the_default_view(bad):
    at = page(query=bad)
    no_errors(at)
    assert any("view settings" in w.value for w in at.warning), [w.value for w in at.warning]
    assert maps(at) == {"scores", "scaled", "masked", "weights", "output"}


def test_the_share_tab_builds_a_focused_link_and_its_qr_code():
    import base64
    import io

    import zxingcpp
    from PIL import Image

    at = page()
    at.session_state[KEYS.tab_id] = "share"
    at.run()
    at.multiselect(key=KEYS.lesson_groups).set_value(["tokens", "mask"]).run()
    at.multiselect(key=KEYS.lesson_panels).set_value(["weights"]).run()
    link = at.code[1].value
    params = dict(p.split("=", 1) for p in link.split("?", 1)[1].split("&"))
    v, refused = view.from_query({k: v.replace("%2C", ",") for k, v in params.items()})
    assert refused == [] and v.hidden == {"embed", "qkv", "score", "notation"} and v.panels == ("weights",)
    assert v.student  # a student's link unless the teacher asks for the teacher's controls
    qr = component(at, KEYS.qr)
    assert qr["caption"] == table("en")["share.qr"] and qr["link"] == link
    # the page draws the link's code; the browser test decodes the picture on screen as well
    decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(base64.b64decode(qr["png"]))))
    assert decoded and decoded[0].text == link
    at.checkbox(key=KEYS.lesson_teacher).check().run()
    assert "student" not in at.code[1].value


def component(at, key: str) -> dict:
    """The data of a component element (a v2 component) by its key."""
    import json

    found = [el for el in at.get("bidi_component") if el.proto.id.endswith("-" + key)]
    assert len(found) == 1, key
    return json.loads(found[0].proto.json)


@pytest.mark.parametrize("groups", [["tokens", "mask"], []])
def test_a_student_link_has_no_teacher_controls_and_numbers_its_tabs_from_one(groups):
    hide = ",".join(g for g in view.GROUPS if g not in groups)
    at = page(query={"hide": hide, "student": "1", "step": "2"} if hide else {"student": "1", "step": "2"})
    no_errors(at)
    keys = {w.key for w in [*at.toggle, *at.button]}
    assert not keys & {KEYS.present, KEYS.step_start, KEYS.step_next, KEYS.step_prev, KEYS.step_all}, keys
    setup = [t.label for t in at.tabs if t.label[:1] in "①②③④⑤"]
    shown = [g for g in ("embed", "qkv", "score", "mask") if g not in hide.split(",")]
    assert setup == [f"{'①②③④'[i]} {table('en')[f'class.tab.{g}']}" for i, g in enumerate(shown)]
    assert maps(at) == {"scores", "scaled"}  # the step of the link still applies


def test_the_link_host_can_be_set_for_a_server_behind_a_proxy_and_a_bad_one_is_refused():
    at = page()
    at.session_state[KEYS.tab_id] = "share"
    at.run()
    at.text_input(key=KEYS.link_host).input("https://lab.example.org").run()
    no_errors(at)
    assert all(c.value.startswith("https://lab.example.org/?") or c.value.startswith("https://lab.example.org?")
               for c in at.code[:2]), [c.value for c in at.code[:2]]
    at.text_input(key=KEYS.link_host).input("evil.org/<script>").run()
    assert [e.value for e in at.error] == [table("en")["class.host.bad"]]
    assert not at.code[1].value.startswith("http://evil")


def test_the_link_host_comes_from_the_environment_for_a_server_behind_a_proxy(monkeypatch):
    from ui.link import PUBLIC_URL_ENV

    monkeypatch.setenv(PUBLIC_URL_ENV, "https://class.example.org")
    at = page()
    at.session_state[KEYS.tab_id] = "share"
    at.run()
    no_errors(at)
    links = [c.value for c in at.code[:2]]
    assert links and all(v.startswith("https://class.example.org") for v in links), links
    at.text_input(key=KEYS.link_host).input("https://room.example.net").run()  # the teacher's typed host wins
    assert at.code[0].value.startswith("https://room.example.net"), at.code[0].value


def _latex_letters(latex: str) -> list[str]:
    """The letters of a LaTeX formula in order, its commands (\\top, \\tanh, \\dfrac, …) removed."""
    import re

    return re.findall(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", " ", latex))


def _mathml_letters(root) -> list[str]:
    """The one-letter identifiers of a MathML formula in order (words such as tanh are operators)."""
    return [e.text for e in root.iter("mi") if e.text and len(e.text) == 1 and e.text.isascii()]


@pytest.mark.parametrize("conv", ["row", "column"])
@pytest.mark.parametrize("score", core.SCORE_FUNCTIONS)
def test_the_pipeline_is_one_element_whose_panels_carry_their_formula_and_shape(conv, score):
    import xml.etree.ElementTree as ET

    from ui.widgets import formulas

    at = page(query={"conv": conv, "score": score})
    no_errors(at)
    shown = panels(at)
    assert list(shown) == [pg_map(s) for s in ("scores", "scaled", "masked", "weights", "output")]
    pipeline_elements = [el for el in at.get("bidi_component") if KEYS.pipeline in el.proto.id]
    assert len(pipeline_elements) == 1  # one message for the whole pipeline
    for key, p in shown.items():
        root = ET.fromstring(f"<math>{p['mathml']}</math>")  # well-formed MathML
        assert p["title"] and p["shape"] and "".join(root.itertext())
        if key == pg_map("scores"):  # the same letters, in the same order, as the page's LaTeX for this score
            latex = formulas.SCORE_MATRIX[conv][score]
            assert _mathml_letters(root) == _latex_letters(latex), (p["mathml"], latex)
    n = len(tokens.C18_TOKENS)
    shape = shown[pg_map("scores")]["shape"]
    assert (f"Q ({n}×3) · Kᵀ (3×{n})" if conv == "row" else f"Kᵀ ({n}×3) · Q (3×{n})") in shape


def test_the_inspector_is_one_element_with_its_formula_picker_and_both_charts():
    import xml.etree.ElementTree as ET

    from ui.widgets import formulas

    at = page(query={"tok": "a b c", "q": "2"})
    no_errors(at)
    data = inspector(at)
    assert [el for el in at.get("bidi_component") if el.proto.id.endswith(KEYS.inspector)]  # one element
    assert data["options"] == ["0 a", "1 b", "2 c"] and data["chosen"] == 2
    root = ET.fromstring(f"<math>{data['mathml']}</math>")  # well-formed, the same letters as the LaTeX of the formula
    assert _mathml_letters(root) == _latex_letters(formulas.CONTRIB)
    headings = [s["heading"] for s in data["sections"]]
    assert all("2 c" in h for h in headings) and len(data["sections"][0]["bars"]["rows"]) == 3
    at.radio(key=state.setting_widget("lang")).set_value("ko").run()  # in the current language
    assert inspector(at)["title"] == table("ko")["pg.inspector"]


@pytest.mark.parametrize("value", [None, "2", 2.0, True, -1, 3, 10**9, float("nan"), "<script>alert(1)</script>", [1]])
def test_a_tampered_query_pick_is_ignored(value):
    """What the inspector's picker sends back is checked before it moves the query."""
    from ui.widgets.bars import picked_index

    assert picked_index(value, 3) is None
    assert [picked_index(i, 3) for i in range(3)] == [0, 1, 2]
