"""The Attention Playground: every control of the scenario, the whole pipeline, the query
inspector, and share/export. Controls → cached core call (ui.compute) → building blocks."""

from __future__ import annotations

import dataclasses
from urllib.parse import urlencode

import streamlit as st

import core
from attention_lab import scenario
from ui import compute, export, link, live, page, presenter, settings, state, view
from ui import scenario_state as ss
from ui.code_export import code_panel
from ui.i18n import labeller, t
from ui.inputs import Where, inputs, mask_controls, token_boxes, token_options, x_fold_open
from ui.pipeline import pipeline, query_inspector, weights_key
from ui.text import md
from ui.widgets.keys import arrow_keys
from ui.widgets.layout import file_uploader, token_labels
from ui.widgets.qr import qr_with_host

KEYS = state.PLAYGROUND
WEIGHTS_CHART = weights_key(KEYS.pipeline)
CIRCLED = "①②③④⑤"  # the setup tabs are numbered as shown: a lesson link that hides some starts at ①


# ---------------------------------------------------------------------------- callbacks
def on_upload() -> None:
    f = st.session_state.get(KEYS.upload)
    if f is None:
        return
    try:
        values, matrices, _settings, refused = scenario.from_json(f.getvalue())
    except scenario.ScenarioError as err:
        ss.note("error", t(err.key, **err.fmt))
        return
    ss.apply(values, matrices)
    st.session_state.pop(WEIGHTS_CHART, None)
    st.session_state.pop(KEYS.chart_mask, None)
    msg = t("share.loaded") + (" " + t("err.file_values", names=", ".join(refused)) if refused else "")
    ss.note("success" if not refused else "warning", msg)


def drain_clicks() -> None:
    """Apply the cell clicks that arrived since the last run, in order: a weights cell selects its
    query (its row, or its column in column notation); a mask cell blocks or unblocks a pair."""
    for chart, cell in st.session_state.pop(KEYS.clicks, []) or []:
        if chart == WEIGHTS_CHART:
            ss.put("query", cell[0] if ss.get("convention") == "row" else cell[1])
        elif chart == KEYS.chart_mask:
            ss.toggle_mask_cell(cell)


def setup_tabs(names: list[str]):
    """The setup tabs. Only the open tab's controls are drawn (``on_change="rerun"``), so a change
    redraws the few controls in sight; the open tab survives language and page switches."""
    labels = [f"{CIRCLED[i]} {t(f'class.tab.{name}')}" for i, name in enumerate(names)]
    chosen = st.session_state.get(KEYS.tab_id)
    open_label = labels[names.index(chosen) if chosen in names else 0]
    # written only when the widget does not hold it already (a language or page switch): a value the script writes
    # is pressed on the browser when the run ends, and a run that ends after the learner has moved on (arrows
    # through the tabs on a busy server: each tab is a run) would take them back to the tab that run was for
    if st.session_state.get(KEYS.tab) != open_label:
        st.session_state[KEYS.tab] = open_label
    return st.tabs(labels, key=KEYS.tab, on_change=on_tab, args=(tuple(labels), tuple(names)))


def on_tab(labels: tuple[str, ...], names: tuple[str, ...]) -> None:
    label = st.session_state.get(KEYS.tab)
    if label in labels:
        st.session_state[KEYS.tab_id] = names[labels.index(label)]


# ---------------------------------------------------------------------------- the view (class and links)
def current_view(problems: list) -> view.View:
    """The view (presenter, step, hidden groups, panels): from the link once per session, then kept."""
    if not st.session_state.get(KEYS.view_loaded):
        st.session_state[KEYS.view_loaded] = True
        v, refused = view.from_query({k: st.query_params.get(k) for k in st.query_params.keys()})
        st.session_state[KEYS.view] = v
        if refused:
            problems.append(("warning", t("err.url_view", names=", ".join(refused))))
    v = st.session_state.get(KEYS.view) or view.View()
    if v.present != presenter.on():  # the frame's presenter view (any page's link, or its way out) decides
        set_view(present=presenter.on())
        st.session_state[KEYS.present] = presenter.on()  # the toggle, drawn later in this run, shows it
    return st.session_state.get(KEYS.view) or view.View()


def set_view(**changes) -> None:
    st.session_state[KEYS.view] = dataclasses.replace(st.session_state.get(KEYS.view) or view.View(), **changes)


def on_step_key(direction: str) -> None:
    v = st.session_state.get(KEYS.view) or view.View()
    if v.step:
        set_view(step=min(view.STEP_COUNT, v.step + 1) if direction == "next" else max(1, v.step - 1))


