"""Never building the matrix: attention tile by tile with an online softmax (FlashAttention's idea),
replayed one tile at a time — the running maximum m, the running sum ℓ, the rescaled partial output —
and the final result beside ordinary attention; the memory of both as n grows."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui.i18n import t
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels
from ui.widgets.steps import stepper

KEYS = state.TILED_ATTENTION
N_MAX, D = 16, 4
LIMITS = {"n": (8, 2, N_MAX), "block_q": (4, 1, N_MAX), "block_k": (3, 1, N_MAX)}


# every control is kept in the page's link (issue 35), the tile shown too; checked again before they draw
KEPT = (*(link.Kept(getattr(KEYS, name), f"ta_{name}", link.whole(lo, top), default)
          for name, (default, lo, top) in LIMITS.items()),
        link.Kept(KEYS.step, "tile", link.whole(1, N_MAX ** 2), 1))


def checked(name: str, hi: int, problems: page.Problems) -> int:
    default, lo, _ = LIMITS[name]
    key = getattr(KEYS, name)
    v = st.session_state.setdefault(key, min(default, hi))
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        problems.append(("error", t("lc.bad", name=t("ta." + name), value=str(v)[:40], lo=lo, hi=hi)))
        st.session_state[key] = v = min(default, hi)
    return v


def controls(problems: page.Problems) -> tuple[int, int, int]:
    n = checked("n", N_MAX, problems)
    bq, bk = checked("block_q", n, problems), checked("block_k", n, problems)
    c1, c2, c3 = st.columns(3)
    with c1:
        st.slider(t("ta.n"), 2, N_MAX, key=KEYS.n)
    with c2:
        st.slider(t("ta.block_q"), 1, n, key=KEYS.block_q)
    with c3:
        st.slider(t("ta.block_k"), 1, n, key=KEYS.block_k)
    return n, bq, bk


def step_controls(count: int, problems: page.Problems) -> int:
    """◀ / ▶ (or the ← → keys) move through the tiles 1 … count."""
    return stepper(count, problems, step_key=KEYS.step, prev_key=KEYS.step_prev, next_key=KEYS.step_next,
                   keys_key=KEYS.arrow_keys, bad=t("ta.step.bad", n=count), now=lambda step: t("ta.step.now", k=step, n=count))


def tile_view(r: dict, step: int, dec: int) -> None:
    """Where the tile sits, its scores, the running m and ℓ of its rows, and the partial output."""
    tile = r["tiles"][step - 1]
    grid = r["progress"][step - 1]
    st.markdown(t("ta.tile.title", qb=tile["q_block"], kb=tile["k_block"], q0=tile["q_start"], q1=tile["q_stop"] - 1,
                  k0=tile["k_start"], k1=tile["k_stop"] - 1))
    c1, c2 = st.columns([1, 2])
    with c1:
        show_heatmap(heatmap(grid, x_labels=[f"K{j}" for j in range(grid.shape[1])],
                             y_labels=[f"Q{i}" for i in range(grid.shape[0])], x_title=t("ta.axis.kblock"),
                             y_title=t("ta.axis.qblock"), sequential=True, decimals=0,
                             highlight=(tile["q_block"], tile["k_block"])), key=KEYS.tile)
        st.caption(t("ta.grid.caption"))
    with c2:
        rows = [str(i) for i in range(tile["q_start"], tile["q_stop"])]
        show_heatmap(heatmap(tile["scores"], x_labels=[str(j) for j in range(tile["k_start"], tile["k_stop"])], y_labels=rows,
                             x_title=t("axis.key"), y_title=t("axis.query"), decimals=dec), key=KEYS.scores)
    df = pd.DataFrame({t("axis.query"): rows, t("ta.col.m_before"): tile["m_before"], t("ta.col.m_after"): tile["m_after"],
                       "e^(m_old − m_new)": tile["correction"], t("ta.col.l_before"): tile["l_before"],
                       t("ta.col.l_after"): tile["l_after"]})
    st.dataframe(df.round(dec), hide_index=True, width="stretch", key=KEYS.ml)
    st.markdown(t("ta.partial.title", k1=tile["k_stop"] - 1))
    show_heatmap(heatmap(tile["partial_output"], x_labels=dim_labels(D, "v"), y_labels=rows, x_title=t("axis.dim"),
                         y_title=t("axis.query"), decimals=dec), key=KEYS.partial)
    page.check_box(within_rounding(tile["seen_gap"]), t("ta.partial.check", gap=gap_text(tile["seen_gap"]),
                                                        k1=tile["k_stop"] - 1))


def result(r: dict, dec: int) -> None:
    st.subheader(t("ta.result.title"))
    c1, c2 = st.columns(2)
    for col, (name, key, title) in zip((c1, c2), (("output", KEYS.output, "ta.result.tiled"),
                                                  ("reference", KEYS.reference, "ta.result.full")), strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            show_heatmap(heatmap(r[name], x_labels=dim_labels(D, "v"), y_labels=[str(i) for i in range(r[name].shape[0])],
                                 x_title=t("axis.dim"), y_title=t("axis.query"), decimals=dec), key=key)
    page.check_box(within_rounding(r["gap"]), t("ta.result.check", gap=gap_text(r["gap"]), largest=r["largest"],
                                                full=r["full"]))
    st.caption(t("ta.random"))


def memory(m: dict) -> None:
    """Bytes held by full attention's n × n matrices and by one block of chunked attention, as n grows (measured)."""
    st.subheader(t("ta.mem.title"))
    data = [{"type": "scatter", "mode": "lines+markers", "x": list(m["ns"]), "y": [b / 2**20 for b in m[k]], "name": t(name)}
            for k, name in (("bytes_full", "ta.mem.full"), ("bytes_chunked", "ta.mem.tiled"))]
    show_chart(line_figure(data, {"xaxis": {"type": "log", "title": {"text": "n"}},
                                  "yaxis": {"type": "log", "title": {"text": "MiB"}}}), key=KEYS.chart, title=t("ta.mem.title"))
    st.caption(t("ta.mem.caption", n=m["ns"][-1], ratio=f"{m['bytes_chunked'][-1] / m['bytes_full'][-1]:.1%}"))


def main() -> None:
    problems: page.Problems = []
    link.keep("tiled_attention", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("ta.intro"))
    st.latex(r"m' = \max(m, \max_j s_j),\quad \ell' = e^{m - m'}\ell + \sum_j e^{s_j - m'},\quad "
             r"o' = \frac{e^{m - m'}\ell\,o + \sum_j e^{s_j - m'} v_j}{\ell'}")
    n, bq, bk = controls(problems)
    r = page.guarded(problems, lambda: compute.tiles(n, D, bq, bk, seed), keep=KEYS.last)
    step = step_controls(len(r["tiles"]), problems) if r else 1
    page.show_problems(problems)
    if r is None:
        return
    tile_view(r, step, dec)
    result(r, dec)
    memory(compute.attention_memory())


main()
