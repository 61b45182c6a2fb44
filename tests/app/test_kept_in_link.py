"""What a learner typed or chose on the model pages lives in the page's link (issue 35), so a new session
opened on that link — what a restart or a lost replica gives, once the guard reopens the link — shows it
again: the language model's prompt, sampling settings, tokens written, open tab, block, head and mechanism
changes; the trained model's sentence and head; the ViT's weights, image, patch size, class token and layer.
A long prompt is packed (``pz``) within the link's byte budget, and one that does not fit is named on the
page; a tampered value gets a message and the page's default."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from attention_lab import scenario
from core.models import decoder
from ui import compute, link, state

from .helpers import no_errors, page

LM = "app_pages/language_model.py"
TM = "app_pages/trained_model.py"
VT = "app_pages/vision_transformer.py"
LMK, TMK, VTK = state.LANGUAGE_MODEL, state.TRAINED_MODEL, state.VISION_TRANSFORMER


def _params(at) -> dict[str, str]:
    out = {}
    for k in at.query_params:
        v = at.query_params[k]
        out[k] = v[0] if isinstance(v, list) else v
    return out


def _reopened(path: str, at):
    """A new session on the link the last one left in the address bar."""
    return page(path, query=_params(at))


def _model_installed() -> bool:
    try:
        decoder.gguf_path()
    except decoder.ModelNotInstalled:
        return False
    return True


needs_model = pytest.mark.skipif(not _model_installed(), reason=f"the model package is not installed "
                                                                f"({decoder.INSTALL_HINT})")


@needs_model
def test_the_language_model_page_comes_back_from_its_link():
    at = page(LM, run=False)
    chosen = {LMK.prompt: "Once upon a time, there was a little robot who", LMK.temperature: 1.25, LMK.top_k: 40,
              LMK.top_p: 0.9, LMK.seed: 7, LMK.n_new: 3, LMK.max_new: 8, LMK.tab_id: "mechanism", LMK.gen_layer: 4,
              LMK.layer: 18, LMK.head: 6, LMK.off_heads: [(0, 1), (18, 6)], LMK.off_layers: [2], LMK.window: 5,
              LMK.sinks: 2}
    for key, value in chosen.items():
        at.session_state[key] = value
    at.run()
    compute.lm_generate(chosen[LMK.prompt], 3, 1.25, 40, 0.9, 7, "cpu")  # until the server's batch has written them
    at.run()
    no_errors(at)
    again = _reopened(LM, at)
    no_errors(again)
    for key, value in chosen.items():
        got = again.session_state[key]
        assert (list(map(tuple, got)) if key == LMK.off_heads else got) == value, key
    # the continuation is written again from the seed: the same tokens as before
    first = [m.value for m in at.get("code")]
    assert first and first == [m.value for m in again.get("code")]


@needs_model
def test_a_long_prompt_is_packed_and_one_too_long_for_a_link_is_named():
    at = page(LM, run=False)
    longish = "The cat sat on the mat and looked at the bird. " * 40  # ~1,900 characters: past the plain budget
    at.session_state[LMK.prompt] = longish
    at.run()
    params = _params(at)
    assert "prompt" not in params and link.PAGE_PACKED in params
    assert len(urlencode(params)) <= scenario.LINK_BYTES + 200
    assert _reopened(LM, at).session_state[LMK.prompt] == longish
    # 4,000 Korean characters do not fit even packed: named on the page, the rest still in the link
    at = page(LM, run=False)
    at.session_state[LMK.prompt] = "".join(chr(0xAC00 + (i * 7919) % 11172) for i in range(4000))
    at.session_state[LMK.seed] = 9
    at.run()
    assert not at.exception
    assert any("too long to keep in the page's link" in i.value for i in at.info)
    params = _params(at)  # without the prompt the rest is short again: written plainly
    assert "prompt" not in params and link.PAGE_PACKED not in params and params["lmseed"] == "9"


@needs_model
@pytest.mark.parametrize("bad", [{"temp": "nan"}, {"temp": "9"}, {"topk": "-1"}, {"written": "1e9"}, {"tab": "<b>x</b>"},
                                 {"off": "1.2,zz"}, {"pz": "%%%"}, {"prompt": "x" * 4001}])
def test_a_tampered_link_gets_a_message_and_the_defaults(bad):
    at = page(LM, query=bad)
    assert not at.exception
    assert any("cannot use" in w.value for w in at.warning)
    assert at.session_state[LMK.temperature] == 0.7 and at.session_state[LMK.tab_id] in ("write", "heads", "mechanism")


def test_the_trained_model_page_comes_back_from_its_link():
    at = page(TM, run=False)
    at.session_state[TMK.sentence] = "The river bank was muddy after the rain"
    at.run()
    at.selectbox(key=TMK.layer).set_value(3).run()
    at.selectbox(key=TMK.head).set_value(5).run()
    no_errors(at)
    again = _reopened(TM, at)
    no_errors(again)
    assert again.session_state[TMK.sentence] == "The river bank was muddy after the rain"
    assert (again.selectbox(key=TMK.layer).value, again.selectbox(key=TMK.head).value) == (3, 5)


def test_the_vision_transformer_page_comes_back_from_its_link():
    at = page(VT, run=False)
    at.session_state[VTK.weights] = "random"
    at.session_state[VTK.choice] = "face"
    at.session_state[VTK.P] = 8
    at.session_state[VTK.cls] = False
    at.run()
    no_errors(at)
    again = _reopened(VT, at)
    no_errors(again)
    for key, value in ((VTK.weights, "random"), (VTK.choice, "face"), (VTK.P, 8), (VTK.cls, False)):
        assert again.session_state[key] == value, key
    assert any("not kept" in c.value for c in again.caption)  # an upload is the exception, and the page says so


def test_the_trained_vit_keeps_its_shape_and_layer():
    at = page(VT, run=False)
    at.session_state[VTK.gen_choice] = 4
    at.session_state[VTK.layer] = 0
    at.run()
    no_errors(at)
    again = _reopened(VT, at)
    no_errors(again)
    assert (again.session_state[VTK.gen_choice], again.session_state[VTK.layer]) == (4, 0)


def test_no_page_names_a_kept_value_like_the_scenario_the_view_or_the_settings():
    """A page's own names never shadow the shared scenario's (``T`` is its temperature), the Playground's view
    (``step``) or the settings (``seed``): each page's KEPT is read from its module's source with ``ast``."""
    import ast
    from pathlib import Path

    from ui import settings, view

    taken = set(scenario.URL_NAMES.values()) | {scenario.PACKED} | set(view.URL.values()) | set(settings.URL_KEYS.values())
    found = {}
    for path in sorted((Path(__file__).resolve().parents[2] / "app_pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Kept" and len(node.args) >= 2:
                name = node.args[1]
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    found.setdefault(name.value, set()).add(path.stem)
    assert len(found) > 40
    assert not {n: pages for n, pages in found.items() if n in taken}


def test_a_lesson_comes_back_from_its_link_with_the_scenario_as_the_learner_left_it():
    """The tutorial's link holds the lesson, the progress and the lesson's scenario as changed: reopened, the
    lesson shows the learner's Q, K, V choice and tokens, not the lesson's own example again."""
    tu, TUK = "app_pages/tutorial.py", state.TUTORIAL
    at = page(tu, run=False)
    at.session_state[TUK.lesson] = "projections"
    at.run()
    no_errors(at)
    example = scenario.validate(__import__("attention_lab.tutorial", fromlist=["x"]).lesson("projections").scenario_dict())[0]
    changed = "identity" if example["qkv"] != "identity" else "projection"
    at.session_state[state.scenario_kept("qkv")] = changed
    at.session_state[state.scenario_kept("tokens")] = "kept after a restart"
    at.run()
    params = _params(at)
    assert params["lesson"] == "projections" and params["tok"] == "kept after a restart"
    again = _reopened(tu, at)
    no_errors(again)
    assert again.session_state[TUK.lesson] == "projections"
    assert again.session_state[state.scenario_kept("qkv")] == changed
    assert again.session_state[state.scenario_kept("tokens")] == "kept after a restart"
    fresh = page(tu, query={"lesson": "projections"})  # a lesson link without a scenario: the lesson's own example
    assert fresh.session_state[state.scenario_kept("qkv")] == example["qkv"]
