"""Long contexts: a causal sliding window that keeps the first tokens (attention sinks), how far a
stack of layers reaches through it, and what the KV cache costs at 4k, 32k and 128k tokens."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import compute, link, page, state
from ui.i18n import t
from ui.text import md
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
KEPT = (*(link.Kept(getattr(KEYS, name), f"lc_{name}", link.whole(lo, top), default)
          for name, (default, lo, top) in LIMITS.items()),
        link.Kept(KEYS.schedule, "lc_model", link.one_of(compute.SCHEDULES), compute.SCHEDULES[0]),
        link.Kept(KEYS.sched_n, "lc_sched_n", link.whole(1, 1_048_576), 32768),
        link.Kept(KEYS.page_size, "lc_page", link.one_of((1, 2, 4, 8, 16, 32)), 8),
        link.Kept(KEYS.lengths, "lc_lengths", link.text(200), "20, 9, 33, 4"),
        link.Kept(KEYS.max_len, "lc_max_len", link.whole(1, 4096), 64),
        link.Kept(KEYS.fork, "lc_fork", link.flag, False, link.show_flag))


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


# ---------------------------------------------------------------------------- local and global layers (issue 33)
SCHEDULES = compute.SCHEDULES
SCHED_N_MAX = 1_048_576
PAGE_SIZES = (1, 2, 4, 8, 16, 32)
MAX_REQUESTS, MAX_REQUEST_LEN = 8, 512
DEFAULT_LENGTHS = "20, 9, 33, 4"


def layer_name(kind: tuple) -> str:
    """A layer kind (kind, size, RoPE) in the learner's language: "window 1024", "global (NoPE)"."""
    name, size, rope = kind
    return t(f"lc.sched.k.{name}", size=size) + ("" if rope else " (NoPE)")


def schedules(problems: page.Problems) -> None:
    """A published model's local and global layers: the pattern, the reach of its last token, its cache."""
    st.subheader(t("lc.sched.title"))
    st.markdown(t("lc.sched.intro"))
    if st.session_state.setdefault(KEYS.schedule, SCHEDULES[0]) not in SCHEDULES:
        problems.append(("error", t("lc.sched.bad", value=md(str(st.session_state[KEYS.schedule])[:40]))))
        st.session_state[KEYS.schedule] = SCHEDULES[0]
    n = st.session_state.setdefault(KEYS.sched_n, 32768)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= SCHED_N_MAX:
        problems.append(("error", t("lc.bad", name=t("lc.sched.n"), value=str(n)[:40], lo=1, hi=f"{SCHED_N_MAX:,}")))
        st.session_state[KEYS.sched_n] = 32768
    c1, c2 = st.columns(2)
    with c1:
        st.selectbox(t("lc.sched.model"), SCHEDULES, key=KEYS.schedule)
    with c2:
        st.number_input(t("lc.sched.n"), min_value=1, max_value=SCHED_N_MAX, step=1024, key=KEYS.sched_n)
    name, n = st.session_state[KEYS.schedule], int(st.session_state[KEYS.sched_n])
    r = page.guarded(problems, lambda: compute.layer_schedule(name, n))
    page.show_problems(problems)
    if r is None:
        return
    st.dataframe(pd.DataFrame([{t("lc.sched.kind"): layer_name(k), t("lc.sched.count"): c} for k, c in r["counts"]]),
                 hide_index=True, key=KEYS.sched_table)
    reach = (t("lc.sched.reach.all", L=r["all_reached_at"]) if r["all_reached_at"] else
             t("lc.sched.reach.part", oldest=f"{r['oldest']:,}", L=r["layers"]))
    pattern = " → ".join(layer_name(k) for k in r["period"])
    st.markdown(t("lc.sched.now", model=name, L=r["layers"], first=pattern, n=f"{n:,}") + " " + reach)
    st.markdown(t("lc.sched.cache", n=f"{n:,}", cache=f"{r['cache'] / 2**30:,.2f}", glob=f"{r['global'] / 2**30:,.2f}",
                  ratio=f"{r['global'] / r['cache']:.1f}"))
    st.caption(t("lc.sched.caption", G=r["kv_heads"], d=r["d_head"]))


