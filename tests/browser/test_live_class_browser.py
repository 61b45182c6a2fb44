"""Real browser, real server: a live class. A teacher (1280×720, the projector) and three students (390×844, phones),
each in a browser context of its own: they join, follow the teacher, answer, see the reveal; the dashboard counts
them without a reload; names are hidden on the projector and never reach another student's page; the export and
the end of the class, after which the class's rows are gone from the store the server used. axe finds nothing
serious on the dashboard or on a phone with a question open. In both languages: follow me to one exercise of a lesson (the
student's lesson opens at it, focused), a student's Playground work on the dashboard and shown to the class with no
name, and axe on both screens."""

from __future__ import annotations

import csv
import io

import pytest
from playwright.sync_api import expect

from attention_lab import tutorial
from attention_lab.live.store import open_store
from attention_lab.strings import translate
from ui import state
from ui.state import css_class as css

from .a11y_audit import audit, grown
from .conftest import ARTIFACTS, settled, wait_idle
from .helpers import BUTTONS_OVER_LABELS, download

KEYS = state.LIVE
LIVE_WAIT = 60_000  # ms: the students' check runs every 2 s; a loaded CI machine takes longer to rerun a page
NAMES = ("Zorvath", "Quilbex", "<i>Xyphor</i>")  # words no page holds otherwise


def _context(chromium, width: int, height: int):
    ctx = chromium.new_context(viewport={"width": width, "height": height}, locale="en-US", accept_downloads=True)
    return ctx, ctx.new_page()


def shows(page, text: str, timeout: int = LIVE_WAIT) -> None:
    """Wait until the page shows ``text`` (it arrives by itself: nobody reloads)."""
    expect(page.get_by_text(text, exact=False).first).to_be_visible(timeout=timeout)


