"""AppTest and unit checks: every bad JSON, a too-large image, a huge integer and too many tokens get the
app's own message in the learner's language (issue 27), never Streamlit's error box."""

from __future__ import annotations

import re
import struct
import zlib

import pytest

from attention_lab import scenario
from ui import state
from ui.i18n import table

from .helpers import page, texts

DEEP = b'{"app": "attention-lab", "playground": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
HUGE_INT = b'{"app": "attention-lab", "playground": {"d_k": ' + b"9" * 9_000 + b"}}"


@pytest.mark.parametrize("data, key", [
    (DEEP, "err.upload_deep"),
    (b"[" * 100_000, "err.upload_deep"),  # not even closed
    (HUGE_INT, "err.upload_number"),
    (b'{"app": "attention-lab", "playground": {"temperature": NaN}}', "err.upload_json"),
    (b'{"app": "attention-lab", "playground": {"tokens": "a\\ud800"', "err.upload_json"),
])
def test_bad_json_files_are_refused_with_the_apps_message(data, key):
    with pytest.raises(scenario.ScenarioError, match=f"^{re.escape(key)}$") as err:  # the message is the i18n key
        scenario.from_json(data)
    assert err.value.key == key
    for lang in ("en", "ko"):
        assert key in table(lang)


def test_a_string_with_brackets_does_not_count_as_nesting():
    doc = {"app": "attention-lab", "playground": {"tokens": "[" * 200 + ' "\\" ' + "{" * 200}}
    import json

    values, _, _, refused = scenario.from_json(json.dumps(doc).encode())
    assert refused == [] and values["tokens"].startswith("[[[")


def test_a_deeply_nested_link_is_refused_by_name_not_by_a_traceback():
    at = page(query={"blk": "[" * 20_000 + "]" * 20_000, "m_X": "[" * 5_000, "dk": "9" * 9_000})
    assert not at.exception, [e.value for e in at.exception]
    warned = " ".join(w.value for w in at.warning)
    assert "blocked" in warned and "matrices.X" in warned and "d_k" in warned


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims width × height pixels (its data is a few bytes)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 16)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("side", [5_000, 50_000])
def test_an_image_over_the_pixel_cap_is_too_large_not_unreadable(side):
    from ui.images import load

    with pytest.raises(ValueError, match=r"^vt\.err\.too_large$"):
        load(_png_header(side, side))


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_vit_page_says_too_large_in_the_learners_language(lang):
    at = page("app_pages/vision_transformer.py", query={"lang": lang}, run=False)
    at.session_state[state.VISION_TRANSFORMER.error] = "vt.err.too_large"  # what on_upload leaves
    at.run()
    assert not at.exception
    want = table(lang)["vt.err.too_large"].format(side=4096)
    assert any(want == e.value for e in at.error)


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_513_tokens_the_message_says_what_the_box_and_the_maps_each_hold(lang):
    at = page(query={"lang": lang})
    text = " ".join(f"w{i}" for i in range(513))
    at.text_input(key=state.SCENARIO.tokens).input(text).run()
    assert not at.exception
    want = table(lang)["err.tokens_too_many_kept"].format(n=513, limit=512, m=4)
    assert any(want == e.value for e in at.error)
    assert at.text_input(key=state.SCENARIO.tokens).value == text  # the learner's text is kept to shorten
    assert "w512" not in texts(at)  # and nothing drawn says otherwise: the maps hold the last 4 tokens