# ---------------------------------------------------------------------------- pages of cache (issue 33)
def read_lengths(problems: page.Problems) -> tuple[int, ...]:
    """The requests' lengths from their text box; a text that cannot be read is named and the default used."""
    text = st.session_state.setdefault(KEYS.lengths, DEFAULT_LENGTHS)
    parts = str(text).replace(",", " ").split()
    ok = (isinstance(text, str) and 1 <= len(parts) <= MAX_REQUESTS
          and all(p.isdigit() and 1 <= int(p) <= MAX_REQUEST_LEN for p in parts))
    if not ok:
        problems.append(("error", t("lc.paged.bad", value=md(str(text)[:60]), k=MAX_REQUESTS, hi=MAX_REQUEST_LEN)))
        parts = DEFAULT_LENGTHS.replace(",", " ").split()
    return tuple(int(p) for p in parts)


def paged_cache(problems: page.Problems) -> None:
    """A batch of requests in a paged KV cache: block tables, a fork sharing a prefix, bytes against preallocation."""
    st.subheader(t("lc.paged.title"))
    st.markdown(t("lc.paged.intro"))
    if st.session_state.setdefault(KEYS.page_size, 8) not in PAGE_SIZES:
        problems.append(("error", t("lc.paged.size.bad", value=md(str(st.session_state[KEYS.page_size])[:40]))))
        st.session_state[KEYS.page_size] = 8
    m = st.session_state.setdefault(KEYS.max_len, 64)
    if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 4096:
        problems.append(("error", t("lc.bad", name=t("lc.paged.max_len"), value=str(m)[:40], lo=1, hi="4,096")))
        st.session_state[KEYS.max_len] = 64
    lengths = read_lengths(problems)
    c1, c2, c3, c4 = st.columns([2, 3, 2, 2], vertical_alignment="bottom")
    with c1:
        st.selectbox(t("lc.paged.size"), PAGE_SIZES, key=KEYS.page_size)
    with c2:
        st.text_input(t("lc.paged.lengths"), key=KEYS.lengths, help=t("lc.paged.lengths.help", k=MAX_REQUESTS))
    with c3:
        st.number_input(t("lc.paged.max_len"), min_value=1, max_value=4096, key=KEYS.max_len)
    with c4:
        st.checkbox(t("lc.paged.fork"), key=KEYS.fork, help=t("lc.paged.fork.help"))
    P, fork = int(st.session_state[KEYS.page_size]), bool(st.session_state.get(KEYS.fork))
    r = page.guarded(problems, lambda: compute.paged(lengths, P, int(st.session_state[KEYS.max_len]), fork))
    page.show_problems(problems)
    if r is None:
        return
    rows = [{t("lc.paged.request"): (t("lc.paged.forked") if fork and i == len(r["tables"]) - 1 else str(i)),
             t("lc.paged.tokens"): n, t("lc.paged.table"): " · ".join(map(str, table))}
            for i, (n, table) in enumerate(zip(r["lengths"], r["tables"], strict=True))]
    st.dataframe(pd.DataFrame(rows), hide_index=True, key=KEYS.paged_table)
    mem = r["memory"]
    kib = lambda b: f"{b / 1024:,.0f}"  # noqa: E731
    st.markdown(t("lc.paged.now", paged=kib(mem["paged_bytes"]), paged_waste=kib(mem["paged_wasted_bytes"]),
                  contig=kib(mem["contiguous_bytes"]), contig_waste=kib(mem["contiguous_wasted_bytes"]),
                  max_len=f"{max(int(st.session_state[KEYS.max_len]), *r['lengths']):,}", P=P))
    if fork:
        st.markdown(t("lc.paged.shared", shared=mem["shared_pages"], copies=r["copies"]))
    st.caption(t("lc.paged.caption"))


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
    schedules([])
    paged_cache([])


main()
