"""The presenter view from the frame (ui/presenter.py), on a page other than the Playground: ``?present=1`` opens it
(its style: no sidebar, larger type; every heatmap drawn large), page switches keep it, its button leaves it and the
link loses it; the Playground's toggle follows it."""

from __future__ import annotations

import json

from ui import state

from . import helpers as h

MASKS = "app_pages/masks.py"


def styled(at) -> bool:
    return any("stSidebar" in e.proto.body and "display: none" in e.proto.body for e in at.get("html"))


def maps_large(at) -> list[bool]:
    found = []
    for el in at.get("bidi_component"):
        data = json.loads(el.proto.json) if el.proto.json else None
        if isinstance(data, dict) and "z" in data:
            found.append(bool(data.get("present")))
    return found


def test_present_1_opens_it_on_any_page_switches_keep_it_and_its_button_leaves_it():
    at = h.page(MASKS, query={"present": "1"})
    h.no_errors(at)
    assert styled(at) and maps_large(at) and all(maps_large(at))
    assert at.query_params["present"] in ("1", ["1"])
    at.switch_page("app_pages/playground.py").run()  # another page of the same session: still presenting
    assert styled(at) and at.toggle(key=state.PLAYGROUND.present).value is True
    at.switch_page(MASKS).run()
    at.button(key=state.FRAME.present_leave).click().run()
    h.no_errors(at)
    assert not styled(at) and maps_large(at) and not any(maps_large(at))
    assert "present" not in at.query_params


def test_without_the_parameter_nothing_changes():
    at = h.page(MASKS)
    assert not styled(at) and not any(maps_large(at))
    assert not [b for b in at.button if b.key == state.FRAME.present_leave]
