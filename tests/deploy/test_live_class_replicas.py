"""A live class across two replicas behind Debian's nginx (deploy/nginx.conf), sharing one real redis-server: the
teacher's browser is routed to one replica, the students' to the other. The teacher's dashboard counts the answers
given on the other replica; when the students' replica is lost, their browsers come back on the teacher's replica
as the same students (the seat kept in the browser), and nothing of the class is lost."""

from __future__ import annotations

import signal
import urllib.request

import pytest
from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM_ARGS, chromium_path, settled, wait_idle
from tests.deploy.conftest import two_replicas
from tests.live.servers import start_redis, stop
from ui import state
from ui.state import css_class as css

KEYS = state.LIVE
ROUTE = "attnlab_route"
WAIT = 90_000  # ms


@pytest.fixture(scope="module")
def redis_url():
    url, proc = start_redis()
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def replicas(tmp_path_factory, redis_url):
    """Two replicas on one Redis store (this module's own: the conftest's proxy fronts these)."""
    with two_replicas(tmp_path_factory.mktemp("live-replicas"), {"ATTN_LAB_STORE": redis_url}) as started:
        yield started


def route_to(proxy, replica) -> str:
    """A route cookie that nginx's consistent hash sends to ``replica`` (found by asking, one request per candidate)."""
    for i in range(64):
        value = f"live-{i}"
        req = urllib.request.Request(f"{proxy.url}/_stcore/health?probe={value}", headers={"Cookie": f"{ROUTE}={value}"})
        urllib.request.urlopen(req, timeout=10).read()
        lines = proxy.lines_with(f"probe={value}", 1)
        if lines and lines[-1]["upstream"] == replica.addr:
            return value
    raise AssertionError(f"no route among 64 reaches {replica.addr}")


def _open(browser, proxy, route: str, path: str, size=(1280, 720)):
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, locale="en-US")
    ctx.add_cookies([{"name": ROUTE, "value": route, "url": proxy.url}])
    page = ctx.new_page()
    page.goto(f"{proxy.url}{path}")
    wait_idle(page, timeout=WAIT)
    return ctx, page


def _text(page, text: str) -> None:
    expect(page.get_by_text(text, exact=False).first).to_be_visible(timeout=WAIT)


def test_teacher_and_students_on_different_replicas_share_the_class_and_survive_a_lost_replica(replicas, proxy):
    home, other = replicas
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            _, teacher = _open(browser, proxy, route_to(proxy, home), "/Class")
            teacher.locator(css(KEYS.start) + " button").click()
            code = teacher.locator(".al-join-code").inner_text(timeout=WAIT).replace(" ", "")
            away = route_to(proxy, other)
            students = []
            for name in ("Zorvath", "Quilbex"):
                _, page = _open(browser, proxy, away, f"/Class?class={code}", (390, 844))
                page.locator(css(KEYS.nick) + " input").fill(name)
                page.locator(css(KEYS.nick) + " input").press("Enter")
                settled(page)
                page.locator(css(KEYS.send) + " button").click()
                _text(page, "You are in class")
                students.append(page)
            _text(teacher, "Quilbex")  # joined on the other replica, listed on this one
            served = {x["upstream"] for x in proxy.log_lines() if x["route"] == away}
            assert served == {other.addr}, served  # the students' sessions are on the other replica
            settled(teacher)
            teacher.locator(css(KEYS.ask) + " button").click()
            for i, page in enumerate(students):
                _text(page, "Which key gets the most weight")
                settled(page)
                page.locator(css(state.item(KEYS.answer, "q1")) + " [data-testid=stRadioOption]").nth(i).click()
                page.get_by_role("button", name="Send").click()
                _text(page, "Your answer is in.")
            _text(teacher, "2 of 2 students answered.")

            other.proc.send_signal(signal.SIGKILL)  # the students' replica is lost, with their sessions
            other.proc.wait(timeout=10)
            for page in students:  # the guard reopens the page; nginx sends it to the replica left
                _text(page, "You are in class")
                _text(page, "You can change your answer")  # their answer is still theirs
            teacher.reload()
            wait_idle(teacher, timeout=WAIT)
            _text(teacher, "2 of 2 students answered.")
        finally:
            browser.close()
