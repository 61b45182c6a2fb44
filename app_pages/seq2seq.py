"""Seq2seq with attention: a GRU encoder-decoder with and without encoder-decoder attention,
trained ahead of time (shipped checkpoints) or here while you watch; the decoder step by step,
the attention map, and the bottleneck measured."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import seq2seq, seq2seq_store
from serving import training
from ui import compute, link, page, settings, state
from ui import scenario_state as ss
from ui.i18n import labeller, t
from ui.text import md
from ui.widgets.bars import show_bars, weight_bars
from ui.widgets.figures import PrebuiltFigure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import shape_badge

KEYS = state.SEQ2SEQ
MAX_WORDS = 12


def loss_chart(losses, key: str) -> None:
    show_chart(PrebuiltFigure({"data": [{"type": "scatter", "mode": "lines", "y": list(np.round(losses, 4)),
                                         "name": t("s2.loss")}],
                               "layout": {"height": 220, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                                          "xaxis": {"title": {"text": t("s2.step")}},
                                          "yaxis": {"title": {"text": t("s2.loss")}, "type": "log"}}}), key=key)


def train_here(task: str, att: str, seed: int) -> None:
    """Ask the server's one training queue for this model; the learner then watches it train."""
    try:
        compute.seq2seq_queue().submit(task, att, seed)
        st.session_state[KEYS.asked] = (task, att, seed)
    except training.QueueFull:
        ss.note("warning", t("s2.queue_full"))


@st.fragment(run_every=0.7)
def watch(task: str, att: str, seed: int) -> None:
    """Place in the queue, then a progress bar and the loss curve as it trains."""
    handle = compute.seq2seq_queue().find(task, att, seed)
    if handle is None or handle.done:
        st.rerun()
    pos, prog = handle.position, handle.progress
    if pos:
        st.info(t("s2.waiting", n=pos))
        return
    st.progress(prog.fraction, text=t("s2.training_step", step=prog.step, n=prog.total,
                                        loss=f"{prog.loss:.3f}" if prog.loss is not None else "—"))
    if prog.losses:
        loss_chart(prog.losses, state.item(KEYS.loss, "live"))


def model_panel(task: str, att: str, seed: int) -> tuple[seq2seq.Trained | None, bool]:
    """Which model the page shows (shipped, or the learner's own), and the button to train one."""
    asked = st.session_state.get(KEYS.asked) == (task, att, seed)
    handle = compute.seq2seq_queue().find(task, att, seed) if asked else None
    if handle is not None and not handle.done:
        watch(task, att, seed)
    own = handle is not None and handle.result is not None
    model = compute.seq2seq_model(task, att, seed, own)
    if model is None:
        st.error(t("s2.no_model"))
        return None, False
    st.success(t("s2.trained.own" if own else "s2.trained.shipped", acc=f"{100 * model.accuracy:.1f}",
                 s=f"{model.seconds:.1f}", n=model.cfg.steps))
    loss_chart(model.losses, KEYS.loss)
    if not own and (handle is None or handle.done):
        st.button(t("s2.train", seed=seed, s=f"{model.seconds:.0f}"), key=KEYS.train, on_click=train_here,
                  args=(task, att, seed), help=t("s2.train.help"))
    return model, own


def try_it(task_name: str, att: str, seed: int, own: bool, problems: list, dec: int) -> None:
    st.subheader(t("s2.try"))
    task = seq2seq.get_task(task_name)
    if st.session_state.get(KEYS.task_of_input) != task_name:
        st.session_state[KEYS.input] = compute.seq2seq_example(task_name, seed)
        st.session_state[KEYS.task_of_input] = task_name
    st.text_input(t("s2.input"), key=KEYS.input, help=t("s2.input.help", words=" ".join(task.src_vocab[2:])))
    words = st.session_state[KEYS.input].split()
    bad = [w for w in words if w not in task.src_vocab[2:]]
    if not words or bad or len(words) > MAX_WORDS:
        problems.append(("error", t("s2.input.bad", words=", ".join(md(w) for w in bad[:5]) or "—", n=MAX_WORDS)))
        page.show_problems(problems)
        return
    page.show_problems(problems)
    run = compute.seq2seq_run(task_name, att, seed, own, tuple(words))
    st.markdown(t("s2.result", pred=md(" ".join(run["pred"])), ref=md(" ".join(run["ref"])), right=run["right"],
                  n=len(run["ref"])))
    if att == "none":
        st.warning(t("s2.no_attention"))
        return
    in_labels = [f"{i} {w}" for i, w in enumerate(words)]
    out_labels = [f"{i} {w}" for i, w in enumerate(run["pred"])]
    st.markdown(f"**{t('s2.map')}**")
    shape_badge(t("s2.map.shape", m=len(out_labels), n=len(in_labels)))
    show_heatmap(heatmap(run["map"], x_labels=in_labels, y_labels=out_labels, x_title=t("s2.axis.in"),
                         y_title=t("s2.axis.out"), decimals=min(dec, 2), sequential=True), key=KEYS.map)
    st.caption(pattern_caption(task_name, run, words, seed))
    decoder_steps(run["steps"], att, in_labels, dec)


