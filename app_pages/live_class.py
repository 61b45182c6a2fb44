"""Class: a live class. A teacher starts one and gets a join code, a student link with its QR code and a
private teacher link; students join with the code and a nickname on their own screens. The teacher paces
them (follow me, pause), asks questions from the scenario on screen (the right answers come from core),
sees the class's answers live beside the model's, and the tutorial's exercises answered in class; the
export is a CSV in the teacher's language. The class lives in ``attention_lab.live`` (its store) and the
session's side in ``ui/live.py``.

URL: ``class=<join code>`` (a student link) and ``key=<teacher key>`` (the teacher's own link)."""

from __future__ import annotations

import logging

import streamlit as st

from attention_lab import scenario, tutorial
from attention_lab.live import classes
from attention_lab.live.store import now
from ui import compute, link, live, page, settings, state
from ui import scenario_state as ss
from ui.i18n import current_lang, labeller, t
from ui.text import md
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import token_labels
from ui.widgets.qr import qr_with_host

KEYS = state.LIVE
log = logging.getLogger(__name__)
URL_CLASS, URL_KEY = "class", "key"
ROW_MAX_KEYS = 12  # a "spread 1.0" question asks one number per key: at most this many on a phone
BLUE, ORANGE = "#2563eb", "#f97316"  # the class, the model (colour-vision safe; each also named in the legend)
DARK_ORANGE = "#9a3412"  # the model's mark in text: 7:1 on white


def say(kind: str, key: str, **values) -> None:
    """A message for the next run (from a callback)."""
    st.session_state.setdefault(KEYS.messages, []).append((kind, t(key, **values)))


def refused(err: classes.Refused) -> None:
    say("error", f"live.err.{err.reason}", n=classes.MAX_STUDENTS, m=classes.MAX_CLASSES)


def safely(callback):
    """A button's callback (it runs before the page, outside its error boundary): a store that fails says so."""
    def run(*args, **kwargs):
        try:
            callback(*args, **kwargs)
        except Exception:  # noqa: BLE001 — the class's store away or broken: a message, never a traceback
            log.exception("class store failed in %s", callback.__name__)
            say("error", "live.err.store")
    return run


def from_url(problems: list) -> None:
    """Once per session: a teacher link opens the dashboard (only with the right key), a student link fills in the code."""
    if st.session_state.get(KEYS.url_loaded):
        return
    st.session_state[KEYS.url_loaded] = True
    typed = st.query_params.get(URL_CLASS)
    code, key = classes.read_code(typed), st.query_params.get(URL_KEY)
    if typed is not None and code is None:
        problems.append(("error", t("live.err.bad_code")))
    elif key is not None:
        if code and classes.is_teacher(live.store(), code, key, now()):
            st.session_state[KEYS.teacher] = (code, key)
        else:
            problems.append(("error", t("live.err.key")))
    elif code:
        st.session_state[KEYS.code] = code


# ---------------------------------------------------------------------------- joining and starting
@safely
def on_join() -> None:
    code = classes.read_code(st.session_state.get(KEYS.code) or "")
    if code is None:
        return say("error", "live.err.bad_code")
    seat = live.current()
    sid = seat[1] if seat and seat[0] == code else classes.new_sid()
    try:
        name = classes.join(live.store(), code, sid, st.session_state.get(KEYS.nick) or "", now())
    except classes.Refused as err:
        return refused(err)
    live.sit(code, sid, name)


@safely
def on_start() -> None:
    try:
        st.session_state[KEYS.teacher] = classes.start(live.store(), now())
    except classes.Refused as err:
        refused(err)