def view_controls(v: view.View) -> None:
    """Presenter toggle, and the step-through: ◀ / ▶ (or the arrow keys) reveal one step at a time.
    A student's lesson link shows none of them (the teacher's controls)."""
    if v.student:
        return
    st.toggle(t("pg.present"), value=v.present, key=KEYS.present, help=t("pg.present.help"),
              on_change=lambda: presenter.put(bool(st.session_state[KEYS.present])))  # the frame's view: every page
    if v.step == 0:
        st.button(t("pg.steps.start"), key=KEYS.step_start, on_click=set_view, kwargs={"step": 1}, help=t("pg.steps.help"),
                  width="stretch")
        return
    c2, c3, c4 = st.columns([1, 1, 2])
    with c2:
        st.button("◀", key=KEYS.step_prev, disabled=v.step <= 1, on_click=on_step_key, args=("prev",), help=t("pg.steps.prev"),
                  width="stretch")
    with c3:
        st.button("▶", key=KEYS.step_next, disabled=v.step >= view.STEP_COUNT, on_click=on_step_key, args=("next",),
                  help=t("pg.steps.next"), width="stretch")
    with c4:
        st.button(t("pg.steps.all"), key=KEYS.step_all, on_click=set_view, kwargs={"step": 0}, width="stretch")
    arrow_keys(key=KEYS.arrow_keys, on_key=on_step_key)


def step_key(name: str, f) -> str:
    """The sentence for step ``name``, chosen from the computed facts (core.lab.step_facts)."""
    if name == "scores":
        return "pg.steps.say.scores" + (".dot" if f.dot_products else "")
    if name == "scaled":
        return f"pg.steps.say.scaled.{f.spread}"
    if name == "masked":
        return "pg.steps.say.masked" + ("" if f.masked else ".none")
    if name in ("weights", "output"):
        return f"pg.steps.say.{name}.{f.convention}"
    return f"pg.steps.say.{name}"


def newest_step(v: view.View) -> str | None:
    """The panel the step-through showed last (scrolled into view and focused), None without it."""
    return view.STEP_PANELS[v.step - 1] if v.step else None


def step_sentence(v: view.View, trace, q_labels, k_labels) -> None:
    """One spoken-style sentence about what the step just did to the numbers."""
    if not v.step:
        return
    f = core.lab.step_facts(trace.attn)
    name = view.STEP_PANELS[v.step - 1]
    dec = settings.get("precision")
    vals = {"n_q": f.n_q, "n_k": f.n_k, "d_v": f.d_v, "s": f"{f.scale:.{dec}g}", "T": f"{f.temperature:g}",
            "f": f"{f.factor:.{dec}g}", "top": f"{f.top_score[0]:.{dec}f}", "q": md(q_labels[f.top_score[1]]),
            "k": md(k_labels[f.top_score[2]]), "scaled": f"{f.top_scaled:.{dec}f}", "m": f.masked, "pairs": f.pairs,
            "w": f"{f.top_weight[0]:.{dec}f}", "wq": md(q_labels[f.top_weight[1]]), "wk": md(k_labels[f.top_weight[2]]),
            "none": f.fully_masked}
    text = t(step_key(name, f), **vals)
    if name in ("weights", "output") and f.fully_masked:
        text += " " + t(f"pg.steps.say.{name}.fully_masked", **vals)
    st.info(f"**{t('pg.steps.label', k=v.step, n=view.STEP_COUNT)}** — " + text)


# ---------------------------------------------------------------------------- query inspector
def inspector(trace, tq, tk, conv: str, dec: int, v: view.View) -> None:
    """One query's weights as bars, and its output as the stacked pieces α_i·v_i — one element
    (title, formula, query picker, both charts); picking a query or clicking a weights row moves it.
    Presenter view enlarges it; as the step-through's newest step it scrolls into view."""
    query_inspector(trace.attn, tq, tk, dec, key=KEYS.inspector, fig_keys=(KEYS.fig_alpha, KEYS.fig_contrib), present=v.present,
                    focus=newest_step(v) == "inspector")


# ---------------------------------------------------------------------------- share & export
def current_query(v: view.View) -> dict:
    """The whole scenario, the view and the settings as URL parameters."""
    return scenario.to_query(ss.values(), ss.changed_matrices()) | view.to_query(v) | settings.query()


