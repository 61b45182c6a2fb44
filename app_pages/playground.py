"""The Attention Playground: every control of the scenario, the whole pipeline, the query
inspector, and share/export. Controls → cached core call (ui.compute) → building blocks."""

from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

import core
from ui import export, page, scenario, settings, state
from ui import scenario_state as ss
from ui.i18n import labeller, t
from ui.inputs import Where, by_label, inputs, mask_controls, score_params
from ui.pipeline import pipeline, weights_key
from ui.text import md
from ui.widgets import formulas
from ui.widgets.bars import show_bars, stacked_contributions, weight_bars
from ui.widgets.layout import token_labels

K = state.PLAYGROUND
WEIGHTS_CHART = weights_key(K.pipeline)
TABS = ("embed", "qkv", "score", "mask", "share")


# ---------------------------------------------------------------------------- callbacks
def on_upload() -> None:
    f = st.session_state.get(K.upload)
    if f is None:
        return
    try:
        values, matrices, _settings, refused = scenario.from_json(f.getvalue())
    except scenario.ScenarioError as err:
        ss.note("error", t(err.key, **err.fmt))
        return
    ss.apply(values, matrices)
    st.session_state.pop(WEIGHTS_CHART, None)
    st.session_state.pop(K.chart_mask, None)
    msg = t("share.loaded") + (" " + t("err.file_values", names=", ".join(refused)) if refused else "")
    ss.note("success" if not refused else "warning", msg)


def drain_clicks() -> None:
    """Apply the cell clicks that arrived since the last run, in order: a weights cell selects its
    query (its row, or its column in column notation); a mask cell blocks or unblocks a pair."""
    for chart, cell in st.session_state.pop(K.clicks, []) or []:
        if chart == WEIGHTS_CHART:
            ss.put("query", cell[0] if ss.get("convention") == "row" else cell[1])
        elif chart == K.chart_mask:
            ss.toggle_mask_cell(cell)


def setup_tabs():
    """The setup tabs. Only the open tab's controls are drawn (``on_change="rerun"``), so a change
    redraws the few controls in sight; the open tab survives language and page switches."""
    labels = [t(f"pg.tab.{name}") for name in TABS]
    chosen = st.session_state.get(K.tab_id)
    st.session_state[K.tab] = labels[TABS.index(chosen) if chosen in TABS else 0]
    return st.tabs(labels, key=K.tab, on_change=on_tab, args=(tuple(labels),))


def on_tab(labels: tuple[str, ...]) -> None:
    label = st.session_state.get(K.tab)
    if label in labels:
        st.session_state[K.tab_id] = TABS[labels.index(label)]


# ---------------------------------------------------------------------------- the score tab
def score_tab(tab, is_open: bool, d_k: int, problems: list) -> tuple[str, dict]:
    """Score function, scale, temperature and the function's own parameters."""
    if not is_open:  # a closed tab draws nothing; the kept choices still apply
        return ss.get("score"), score_params(ss.get("score"), d_k, problems, editors=False)
    with tab:
        st.radio(t("pg.score"), core.SCORE_FUNCTIONS, **ss.bind("score"), format_func=labeller("score."),
                 horizontal=True)
        score = ss.get("score")
        st.latex(formulas.SCORE_PAIR[score])
        s1, s2 = st.columns(2)
        with s1:
            st.radio(t("pg.scale"), scenario.SCALES, **ss.bind("scale"), format_func=labeller("scale."),
                     horizontal=True, help=t("pg.scale.help"))
        with s2:
            st.slider(t("pg.temperature"), 0.1, 5.0, step=0.1, **ss.bind("temperature"),
                      help=t("pg.temperature.help"))
        params = score_params(score, d_k, problems, editors=True)
        st.caption(t("pg.score.note"))
    return score, params


# ---------------------------------------------------------------------------- query inspector
def inspector(trace, tq, tk, conv: str, dec: int) -> None:
    """One query's weights as bars, and its output as the stacked pieces α_i·v_i."""
    if not 0 <= int(ss.get("query")) < len(tq):
        ss.put("query", 0)
    q_labels, k_labels = token_labels(tq), token_labels(tk)
    st.subheader(t("pg.inspector"))
    by_label(st.selectbox, "query", q_labels, t("pg.inspector.query"))
    j = int(ss.get("query"))
    A = trace.attn
    row = A if conv == "row" else A.transposed()
    alpha = row.weights[j].numpy()
    st.latex(formulas.CONTRIB)
    i1, i2 = st.columns(2)
    with i1:
        st.markdown(f"**{t('pg.inspector.alpha', q=md(q_labels[j]))}**")
        show_bars(weight_bars(k_labels, alpha, dec), key=K.fig_alpha)
        st.caption(top_keys_text(A, j, q_labels, k_labels, alpha, dec))
    with i2:
        st.markdown(f"**{t('pg.inspector.output', q=md(q_labels[j]))}**")
        show_bars(stacked_contributions(k_labels, A.contributions(j).numpy(), row.output[j].numpy(), dec,
                                        total_label=t("pg.inspector.sum")), key=K.fig_contrib)


