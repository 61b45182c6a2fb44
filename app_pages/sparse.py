"""Choosing which keys: sparse top-k attention (DeepSeek Sparse Attention, DeepSeek-V3.2). A small indexer scores
every key for every query, each query keeps its k best keys, and attention runs over those only — drawn as a mask
over the full map, beside full attention, with what the chosen keys carry of full attention's weight and the cost
as n grows (counted multiply-adds)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core.playground.lab import gap_text, within_rounding
from ui import compute, concept_panels, link, page, settings, state
from ui.i18n import labeller, t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import token_labels

KEYS = state.SPARSE
# Sources: DeepSeek-AI, "DeepSeek-V3.2-Exp: Boosting Long-Context Efficiency with DeepSeek Sparse Attention" (2025,
# the report in deepseek-ai/DeepSeek-V3.2-Exp), §2.1: the lightning indexer I_ts = Σ_j w_tj·ReLU(q_tj·k_s), the
# top-k selection per query, the report's claim that the indexer is small (few heads, FP8) so core attention falls
# from O(L²) to O(L·k), and that V3.2-Exp matches V3.1-Terminus on its benchmarks; k = 2048 (config.json index_topk).
# The cost chart's shapes: compute.sparse_costs' comment.
TOP_K_MAX = 16
TOP_K_DEFAULT = 2
COST_NS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)  # tokens on the cost chart (V3.2's context: 128K)
COST_TOP_K = 2048  # DeepSeek-V3.2-Exp's index_topk
MAX_DRAWN_TOKENS = 64
BLOCK_MAX = 8  # tokens per block on the blocks section

KEPT = (link.Kept(KEYS.top_k, "topk", link.whole(1, TOP_K_MAX), TOP_K_DEFAULT),
        link.Kept(KEYS.chooser, "chooser", link.one_of(compute.SPARSE_CHOOSERS), "indexer"),
        link.Kept(KEYS.head, "sp_h", link.whole(0, compute.SPARSE_HEADS - 1), 0),
        link.Kept(state.item(KEYS.index, "block"), "blk_c", link.whole(1, BLOCK_MAX), 2),
        link.Kept(state.item(KEYS.index, "keep"), "blk_k", link.whole(1, MAX_DRAWN_TOKENS), 1),
        link.Kept(state.item(KEYS.index, "pattern"), "blk_p", link.one_of(compute.BLOCK_PATTERNS), "FSSF"))
BLOCK, KEEP, PATTERN = (state.item(KEYS.index, k) for k in ("block", "keep", "pattern"))  # blocks, shared (issue 55)


def controls(n: int, problems: page.Problems) -> tuple[int, str, int]:
    """k (1 … TOP_K_MAX), what chooses the keys and the head drawn; a tampered value is named and replaced."""
    k = st.session_state.setdefault(KEYS.top_k, TOP_K_DEFAULT)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= TOP_K_MAX:
        problems.append(("error", t("sp.k.bad", value=str(k)[:40], max=TOP_K_MAX, default=TOP_K_DEFAULT)))
        st.session_state[KEYS.top_k] = TOP_K_DEFAULT
    if st.session_state.setdefault(KEYS.chooser, "indexer") not in compute.SPARSE_CHOOSERS:
        st.session_state[KEYS.chooser] = "indexer"
    if st.session_state.setdefault(KEYS.head, 0) not in range(compute.SPARSE_HEADS):
        st.session_state[KEYS.head] = 0
    c1, c2, c3 = st.columns([2, 3, 1])
    with c1:
        st.slider(t("sp.k"), 1, TOP_K_MAX, key=KEYS.top_k, help=t("sp.k.help"))
    with c2:
        st.radio(t("sp.chooser"), compute.SPARSE_CHOOSERS, key=KEYS.chooser, horizontal=True,
                 format_func=labeller("sp.chooser."), help=t("sp.chooser.help"))
    with c3:
        st.selectbox(t("sp.head"), list(range(compute.SPARSE_HEADS)), key=KEYS.head)
    k = int(st.session_state[KEYS.top_k])
    if k >= n:
        problems.append(("info", t("sp.k.all", k=k, n=n)))
    return k, st.session_state[KEYS.chooser], int(st.session_state[KEYS.head])


def maps(r: dict, labels: list[str], h: int, dec: int) -> None:
    """The scores that choose (the causal mask's −∞ greyed), and the weights over the chosen keys only (the rest
    greyed: the top-k mask over the full map) beside full attention's."""
    st.subheader(t("sp.maps.title"))
    st.latex(r"\begin{gathered}I_{ts} = \sum_{j=1}^{H_I} w_{tj}\,\mathrm{ReLU}\!\left(\frac{q^I_{tj}\cdot k^I_s}"
             r"{\sqrt{d_I}}\right)\\ S_t = \text{top-}k_{\,s \le t}\; I_{ts}\\"
             r"o_t = \sum_{s \in S_t} \frac{e^{q_t k_s^\top/\sqrt{d_k}}}{\sum_{s' \in S_t} e^{q_t k_{s'}^\top/"
             r"\sqrt{d_k}}}\, v_s\end{gathered}")
    index, logits = r["index"], r["logits"][h]
    axes = {"x_labels": labels, "y_labels": labels, "x_title": t("axis.key"), "y_title": t("axis.query"), "decimals": dec}
    grid = (("sp.map.index", KEYS.index, index, True), ("sp.map.logits", KEYS.logits, logits, True),
            ("sp.map.sparse", KEYS.sparse, r["sparse"][h], False), ("sp.map.full", KEYS.full, r["full"][h], False))
    for row in (grid[:2], grid[2:]):
        for col, (title, key, z, scores) in zip(st.columns(2), row, strict=True):
            with col:
                st.markdown(f"**{t(title, h=h)}**")
                spec = (heatmap(np.where(np.isneginf(z), 0.0, z), neg_inf=np.isneginf(z), **axes) if scores
                        else heatmap(z, sequential=True, **axes))
                show_heatmap(spec, key=key)
    st.caption(t("sp.random"))


