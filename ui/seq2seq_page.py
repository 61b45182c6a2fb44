"""Seq2seq page (C25–C27): a GRU encoder-decoder with and without attention, trained here."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from core import seq2seq

from . import settings, shared
from .i18n import labeller, t
from .render import PrebuiltFigure, heatmap, shape_badge, show_bars, show_heatmap, weight_bars
from .text import md

MAX_WORDS = 12
LENGTHS = tuple(range(2, 13))


@st.cache_resource(show_spinner=False)
def _store() -> dict:
    """Trained models for every session: (task, attention, seed) → Trained. Written once per key."""
    return {}


def _train(task: str, att: str, seed: int, label: str) -> seq2seq.Trained:
    store = _store()
    key = (task, att, seed)
    if key not in store:
        cfg = seq2seq.Config(task=task, attention=att)
        bar = st.progress(0.0, text=label)

        def progress(step: int, loss: float) -> None:
            if step % 10 == 0 or step == cfg.steps - 1:
                bar.progress((step + 1) / cfg.steps, text=f"{label} — step {step + 1}/{cfg.steps}, loss {loss:.3f}")

        store[key] = seq2seq.train(cfg, seed, callback=progress)
        bar.empty()
    return store[key]


def _example(task: seq2seq.Task, seed: int) -> str:
    src, _ = seq2seq.make_batch(task, 1, (6, 6), torch.Generator().manual_seed(seed + 11))
    return " ".join(task.src_vocab[i] for i in src[0].tolist() if i != seq2seq.PAD)


def _reference(task: seq2seq.Task, words: list[str]) -> list[str]:
    if task.name == "copy":
        return words
    if task.name == "reverse":
        return words[::-1]
    return seq2seq.translate_words(words)


def render() -> None:
    problems: list = []
    shared.start(problems)
    dec = settings.get("precision")
    seed = int(settings.get("seed"))
    st.markdown(t("s2.intro"))
    st.latex(r"h_i = \mathrm{GRU}(x_i, h_{i-1}),\quad e_{t,i} = f_{att}(s_{t-1}, h_i),\quad "
             r"\alpha_{t,\cdot} = \mathrm{softmax}(e_{t,\cdot}),\quad c_t = \sum_i \alpha_{t,i} h_i,\quad "
             r"s_t = \mathrm{GRU}([y_{t-1}; c_t], s_{t-1})")
    st.session_state.setdefault("s2.att", "additive")
    c1, c2 = st.columns(2)
    with c1:
        st.radio(t("s2.task"), seq2seq.TASKS, key="s2.task", format_func=labeller("s2.task."), horizontal=True)
    with c2:
        st.radio(t("s2.attention"), seq2seq.ATTENTIONS, key="s2.att", format_func=labeller("s2.att."), horizontal=True)
    task_name, att = st.session_state["s2.task"], st.session_state["s2.att"]
    task = seq2seq.get_task(task_name)
    trained = _store().get((task_name, att, seed))
    if trained is None:
        st.info(t("s2.untrained"))
        if not st.button(t("s2.train"), key="s2.train", type="primary"):
            shared.show_problems(problems)
            return
        _train(task_name, att, seed, t("s2.training"))
        st.rerun()  # redraw the page with the trained model
    st.success(t("s2.trained", acc=f"{100 * trained.accuracy:.1f}", s=f"{trained.seconds:.1f}", n=trained.cfg.steps))
    st.plotly_chart(PrebuiltFigure({"data": [{"type": "scatter", "mode": "lines", "y": list(np.round(trained.losses, 4)),
                                              "name": "loss"}],
                                    "layout": {"height": 220, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                                               "xaxis": {"title": {"text": t("s2.step")}},
                                               "yaxis": {"title": {"text": t("s2.loss")}, "type": "log"}}}),
                    key="s2.loss", config={"displayModeBar": False})

    st.subheader(t("s2.try"))
    if st.session_state.get("s2._task_of_input") != task_name:
        st.session_state["s2.input"] = _example(task, seed)
        st.session_state["s2._task_of_input"] = task_name
    st.text_input(t("s2.input"), key="s2.input", help=t("s2.input.help", words=" ".join(task.src_vocab[2:])))
    words = st.session_state["s2.input"].split()
    bad = [w for w in words if w not in task.src_vocab[2:]]
    if not words or bad or len(words) > MAX_WORDS:
        problems.append(("error", t("s2.input.bad", words=", ".join(md(w) for w in bad[:5]) or "—", n=MAX_WORDS)))
        shared.show_problems(problems)
        return
    shared.show_problems(problems)
    ref = _reference(task, words)
    src = torch.tensor([task.src_ids(words)])
    out = seq2seq.greedy_decode(trained.params, trained.cfg, src, len(ref))
    pred = task.tgt_words(out.predictions[0].tolist())
    right = sum(p == r for p, r in zip(pred, ref, strict=True))
    st.markdown(t("s2.result", pred=md(" ".join(pred)), ref=md(" ".join(ref)), right=right, n=len(ref)))
    in_labels = [f"{i} {w}" for i, w in enumerate(words)]
    out_labels = [f"{i} {w}" for i, w in enumerate(pred)]

    if att == "none":
        st.warning(t("s2.no_attention"))
    else:
        st.markdown(f"**{t('s2.map')}**")
        shape_badge(f"A ({len(pred)}×{len(words)}): rows = output steps t, columns = input positions i")
        show_heatmap(heatmap(out.attention_map[0].numpy(), x_labels=in_labels, y_labels=out_labels,
                             x_title=t("s2.axis.in"), y_title=t("s2.axis.out"), decimals=min(dec, 2), sequential=True),
                     key="s2.map")
        st.caption(t(f"s2.pattern.{task_name}"))
        st.subheader(t("s2.stepper"))
        step = st.slider(t("s2.t"), 1, len(pred), key="s2.t_slider") - 1 if len(pred) > 1 else 0
        stp = out.steps[step]
        a, b = st.columns(2)
        with a:
            st.latex(r"e_{t,i} = " + (r"w_a^\top \tanh(W_a s_{t-1} + U_a h_i)" if att == "additive" else r"s_{t-1}^\top h_i"))
            show_heatmap(heatmap(stp.scores[0][None].numpy(), x_labels=in_labels, y_labels=[f"t = {step + 1}"],
                                 x_title=t("s2.axis.in"), y_title="e", decimals=dec), key="s2.e")
            st.latex(r"\alpha_{t,i} = \frac{\exp(e_{t,i})}{\sum_j \exp(e_{t,j})}")
            show_bars(weight_bars(in_labels, stp.weights[0].numpy(), dec), key="s2.alpha")
        with b:
            st.latex(r"c_t = \sum_i \alpha_{t,i}\, h_i")
            h = stp.context.shape[-1]
            show_heatmap(heatmap(np.stack([stp.s_prev[0].numpy()[:16], stp.context[0].numpy()[:16]]),
                                 x_labels=[str(k) for k in range(16)], y_labels=["s_{t−1}", "c_t"],
                                 x_title=t("s2.axis.dims", h=h), y_title="", decimals=min(dec, 2)), key="s2.vectors")
            st.caption(t("s2.vectors", h=h))
    _bottleneck(task_name, seed)
    st.info(t("s2.caveat"))


def _bottleneck(task_name: str, seed: int) -> None:
    st.subheader(t("s2.bottleneck"))
    st.markdown(t("s2.bottleneck.text"))
    task = "reverse" if task_name == "translate" else task_name
    key = ("curve", task, seed)
    store = _store()
    if key not in store:
        if not st.button(t("s2.measure", task=t(f"s2.task.{task}")), key="s2.measure"):
            return
        models = {att: _train(task, att, seed, t("s2.training_for", att=t(f"s2.att.{att}"))) for att in ("none", "additive")}
        with st.spinner(t("s2.measuring")):
            store[key] = {att: seq2seq.accuracy_by_length(m, LENGTHS) for att, m in models.items()}
        st.rerun()
    curves = store[key]
    data = [{"type": "scatter", "mode": "lines+markers", "x": list(LENGTHS), "y": list(np.round(curves[att], 3)),
             "name": t(f"s2.att.{att}")} for att in ("none", "additive")]
    st.plotly_chart(PrebuiltFigure({"data": data, "layout": {
        "height": 300, "margin": {"l": 10, "r": 10, "t": 10, "b": 10}, "yaxis": {"range": [0, 1.05],
        "title": {"text": t("s2.accuracy")}}, "xaxis": {"title": {"text": t("s2.length")}},
        "shapes": [{"type": "rect", "x0": 4, "x1": 8, "y0": 0, "y1": 1.05, "fillcolor": "#e2e8f0", "opacity": 0.4,
                    "line": {"width": 0}, "layer": "below"}]}}), key="s2.curve", config={"displayModeBar": False})
    st.caption(t("s2.bottleneck.caption"))