def pattern_caption(task_name: str, run: dict, words: list[str], seed: int) -> str:
    """What this map shows, measured on it (core.seq2seq_store.map_facts), and for the toy translation
    how well the model without attention does on the same task."""
    f = seq2seq_store.map_facts(run["map"])
    if task_name != "translate":
        share = f.diagonal if task_name == "copy" else f.anti_diagonal
        return t(f"s2.pattern.{task_name}", share=f"{100 * share:.0f}%")
    (i1, w1), (i2, w2) = (f.spread_inputs + ((f.spread_inputs[0][0], 0.0),))[:2]
    text = t("s2.pattern.translate", out=md(run["pred"][f.spread_step]), in1=md(words[i1]), w1=f"{w1:.2f}",
             in2=md(words[i2]), w2=f"{w2:.2f}")
    plain = compute.seq2seq_model(task_name, "none", seed, False)
    if plain is not None:
        text += " " + t("s2.pattern.translate.none", acc=f"{100 * plain.accuracy:.0f}")
    return text


def decoder_steps(steps: list[dict], att: str, in_labels, dec: int) -> None:
    """One decoder step t: e_{t,i}, α_{t,i}, s_{t−1} and c_t."""
    st.subheader(t("s2.stepper"))
    if not 1 <= st.session_state.get(KEYS.t_slider, 1) <= len(steps):  # a link's step past this output
        st.session_state[KEYS.t_slider] = 1
    step = st.slider(t("s2.t"), 1, len(steps), key=KEYS.t_slider) - 1 if len(steps) > 1 else 0
    step = min(step, len(steps) - 1)
    s = steps[step]
    a, b = st.columns(2)
    with a:
        st.latex(r"e_{t,i} = " + (r"w_a^\top \tanh(W_a s_{t-1} + U_a h_i)" if att == "additive" else r"s_{t-1}^\top h_i"))
        show_heatmap(heatmap(s["scores"][None], x_labels=in_labels, y_labels=[f"t = {step + 1}"], x_title=t("s2.axis.in"),
                             y_title="e", decimals=dec), key=KEYS.e)
        st.latex(r"\alpha_{t,i} = \frac{\exp(e_{t,i})}{\sum_j \exp(e_{t,j})}")
        show_bars(weight_bars(in_labels, s["weights"], dec), key=KEYS.alpha)
    with b:
        st.latex(r"c_t = \sum_i \alpha_{t,i}\, h_i")
    h = s["context"].shape[-1]  # 16 columns: the whole width, so nothing scrolls
    show_heatmap(heatmap(np.stack([s["s_prev"][:16], s["context"][:16]]), x_labels=[str(k) for k in range(16)],
                         y_labels=["s_{t−1}", "c_t"], x_title=t("s2.axis.dims", h=h), y_title="",
                         decimals=min(dec, 2)), key=KEYS.vectors)
    st.caption(t("s2.vectors", h=h))