def measured(r: dict, k: int, labels: list[str], h: int, dec: int) -> None:
    """What the chosen keys carry of full attention's weight (head h, every query), and the outputs' gap."""
    st.subheader(t("sp.carry.title"))
    cover = r["coverage"][h]  # (n,)
    worst = int(np.argmin(cover))
    st.markdown(t("sp.carry.now", k=k, mean=f"{100 * cover.mean():.1f}", min=f"{100 * cover[worst]:.1f}",
                  q=labels[worst], h=h))
    equal = within_rounding(r["gap"])
    (st.success if equal else st.info)(t("sp.gap.same" if equal else "sp.gap.differ", gap=gap_text(r["gap"])))
    if st.session_state[KEYS.chooser] == "indexer":
        st.caption(t("sp.carry.untrained"))


def costs() -> None:
    """Multiply-adds of full attention, of the indexer and of sparse attention as n grows, with V3.2's shapes."""
    st.subheader(t("sp.cost.title"))
    full, indexer, topk = (t(f"sp.f.{w}") for w in ("full", "indexer", "topk"))
    st.latex(rf"\begin{{gathered}}\underbrace{{H\,n^2\,(d_k + d_v)}}_{{\text{{{full}}}}}\\"
             rf"\underbrace{{H_I\,n^2\,d_I}}_{{\text{{{indexer}}}}} + \underbrace{{H\,n\,k\,(d_k + d_v)}}_{{\text{{{topk}}}}}"
             r"\end{gathered}")
    c = compute.sparse_costs(COST_NS, COST_TOP_K)
    data = [{"type": "scatter", "mode": "lines+markers", "x": c["ns"], "y": c[name], "name": t(f"sp.cost.{name}"),
             "marker": {"symbol": symbol}} for name, symbol in (("full", "circle"), ("sparse", "diamond"),
                                                               ("indexer", "square"))]
    fig = line_figure(data, {"xaxis": {"title": {"text": t("sp.cost.x")}, "type": "log"},
                             "yaxis": {"title": {"text": t("sp.cost.y")}, "type": "log"}}, height=340)
    show_chart(fig, key=KEYS.cost, title=t("sp.cost.title"), alt=t("sp.cost.alt"))
    last = len(c["ns"]) - 1
    even = next((n for n, f, s in zip(c["ns"], c["full"], c["sparse"], strict=True) if s < f), None)
    st.markdown(t("sp.cost.now", k=COST_TOP_K, n=f"{c['ns'][last]:,}", ratio=f"{c['full'][last] / c['sparse'][last]:.1f}",
                  even=f"{even:,}" if even else "—"))
    one = compute.sparse_costs((1,), COST_TOP_K)  # one (query, key) pair: the per-pair costs, whose ratio is the limit
    full_pair, indexer_pair = one["full"][0], one["indexer"][0]
    st.caption(t("sp.cost.caption", full_pair=f"{full_pair:,}", indexer_pair=f"{indexer_pair:,}",
                 limit=f"{full_pair / indexer_pair:g}"))


