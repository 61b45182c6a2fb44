"""The Playground's view in a link (presenter view, step, hidden controls, panels): parsing,
including bad and tampered parameters."""

from __future__ import annotations

import pytest

from ui import view


def test_default_view_needs_no_parameters_and_round_trips():
    v, refused = view.from_query({})
    assert v == view.View() and refused == [] and view.to_query(v) == {}
    custom = view.View(present=True, step=3, hidden=frozenset({"qkv", "embed"}), panels=("weights", "scores"))
    back, refused = view.from_query(view.to_query(custom))
    assert refused == [] and back.present and back.step == 3 and back.hidden == {"qkv", "embed"}
    assert back.panels == ("scores", "weights")  # canonical order


@pytest.mark.parametrize("params, bad", [
    ({"present": "yes"}, "present"), ({"step": "-1"}, "step"), ({"step": "7"}, "step"), ({"step": "1e3"}, "step"),
    ({"hide": "tokens,<script>"}, "hide"), ({"panels": ""}, "panels"), ({"panels": "weights,nope"}, "panels"),
    ({"hide": "x" * 500}, "hide"),
])
def test_bad_parameters_fall_back_to_the_default_and_are_named(params, bad):
    v, refused = view.from_query(params)
    assert refused == [bad]
    assert v == view.View()


def test_steps_reveal_panels_in_order_and_only_chosen_ones():
    v = view.View(step=2)
    assert [p for p in view.STEP_PANELS if v.shows(p)] == ["scores", "scaled"]
    v = view.View(step=0, panels=("weights", "inspector"))
    assert [p for p in view.STEP_PANELS if v.shows(p)] == ["weights", "inspector"]
    v = view.View(step=4, panels=("scores", "weights", "inspector"))
    assert [p for p in view.STEP_PANELS if v.shows(p)] == ["scores", "weights"]