def top_keys_text(A, j: int, q_labels, k_labels, alpha, dec: int) -> str:
    """Which key the query attends to most — every key that ties for the largest weight."""
    tops = core.lab.top_keys(A, j)
    if not tops:
        return t("pg.fully_masked_short")
    names = ", ".join(md(k_labels[i]) for i in tops)
    return t("pg.inspector.top" if len(tops) == 1 else "pg.inspector.tie", q=md(q_labels[j]), k=names,
             a=f"{alpha[tops[0]]:.{dec}f}")


# ---------------------------------------------------------------------------- share & export
def sync_url() -> dict:
    """Mirror the whole scenario into the URL (every run, whichever tab is open); returns the query."""
    query = scenario.to_query(ss.values(), ss.changed_matrices()) | settings.query()
    if {k: st.query_params.get(k) for k in st.query_params.keys()} != query:
        st.query_params.from_dict(query)
    return query


def share_tab(trace, q_labels, k_labels, query: dict) -> None:
    try:
        base = (st.context.url or "").split("?")[0]
    except Exception:
        base = ""
    st.markdown(t("share.link"))
    st.code(f"{base}?{urlencode(query)}", language=None)
    d1, d2 = st.columns(2)
    with d1:
        st.download_button(t("share.csv"), data=lambda: export.tidy_csv(trace, q_labels, k_labels),
                           file_name="attention-matrices.csv", mime="text/csv", key=K.dl_csv)
    with d2:
        st.download_button(t("share.json"), data=scenario.to_json(ss.values(), ss.changed_matrices(), settings.query()),
                           file_name="attention-scenario.json", mime="application/json", key=K.dl_json)
    st.file_uploader(t("share.upload"), type=["json"], key=K.upload, on_change=on_upload,
                     help=t("share.upload.help", limit=scenario.MAX_JSON_BYTES // 1024))


# ---------------------------------------------------------------------------- the page
def body() -> None:
    problems: page.Problems = []
    ss.start(problems)
    drain_clicks()
    dec = settings.get("precision")
    st.markdown(t("pg.intro"))
    head = st.container()  # the token box, drawn into place once the tabs exist
    st.radio(t("pg.convention"), scenario.CONVENTIONS, **ss.bind("convention"),
             format_func=labeller("conv."), horizontal=True, help=t("pg.convention.help"))
    conv = ss.get("convention")
    tabs = setup_tabs()
    opened = [bool(tab.open) for tab in tabs]
    with head:
        inp = inputs(problems, conv=conv, editors=True, embed=Where(tabs[0], opened[0]), qkv=Where(tabs[1], opened[1]))
    n_q, n_k = len(inp.tq), len(inp.tk)
    score, params = score_tab(tabs[2], opened[2], inp.d_k, problems)
    ss.put("pad", [i for i in ss.get("pad") if 0 <= int(i) < n_k])
    if opened[3]:
        with tabs[3]:
            mask = mask_controls(n_q, n_k, inp.q_labels, inp.k_labels, conv, cross=inp.cross, chart_key=K.chart_mask,
                                 click_queue=K.clicks, clear_key=K.mask_clear)
    else:
        mask = ss.current_mask(n_q, n_k, cross=inp.cross)
    kept = page.guarded(problems, lambda: (ss.run(inp, score, params, mask, conv), inp.tq, inp.tk),
                        keep=state.SCENARIO.last_trace)
    page.show_problems(problems)
    if kept is None:
        return
    trace, tq, tk = kept  # on a failed call, the last valid trace with its own tokens
    pipeline(trace, token_labels(tq), token_labels(tk), conv, dec, score, prefix=K.pipeline, query=int(ss.get("query")),
             clicks=K.clicks)
    inspector(trace, tq, tk, conv, dec)
    query = sync_url()
    if opened[4]:
        with tabs[4]:
            share_tab(trace, token_labels(tq), token_labels(tk), query)


@st.fragment
def fragment() -> None:
    """Everything below the header: a change here reruns only this part (not the sidebar).

    A fragment rerun skips the frame, so it has its own error boundary."""
    page.boundary(body)


fragment()
