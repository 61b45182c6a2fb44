"""Sinks, gates and caps: what today's open models add around softmax (core.modern_attention) — a learned sink
logit per head (gpt-oss), QK-norm (Qwen3), logit soft-capping (Gemma 2) and a sigmoid output gate (Qwen3-Next) —
each shown on the same row of weights."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from ui import compute, link, page, settings, state
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import token_labels

KEYS = state.SINKS_GATES
# Sources of what the intro (sg.intro) says and of its one number:
# sinks — OpenAI, "gpt-oss-120b & gpt-oss-20b Model Card" (2025, arXiv 2508.10925): a learned bias per head in the
#   softmax's denominator (transformers GptOssAttention: the `sinks` logit concatenated, dropped after the softmax);
# QK-norm — "Qwen3 Technical Report" (2025, arXiv 2505.09388) §2: QK-Norm introduced "to ensure stable training";
# soft-capping — Gemma Team, "Gemma 2: Improving Open Language Models at a Practical Size" (2024, arXiv 2408.00118) §2:
#   attention logits capped at 50.0 (google/gemma-2-9b config.json: attn_logit_softcapping 50.0);
# output gate — Qiu et al., "Gated Attention for Large Language Models: Non-linearity, Sparsity, and Attention-Sink-Free"
#   (2025, arXiv 2505.06708): a head-specific sigmoid gate after attention, reported to train more stably and to
#   remove the attention sink; Qwen3-Next uses it (transformers Qwen3NextAttention).
D_MODEL = 16
H = compute.SG_HEADS
MAX_DRAWN_TOKENS = 64  # tokens this page draws (the row of the chosen query)
SINK_RANGE, CAP_RANGE = (-4.0, 8.0), (0.5, 10.0)
SINK_DEFAULTS, CAP_DEFAULT = (1.0, 3.0), 1.5
VARIANTS = ("plain", "sink", "qk_norm", "softcap")


def sink_key(h: int) -> str:
    return state.item(KEYS.sink, h)


KEPT = (link.Kept(KEYS.query, "sg_q", link.whole(0, MAX_DRAWN_TOKENS - 1), None),
        *(link.Kept(sink_key(h), f"sink{h}", link.number(*SINK_RANGE), SINK_DEFAULTS[h]) for h in range(H)),
        link.Kept(KEYS.cap, "cap", link.number(*CAP_RANGE), CAP_DEFAULT))


def number(key: str, lo: float, hi: float, default: float, name: str, problems: page.Problems) -> float:
    """A number lo … hi from session state; anything else (a tampered state) is named and the default used."""
    v = st.session_state.setdefault(key, default)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and lo <= v <= hi
    if not ok:
        problems.append(("error", t("sg.range.bad", value=str(v)[:40], name=name, lo=lo, hi=hi, default=default)))
        st.session_state[key] = default
        return default
    st.session_state[key] = float(v)
    return float(v)


def query_control(n: int, labels: list[str], problems: page.Problems) -> int:
    """The query whose row is shown (the last token by default); one that is not a token here is named."""
    v = st.session_state.get(KEYS.query)
    if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < n):
        problems.append(("warning", t("sg.query.bad", last=n - 1)))
        v = None
    st.session_state[KEYS.query] = n - 1 if v is None else v
    st.selectbox(t("sg.query"), list(range(n)), key=KEYS.query, format_func=lambda i: labels[i], help=t("sg.query.help"))
    return int(st.session_state[KEYS.query])


def controls(n: int, labels: list[str], problems: page.Problems) -> tuple[int, tuple[float, ...], float]:
    """The query, one sink logit per head and the cap c (each checked before its widget draws)."""
    sinks = tuple(number(sink_key(h), *SINK_RANGE, SINK_DEFAULTS[h], f"z_{h}", problems) for h in range(H))
    cap = number(KEYS.cap, *CAP_RANGE, CAP_DEFAULT, "c", problems)
    cols = st.columns(2 + H)
    with cols[0]:
        i = query_control(n, labels, problems)
    for h in range(H):
        with cols[1 + h]:
            st.slider(t("sg.sink", h=h), *SINK_RANGE, step=0.5, key=sink_key(h), help=t("sg.sink.help"))
    with cols[-1]:
        st.slider(t("sg.cap"), *CAP_RANGE, step=0.5, key=KEYS.cap, help=t("sg.cap.help"))
    return i, sinks, cap


def rows(r: dict, i: int, labels: list[str], dec: int) -> None:
    """Query i's row of weights under each variant, one map per head: rows are the variants, columns the keys it
    sees (j ≤ i); beside each row its sum Σα (below 1 with a sink: the sink took the rest)."""
    st.subheader(t("sg.rows.title", q=labels[i]))
    st.latex(r"\begin{gathered}\alpha_{ij} = \frac{e^{s_{ij}}}{e^{z_h} + \sum_{j' \le i} e^{s_{ij'}}}\\"
             r"1 - \sum_{j} \alpha_{ij} = \frac{e^{z_h}}{e^{z_h} + \sum_{j' \le i} e^{s_{ij'}}}\end{gathered}")
    names = [t(f"sg.variant.{v}", c=f"{r['cap']:g}") for v in VARIANTS]
    cols = st.columns(H)
    for h, col in enumerate(cols):
        z = np.stack([r[v][h, i, : i + 1] for v in VARIANTS])  # (variants, i + 1)
        with col:
            st.markdown(f"**{t('sg.head', h=h)}**")
            show_heatmap(heatmap(z, x_labels=labels[: i + 1], y_labels=names, x_title=t("axis.key"),
                                 y_title=t("sg.axis.variant"), sequential=True, decimals=dec,
                                 side_text=[f"{s:.{dec}f}" for s in z.sum(1)], side_title="Σα"),
                         key=state.item(KEYS.rows, h))
            st.markdown(t("sg.sink.share", h=h, z=f"{st.session_state[sink_key(h)]:g}",
                          share=f"{r['sink_weight'][h, i]:.{dec}f}", sum=f"{z[1].sum():.{dec}f}"))
    st.caption(t("sg.random"))


def cap_figure(before: np.ndarray, after: np.ndarray, c: float):
    """The curve c·tanh(s/c) with the row's logits on it (one marker shape per head), s itself and the lines ±c."""
    top = float(max(abs(before).max(), 3 * c))
    s = np.linspace(-top, top, 121)
    bound = {"dash": "dash", "color": "#b91c1c"}
    data = [{"type": "scatter", "mode": "lines", "x": s.tolist(), "y": (c * np.tanh(s / c)).tolist(),
             "name": t("sg.chart.curve")},
            {"type": "scatter", "mode": "lines", "x": [-top, top], "y": [-top, top], "name": t("sg.chart.same"),
             "line": {"dash": "dot", "color": "#6b7280"}},
            {"type": "scatter", "mode": "lines", "x": [-top, top], "y": [c, c], "name": "+c", "line": bound},
            {"type": "scatter", "mode": "lines", "x": [-top, top], "y": [-c, -c], "name": "−c", "line": bound},
            *({"type": "scatter", "mode": "markers", "x": before[h].tolist(), "y": after[h].tolist(),
               "name": t("sg.head", h=h), "marker": {"size": 10, "symbol": ("circle", "diamond")[h % 2]}} for h in range(H))]
    return line_figure(data, {"xaxis": {"title": {"text": t("sg.chart.x")}}, "yaxis": {"title": {"text": t("sg.chart.y")}}},
                       height=340)