def lobby() -> None:
    """Join a class (code and nickname), or start one."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        st.subheader(t("live.join.title"))
        st.text_input(t("live.join.code"), key=KEYS.code, max_chars=12, placeholder="ABC234")
        st.text_input(t("live.join.nick"), key=KEYS.nick, max_chars=classes.NICK_MAX, help=t("live.join.nick.help"))
        st.button(t("live.join.go"), key=KEYS.send, on_click=on_join, type="primary")
        st.caption(t("live.join.kept"))
    with c2:
        st.subheader(t("live.start.title"))
        st.markdown(t("live.start.body"))
        st.button(t("live.start.go"), key=KEYS.start, on_click=on_start)
        st.caption(t("live.start.kept", hours=f"{classes.ttl_s() / 3600:g}"))


# ---------------------------------------------------------------------------- the teacher
@safely
def change(code: str, **changes) -> None:
    """Write the teacher's change into the class's record (every student's screen follows)."""
    try:
        record = classes.live_record(live.store(), code, now())
    except classes.Refused as err:
        return refused(err)
    live.store().put_record(code, record | changes)


@safely
def on_flag(code: str, name: str, widget: str) -> None:
    change(code, **{name: bool(st.session_state.get(widget))})


@safely
def on_follow(code: str) -> None:
    target = st.session_state.get(KEYS.target) or "free"
    if target == "free":
        return change(code, follow=None)
    if target == "playground":
        return change(code, follow={"page": "playground", "query": scenario.to_query(ss.values(), ss.kept_matrices())})
    exercise = st.session_state.get(KEYS.exercise)
    exercise = exercise if exercise in {ex.id for ex in tutorial.lesson(target).exercises} else None
    change(code, follow={"page": "tutorial", "lesson": target, "exercise": exercise, "at": now()})  # again: again


def teacher_scenario() -> dict:
    """The scenario on the teacher's screen, as a checker reads it (values, edited matrices, seed)."""
    return ss.values() | {"matrices": ss.kept_matrices(), "seed": int(settings.get("seed"))}


@safely
def on_ask(code: str, record: dict) -> None:
    kind = st.session_state.get(KEYS.kind) or "top"
    q_at = int(st.session_state.get(KEYS.query) or 0)
    k_at = int(st.session_state.get(KEYS.key) or 0) if kind == "alpha" else 0  # drawn for an estimate only
    qid = f"q{len(record['asked']) + 1}"
    try:
        q = compute.class_question(qid, kind, teacher_scenario(), int(settings.get("seed")), q_at, k_at)
        if kind == "row" and len(q["row"]) > ROW_MAX_KEYS:
            raise classes.Refused("row_long")
        classes.ask(live.store(), code, q, now())
    except classes.Refused as err:
        return refused(err)
    except ValueError as err:  # the scenario core cannot compute
        return say("error", "err.compute", detail=str(err))


@safely
def on_end(code: str) -> None:
    classes.end(live.store(), code)
    st.session_state.pop(KEYS.teacher, None)
    say("success", "live.ended.teacher")


def join_panel(code: str) -> None:
    """The join code, large; the student link and its QR code; the host students use."""
    st.caption(t("live.code"))
    st.markdown(f"<p class='al-join-code'>{code}</p>", unsafe_allow_html=True)  # the alphabet: no markup
    student_link = f"{link.public_url(KEYS.host)}?{URL_CLASS}={code}"
    st.code(student_link, language=None, wrap_lines=True)
    qr_with_host(student_link, key=KEYS.qr, host_key=KEYS.host, caption=t("live.qr"))


def pacing(code: str, record: dict) -> None:
    st.toggle(t("live.pause"), value=record["paused"], key=KEYS.pause, on_change=on_flag, args=(code, "paused", KEYS.pause),
              help=t("live.pause.help"))
    st.toggle(t("live.anonymous"), value=record["anonymous"], key=KEYS.anonymous, on_change=on_flag,
              args=(code, "anonymous", KEYS.anonymous), help=t("live.anonymous.help"))
    lang = current_lang()
    targets = ["free", "playground", *(x.id for x in tutorial.LESSONS)]
    words = {"free": t("live.follow.free"), "playground": t("live.follow.playground")}
    target = st.selectbox(t("live.follow"), targets, key=KEYS.target, help=t("live.follow.help"),
                          format_func=lambda x: words.get(x) or tutorial.lesson_title(x, lang))
    if target not in words:  # a lesson: the whole of it, or one of its exercises
        numbered = {ex.id: n for n, ex in enumerate(tutorial.lesson(target).exercises, 1)}
        st.selectbox(t("live.follow.exercise"), [None, *numbered], key=KEYS.exercise,
                     format_func=lambda x: t("live.follow.exercise_n", n=numbered[x]) if x else t("live.follow.whole"))
    st.button(t("live.follow.go"), key=KEYS.follow, on_click=on_follow, args=(code,), width="stretch")
    st.caption(t("live.follow.now", where=where(record["follow"], lang)))


def where(target: dict | None, lang: str) -> str:
    if not target:
        return t("live.follow.free")
    if target.get("page") == "tutorial":
        title = tutorial.lesson_title(target["lesson"], lang)
        numbered = {ex.id: n for n, ex in enumerate(tutorial.lesson(target["lesson"]).exercises, 1)}
        ex = numbered.get(target.get("exercise"))
        return f"{title} · {t('live.follow.exercise_n', n=ex)}" if ex else title
    return t(f"live.follow.{target.get('page')}")


def asking(code: str, record: dict) -> None:
    """Ask from the scenario on screen: which kind, about which query (and key)."""
    # the scenario's tokens through the cached call the question itself will use (the dashboard reruns often)
    shown = compute.class_question("q0", "top", teacher_scenario(), int(settings.get("seed")), 0, 0)
    q_labels, k_labels = token_labels(shown["q_tokens"]), token_labels(shown["k_tokens"])
    st.radio(t("live.ask.kind"), classes.KINDS, key=KEYS.kind, format_func=labeller("live.kind."))
    st.selectbox(t("live.ask.query"), range(len(q_labels)), key=KEYS.query, format_func=lambda i: q_labels[i])
    if st.session_state.get(KEYS.kind) == "alpha":
        st.selectbox(t("live.ask.key"), range(len(k_labels)), key=KEYS.key, format_func=lambda i: k_labels[i])
    st.caption(t("live.ask.from", tokens=md(" ".join(shown["k_tokens"]))))
    st.button(t("live.ask.go"), key=KEYS.ask, on_click=on_ask, args=(code, record), type="primary", width="stretch")


@safely
def on_reveal(code: str) -> None:
    try:
        classes.reveal(live.store(), code, now())
    except classes.Refused as err:
        refused(err)


def closing(code: str, record: dict, students: dict, rows: list[dict]) -> None:
    # The CSV is written with the dashboard, from the class it has just read (the dashboard runs again on every write
    # to the class, so it is current), not on the click. A file made on the click belongs to no session, and
    # Streamlit deletes such a file once two script runs have ended anywhere on the server; three students' pages
    # checking the class can end two runs between the file being made and the browser asking for it (the likely
    # cause of a download cancelled in a CI run), and forty would do it often. This file belongs to the teacher's
    # session until the dashboard's next run, and the click runs nothing.
    csv = classes.export_csv(record, students, rows, current_lang())
    st.download_button(t("live.export"), data=csv, file_name=f"class-{code}.csv", mime="text/csv", key=KEYS.export,
                       width="stretch", on_click="ignore")
    sure = st.checkbox(t("live.end.sure"), key=KEYS.end_sure)
    st.button(t("live.end"), key=KEYS.end, on_click=on_end, args=(code,), disabled=not sure, width="stretch")


def dashboard(code: str, key: str) -> None:
    live.seen(code, teacher=True)
    try:
        record = classes.live_record(live.store(), code, now())
    except classes.Refused:
        st.session_state.pop(KEYS.teacher, None)
        st.info(t("live.err.no_class"))
        return
    link.add({URL_CLASS: code, URL_KEY: key}, scenario=False)
    live.watch(code, live.TEACHER_POLL_S, teacher=True)
    students, rows = live.store().students(code), live.store().answers(code)
    st.caption(t("live.teacher.private"))
    left, right = st.columns([1, 2], gap="large")  # the projector: the code and the class's answers in view
    with left:
        join_panel(code)
    with right:
        results(code, record, students, rows)
        shown_work(code, record, teacher=True)
    c1, c2, c3 = st.columns(3, gap="medium")
    with c1.expander(t("live.pacing"), expanded=True):
        pacing(code, record)
    with c2.expander(t("live.ask"), expanded=True):
        asking(code, record)
    with c3.expander(t("live.closing")):
        closing(code, record, students, rows)
    exercises(record, students, rows)
    with st.expander(t("live.work")):
        work_panel(code, record, students)


# ---------------------------------------------------------------------------- what the projector shows
def prompt(q: dict) -> str:
    return t(f"live.q.{q['kind']}", q=md(q["q_token"]), k=md(q["k_tokens"][q["key"]]))


def results(code: str, record: dict, students: dict, rows: list[dict]) -> None:
    """The question on screen with the class's answers (and, once revealed, the model's); every student by name
    (or anonymised) with where they are on it. At 1280×720 the model's line and the ✓/✗ list sit above the chart,
    in view without scrolling; the Reveal button sits with the question it reveals."""
    names = classes.names(students, record["anonymous"], current_lang())
    q = record["question"]
    st.metric(t("live.students"), len(students))
    if q is None:
        st.info(t("live.no_question", panel=t("live.ask")))
    else:
        tally = classes.tally(q, rows)
        st.markdown(f"**{prompt(q)}**")
        st.caption(t("live.answered", n=tally["n"], of=len(students)))
        if record["revealed"]:
            st.success(truth(q) + " " + t("live.right_count", n=tally["right"], of=tally["n"]))
        else:
            st.button(t("live.reveal"), key=KEYS.reveal, on_click=on_reveal, args=(code,), type="primary")
    mine = {r["sid"]: r for r in rows if q is not None and r["qid"] == q["id"]}
    marks = [f"{md(names[s])}" + (f" {mark(mine.get(s), record['revealed'])}" if q else "") for s in names]
    st.markdown(" · ".join(marks) if marks else t("live.nobody_joined"))
    if q is not None:
        chart(q, tally, record["revealed"])


def mark(row: dict | None, revealed: bool) -> str:
    if row is None:
        return t("live.mark.none")
    if not revealed:
        return t("live.mark.sent")
    return t("live.mark.right") if row["right"] else t("live.mark.wrong")


def best_keys(q: dict) -> str:
    """The key(s) of the largest weight, as a sentence names them: "나는", "나는 and 먹었다", "a, b and c"."""
    said = [md(q["k_tokens"][i]) for i in q["top"]]
    return said[0] if len(said) == 1 else t("live.truth.and", rest=", ".join(said[:-1]), last=said[-1])


def truth(q: dict) -> str:
    """The right answer, as core computed it when the question was asked; a tie is named as one, with every key."""
    if q["kind"] == "top":
        return t("live.truth.tie" if len(q["top"]) > 1 else "live.truth.top", k=best_keys(q), w=f"{q['row'][q['top'][0]]:.3f}")
    if q["kind"] == "alpha":
        return t("live.truth.alpha", a=f"{q['alpha']:.3f}", tol=classes.ALPHA_TOLERANCE)
    return t("live.truth.row", row=", ".join(f"{md(k)} {w:.2f}" for k, w in zip(q["k_tokens"], q["row"], strict=True)),
             tol=classes.ROW_TOLERANCE)


def chart(q: dict, tally: dict, revealed: bool) -> None:
    """The class's answers (blue) — and, once revealed, the model's (orange) — with the numbers in words."""
    keys = token_labels(q["k_tokens"])
    if q["kind"] == "top":
        right = set(q["top"]) if revealed else set()
        data = [class_bars(keys, tally["counts"], right)]
        words = ", ".join(f"{k} {n}" for k, n in zip(keys, tally["counts"], strict=True))
    elif q["kind"] == "alpha":
        bins = [f"{b / 10:.1f}–{(b + 1) / 10:.1f}" for b in range(10)]
        right = {min(int(q["alpha"] * 10), 9)} if revealed else set()
        data = [class_bars(bins, tally["bins"], right)]
        words = t("live.chart.alpha_words", **{k: f"{tally[k]:.2f}" for k in ("mean", "median", "least", "most")}) \
            if tally["n"] else t("live.nobody")
    else:
        right = set()
        data = [{"type": "bar", "x": keys, "y": tally["mean_row"] or [0] * len(keys), "name": t("live.chart.class"),
                 "marker": {"color": BLUE}}]
        if revealed:
            data.append({"type": "bar", "x": keys, "y": q["row"], "name": t("live.chart.model"), "marker": {"color": ORANGE,
                         "pattern": {"shape": "/"}}})
        words = ", ".join(f"{k} {w:.2f}" for k, w in zip(keys, tally["mean_row"], strict=True)) \
            if tally["mean_row"] else t("live.nobody")
    if revealed and q["kind"] != "row":  # the marked bar, in words (the row's model bars are a trace of their own)
        words += " " + t("live.chart.right", k=best_keys(q) if q["kind"] == "top" else f"α = {q['alpha']:.3f}")
    counts = {"rangemode": "tozero", "dtick": 1, "tickformat": "d"} if q["kind"] != "row" else {"range": [0, 1]}
    fig = line_figure(data, {"barmode": "group", "yaxis": counts, "margin": {"l": 10, "r": 10, "t": 40, "b": 10}}
                      | right_marks(right), height=260)
    show_chart(fig, key=state.item(KEYS.answer, "chart"), title=prompt(q), alt=t("live.chart.alt", words=words))
    st.caption(words)


def class_bars(x: list[str], y: list[int], right: set[int]) -> dict:
    """The class's counts as blue bars; the bars of the right answer (once revealed) orange and hatched."""
    return {"type": "bar", "x": x, "y": y, "name": t("live.chart.class"),
            "marker": {"color": [ORANGE if i in right else BLUE for i in range(len(x))],
                       "pattern": {"shape": ["/" if i in right else "" for i in range(len(x))]}}}


def right_marks(right: set[int]) -> dict:
    """The right answer's columns framed in orange and labelled "✓ model" above them (seen even where nobody chose
    it: a bar of height 0)."""
    mark = t("live.chart.right.mark")
    return {"shapes": [{"type": "rect", "xref": "x", "yref": "paper", "x0": i - 0.45, "x1": i + 0.45, "y0": 0, "y1": 1,
                        "line": {"color": ORANGE, "width": 3}, "fillcolor": ORANGE, "opacity": 0.12, "layer": "below"}
                       for i in sorted(right)],
            "annotations": [{"x": i, "xref": "x", "y": 1, "yref": "paper", "yanchor": "bottom", "showarrow": False,
                             "text": f"✓ {mark}", "font": {"color": DARK_ORANGE, "size": 14}} for i in sorted(right)]}


def exercises(record: dict, students: dict, rows: list[dict]) -> None:
    """The tutorial's exercises answered in class: students × exercises (✓, ✗, ·) and the commonest mistakes."""
    ids, grid, wrong = classes.exercise_grid(rows)
    if not ids:
        return
    names = classes.names(students, record["anonymous"], current_lang())
    st.subheader(t("live.exercises"))
    cell = {True: "✓", False: "✗", None: "·"}
    table = {t("live.csv.student"): list(names.values())} | {
        ex: [cell[grid.get(s, {}).get(ex)] for s in names] for ex in ids}
    st.dataframe(table, hide_index=True, width="stretch")
    for what, n in wrong[:5]:
        ex, why = what.split("|", 1)
        st.markdown(f"- {t('live.mistake', n=n, ex=md(ex))}: {md(tutorial.text(why, current_lang()))}")


# ---------------------------------------------------------------------------- students' work
@safely
def on_show(code: str, sid: str | None) -> None:
    try:
        classes.show_work(live.store(), code, sid, now())
    except classes.Refused as err:
        refused(err)


def work_map(work: dict, *, key: str) -> None:
    """A student's scenario as its attention weights (a map with its text alternative), computed by core."""
    try:
        lt = compute.class_work(work["query"], work["seed"])
    except ValueError as err:
        st.warning(t("live.work.bad", detail=str(err)))
        return
    ql, kl = token_labels(lt.q_tokens), token_labels(lt.k_tokens)
    words = {"q": md(" ".join(lt.q_tokens)), "k": md(" ".join(lt.k_tokens))}
    st.caption(t("live.work.tokens.self", **words) if lt.q_tokens == lt.k_tokens else t("live.work.tokens", **words))
    show_heatmap(heatmap(lt.weights.numpy(), x_labels=kl, y_labels=ql, x_title=t("axis.key"), y_title=t("axis.query"),
                         decimals=int(settings.get("precision")), sequential=True, title=t("live.work.weights")), key=key)


def work_panel(code: str, record: dict, students: dict) -> None:
    """Pick a student (by the projector's names) and see their Playground scenario, live; show a nameless copy."""
    st.caption(t("live.work.help"))
    names = classes.names(students, record["anonymous"], current_lang())
    working = [s for s in names if students[s].get("work")]
    if not working:
        st.info(t("live.work.none"))
        return
    # a box of its own for each way of naming: the browser would keep showing the last name it drew
    sid = st.selectbox(t("live.work.pick"), working, key=state.item(KEYS.look, "anonymous" if record["anonymous"] else "named"),
                       format_func=lambda s: names.get(s, "?"))
    work_map(students[sid]["work"], key=state.item(KEYS.look, "map"))
    st.button(t("live.work.show"), key=KEYS.show, on_click=on_show, args=(code, sid), type="primary")


def shown_work(code: str, record: dict, *, teacher: bool) -> None:
    """The student work the teacher shows the class (a copy, no name): on the projector and on every phone."""
    shown = record.get("shown")
    if not shown:
        return
    st.subheader(t("live.work.shown"))
    st.caption(t("live.work.shown.help"))
    work_map(shown, key=state.item(KEYS.show, "map"))
    if teacher:
        st.button(t("live.work.hide"), key=KEYS.hide, on_click=on_show, args=(code, None))


# ---------------------------------------------------------------------------- a student
@safely
def on_answer(code: str, sid: str, q: dict) -> None:
    if q["kind"] == "row":
        value = [st.session_state.get(state.item(KEYS.answer, q["id"], i)) or 0.0 for i in range(len(q["row"]))]
    else:
        value = st.session_state.get(state.item(KEYS.answer, q["id"]))
    try:
        classes.submit(live.store(), code, sid, value, now())
    except classes.Refused as err:
        return refused(err)
    say("success", "live.sent")


def answer_form(code: str, sid: str, q: dict) -> None:
    keys = token_labels(q["k_tokens"])
    with st.form(state.item(KEYS.answer, "form", q["id"]), border=True):
        if q["kind"] == "top":
            st.radio(t("live.your.key"), range(len(keys)), key=state.item(KEYS.answer, q["id"]),
                     format_func=lambda i: keys[i], index=None)
        elif q["kind"] == "alpha":
            st.slider("α", 0.0, 1.0, 0.5, 0.01, key=state.item(KEYS.answer, q["id"]))
        else:
            st.caption(t("live.your.row"))
            cols = st.columns(min(len(keys), 4))
            for i, k in enumerate(keys):
                cols[i % len(cols)].number_input(k, 0.0, 10.0, round(1 / len(keys), 2), 0.05,
                                                 key=state.item(KEYS.answer, q["id"], i))
        st.form_submit_button(t("live.send"), on_click=on_answer, args=(code, sid, q), type="primary")


def student(seat: tuple) -> None:
    code, sid, name = seat
    link.add({URL_CLASS: code}, scenario=False)
    c1, c2 = st.columns([4, 1], vertical_alignment="center")
    c1.markdown(t("live.you", code=code, name=md(name)))
    c2.button(t("live.leave"), key=KEYS.leave, on_click=live.leave)
    question_part(code, sid)
    try:
        shown_work(code, classes.live_record(live.store(), code, now()), teacher=False)
    except classes.Refused:
        pass


@st.fragment
def question_part(code: str, sid: str) -> None:
    """The question on the student's screen and the answer form: sending an answer reruns this part alone (forty
    phones answering at once cost the server forty small runs, not forty pages)."""
    page.boundary(lambda: question_view(code, sid))


def question_view(code: str, sid: str) -> None:
    page.show_problems(st.session_state.pop(KEYS.messages, []))
    try:
        record = classes.live_record(live.store(), code, now())
    except classes.Refused:
        return
    q = record["question"]
    if q is None:
        st.info(t("live.wait"))
        return
    st.markdown(f"**{prompt(q)}**")
    mine = next((r for r in live.store().answers(code) if r["qid"] == q["id"] and r["sid"] == sid), None)
    if record["revealed"]:
        st.success(truth(q))
        if mine is not None:
            verdict = "right" if mine["right"] else "wrong.top" if q["kind"] == "top" else "wrong"
            (st.success if mine["right"] else st.warning)(t("live.yours." + verdict, k=best_keys(q)))
        return
    answer_form(code, sid, q)
    if mine is not None:
        st.caption(t("live.sent.change"))


# ---------------------------------------------------------------------------- the page
def body() -> None:
    problems: page.Problems = []
    ss.start(problems)  # the teacher's questions come from the scenario (the Playground's)
    from_url(problems)
    problems += st.session_state.pop(KEYS.messages, [])
    page.show_problems(problems)
    teacher, seat = st.session_state.get(KEYS.teacher), live.current()
    if teacher:
        dashboard(*teacher)
    elif seat:
        student(seat)
    else:
        link.add({URL_CLASS: None, URL_KEY: None}, scenario=False)
        lobby()


st.caption(t("live.intro"))
body()
