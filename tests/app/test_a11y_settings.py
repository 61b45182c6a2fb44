"""The high-contrast setting (sidebar, kept in the link as hc=1) and the accessible names the maps are
given, in both languages (AppTest; the browser side is tests/browser/test_a11y_*)."""

from __future__ import annotations

import json

import pytest

from ui import state
from ui.i18n import table

from .helpers import PG_WEIGHTS, address, no_errors, page, panels


def _frame(at) -> dict:
    for el in at.get("bidi_component"):
        if el.proto.id.endswith("-" + state.FRAME.a11y):
            return json.loads(el.proto.json)
    raise AssertionError("the frame's accessibility element is missing")


def test_high_contrast_from_the_link_reaches_the_maps_and_stays_in_the_link():
    at = page(query={"hc": "1"})
    no_errors(at)
    assert at.toggle(key=state.setting_widget("contrast")).value is True
    assert _frame(at) == {"lang": "en", "hc": True}
    assert panels(at)[PG_WEIGHTS]["map"]["hc"] is True
    assert address(at)["hc"] == "1"  # the Playground's link (its address bar), with the settings
    at.toggle(key=state.setting_widget("contrast")).set_value(False).run()
    assert "hc" not in address(at)  # off: old-style links stay as they were
    assert panels(at)[PG_WEIGHTS]["map"]["hc"] is False


def test_a_bad_high_contrast_value_is_refused_with_a_message():
    at = page(query={"hc": "7"})
    assert any("hc" in w for w in at.landing_warnings)
    assert at.toggle(key=state.setting_widget("contrast")).value is False


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_map_is_named_with_its_shape_in_the_chosen_language(lang):
    at = page(query={"lang": lang})
    no_errors(at)
    assert _frame(at)["lang"] == lang  # <html lang> follows the language
    maps = panels(at)
    assert maps
    words = table(lang)
    for key, p in maps.items():
        a = p["map"]["a11y"]
        n, m = len(p["map"]["ys"]), len(p["map"]["xs"])
        assert f"{n} × {m}" in a["name"] and p["map"]["y_title"] in a["name"] and p["map"]["x_title"] in a["name"], key
        assert a["id"] == key and a["keys"] == words["a11y.map.keys"] and a["table"] == words["a11y.map.table"]