def main() -> None:
    problems: page.Problems = []
    link.keep("sparse", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("sp.intro"))
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    labels = shorts(token_labels(tokens))
    k, chooser, h = controls(len(tokens), problems)
    r = page.guarded(problems, lambda: compute.sparse(tuple(tokens), k, chooser, seed))
    page.show_problems(problems)
    if r is not None:
        maps(r, labels, h, dec)
        measured(r, k, labels, h, dec)
    shared_blocks(tokens, labels, seed)
    costs()
    concept_panels.kept_link()


# ---------------------------------------------------------------------------- blocks and a shared choice (issue 55)
def whole_at_least(key: str, default: int, hi: int, problems: page.Problems, message: str, **values) -> int:
    v = st.session_state.setdefault(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
        problems.append(("error", t(message, value=str(v)[:40], default=default, **values)))
        st.session_state[key] = v = default
    return v


def block_controls(n: int, problems: page.Problems) -> tuple[int, int, str]:
    """Block size c, blocks kept (at most the blocks n tokens close) and the layer stack's pattern."""
    c = whole_at_least(BLOCK, 2, BLOCK_MAX, problems, "blk.c.bad", max=BLOCK_MAX)
    n_blocks = compute.closed_blocks(n, c)
    k = whole_at_least(KEEP, 1, n_blocks, problems, "blk.k.bad", n=n, c=c, blocks=n_blocks)
    if st.session_state.setdefault(PATTERN, "FSSF") not in compute.BLOCK_PATTERNS:
        problems.append(("error", t("blk.p.bad", value=str(st.session_state[PATTERN])[:40])))
        st.session_state[PATTERN] = "FSSF"
    c1, c2, c3 = st.columns(3)
    with c1:
        st.number_input(t("blk.c"), min_value=1, max_value=BLOCK_MAX, step=1, key=BLOCK)
    with c2:
        st.number_input(t("blk.k"), min_value=1, max_value=n_blocks, step=1, key=KEEP, help=t("blk.k.help", blocks=n_blocks))
    with c3:
        st.selectbox(t("blk.p"), compute.BLOCK_PATTERNS, key=PATTERN, format_func=lambda p: " ".join(p),
                     help=t("blk.p.help"))
    return c, k, st.session_state[PATTERN]


def shared_blocks(tokens: list[str], labels: list[str], seed: int) -> None:
    """Each layer's chosen tokens (1) per query; a shared layer's map is titled with the layer it copies."""
    st.subheader(t("blk.title"))
    st.markdown(t("blk.intro"))
    problems: page.Problems = []
    c, k, pattern = block_controls(len(tokens), problems)
    r = page.guarded(problems, lambda: compute.shared_blocks(tuple(tokens), c, k, pattern, seed))
    page.show_problems(problems)
    if r is None:
        return
    for layer, (src, chosen) in enumerate(zip(r["source"], r["chosen"], strict=True)):
        if layer % 2 == 0:  # a row of two layers, so a narrow screen reads them in order
            cols = st.columns(2)
        with cols[layer % 2]:
            st.markdown("**" + t("blk.own" if src == layer else "blk.copies", l=layer, s=src) + "**")
            show_heatmap(heatmap(chosen, x_labels=labels, y_labels=labels, x_title=t("axis.key"), y_title=t("axis.query"),
                                 sequential=True, decimals=0), key=state.item(KEYS.index, "layer", layer))
    st.caption(t("blk.caption", blocks=r["n_blocks"], c=c, k=k))


main()
