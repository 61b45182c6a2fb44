"""AppTest: the position page (the permutation experiment, encodings) against core."""

from __future__ import annotations

import numpy as np

from core import lab, positional, tokens
from ui import state

from .helpers import close, heat, no_errors, page

P_SA_X_PE = state.item(state.POSITION.p_sa_x, True)

MULTI, SELFCROSS, POSITION = "app_pages/multi_head.py", "app_pages/self_vs_cross.py", "app_pages/position.py"
C18 = list(tokens.C18_TOKENS)


def test_permutation_identity_and_its_break():
    at = page(POSITION, run=False)
    at.session_state[state.POSITION.perm] = "2 0 3 1"
    at.run()
    no_errors(at)
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    chk = lab.permutation_check(X, [2, 0, 3, 1], **W)
    close(heat(at, state.item(state.POSITION.sa_px, False)), chk.sa_px)
    close(heat(at, state.item(state.POSITION.sa_px, False)), heat(at, state.item(state.POSITION.p_sa_x, False)), tol=1e-5)
    broken = lab.permutation_check(X, [2, 0, 3, 1], positions=positional.sinusoidal(4, 8), **W)
    close(heat(at, state.item(state.POSITION.sa_px, True)), broken.sa_px)
    assert not np.allclose(heat(at, state.item(state.POSITION.sa_px, True)), heat(at, P_SA_X_PE), atol=1e-3)
    close(heat(at, state.POSITION.sin)[:4], positional.sinusoidal(16, 8)[:4], tol=0.006)
    same_x, same_xp = heat(at, state.POSITION.same_x), heat(at, state.POSITION.same_xp)
    assert np.array_equal(same_x[0], same_x[1]) and not np.allclose(same_xp[0], same_xp[1])


def test_bad_permutation_is_refused_with_a_message():
    at = page(POSITION, run=False)
    at.session_state[state.POSITION.perm] = "0 0 1 <b>x</b>"
    at.run()
    assert not at.exception
    assert any("not a permutation" in e.value for e in at.error)
    X = tokens.embed(C18, 8, seed=0)
    W = {n: tokens.projection(8, 8, seed=0, name=f"ps.{n}") for n in ("W_q", "W_k", "W_v")}
    close(heat(at, state.item(state.POSITION.sa_px, False)), lab.permutation_check(X, [3, 2, 1, 0], **W).sa_px)


def test_shuffle_button_is_seeded():
    at = page(POSITION)
    at.button(key=state.POSITION.shuffle).click().run()
    first = at.text_input(key=state.POSITION.perm).value
    again = page(POSITION)
    again.button(key=state.POSITION.shuffle).click().run()
    assert again.text_input(key=state.POSITION.perm).value == first and sorted(first.split()) == ["0", "1", "2", "3"]


def test_the_identity_order_is_called_equal_with_and_without_positions_and_nothing_else_is_claimed():
    from ui.i18n import table

    at = page(POSITION, run=False)
    at.session_state[state.POSITION.perm] = "0 1 2 3"  # the identity permutation
    at.run()
    no_errors(at)
    boxes = [b.value for kind in ("info", "success", "warning") for b in getattr(at, kind)]
    en = table("en")
    with_pe = [b for b in boxes if en["ps.explain.pe.same"] in b]
    assert with_pe and f"— {en['ps.equal']}" in with_pe[0]  # the default order is the identity
    assert not any("no longer just shuffled" in b for b in boxes)
    assert not any("breaks" in m.value for m in at.markdown)  # the heading claims nothing


def test_pages_and_exercises_print_a_difference_the_same_way():
    from attention_lab import tutorial as tut
    from core import lab

    fb = tut.exercise("position.shuffle").check("same")
    assert fb.ok and fb.values["gap"] == lab.gap_text(fb.values["diff"]) and lab.within_rounding(fb.values["diff"])
    assert lab.within_rounding(1.2e-7) and not lab.within_rounding(2e-5) and lab.gap_text(0.01234) == "0.012"
    text = tut.text("position.shuffle.ok", "en", **fb.values)
    assert f"is {lab.gap_text(fb.values['diff'])}." in text  # the exercise prints the gap as the pages do
