"""A trained model: all-MiniLM-L6-v2's 6 × 12 heads on the learner's sentence — every head at once
(click one), one head as BertViz's head view and as a heatmap, that head's real Q, K, V through
the Playground's pipeline, and what each head looks at, measured."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.models.pretrained import PATTERNS
from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui.i18n import current_lang, labeller, t
from ui.pipeline import pipeline
from ui.text import md, shorts
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, shape_badge, token_labels
from ui.widgets.model_views import head_view, jamo_and_unk, load_trace, model_view, show_head_view, show_model_view

KEYS = state.TRAINED_MODEL
MODEL = "all-MiniLM-L6-v2"
PRESETS = {
    "tired": "The animal didn't cross the street because it was too tired",
    "wide": "The animal didn't cross the street because it was too wide",
    "bank": "She sat on the river bank, then went to the bank to deposit her money.",
    "pieces": "Unbelievably, the transformers' attention heads specialise.",
    "korean": "나는 오늘 사과를 먹었다",
}
DEFAULT = PRESETS["tired"]


MAX_INDEX = 64  # a link's layer and head at most (the model's own range is checked where they are drawn)
# What the page keeps in its link (issue 35): the sentence and the open head (?layer=1&head=8, as before).
KEPT = (
    link.Kept(KEYS.sentence, "sentence", link.text(4000), DEFAULT),
    link.Kept(KEYS.layer, "layer", link.whole(0, MAX_INDEX), 0),
    link.Kept(KEYS.head, "head", link.whole(0, MAX_INDEX), 0),
)


def _on_preset() -> None:
    """Load an example into the sentence box, then reset the menu."""
    choice = st.session_state.get(KEYS.preset)
    st.session_state[KEYS.preset] = ""
    if choice in PRESETS:
        st.session_state[KEYS.sentence] = PRESETS[choice]


def _on_text() -> None:
    st.session_state[KEYS.sentence] = st.session_state[KEYS.text]


def sentence_box() -> str:
    """The sentence, kept in plain session state so that it survives a visit to another page."""
    st.session_state[KEYS.text] = st.session_state.setdefault(KEYS.sentence, DEFAULT)
    c1, c2 = st.columns([3, 1])
    with c1:
        st.text_input(t("tm.text"), key=KEYS.text, max_chars=4000, on_change=_on_text,
                      help=t("tm.text.help", limit=compute.MODEL_MAX_TOKENS))
    with c2:
        st.selectbox(t("tm.preset"), [""] + list(PRESETS), key=KEYS.preset, on_change=_on_preset,
                     format_func=labeller("tm.preset.", empty_key="tm.preset.none"))
    st.caption(t("tm.english_only"))
    return str(st.session_state[KEYS.text])


def token_line(tokens: list[str]) -> None:
    """The WordPiece tokens as the model sees them, with a note when Korean became jamo and [UNK]."""
    st.markdown(t("tm.tokens", n=len(tokens)) + "  " + " · ".join(md(tok) for tok in tokens))
    jamo, unk = jamo_and_unk(tokens)
    if jamo or unk:
        st.info(t("tm.korean_note", jamo=jamo, unk=unk))
    if len(tokens) <= 2:
        st.info(t("tm.empty"))


def chosen_head(L: int, H: int) -> tuple[int, int]:
    """The open head, kept in plain session state (so a new sentence, a page switch or a rerun
    never resets it) and, through the pickers' keys, in the link (:data:`KEPT`): a click on the model view
    (queued by its callback), the two pickers (their callbacks), "open this head", or the link on arrival."""
    if KEYS.chosen not in st.session_state:
        st.session_state[KEYS.chosen] = (int(st.session_state.get(KEYS.layer, 0)), int(st.session_state.get(KEYS.head, 0)))
    for _, (layer, head) in st.session_state.pop(KEYS.clicks, []) or []:
        if 0 <= layer < L and 0 <= head < H:
            st.session_state[KEYS.chosen] = (int(layer), int(head))
    layer, head = st.session_state.get(KEYS.chosen) or (0, 0)
    layer, head = (layer if 0 <= layer < L else 0), (head if 0 <= head < H else 0)
    st.session_state[KEYS.chosen] = (layer, head)
    st.session_state[KEYS.layer], st.session_state[KEYS.head] = layer, head  # the pickers show the kept choice
    return layer, head


def _on_pick() -> None:
    st.session_state[KEYS.chosen] = (int(st.session_state[KEYS.layer]), int(st.session_state[KEYS.head]))


def models_view(tr: dict, chosen: tuple[int, int]) -> None:
    A = tr["attentions"]
    L, H = A.shape[:2]
    st.subheader(t("tm.model_view", L=L, H=H))
    st.caption(t("tm.model_view.caption", model=MODEL))
    spec = model_view(A, tr["tokens"], chosen, layer_word=t("tm.layer_word"), head_word=t("tm.head_word"),
                      axes=t("tm.model_view.axes"))
    show_model_view(spec, key=KEYS.grid, click_queue=KEYS.clicks)


def head_pickers(L: int, H: int) -> None:
    lang = current_lang()  # bound now: the options' labels never depend on when they are formatted
    c1, c2, _ = st.columns([1, 1, 2])
    with c1:
        st.selectbox(t("tm.layer"), list(range(L)), key=KEYS.layer, format_func=lambda i: t("tm.layer.n", lang, l=i),
                     on_change=_on_pick)
    with c2:
        st.selectbox(t("tm.head"), list(range(H)), key=KEYS.head, format_func=lambda i: t("tm.head.n", lang, h=i),
                     on_change=_on_pick)


def one_head(tr: dict, layer: int, head: int, dec: int) -> None:
    """BertViz's head view beside the same weights as a heatmap."""
    st.subheader(t("tm.one_head", l=layer, h=head))
    head_pickers(*tr["attentions"].shape[:2])
    w = tr["attentions"][layer, head]
    labels = shorts(token_labels(tr["tokens"]))
    c1, c2 = st.columns([1, 2.6]) if len(labels) <= 8 else (st.container(), st.container())  # long: one below the other
    with c1:
        st.markdown(f"**{t('tm.head_view')}**")
        st.caption(t("tm.head_view.caption"))
        show_head_view(head_view(w, tr["tokens"], left_title=t("tm.head_view.left"),
                                 right_title=t("tm.head_view.right")), key=KEYS.head_view)
    with c2:
        st.markdown(f"**{t('tm.heatmap')}**")
        show_heatmap(heatmap(w, x_labels=labels, y_labels=labels, x_title=t("axis.key"), y_title=t("axis.query"),
                             decimals=min(dec, 2), sequential=True), key=KEYS.heatmap)


