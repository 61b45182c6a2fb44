"""One Transformer block, post-norm beside pre-norm: residuals, LayerNorm and the feed-forward
network around attention; the cost of attention measured live."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core import block
from ui import compute, link, page, settings, state
from ui import scenario_state as ss
from ui.i18n import labeller, t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.figures import PrebuiltFigure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, shape_badge, token_labels

KEYS = state.TRANSFORMER_BLOCK
D, H, D_FF = 8, 2, 32
NORM_STEPS = {  # per placement of the norm: the block's formulas, then its steps (trace field, title)
    "post": (r"Z = \mathrm{LN}(X + \mathrm{MHA}(X)),\quad Y = \mathrm{LN}(Z + \mathrm{FFN}(Z))",
             [("attn", "MHA(X)"), ("res1", "X + MHA(X)"), ("z", "Z = LN(·)"), ("ffn", "FFN(Z)"),
              ("res2", "Z + FFN(Z)"), ("y", "Y = LN(·)")]),
    "pre": (r"Z = X + \mathrm{MHA}(\mathrm{LN}(X)),\quad Y = Z + \mathrm{FFN}(\mathrm{LN}(Z))",
            [("norm1", "LN(X)"), ("attn", "MHA(LN(X))"), ("z", "Z = X + MHA(·)"), ("norm2", "LN(Z)"),
             ("ffn", "FFN(LN(Z))"), ("y", "Y = Z + FFN(·)")]),
}


# the pre-norm formulas exactly as one source prints them: a missing backslash before
# "operatorname" makes LaTeX set the word in italic letters
PRINTED_PRE_NORM = (r"Z = X+operatorname{MHA}(\operatorname{LayerNorm}(X))",
                    r"Y = Z+operatorname{FFN}(\operatorname{LayerNorm}(Z))")


def source_typo() -> None:
    """Under the pre-norm column: the source's formula as printed, beside the correct one above."""
    with st.container(border=True):
        st.markdown(f"**{t('tb.typo.printed')}**")
        for line in PRINTED_PRE_NORM:
            st.latex(line)
        st.code("\n".join(PRINTED_PRE_NORM), language="latex", wrap_lines=True)
        st.caption(t("tb.typo"))


def column(norm: str, sb, labels, n: int, dec: int) -> None:
    """One block's steps, top to bottom, each with its shape."""
    st.subheader(t(f"tb.{norm}"))
    latex, steps = NORM_STEPS[norm]
    st.latex(latex)
    if norm == "pre":
        source_typo()
    tr = sb.trace
    for name, title in steps:
        st.markdown(f"**{title}**")
        adds = name in ("res1", "res2") or (norm == "pre" and name in ("z", "y"))
        shape_badge(f"({n}×{D})" + (f" + ({n}×{D}) → ({n}×{D})" if adds else ""))
        show_heatmap(heatmap(getattr(tr, name).numpy(), x_labels=dim_labels(D), y_labels=labels, x_title=t("axis.dim"),
                             y_title=t("tb.token"), decimals=dec), key=state.item(KEYS.map, norm, name))
    c = sb.ffn_check
    page.check_box(c.other_rows_gap == 0.0 and c.changed_row_gap > 0,
                   t("tb.ffn_check", row=labels[c.changed_row], moved=f"{c.changed_row_gap:.2g}",
                     others=f"{c.other_rows_gap:.2g}", alone=f"{c.rowwise_gap:.2g}"))


def cost_charts(res: dict) -> None:
    ns = list(res["ns"])
    for col, (key, unit, full, chunked, scale) in zip(st.columns(2), (
            (KEYS.time, "ms", res["tf"], res["tc"], 1e3), (KEYS.mem, "MiB", res["bf"], res["bc"], 1 / 2**20)), strict=True):
        with col:
            show_chart(PrebuiltFigure({"data": [
                {"type": "scatter", "mode": "lines+markers", "x": ns, "y": [scale * v for v in full], "name": t("tb.full")},
                {"type": "scatter", "mode": "lines+markers", "x": ns, "y": [scale * v for v in chunked],
                 "name": t("tb.chunked")}],
                "layout": {"height": 280, "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
                           "xaxis": {"type": "log", "title": {"text": "N"}},
                           "yaxis": {"type": "log", "title": {"text": unit}}}}), key=key,
                       title=f"{t('tb.cost')} ({unit})")
    st.caption(t("tb.cost.caption"))


def cost() -> None:
    """Full attention against chunked attention, measured on this server at the press of a button."""
    st.subheader(t("tb.cost"))
    st.markdown(t("tb.cost.text"))
    res = st.session_state.get(KEYS.complexity)
    if st.button(t("tb.measure"), key=KEYS.measure):
        with st.spinner(t("tb.measuring")):
            c = block.complexity()
        res = {"ns": c.ns, "tf": c.time_full, "tc": c.time_chunked, "bf": c.bytes_full, "bc": c.bytes_chunked}
        st.session_state[KEYS.complexity] = res
    if res:
        cost_charts(res)
    st.dataframe(pd.DataFrame([
        (t("tb.layer.sa"), "O(N² · d)", "O(1)", "O(1)"),
        (t("tb.layer.rnn"), "O(N · d²)", "O(N)", "O(N)"),
        (t("tb.layer.conv"), "O(k · N · d²)", "O(1)", t("tb.layer.conv.path")),
    ], columns=[t("tb.col.layer"), t("tb.col.compute"), t("tb.col.sequential"), t("tb.col.path")]),
        hide_index=True, width="stretch")
    st.caption(t("tb.table.source"))


KEPT = (link.Kept(KEYS.act, "act", link.one_of(block.ACTIVATIONS), block.ACTIVATIONS[0]),)  # the page's own control


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    link.keep("transformer_block", KEPT, problems)
    dec, seed = min(settings.get("precision"), 2), int(settings.get("seed"))
    st.markdown(t("tb.intro"))
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("tb.numbers.help", d=D, H=H, f=D_FF))
    page.show_problems(problems)
    st.radio(t("tb.activation"), block.ACTIVATIONS, key=KEYS.act, horizontal=True, format_func=labeller("tb.act."))
    st.latex(r"\mathrm{FFN}(z) = \varphi(z W_1 + b_1)\, W_2 + b_2,\qquad "
             r"\mathrm{LN}(x) = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}}")
    st.caption(t("tb.formulas.note", d=D, f=D_FF))
    st.caption(t("tb.random"))
    X = compute.embedding("random", tuple(tokens), D, seed)[0]
    labels = shorts(token_labels(tokens))
    for col, norm in zip(st.columns(2), ("post", "pre"), strict=True):
        with col:
            column(norm, compute.seeded_block(X, seed, H, D_FF, st.session_state[KEYS.act], norm), labels, X.shape[0], dec)
    st.success(t("tb.shapes", n=X.shape[0], d=D))
    cost()


main()