def lesson_link(query: dict) -> str:
    """A focused link for a class: the scenario as it is now, with only the chosen control groups
    and panels (hidden controls keep their values), optionally in presenter view."""
    v = st.session_state.get(KEYS.view) or view.View()
    st.markdown(f"**{t('share.lesson')}**")
    st.caption(t("share.lesson.help"))
    visible = st.multiselect(t("share.lesson.groups"), view.GROUPS, default=[g for g in view.GROUPS if g not in v.hidden],
                             format_func=labeller("share.group."), key=KEYS.lesson_groups)
    panels = st.multiselect(t("share.lesson.panels"), view.STEP_PANELS, default=list(v.panels),
                            format_func=labeller("share.panel."), key=KEYS.lesson_panels)
    present = st.checkbox(t("pg.present"), value=v.present, key=KEYS.lesson_present)
    teacher = st.checkbox(t("class.lesson.teacher"), value=False, key=KEYS.lesson_teacher, help=t("class.lesson.teacher.help"))
    focused = view.View(present=present, hidden=frozenset(g for g in view.GROUPS if g not in visible),
                        panels=tuple(p for p in view.STEP_PANELS if p in panels) or view.STEP_PANELS, student=not teacher)
    base = {k: q for k, q in query.items() if k not in view.url_keys()}
    return f"{link.public_url(KEYS.link_host)}?{urlencode(base | view.to_query(focused))}"