def step_by_step(tr: dict, layer: int, head: int, dec: int) -> None:
    """The head's own Q, K, V (n × 32) through the Playground's five steps."""
    st.subheader(t("tm.steps", l=layer, h=head))
    q, k, v = (tr[name][layer, head] for name in ("q", "k", "v"))
    n, d = q.shape
    st.markdown(t("tm.steps.text"))
    shape_badge(t("tm.steps.shape", n=n, d=d, l=layer, h=head))
    labels = token_labels(tr["tokens"])
    with st.expander(t("tm.qkv", n=n, d=d)):
        for name, m in (("Q", q), ("K", k), ("V", v)):
            st.markdown(f"**{name}** ({n}×{d})")
            show_heatmap(heatmap(m, x_labels=dim_labels(d, name.lower()), y_labels=shorts(labels), x_title=t("axis.dim"),
                                 y_title=t("tm.axis.token"), decimals=min(dec, 3)), key=state.item(KEYS.pipeline, "in", name))
    run = compute.playground(q, k, "direct", None, None, None, q, k, v, "scaled_dot", {}, None, 1.0, None, "row",
                             settings.get("device"))
    pipeline(run, labels, labels, "row", dec, "scaled_dot", prefix=KEYS.pipeline)
    gap = float(np.abs(run.attn.weights.numpy() - tr["attentions"][layer, head]).max())
    page.check_box(within_rounding(gap), t("tm.steps.check", gap=gap_text(gap), l=layer, h=head))


def _open_top(layer: int, head: int) -> None:
    st.session_state[KEYS.chosen] = (layer, head)


def patterns_table(tr: dict) -> None:
    """Each head's share of weight on six kinds of key, sortable, so a head is found by number."""
    st.subheader(t("tm.patterns"))
    st.markdown(t("tm.patterns.text"))
    pats = tr["patterns"]
    L, H = pats[PATTERNS[0]].shape
    names = {p: t(f"tm.pat.{p}") for p in PATTERNS}
    rows = [{t("tm.col.layer"): layer, t("tm.col.head"): head, **{names[p]: float(pats[p][layer, head]) for p in PATTERNS}}
            for layer in range(L) for head in range(H)]
    st.session_state.setdefault(KEYS.sort, "previous")
    by = st.columns([1, 2])[0].selectbox(t("tm.sort"), PATTERNS, key=KEYS.sort, format_func=labeller("tm.pat."))
    df = pd.DataFrame(rows).sort_values(names[by], ascending=False, na_position="last", kind="stable")
    cfg = {names[p]: st.column_config.ProgressColumn(names[p], format="%.3f", min_value=0.0, max_value=1.0)
           for p in PATTERNS}
    st.dataframe(df, hide_index=True, width="stretch", height=300, column_config=cfg, key=KEYS.patterns)
    pieces = tr["rows"]["same_word"]
    st.caption(t("tm.patterns.overlap") + " " + (t("tm.patterns.rows", rows=pieces) if pieces
                                                  else t("tm.patterns.none", pattern=names["same_word"])))
    top = df.iloc[0]
    if np.isnan(top[names[by]]):
        return
    layer, head = int(top[t("tm.col.layer")]), int(top[t("tm.col.head")])
    st.markdown(t("tm.patterns.top", pattern=names[by], l=layer, h=head, share=f"{top[names[by]]:.0%}"))
    st.button(t("tm.patterns.open", l=layer, h=head), key=KEYS.open_top, on_click=_open_top, args=(layer, head))


def caution(experiment: bool = True) -> None:
    """Both sides of the literature, then the experiment the caution asks for, measured here."""
    st.subheader(t("tm.caution"))
    st.warning(t("tm.caution.text"))
    if not experiment:
        return
    e = page.guarded([], lambda: compute.pretrained_swap(PRESETS["tired"], PRESETS["wide"], "it", "animal",
                                                        settings.get("device")))
    if e is None:
        return
    key = "tm.swap.same" if e["still_on_key"] else "tm.swap.moved"
    st.info(t("tm.swap.title") + " " + t(key, l=e["layer"], h=e["head"], wa=f"{e['weight_a']:.2f}", wb=f"{e['weight_b']:.2f}",
                                            top=md(e["top_b"])))


def main() -> None:
    dec = settings.get("precision")
    st.markdown(t("tm.intro", model=MODEL))
    link.keep("trained_model", KEPT)
    text = sentence_box()
    tr = load_trace(text)
    if tr is None:
        caution(experiment=False)
        return
    token_line(tr["tokens"])
    layer, head = chosen_head(*tr["attentions"].shape[:2])
    models_view(tr, (layer, head))
    one_head(tr, layer, head, dec)
    step_by_step(tr, layer, head, dec)
    patterns_table(tr)
    caution()


main()
