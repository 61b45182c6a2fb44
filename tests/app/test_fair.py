"""A session's fair share (serving/fair.py): the CPU of its runs is counted, and a session over its share
waits before its next run until the window has room again."""

from __future__ import annotations

import threading
import time
from collections import deque

import pytest

from serving import fair
from ui import state

from .helpers import page


def test_under_the_share_nobody_waits():
    assert fair.wait_needed(deque(), 100.0) == 0.0
    spent = deque([(99.0, fair.SHARE * fair.WINDOW * 0.9)])
    assert fair.wait_needed(spent, 100.0) == 0.0


def test_over_the_share_the_wait_lets_the_oldest_runs_leave_the_window():
    W, budget = fair.WINDOW, fair.SHARE * fair.WINDOW
    # three heavy runs ending at t = 91, 95, 99, each a third of the budget plus a bit
    cost = budget / 3 + budget / 10
    spent = deque([(91.0, cost), (95.0, cost), (99.0, cost)])
    wait = fair.wait_needed(spent, 100.0)
    assert wait == 91.0 + W - 100.0  # once the first has left, the other two fit
    assert fair.wait_needed(spent, 100.0 + wait) == 0.0  # and then it may run
    old = deque([(80.0, 50.0), (99.5, 0.01)])  # outside the window: forgotten
    assert fair.wait_needed(old, 100.0) == 0.0 and len(old) == 1


def test_a_wait_is_bounded():
    assert fair.wait_needed(deque([(100.0, 1000.0)]), 100.0) == fair.MAX_WAIT


def test_every_run_of_a_session_is_counted_once():
    at = page()
    spent = at.session_state[state.FRAME.cpu_spent]
    n = len(spent)
    assert n >= 1 and all(cpu >= 0 for _, cpu in spent)
    at.text_input(key=state.SCENARIO.tokens).input("a b c d e").run()
    assert len(at.session_state[state.FRAME.cpu_spent]) == n + 1  # nested boundaries: one entry per run


def test_a_session_alone_on_the_server_never_waits(monkeypatch):
    """The share is enforced only while another session is at work: its run in progress, or ended less
    than RECENT seconds ago."""
    slept = []
    monkeypatch.setattr(fair.time, "sleep", lambda s: slept.append(s))
    spent = deque([(fair.time.monotonic(), 1000.0)])  # far over its share
    monkeypatch.setattr(fair, "_at_work", {})
    fair.metered(lambda: None, lambda: spent, lambda: "")
    fair.metered(lambda: None, lambda: spent, lambda: "")  # its own last run does not count as another session's
    assert slept == []
    fair._at_work["another session"] = float("inf")  # another session's run is in progress
    fair.metered(lambda: None, lambda: spent, lambda: "")
    assert len(slept) == 1 and 0 < slept[0] <= fair.MAX_WAIT
    fair._at_work["another session"] = fair.time.monotonic()  # … has just ended: still at work
    fair.metered(lambda: None, lambda: spent, lambda: "")
    assert len(slept) == 2
    fair._at_work["another session"] = fair.time.monotonic() - fair.RECENT  # idle for RECENT seconds: gone
    fair.metered(lambda: None, lambda: spent, lambda: "")
    assert len(slept) == 2 and "another session" not in fair._at_work


def test_a_run_that_hands_its_work_to_the_shared_batch_never_waits_but_counts(monkeypatch):
    """The language model's writing part (page.boundary(..., queued=True)) starts at once even far over the share
    while others are at work; its CPU still goes into the window."""
    slept = []
    monkeypatch.setattr(fair.time, "sleep", lambda s: slept.append(s))
    spent = deque([(fair.time.monotonic(), 1000.0)])
    monkeypatch.setattr(fair, "_at_work", {"another session": float("inf")})
    fair.metered(lambda: None, lambda: spent, lambda: "", wait=False)
    assert slept == [] and len(spent) == 2
    fair.metered(lambda: None, lambda: spent, lambda: "")  # the same session's ordinary run still waits
    assert len(slept) == 1


def _until(fact, what: str, seconds: float = 60) -> None:
    """Wait for ``fact()`` (a bound for a hung thread, never a pace)."""
    deadline = time.monotonic() + seconds
    while not fact():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def test_turns_let_n_in_at_once_and_the_next_waits_for_a_free_one():
    turns, said, inside = fair.Turns(2), [], threading.Event()

    def third() -> None:
        with turns.turn(lambda: said.append("waits")):
            inside.set()

    with turns.turn(), turns.turn():  # both turns taken
        th = threading.Thread(target=third)
        th.start()
        _until(lambda: turns.waiting == 1, "the third never waited")
        assert said == ["waits"] and not inside.is_set()
    th.join(60)
    assert inside.is_set() and turns.waiting == 0
    with turns.turn(lambda: said.append("again")), turns.turn(lambda: said.append("again")):
        pass  # both free again: nobody waits
    assert said == ["waits"]


def test_a_turn_is_given_back_when_its_part_fails():
    turns = fair.Turns(1)
    with pytest.raises(ValueError), turns.turn():
        raise ValueError
    with turns.turn(lambda: pytest.fail("the failed part kept its turn")):
        pass