def share_tab(num: scenario.Numbers, conv: str, query: dict) -> None:
    """The links (the page's, a lesson's with its QR code), the scenario's CSV and JSON files, an upload and the code."""
    q_labels, k_labels, args, device = token_labels(num.tq), token_labels(num.tk), num.args(conv), settings.get("device")

    def csv() -> str:  # made on the download's click, in a thread of its own (no session there); the call is cached
        return export.tidy_csv(compute.playground(**args, device=device), q_labels, k_labels)

    st.markdown(t("share.link"))
    if not scenario.link_fits(ss.values(), ss.changed_matrices()):  # the link leaves the edited matrices out
        st.warning(t("share.too_long", kb=scenario.LINK_BYTES // 1000))
    st.code(f"{link.public_url(KEYS.link_host)}?{urlencode(query)}", language=None, wrap_lines=True)
    focused = lesson_link(query)
    st.code(focused, language=None, wrap_lines=True)
    qr_with_host(focused, key=KEYS.qr, host_key=KEYS.link_host)
    d1, d2 = st.columns(2)
    with d1:
        st.download_button(t("share.csv"), data=csv,
                           file_name="attention-matrices.csv", mime="text/csv", key=KEYS.dl_csv)
    with d2:
        st.download_button(t("share.json"), data=scenario.to_json(ss.values(), ss.changed_matrices(), settings.query()),
                           file_name="attention-scenario.json", mime="application/json", key=KEYS.dl_json)
    file_uploader(t("share.upload"), types=["json"], key=KEYS.upload, limit_kb=scenario.MAX_JSON_BYTES // 1024,
                  on_change=on_upload, help=t("share.upload.help", limit=scenario.MAX_JSON_BYTES // 1024))
    code_panel(args, title=t("page.playground.title"), key_prefix=KEYS.code, tokens_q=q_labels, tokens_k=k_labels)


# ---------------------------------------------------------------------------- the page
# The page is two columns. The left (view controls, example and self/cross, notation, the setup tabs)
# reruns with the whole page. The right (token box, pipeline, inspector) reads the scenario itself, top to
# bottom as a token change flows, and is a fragment of its own while nothing drawn on the left shows the
# tokens: typing tokens — the change a class makes most — then redraws only the right column, not every
# control (BENCHMARKS.md: the browser's time goes into re-rendering Streamlit's controls). When a drawn
# part of the left column shows the tokens, the right column is a plain part of the page, so a token
# change redraws both and nothing on screen is stale.
TABS = ("embed", "qkv", "score", "mask", "share")


def shows_tokens(drawn: list[str]) -> bool:
    """Whether a drawn part of the left column shows the tokens (their count or labels; a tab: while it is open):
    Q, K, V (their editors and shapes), the mask (its map, the PAD tokens) and the share tab (the links, the code,
    the files) always; the embedding while the X editor's fold is open (its rows); the score function with
    one-hot embeddings (d_k is the vocabulary's size). The example menu and the notation never."""
    return any(part in ("qkv", "mask", "share") for part in drawn) or (
        "embed" in drawn and x_fold_open()) or ("score" in drawn and ss.get("embedding") == "onehot")


def computed(num: scenario.Numbers, conv: str, problems: list) -> tuple | None:
    """The scenario's one core call (cached, ui.compute) → (trace, its query tokens, its key tokens): on a
    failed call the last valid trace with its own tokens, and the message in ``problems``; None with none."""
    return page.guarded(problems, lambda: (ss.run(num, conv), num.tq, num.tk), keep=state.SCENARIO.last_trace)


def controls(v: view.View, problems: list) -> bool:
    """The left column: example menu and self/cross, notation and the setup tabs of the groups the view shows,
    with the numbers its open tabs draw (the editors, the mask map, the share tab's links and files) →
    whether a drawn part shows the tokens. It makes no core call; what the tokens themselves and the call say
    is shown by the right column, which reads the same scenario."""
    drawn = []
    if "tokens" not in v.hidden:
        token_options()
        drawn.append("options")
    if "notation" not in v.hidden:
        st.radio(t("pg.convention"), scenario.CONVENTIONS, **ss.bind("convention"), format_func=labeller("conv."),
                 horizontal=True, help=t("pg.convention.help"))
        drawn.append("notation")
    conv = ss.get("convention")
    names = [g for g in TABS if (g == "share" and not v.student) or (g != "share" and g not in v.hidden)]
    tabs = dict(zip(names, setup_tabs(names), strict=True)) if names else {}  # a student link may leave no tab
    opened = {g: tabs[g] for g in names if tabs[g].open}
    drawn += list(opened)
    num = inputs(problems, reading=[], conv=conv, editors=True, tokens=Where(drawn=False), options=False,
                 embed=Where(opened.get("embed"), "embed" in opened),
                 qkv=Where(opened.get("qkv"), "qkv" in opened, wide=False),  # the left column: editors one under another
                 score=Where(opened.get("score"), "score" in opened, wide=False))
    if "mask" in opened:
        with opened["mask"]:
            mask_controls(num, conv, chart_key=KEYS.chart_mask, click_queue=KEYS.clicks, clear_key=KEYS.mask_clear)
    if "share" in opened:
        with opened["share"]:
            share_tab(num, conv, current_query(v))
    return shows_tokens(drawn)


def results() -> None:
    """The right column, in the order a token change flows: the token box; the scenario read into its numbers
    (``ui.inputs.inputs``, no control drawn: they are on the left); the one core call; what the tokens and the
    call say; the link; the five steps and the query inspector."""
    problems: page.Problems = []
    v = st.session_state.get(KEYS.view) or view.View()
    if "tokens" not in v.hidden:
        token_boxes()
    drain_clicks()
    conv = ss.get("convention")
    num = inputs(problems, conv=conv, tokens=Where(drawn=False), options=False, embed=Where(drawn=False),
                 qkv=Where(drawn=False))
    kept = computed(num, conv, problems)
    page.show_problems(problems)
    link.address_bar(current_query(v), key=KEYS.address)  # the link in the address bar, after every change
    if kept is None:
        return
    live.share_work(scenario.to_query(ss.values(), ss.kept_matrices()), int(settings.get("seed")))  # in a class: to the teacher
    trace, tq, tk = kept
    dec = settings.get("precision")
    step_sentence(v, trace, token_labels(tq), token_labels(tk))
    pipeline(trace, token_labels(tq), token_labels(tk), conv, dec, num.score, prefix=KEYS.pipeline,
             query=int(ss.get("query")), clicks=KEYS.clicks, shows=v.shows, per_row=1 if v.present else 2,
             header=False, large=v.present, focus=newest_step(v))
    if v.shows("inspector"):
        inspector(trace, tq, tk, conv, dec, v)


@st.fragment
def results_alone() -> None:
    """:func:`results` as a fragment: its own widgets (the token box, a click on the weights) rerun it alone.
    A fragment rerun skips the page's error boundary, so it has its own."""
    page.boundary(results)


def body() -> None:
    problems: page.Problems = []
    ss.start(problems)
    drain_clicks()
    v = current_view(problems)
    left, right = st.columns([4, 8], gap="small")
    with left:
        with st.expander(t("pg.about")):  # folded: the pipeline starts high on a projector screen
            st.markdown(t("pg.intro"))
        said = st.container()  # what the link, a loaded file and the left column's editors say, above them
        view_controls(v)
        outside = controls(v, problems)
        with said:
            page.show_problems(problems)
    with right:
        if outside:
            results()
        else:
            results_alone()


@st.fragment
def fragment() -> None:
    """Everything below the header: a change here reruns only this part (not the sidebar).

    A fragment rerun skips the frame, so it has its own error boundary."""
    page.boundary(body)


fragment()