def bottleneck(task_name: str) -> None:
    """Accuracy against input length, with and without attention (shipped curves); the trained
    lengths are shaded: outside them both models extrapolate."""
    st.subheader(t("s2.bottleneck"))
    st.markdown(t("s2.bottleneck.text"))
    task = "reverse" if task_name == "translate" else task_name
    curves = seq2seq_store.shipped_curves(task)
    if curves is None:
        st.info(t("s2.no_curves"))
        return
    cfg = seq2seq.Config()
    data = [{"type": "scatter", "mode": "lines+markers", "x": list(curves.lengths), "y": list(np.round(curves[att], 3)),
             "name": t(f"s2.att.{att}")} for att in seq2seq_store.CURVE_ATTENTIONS]
    show_chart(PrebuiltFigure({"data": data, "layout": {
        "height": 300, "margin": {"l": 10, "r": 10, "t": 30, "b": 10},
        "yaxis": {"range": [0, 1.05], "title": {"text": t("s2.accuracy")}}, "xaxis": {"title": {"text": t("s2.length")}},
        "shapes": [{"type": "rect", "x0": cfg.min_len - 0.5, "x1": cfg.max_len + 0.5, "y0": 0, "y1": 1.05,
                    "fillcolor": "#e2e8f0", "opacity": 0.5, "line": {"width": 0}, "layer": "below"}],
        "annotations": [{"x": (cfg.min_len + cfg.max_len) / 2, "y": 1.05, "yanchor": "bottom", "showarrow": False,
                         "text": t("s2.trained_range", a=cfg.min_len, b=cfg.max_len)}]}}),
        key=KEYS.curve, title=t("s2.bottleneck"))
    st.caption(curve_caption(seq2seq_store.curve_facts(curves, cfg.min_len, cfg.max_len), task_name, cfg))


def curve_caption(f, task_name: str, cfg) -> str:
    """The chart's caption, written from its own curves: the trained lengths, longer, shorter."""
    pct = lambda x: f"{100 * x:.0f}%"  # noqa: E731
    parts = [t("s2.bottleneck.caption", task=t(f"s2.task.{f.task}"), a=cfg.min_len, b=cfg.max_len),
             t("s2.curve.trained", att=pct(f.trained[0]), none=pct(f.trained[1]))]
    if f.longer is not None:
        parts.append(t(f"s2.curve.longer.{seq2seq_store.compare(*f.longer)}", att=pct(f.longer[0]), none=pct(f.longer[1]),
                       L=f.last[0], att_L=pct(f.last[1]), none_L=pct(f.last[2])))
    if f.shorter is not None:
        parts.append(t(f"s2.curve.shorter.{seq2seq_store.compare(*f.shorter)}", att=pct(f.shorter[0]),
                       none=pct(f.shorter[1])))
    if task_name == "translate":
        parts.append(t("s2.curve.translate_note"))
    return " ".join(parts)


# the page's own controls (the rest: the scenario): the task, the attention, the input and the decoder's step
KEPT = (link.Kept(KEYS.task, "task", link.one_of(seq2seq.TASKS), seq2seq.TASKS[0]),
        link.Kept(KEYS.att, "att", link.one_of(seq2seq.ATTENTIONS), "additive"),
        link.Kept(KEYS.input, "words", link.text(400), None),
        link.Kept(KEYS.t_slider, "t", link.whole(1, 64), None))


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    link.keep("seq2seq", KEPT, problems)
    if KEYS.input in st.session_state:
        # the link's input belongs to its task: not replaced by the task's example on this first run
        st.session_state.setdefault(KEYS.task_of_input, st.session_state.get(KEYS.task, seq2seq.TASKS[0]))
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("s2.intro"))
    st.latex(r"h_i = \mathrm{GRU}(x_i, h_{i-1}),\quad e_{t,i} = f_{att}(s_{t-1}, h_i),\quad "
             r"\alpha_{t,\cdot} = \mathrm{softmax}(e_{t,\cdot}),\quad c_t = \sum_i \alpha_{t,i} h_i,\quad "
             r"s_t = \mathrm{GRU}([E\,y_{t-1}; c_t], s_{t-1})")
    st.caption(t("s2.formula.note"))
    st.session_state.setdefault(KEYS.att, "additive")
    c1, c2 = st.columns(2)
    with c1:
        st.radio(t("s2.task"), seq2seq.TASKS, key=KEYS.task, format_func=labeller("s2.task."), horizontal=True)
    with c2:
        st.radio(t("s2.attention"), seq2seq.ATTENTIONS, key=KEYS.att, format_func=labeller("s2.att."), horizontal=True)
    task_name, att = st.session_state[KEYS.task], st.session_state[KEYS.att]
    model, own = model_panel(task_name, att, seed)
    if model is not None:
        try_it(task_name, att, seed, own, problems, dec)
    bottleneck(task_name)
    st.info(t("s2.caveat"))


main()
