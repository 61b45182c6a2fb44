"""Long contexts: a causal sliding window that keeps the first tokens (attention sinks), how far a
stack of layers reaches through it, and what the KV cache costs at 4k, 32k and 128k tokens."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import compute, link, page, state
from ui.i18n import t
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap

KEYS = state.LONG_CONTEXT
N_MAX, SINKS_MAX, LAYERS_MAX = 64, 8, 12
WINDOW_MAX = 1_048_576  # the window a learner may type for the memory table
CONTEXTS = (4096, 32768, 131072)
# (key, default, lowest, highest): every control is checked before its widget is drawn
LIMITS = {"n": (24, 2, N_MAX), "window": (6, 1, N_MAX), "sinks": (2, 0, SINKS_MAX), "layers": (3, 1, LAYERS_MAX),
          "table_window": (4096, 1, WINDOW_MAX), "table_sinks": (4, 0, 1024)}


# every control is kept in the page's link (issue 35): a restart or another replica shows the same page
KEPT = tuple(link.Kept(getattr(KEYS, name), f"lc_{name}", link.whole(lo, top), default)
             for name, (default, lo, top) in LIMITS.items())


def checked(name: str, problems: page.Problems, hi: int | None = None) -> int:
    """The control's value from session state, a whole number within its limits; otherwise named and replaced."""
    default, lo, top = LIMITS[name]
    top = top if hi is None else hi
    key = getattr(KEYS, name)
    v = st.session_state.setdefault(key, min(default, top))
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= top:
        problems.append(("error", t("lc.bad", name=t("lc." + name), value=str(v)[:40], lo=lo, hi=f"{top:,}")))
        st.session_state[key] = v = min(default, top)
    return v


def controls(problems: page.Problems) -> tuple[int, int, int, int]:
    n = checked("n", problems)
    w, s, L = checked("window", problems, hi=n), checked("sinks", problems, hi=n), checked("layers", problems)
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        st.slider(t("lc.n"), 2, N_MAX, key=KEYS.n)
    with c2:
        st.slider(t("lc.window"), 1, n, key=KEYS.window, help=t("lc.window.help"))
    with c3:
        st.slider(t("lc.sinks"), 0, min(SINKS_MAX, n), key=KEYS.sinks, help=t("lc.sinks.help"))
    with c4:
        st.slider(t("lc.layers"), 1, LAYERS_MAX, key=KEYS.layers)
    return n, w, s, L


def mask_map(r: dict) -> None:
    n = r["mask"].shape[0]
    labels = [str(i) for i in range(n)]
    st.markdown(t("lc.mask.title", w=r["size"], s=r["sinks"]))
    show_heatmap(heatmap(r["mask"], x_labels=labels, y_labels=labels, x_title=t("axis.key"), y_title=t("axis.query"),
                         sequential=True, decimals=0, side_text=[str(c) for c in r["row_counts"]],
                         side_title=t("lc.mask.side")), key=KEYS.mask)
    st.caption(t("lc.mask.caption", most=max(r["row_counts"]), w=r["size"], s=r["sinks"]))


def reach_map(r: dict) -> None:
    """What the last token can draw on after 1 … L layers."""
    L, n = r["reach_last"].shape
    st.subheader(t("lc.reach.title"))
    show_heatmap(heatmap(r["reach_last"], x_labels=[str(i) for i in range(n)], y_labels=[str(l + 1) for l in range(L)],
                         x_title=t("lc.reach.x"), y_title=t("lc.reach.y"), sequential=True, decimals=0,
                         side_text=[str(c) for c in r["reachable"]], side_title=t("lc.reach.side")), key=KEYS.reach)
    far = r["farthest"][-1]
    now = t("lc.reach.now", L=L, far=far, lw=L * (r["size"] - 1), w=r["size"], n=n)
    st.markdown(now + (" " + t("lc.reach.sinks", s=r["sinks"]) if r["sinks"] else ""))
    done = r["all_reached_at"]
    st.caption(t("lc.reach.all", l=done) if done else t("lc.reach.not_all", L=L))


def memory(rows: list[dict], window: int, sinks: int) -> None:
    st.subheader(t("lc.mem.title"))
    st.markdown(t("lc.mem.now", w=f"{window:,}", s=sinks))
    cols = {"name": t("kvs.col.model")} | {f"full_{c}": t("lc.mem.full", n=f"{c // 1024}k") for c in CONTEXTS} \
        | {f"win_{c}": t("lc.mem.win", n=f"{c // 1024}k") for c in CONTEXTS}
    def cell(r: dict, k: str) -> str:  # an "all tokens" size past the model's published context is hypothetical
        return f"{r[k]} *" if k.startswith("full_") and int(k[5:]) > r["context"] else r[k]

    st.dataframe(pd.DataFrame([{label: cell(r, k) for k, label in cols.items()} for r in rows]), hide_index=True,
                 width="stretch", key=KEYS.memory)
    past = [r for r in rows if any(c > r["context"] for c in CONTEXTS)]
    if past:
        st.caption(t("lc.mem.hypo", contexts=", ".join(f"{r['name']} {r['context']:,}" for r in past)))
    x = [f"{c // 1024}k" for c in CONTEXTS]
    data = [{"type": "bar", "name": f"{r['name']} · {t(kind)}", "x": x, "y": r[f"{tag}_gib"]}
            for r in rows for tag, kind in (("full", "lc.chart.full"), ("win", "lc.chart.win"))]
    show_chart(line_figure(data, {"barmode": "group", "yaxis": {"title": {"text": "GiB"}, "type": "log"},
                                  "xaxis": {"title": {"text": t("lc.chart.x")}}}, height=360),
               key=KEYS.chart, title=t("lc.chart.title"))
    st.caption(t("lc.mem.caption"))


def main() -> None:
    problems: page.Problems = []
    link.keep("long_context", KEPT, problems)
    st.markdown(t("lc.intro"))
    st.latex(r"M_{ij} = [\,i - w < j \le i\,] \;\lor\; [\,j < s \,\wedge\, j \le i\,]")
    n, w, s, L = controls(problems)
    r = page.guarded(problems, lambda: compute.window_reach(n, w, s, L), keep=KEYS.last)
    page.show_problems(problems)
    if r is not None:
        mask_map(r)
        reach_map(r)
    table_problems: page.Problems = []
    tw, ts = checked("table_window", table_problems), checked("table_sinks", table_problems)
    c1, c2 = st.columns(2)
    with c1:
        st.number_input(t("lc.table_window"), min_value=1, max_value=WINDOW_MAX, step=1024, key=KEYS.table_window)
    with c2:
        st.number_input(t("lc.table_sinks"), min_value=0, max_value=1024, step=1, key=KEYS.table_sinks)
    rows = page.guarded(table_problems, lambda: compute.context_memory(tw, ts, CONTEXTS))
    page.show_problems(table_problems)
    if rows:
        memory(rows, tw, ts)


main()