def _choose(page, key: str, option: str, attempts: int = 3) -> None:
    """Pick ``option`` in the select box ``key``. The dashboard runs again whenever the class changes; a click that
    lands while the box is being drawn again opens nothing, and a teacher would click again: so does this."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(attempts):
        settled(page)
        page.locator(css(key)).click()
        try:
            page.get_by_role("option", name=option).click(timeout=LIVE_WAIT // attempts)
            return
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                raise


def in_expander(page, label: str, act, attempts: int = 3) -> None:
    """Do ``act(timeout_ms)`` (a click or a wait) inside the expander ``label``, opening it first when it is folded.
    The dashboard runs again whenever the class changes, and a run may draw the expander anew, folded; a teacher
    would open it again: so does this."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    details = page.locator("details", has=page.locator("summary", has_text=label)).first
    for attempt in range(attempts):
        settled(page)
        if details.get_attribute("open") is None:
            details.locator("summary").click()
        try:
            act(LIVE_WAIT // attempts)
            return
        except (PlaywrightTimeout, AssertionError):
            if attempt == attempts - 1:
                raise


def _click(page, target: str):
    return lambda timeout: page.locator(target).click(timeout=timeout)


def checked(page, target: str):
    """An act for in_expander: the checkbox ``target`` ends checked. Its label is clicked only while it is not (a click
    that a rerun drew over is made again, a checked box is never clicked back), and the act ends when the box shows
    checked."""
    from playwright.sync_api import expect

    def act(timeout: int) -> None:
        box = page.locator(target + " input[type=checkbox]")
        if not box.is_checked():
            page.locator(target + " label").click(timeout=timeout)
        expect(box).to_be_checked(timeout=timeout)

    return act


def join(chromium, server_url: str, code: str, name: str, lang: str = "en"):
    ctx, page = _context(chromium, 390, 844)
    page.goto(f"{server_url}/Class?class={code}&lang={lang}")
    wait_idle(page)
    page.locator(css(KEYS.nick) + " input").fill(name)
    page.locator(css(KEYS.nick) + " input").press("Enter")
    settled(page)
    page.locator(css(KEYS.send) + " button").click()
    shows(page, plain(translate("live.you", lang, code=code, name=name)))
    return ctx, page


def start(chromium, server_url: str, lang: str, contexts: list):
    """The teacher on the projector (1280×720) starts a class → (the teacher's page, the join code)."""
    ctx, teacher = _context(chromium, 1280, 720)
    contexts.append(ctx)
    teacher.goto(f"{server_url}/Class?lang={lang}")
    wait_idle(teacher)
    teacher.locator(css(KEYS.start) + " button").click()
    code = teacher.locator(".al-join-code").inner_text(timeout=LIVE_WAIT).replace(" ", "")
    assert len(code) == 6
    teacher.wait_for_url("**key=**", timeout=LIVE_WAIT)  # the teacher link, written when the run ends
    return teacher, code


def plain(text: str) -> str:
    """A string as the page shows it: its Markdown bold marks gone."""
    return text.replace("**", "")


def test_a_teacher_and_three_students_run_a_class(server_url, chromium):
    contexts = []
    try:
        teacher, code = start(chromium, server_url, "en", contexts)
        students = []
        for name in NAMES:
            ctx, page = join(chromium, server_url, code, name)
            contexts.append(ctx)
            students.append(page)
        shows(teacher, "<i>Xyphor</i>")  # the dashboard lists them as they join (as text, never as markup)
        assert teacher.locator("i", has_text="Xyphor").count() == 0

        # follow me: every phone goes to the Playground, then the question brings them back
        _choose(teacher, KEYS.target, "the Playground, with my current scenario")
        teacher.locator(css(KEYS.follow) + " button").click()
        for page in students:
            page.wait_for_url("**/Playground**", timeout=LIVE_WAIT)
        settled(teacher)
        teacher.locator(css(KEYS.ask) + " button").click()
        for i, page in enumerate(students):
            page.wait_for_url("**/Class**", timeout=LIVE_WAIT)
            shows(page, "Which key gets the most weight from the query")
            settled(page)
            page.locator(css(state.item(KEYS.answer, "q1")) + " [data-testid=stRadioOption]").nth(i % 2).click()
            page.get_by_role("button", name="Send").click()
            shows(page, "Your answer is in.")
        shows(teacher, "3 of 3 students answered.")
        for page in (teacher, students[0]):  # WCAG 2.2 AA: the projector's dashboard and a phone with a question
            settled(page)
            own, streamlit = audit(page)
            assert not own and not grown(streamlit), (own, grown(streamlit))
        teacher.screenshot(path=str(ARTIFACTS / "live-class-teacher-1280x720.png"), full_page=True)
        students[0].screenshot(path=str(ARTIFACTS / "live-class-student-390x844.png"), full_page=True)

        teacher.locator(css(KEYS.reveal) + " button").click()
        for page in students:
            shows(page, "The model:")
        shows(teacher, "answers were right.")

        teacher.locator(css(KEYS.anonymous) + " label").click()
        shows(teacher, "Student 3")
        settled(teacher)
        projector = teacher.content()
        assert not any(name in projector for name in ("Zorvath", "Quilbex", "Xyphor"))
        for i, page in enumerate(students):  # a student's page holds no other student's name
            settled(page)
            html = page.content()
            assert not [n for j, n in enumerate(("Zorvath", "Quilbex", "Xyphor")) if j != i and n in html]

        teacher.get_by_text("Export and end").click()
        rows = list(csv.reader(io.StringIO(open(download(teacher, css(KEYS.export) + " button").path(),
                                                encoding="utf-8").read())))
        assert rows[0] == ["Student", "Question", "Time (UTC)", "Answer", "Right"]
        assert sorted(r[0] for r in rows[1:]) == sorted(NAMES)  # the teacher's own export keeps the names

        in_expander(teacher, "Export and end", checked(teacher, css(KEYS.end_sure)))
        in_expander(teacher, "Export and end", _click(teacher, css(KEYS.end) + " button"))
        shows(teacher, "The class has ended.")
        store = open_store()  # the server's store: the app folder's data/classes.sqlite3 (no ATTN_LAB_STORE here)
        assert [store.count(part, code) for part in ("classes", "students", "answers")] == [0, 0, 0]
        for page in students:
            shows(page, "There is no class with this code now")
    finally:
        for i, ctx in enumerate(contexts):  # each screen as it was at the end (or at a failure)
            for page in ctx.pages:
                page.screenshot(path=str(ARTIFACTS / f"live-class-final-{i}.png"))
                (ARTIFACTS / f"live-class-final-{i}.html").write_text(page.content(), encoding="utf-8")
            ctx.close()


# In Korean: the class in English runs in test_a_teacher_and_three_students_run_a_class; what this test adds (follow
# me, a student's work on the projector) does not depend on the language, and the Korean run also shows its texts
@pytest.mark.parametrize("lang", ["ko"])
def test_follow_me_to_an_exercise_and_show_a_students_work(server_url, chromium, lang):
    lesson, ex_n = "softmax-temperature", 4  # an exercise well down its lesson: bringing it into view matters
    exercise = tutorial.lesson(lesson).exercises[ex_n - 1].id
    contexts = []
    try:
        teacher, code = start(chromium, server_url, lang, contexts)
        sctx, phone = join(chromium, server_url, code, "Zorvath", lang)
        contexts.append(sctx)

        # follow me to exercise 4 of a lesson: the phone's lesson opens there, says so, and has the focus on it
        _choose(teacher, KEYS.target, tutorial.lesson_title(lesson, lang))
        _choose(teacher, KEYS.exercise, translate("live.follow.exercise_n", lang, n=ex_n))
        teacher.locator(css(KEYS.follow) + " button").click()
        phone.wait_for_url("**/Tutorial**", timeout=LIVE_WAIT)
        box = css(state.item(state.TUTORIAL.panel, "exercise", exercise))
        expect(phone.locator(box).get_by_text(plain(translate("live.follow.asks", lang, n=ex_n)))).to_be_visible(
            timeout=LIVE_WAIT)
        phone.wait_for_function("(sel) => !!document.activeElement && document.activeElement.matches(sel)", arg=box,
                                timeout=LIVE_WAIT)
        header = phone.locator("[data-testid=stHeader]").evaluate("(e) => e.getBoundingClientRect().bottom")
        top = phone.locator(box).evaluate("(e) => e.getBoundingClientRect().top")
        assert header <= top < 844 / 2, (header, top)  # in view near the top of the phone, not under the header

        # the student works on the Playground; the teacher sees it and shows it to the class with no name
        _choose(teacher, KEYS.target, translate("live.follow.playground", lang))
        teacher.locator(css(KEYS.follow) + " button").click()
        phone.wait_for_url("**/Playground**", timeout=LIVE_WAIT)
        settled(phone)
        tokens = phone.locator(css(state.SCENARIO.tokens) + " input")
        tokens.fill("Quilbexxxxx sees Xyphor")
        tokens.press("Enter")
        settled(phone)
        panel = css(state.item(KEYS.look, "map"))  # the picked student's map, drawn once a student has work
        in_expander(teacher, translate("live.work", lang),  # the tokens the student typed, not the teacher's
                     lambda timeout: expect(teacher.locator(panel).get_by_text("Quilbexxxxx").first).to_be_attached(
                         timeout=timeout))
        in_expander(teacher, translate("live.work", lang), _click(teacher, css(KEYS.show) + " button"))
        shows(teacher, translate("live.work.shown", lang))
        settled(teacher)
        assert teacher.evaluate(BUTTONS_OVER_LABELS) == []  # long tokens stand their labels upright, clear of SVG/PNG
        own, streamlit = audit(teacher)  # WCAG 2.2 AA: the dashboard with a work shown
        assert not own and not grown(streamlit), (own, grown(streamlit))
        teacher.screenshot(path=str(ARTIFACTS / f"live-class-work-{lang}-1280x720.png"), full_page=True)
        teacher.set_viewport_size({"width": 390, "height": 844})  # the dashboard on the teacher's phone
        settled(teacher)
        assert teacher.evaluate(BUTTONS_OVER_LABELS) == []
        teacher.screenshot(path=str(ARTIFACTS / f"live-class-work-{lang}-teacher-390x844.png"), full_page=True)
        teacher.set_viewport_size({"width": 1280, "height": 720})

        _choose(teacher, KEYS.target, translate("live.follow.free", lang))  # free: the phone may open the class page
        teacher.locator(css(KEYS.follow) + " button").click()
        shows(teacher, translate("live.follow.now", lang, where=translate("live.follow.free", lang)))
        phone.goto(f"{server_url}/Class?class={code}&lang={lang}")  # the same student (the browser keeps the seat)
        shows(phone, translate("live.work.shown", lang))
        shows(phone, "Quilbexxxxx sees Xyphor")
        settled(phone)
        own, streamlit = audit(phone)
        assert not own and not grown(streamlit), (own, grown(streamlit))
        assert phone.evaluate(BUTTONS_OVER_LABELS) == []
        phone.screenshot(path=str(ARTIFACTS / f"live-class-work-{lang}-390x844.png"), full_page=True)
        shown = phone.locator(css(state.item(KEYS.show, "map")))
        assert "Zorvath" not in shown.inner_text()  # the copy carries no name
        teacher.locator(css(KEYS.hide) + " button").click()
        expect(phone.get_by_text(translate("live.work.shown", lang), exact=True)).to_have_count(0, timeout=LIVE_WAIT)
        in_expander(teacher, translate("live.closing", lang), checked(teacher, css(KEYS.end_sure)))
        in_expander(teacher, translate("live.closing", lang), _click(teacher, css(KEYS.end) + " button"))
        shows(teacher, plain(translate("live.ended.teacher", lang)))
        store = open_store()
        assert [store.count(part, code) for part in ("classes", "students", "answers")] == [0, 0, 0]
    finally:
        for i, ctx in enumerate(contexts):
            for page in ctx.pages:
                page.screenshot(path=str(ARTIFACTS / f"live-class-{lang}-final-{i}.png"))
            ctx.close()
