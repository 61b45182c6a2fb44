"""A session's side of a live class (the page is ``app_pages/live_class.py``; the class itself,
``attention_lab.live``): the student's seat, kept in this browser; following the teacher on every page;
the exercises a seated student checks, reported to the class.

Live without reloading: a seated student's every page (and the teacher's dashboard) holds a small fragment
that reruns every few seconds and reads one number in the store (a student: the version of the teacher's record;
the dashboard: the class's version, bumped by every write). Only when it changed does the page run again, from the
store: nothing is drawn or sent while nothing changed."""

from __future__ import annotations

import logging

import streamlit as st

from attention_lab import scenario
from attention_lab.live import classes
from attention_lab.live.store import now

from . import compute, nav, scenario_state, state
from .i18n import t
from .text import md
from .widgets.assets import ASSETS, SILENT_LIB

KEYS = state.LIVE
log = logging.getLogger(__name__)
STUDENT_POLL_S = 2.0  # a student's page checks the teacher's record this often (follow me: ~3–4 s for 40, BENCHMARKS.md)
TEACHER_POLL_S = 1.0  # the dashboard: an answer shows within ~2 s
_SEAT = st.components.v2.component("attention_lab_seat",
                                   js=SILENT_LIB + (ASSETS / "seat.js").read_text(encoding="utf-8"))


def store():
    return compute.class_store()


def current() -> tuple[str, str, str] | None:
    """This session's seat in a class: (join code, student id, nickname), or None."""
    seat = st.session_state.get(KEYS.seat)
    return tuple(seat) if seat else None


def sit(code: str, sid: str, name: str) -> None:
    st.session_state[KEYS.seat] = (code, sid, name)
    st.session_state.pop(KEYS.followed, None)  # a late joiner is taken to where the class is


def leave() -> None:
    st.session_state.pop(KEYS.seat, None)
    st.session_state[KEYS.refused] = True  # the browser forgets the seat too (the keeper, next run)


def _restored() -> None:
    """The seat this browser kept (seat.js), taken again when its class still holds the student."""
    got = st.session_state.get(KEYS.keeper) or {}
    seat = got.get("seat") if hasattr(got, "get") else None
    if current() is not None or not isinstance(seat, dict):
        return
    code, sid = classes.read_code(seat.get("code")), classes.read_sid(seat.get("sid"))
    try:
        student = store().students(code).get(sid) if code and sid else None
        if student is not None and classes.live_record(store(), code, now()):
            sit(code, sid, student["name"])
            return
    except classes.Refused:
        pass
    st.session_state[KEYS.refused] = True


def keeper() -> None:
    """The seat in this browser's storage: saved while seated, asked for on a session's first run, forgotten
    after leaving or when its class is gone."""
    seat = current()
    first = not st.session_state.get(KEYS.asked)
    st.session_state[KEYS.asked] = True
    forget = st.session_state.pop(KEYS.refused, False)
    if seat is None and not first and not forget:
        return
    data = {"seat": {"code": seat[0], "sid": seat[1]} if seat else None, "ask": first and seat is None, "forget": forget}
    _SEAT(data=data, key=KEYS.keeper, on_seat_change=_restored)


def watch(code: str, every: float, *, teacher: bool = False) -> None:
    """The cheap check: every ``every`` s, one number of the class; the page runs again only when it changed. A
    student's page reads the record's version (the teacher's changes), the dashboard the class's (every write)."""
    def check() -> None:
        try:
            version = versions(code, teacher=teacher)
        except Exception:  # noqa: BLE001 — a store that is away for a moment: the next check tries again
            log.warning("class store unreachable", exc_info=True)
            return
        if version != st.session_state.get(KEYS.teacher_version if teacher else KEYS.version):
            st.rerun(scope="app")

    st.fragment(check, run_every=every)()


def versions(code: str, *, teacher: bool = False) -> int | None:
    return store().version(code) if teacher else store().record_version(code)


def seen(code: str, *, teacher: bool = False) -> None:
    """The number this run drew from (the check compares with it)."""
    st.session_state[KEYS.teacher_version if teacher else KEYS.version] = versions(code, teacher=teacher)