def caps(r: dict, i: int, labels: list[str], dec: int) -> None:
    """The row's logits before and after c·tanh(s/c): a map of the numbers and the curve they lie on."""
    c = r["cap"]
    st.subheader(t("sg.cap.title"))
    st.latex(r"s \;\leftarrow\; c \cdot \tanh(s / c) \in (-c,\, c)")
    before, after = r["scaled"][:, i, : i + 1], r["capped"][:, i, : i + 1]
    z = np.stack([m for h in range(H) for m in (before[h], after[h])])
    y = [t(f"sg.logits.{w}", h=h) for h in range(H) for w in ("before", "after")]
    show_heatmap(heatmap(z, x_labels=labels[: i + 1], y_labels=y, x_title=t("axis.key"), y_title=t("sg.axis.logit"),
                         decimals=dec), key=KEYS.logits)
    fig = cap_figure(before, after, c)
    show_chart(fig, key=KEYS.cap_chart, title=t("sg.cap.title"))
    st.markdown(t("sg.cap.now", c=f"{c:g}", before=f"{abs(before).max():.{dec}f}", after=f"{abs(after).max():.{dec}f}"))


def qk_norm(r: dict, i: int, dec: int) -> None:
    """QK-norm bounds every logit by √d_k: the row's largest |logit| with and without it."""
    st.subheader(t("sg.qk.title"))
    st.latex(r"\begin{gathered}q \leftarrow \frac{q}{\sqrt{\tfrac{1}{d_k}\sum_i q_i^2}},\quad "
             r"k \leftarrow \frac{k}{\sqrt{\tfrac{1}{d_k}\sum_i k_i^2}}\\ "
             r"\|q\| = \|k\| = \sqrt{d_k}\;\Rightarrow\; \frac{|q^\top k|}{\sqrt{d_k}} \le \sqrt{d_k}\end{gathered}")
    plain, normed = r["scaled"][:, i, : i + 1], r["qk_scaled"][:, i, : i + 1]
    st.markdown(t("sg.qk.now", plain=f"{abs(plain).max():.{dec}f}", normed=f"{abs(normed).max():.{dec}f}",
                  bound=f"{math.sqrt(r['d_k']):.{dec}f}", dk=r["d_k"]))


def gate(r: dict, i: int, labels: list[str], dec: int) -> None:
    """The sigmoid output gate: one value in (0, 1) per token and head, the chosen query's row outlined."""
    st.subheader(t("sg.gate.title"))
    st.latex(r"\begin{gathered}o \;\leftarrow\; o \odot \sigma(x\, W^{\sigma}),\quad W^{\sigma} \in \mathbb{R}^{d_{model} "
             r"\times H d_h}\\ o_h \;\leftarrow\; o_h \cdot \sigma(x\, w^{\sigma}_h),\quad w^{\sigma}_h \in "
             r"\mathbb{R}^{d_{model}},\qquad \sigma(u) = \frac{1}{1 + e^{-u}}\end{gathered}")
    st.caption(t("sg.gate.which"))
    g = r["gate"]  # (n, H)
    show_heatmap(heatmap(g, x_labels=[t("sg.head", h=h) for h in range(H)], y_labels=labels, x_title=t("sg.axis.head"),
                         y_title=t("axis.query"), sequential=True, decimals=dec, highlight_row=i), key=KEYS.gate)
    st.markdown(t("sg.gate.now", q=labels[i], values=", ".join(f"{g[i, h]:.{dec}f}" for h in range(H))))


def main() -> None:
    problems: page.Problems = []
    link.keep("sinks_gates", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("sg.intro"))
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    labels = shorts(token_labels(tokens))
    i, sinks, cap = controls(len(tokens), labels, problems)
    r = page.guarded(problems, lambda: compute.sinks_gates(tuple(tokens), D_MODEL, sinks, cap, seed))
    page.show_problems(problems)
    if r is None:
        return
    rows(r, i, labels, dec)
    caps(r, i, labels, dec)
    qk_norm(r, i, dec)
    gate(r, i, labels, dec)


main()
