"""Real browser, real server: the projector at 1280×720 (issue 57, part 3), in both languages. A teacher asks, a
phone answers the wrong key; every button of the dashboard shows its whole text (none cut to "Reveal the a…");
after Reveal the model's line and the ✓/✗ list are on the first screen, not below the fold; when the class ends the
phone forgets its seat in the browser by itself (no tap). Screenshots of the projector before and after the reveal
go to test-artifacts/ (and to $ATTN_LAB_SHOTS when set)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attention_lab.strings import translate
from ui import state
from ui.state import css_class as css

from .conftest import ARTIFACTS, settled
from .test_live_class_browser import LIVE_WAIT, checked, in_expander, join, plain, shows, start

KEYS = state.LIVE
SEAT_KEY = "attention-lab.seat"  # assets/components/seat.js
WIDTH, HEIGHT = 1280, 720

# every button in the page's main area that is drawn, whose text does not fit inside it: the text's own box (a
# Range over it, which measures the laid-out text even where CSS cuts it with an ellipsis) against the button's
CUT_BUTTONS = """() => {
  const cut = [];
  for (const b of document.querySelectorAll('[data-testid=stMain] button')) {
    const text = b.innerText.trim();
    if (!text || !b.offsetParent) continue;
    const box = b.getBoundingClientRect();
    const range = document.createRange();
    range.selectNodeContents(b);
    const r = range.getBoundingClientRect();
    const inner = [...b.querySelectorAll('*')].some((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1);
    if (r.left < box.left - 1 || r.right > box.right + 1 || inner) cut.push(text);
  }
  return cut;
}"""


def shot(page, name: str) -> None:
    """The first screen, as the room sees it (every scrolled container back at its top)."""
    page.evaluate("() => { for (const e of document.querySelectorAll('*')) if (e.scrollTop) e.scrollTop = 0; }")
    settled(page)
    for folder in filter(None, (ARTIFACTS, os.environ.get("ATTN_LAB_SHOTS"))):
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))


def open_every_expander(page) -> None:
    for details in page.locator("[data-testid=stMain] details").all():
        if details.get_attribute("open") is None:
            details.locator("summary").click()
    settled(page)


def on_first_screen(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_the_projector_at_1280x720_reads_whole_and_the_phone_forgets_an_ended_class(server_url, chromium, lang):
    contexts = []
    try:
        teacher, code = start(chromium, server_url, lang, contexts)
        assert teacher.viewport_size == {"width": WIDTH, "height": HEIGHT}
        sctx, phone = join(chromium, server_url, code, "Zorvath", lang)
        contexts.append(sctx)
        phone.wait_for_function("(k) => localStorage.getItem(k) !== null", arg=SEAT_KEY, timeout=LIVE_WAIT)

        settled(teacher)
        teacher.locator(css(KEYS.ask) + " button").click()
        prompt = plain(translate("live.q.top", lang, q="나는", k="나는"))
        shows(phone, prompt)
        settled(phone)
        phone.locator(css(state.item(KEYS.answer, "q1")) + " [data-testid=stRadioOption]").nth(1).click()  # 오늘: wrong
        phone.get_by_role("button", name=translate("live.send", lang)).click()
        shows(phone, translate("live.sent", lang))
        shows(teacher, translate("live.answered", lang, n=1, of=1))
        settled(teacher)
        shot(teacher, f"projector-{lang}-before-reveal")
        open_every_expander(teacher)
        assert teacher.evaluate(CUT_BUTTONS) == []  # Ask, Reveal, Follow me, the export, End: each whole

        teacher.locator(css(KEYS.reveal) + " button").click()
        truth = teacher.get_by_text(plain(translate("live.truth.tie", lang, k="@", w="0")).split("@")[0].strip()).first
        shows(teacher, plain(translate("live.right_count", lang, n=0, of=1)))
        marks = teacher.locator("[data-testid=stMarkdownContainer]", has_text="Zorvath").last
        shows(phone, translate("live.yours.wrong.top", lang, k="@").split("@")[0].strip())
        shot(teacher, f"projector-{lang}-after-reveal")
        assert on_first_screen(teacher, truth), truth.bounding_box()  # the model's line, in view
        assert on_first_screen(teacher, marks), marks.bounding_box()  # and the ✓/✗ list
        assert "✗" in marks.inner_text()
        assert teacher.evaluate(CUT_BUTTONS) == []

        in_expander(teacher, translate("live.closing", lang), checked(teacher, css(KEYS.end_sure)))
        in_expander(teacher, translate("live.closing", lang), lambda timeout: teacher.locator(
            css(KEYS.end) + " button").click(timeout=timeout))
        shows(teacher, plain(translate("live.ended.teacher", lang)))
        # nobody touches the phone: its page learns of the end by itself and forgets the seat in the browser
        phone.wait_for_function("(k) => localStorage.getItem(k) === null", arg=SEAT_KEY, timeout=LIVE_WAIT)
    finally:
        for i, ctx in enumerate(contexts):
            for page in ctx.pages:
                page.screenshot(path=str(ARTIFACTS / f"live-projector-{lang}-final-{i}.png"))
            ctx.close()