def frame(here: str = "") -> bool:
    """On every page, before it draws (``here``: its URL path): the seat kept; for a seated student, the class's
    state → True when the teacher paused the class (the page is not drawn). A new place to follow takes the student
    there. A class that has ended is forgotten in this run, by the browser too (the keeper is drawn after the class
    was read)."""
    seat, record = current(), None
    try:
        if seat is not None:
            seen(seat[0])
            record = classes.live_record(store(), seat[0], now())
    except classes.Refused:
        leave()
        keeper()
        st.info(t("live.err.no_class"))
        return False
    except Exception:  # noqa: BLE001 — the store away for a moment: the page draws, the class waits
        log.warning("class store unreachable", exc_info=True)
        st.warning(t("live.err.store"))
    keeper()
    if seat is None or record is None:
        return False
    watch(seat[0], STUDENT_POLL_S)
    with st.sidebar:
        st.caption(t("live.seated", code=seat[0], name=md(seat[2])))
    if record["paused"]:
        st.info(t("live.paused"))
        return True
    follow(record["follow"], here)
    return False


def follow(target: dict | None, here: str = "") -> None:
    """Take the student to the teacher's place once per change of it: a lesson, the Playground with the
    teacher's scenario, or the class page (a question is open, or revealed); None: free. A student already on the
    class page stays: this run draws it (switching to it would cut this run at the frame and run the page again, a
    second run per phone at every reveal)."""
    if target == st.session_state.get(KEYS.followed):
        return
    st.session_state[KEYS.followed] = target
    if not target:
        return
    page = target.get("page")
    if page == "tutorial" and target.get("lesson"):
        st.session_state[state.TUTORIAL.lesson] = target["lesson"]
        st.switch_page(nav.PAGE_BY_NAME["tutorial"].file, query_params={"lesson": target["lesson"]})
    elif page == "playground":
        values, matrices, _ = scenario.from_query(target.get("query") or {})
        st.session_state.pop(state.SCENARIO.carry, None)
        scenario_state.apply(values, matrices)
        st.session_state[state.SCENARIO.url_loaded] = True  # the teacher's scenario, not the link's
        st.switch_page(nav.PAGE_BY_NAME["playground"].file, query_params=target.get("query") or {})
    elif page == "live_class" and here != nav.PAGE_BY_NAME["live_class"].url:
        st.switch_page(nav.PAGE_BY_NAME["live_class"].file)


def share_work(query: dict, seed: int) -> None:
    """A seated student's Playground scenario (its link's parameters and the seed), kept with the student whenever it
    changed: the teacher may look at it, and show a nameless copy to the class. Nothing is written while it stays."""
    seat = current()
    work = classes.read_work(query, seed) if seat else None
    if work is None or work == st.session_state.get(KEYS.work):
        return
    try:
        classes.save_work(store(), seat[0], seat[1], query, seed, now())
    except classes.Refused:
        return
    except Exception:  # noqa: BLE001 — the store away for a moment: the next change tries again
        log.warning("class store unreachable", exc_info=True)
        return
    st.session_state[KEYS.work] = work


def asked_exercise(lesson_id: str) -> dict | None:
    """The exercise of ``lesson_id`` the teacher took a seated student to (Follow me) → {"id": exercise id, "token":
    what is new on each Follow me}, or None."""
    target = st.session_state.get(KEYS.followed) if current() else None
    if not target or target.get("page") != "tutorial" or target.get("lesson") != lesson_id or not target.get("exercise"):
        return None
    return {"id": target["exercise"], "token": f"{target['exercise']}@{target.get('at', 0)}"}


def report(exercise_id: str, ok: bool, why: str, shown) -> None:
    """A seated student's checked exercise, to the class's grid (a refused report — too fast, class gone — is dropped)."""
    seat = current()
    if seat is None:
        return
    try:
        classes.report_exercise(store(), seat[0], seat[1], exercise_id, ok, why, shown, now())
    except classes.Refused:
        pass
