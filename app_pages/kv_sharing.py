"""Sharing keys and values: grouped-query (GQA) and multi-query (MQA) attention — H query heads
read G key/value heads — and what it saves in the KV cache of real models."""

from __future__ import annotations

import pandas as pd
import streamlit as st

import core
from attention_lab import colours
from ui import compute, concept_panels, link, page, settings, state
from ui.i18n import current_lang, t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets import formulas
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import fits_one_element, heatmap, show_heatmap, show_maps
from ui.widgets.layout import shape_badge, token_labels

KEYS = state.KV_SHARING
HEADS = (1, 2, 4, 8)
D_MODEL = 16
MAX_DRAWN_TOKENS = 64  # tokens this page draws (every head's map)
TOKENS_MAX = 1_048_576  # the context length a learner may type for the cache table (2²⁰)
BATCH_MAX = 4096
DTYPES = {"bf16": 2, "fp32": 4, "int8": 1}


# every control is kept in the page's link (issue 35); the controls check the values again before they draw
KEPT = (
    link.Kept(KEYS.heads, "H", link.one_of(HEADS), 4),
    link.Kept(KEYS.kv_heads, "G", link.whole(1, max(HEADS)), None),
    link.Kept(KEYS.tokens, "ctx", link.whole(1, TOKENS_MAX), 8192),
    link.Kept(KEYS.batch, "batch", link.whole(1, BATCH_MAX), 1),
    link.Kept(KEYS.dtype, "dtype", link.one_of(tuple(DTYPES)), "bf16"),
    link.Kept(state.item(KEYS.chart, "shared"), "shared", link.whole(0, compute.GEMMA4_LAYERS - 1), 0),
)
SHARED = state.item(KEYS.chart, "shared")  # Gemma 4's shared layers (issue 55); 0 as transformers' defaults give it
MODE_COLOURS = {"own": colours.OKABE_ITO[5], "store": colours.OKABE_ITO[6], "reuse": colours.OKABE_ITO[4]}


def heads_controls(problems: page.Problems) -> tuple[int, int]:
    """H (query heads) and G among the divisors of H; a G that does not divide H is named and replaced."""
    c1, c2 = st.columns(2)
    with c1:
        st.session_state.setdefault(KEYS.heads, 4)
        if st.session_state[KEYS.heads] not in HEADS:
            problems.append(("error", t("kvs.h.bad", options=", ".join(map(str, HEADS)))))
            st.session_state[KEYS.heads] = 4
        st.select_slider(t("kv.heads"), options=HEADS, key=KEYS.heads, help=t("kvs.heads.help", d=D_MODEL))
    H = int(st.session_state[KEYS.heads])
    options = [g for g in range(1, H + 1) if H % g == 0]
    current = st.session_state.get(KEYS.kv_heads, max(1, H // 2))
    if current not in options:
        if KEYS.kv_heads in st.session_state:
            problems.append(("error", t("kv.g.bad", g=current, h=H, options=", ".join(map(str, options)))))
        current = options[-1] if KEYS.kv_heads in st.session_state else max(1, H // 2)
    st.session_state[KEYS.kv_heads] = current
    with c2:
        st.select_slider(t("kv.kv_heads"), options=options, key=KEYS.kv_heads, help=t("kv.kv_heads.help"))
    return H, int(current)


def kind(H: int, G: int) -> str:
    return "mha" if G == H else ("mqa" if G == 1 else "gqa")


def groups_map(r: dict) -> None:
    """Which K/V head each query head reads: an H × G table of 1 (reads) and 0."""
    H, G = r["reads"].shape
    st.markdown(t("kvs.groups.title", kind=t("kvs.kind." + kind(H, G)), h=H, g=G, size=H // G))
    show_heatmap(heatmap(r["reads"], x_labels=[f"kv{g}" for g in range(G)], y_labels=[f"q{h}" for h in range(H)],
                         x_title=t("kvs.axis.kv"), y_title=t("kv.axis.head"), sequential=True, decimals=0), key=KEYS.groups)
    shape_badge(t("kvs.shapes", h=H, g=G, dh=r["d_head"], d=D_MODEL))


def head_maps(r: dict, labels: list[str], dec: int) -> None:
    """Every query head's weights, titled with the K/V head it reads; heads of one group share K."""
    w = r["weights"]  # (H, n, n)
    specs = [heatmap(w[h], x_labels=labels, y_labels=labels, x_title=t("axis.key"), y_title=t("axis.query"),
                     sequential=True, decimals=dec, compact=True) for h in range(w.shape[0])]
    panels = [{"key": state.item(KEYS.weights, h), "title": t("kvs.head", h=h, g=r["kv_head_of"][h]), "mathml": "",
               "shape": "", "map": s, "before": [], "after": [], "warning": None} for h, s in enumerate(specs)]
    if fits_one_element(specs):
        show_maps(panels, key=KEYS.weights, per_row=min(2, len(panels)))  # 4 side by side overflowed at 1280 px
    else:
        for p in panels:
            st.markdown(f"**{p['title']}**")
            show_heatmap(p["map"], key=p["key"])
    st.caption(t("kvs.random"))


def cache_controls(problems: page.Problems) -> tuple[int, int, str]:
    """Context length, batch and number format for the cache table; out-of-range values are named
    (and replaced before the widgets are drawn, which would refuse them)."""
    n, b = bounded(KEYS.tokens, 8192, TOKENS_MAX, problems), bounded(KEYS.batch, 1, BATCH_MAX, problems)
    if st.session_state.setdefault(KEYS.dtype, "bf16") not in DTYPES:
        st.session_state[KEYS.dtype] = "bf16"
    c1, c2, c3 = st.columns(3)
    with c1:
        st.number_input(t("kvs.tokens"), min_value=1, max_value=TOKENS_MAX, step=1024, key=KEYS.tokens,
                        help=t("kvs.tokens.help", max=f"{TOKENS_MAX:,}"))
    with c2:
        st.number_input(t("kvs.batch"), min_value=1, max_value=BATCH_MAX, step=1, key=KEYS.batch)
    with c3:
        st.selectbox(t("kvs.dtype"), list(DTYPES), key=KEYS.dtype, format_func=lambda k: t("kvs.dtype." + k))
    return n, b, st.session_state[KEYS.dtype]


def bounded(key: str, default: int, limit: int, problems: page.Problems) -> int:
    """A whole number 1 … limit from session state; anything else is named and the default used."""
    v = st.session_state.setdefault(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= limit:
        problems.append(("error", t("kvs.range.bad", value=str(v)[:40], max=f"{limit:,}")))
        st.session_state[key] = default
        return default
    return v


def cache_table(rows: list[dict], n: int, batch: int, dtype: str) -> None:
    """The presets' cache sizes: as published (GQA), and with the same shapes as MHA and MQA."""
    st.latex(formulas.localize(r"\text{bytes} = 2 \times L \times G \times d_{head} \times n \times B \times "
                                r"\text{bytes per value}", current_lang()))
    st.markdown(t("kvs.cache.now", n=f"{n:,}", b=batch, dtype=t("kvs.dtype." + dtype)))
    df = pd.DataFrame([{t("kvs.col.model"): r["name"], "L": r["layers"], "H": r["heads"], "G": r["kv_heads"],
                        "d_head": r["d_head"], t("kvs.col.actual"): r["actual_text"], t("kvs.col.mha"): r["mha_text"],
                        t("kvs.col.mqa"): r["mqa_text"]} for r in rows])
    st.dataframe(df, hide_index=True, width="stretch", key=KEYS.table)
    names = [r["name"] for r in rows]
    data = [{"type": "bar", "name": t("kvs.kind." + k), "x": names, "y": [r[k + "_gib"] for r in rows]}
            for k in ("mha", "gqa", "mqa")]
    fig = line_figure(data, {"barmode": "group", "yaxis": {"title": {"text": t("kvs.chart.y")}}}, height=320)
    show_chart(fig, key=KEYS.chart, title=t("kvs.chart.title", n=f"{n:,}", b=batch))
    st.caption(t("kvs.cache.caption"))


def intro() -> str:
    """The page's opening, with the two models it names read from their published shapes (core.MODEL_PRESETS)."""
    llama, mistral = core.MODEL_PRESETS["llama-3-8b"], core.MODEL_PRESETS["mistral-7b"]
    assert (llama.n_heads, llama.n_kv_heads) == (mistral.n_heads, mistral.n_kv_heads)  # the sentence names one pair
    return t("kvs.intro", m1=llama.name, m2=mistral.name, H=llama.n_heads, G=llama.n_kv_heads)


def main() -> None:
    problems: page.Problems = []
    link.keep("kv_sharing", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(intro())
    st.latex(r"\mathrm{head}_h = \mathrm{softmax}\!\Big(\frac{Q_h K_{g(h)}^\top}{\sqrt{d_{head}}}\Big) V_{g(h)},\qquad "
             r"g(h) = \Big\lfloor \frac{h}{H/G} \Big\rfloor")
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    H, G = heads_controls(problems)
    r = page.guarded(problems, lambda: compute.grouped_heads(tuple(tokens), D_MODEL, H, G, seed))
    page.show_problems(problems)
    if r is not None:
        groups_map(r)
        head_maps(r, shorts(token_labels(tokens)), dec)
    st.subheader(t("kvs.cache.title"))
    cache_problems: page.Problems = []
    n, batch, dtype = cache_controls(cache_problems)
    rows = page.guarded(cache_problems, lambda: compute.cache_sizes(n, batch, DTYPES[dtype]))
    page.show_problems(cache_problems)
    if rows:
        cache_table(rows, n, batch, dtype)
    sharing_section(n, dtype)
    kept_section(dtype)


def shared_control(problems: page.Problems) -> int:
    """How many of Gemma 4's last layers read an earlier layer's K and V; a value outside 0 … L − 1 is named."""
    last = compute.GEMMA4_LAYERS - 1
    v = st.session_state.setdefault(SHARED, 0)
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= last:
        problems.append(("error", t("gs.n.bad", value=str(v)[:40], max=last)))
        st.session_state[SHARED] = v = 0
    st.slider(t("gs.n"), 0, last, key=SHARED, help=t("gs.n.help"))
    return int(v)


def stack_chart(r: dict) -> None:
    """One bar per layer: the GiB it keeps (0 for a layer that reads another's), coloured and named by its mode."""
    modes = [m or "own" for m in r["modes"]]
    if "reuse" not in modes:  # nothing shared: a "store" layer keeps its K and V for no one but itself
        modes = ["own"] * len(modes)
    labels = [t("gs.layer", l=i, kind=t("gs.kind." + k)) for i, k in enumerate(r["kinds"])]
    text = [t("gs.reads", s=s) if m == "reuse" else "" for m, s in zip(modes, r["source"], strict=True)]
    data = [{"type": "bar", "orientation": "h", "name": t("gs.mode." + mode), "x": [g if m == mode else None for m, g in
             zip(modes, r["gib"], strict=True)], "y": labels, "marker": {"color": MODE_COLOURS[mode]},
             "text": [x if m == mode else "" for m, x in zip(modes, text, strict=True)], "textposition": "outside"}
            for mode in ("own", "store", "reuse")]
    fig = line_figure(data, {"barmode": "overlay", "yaxis": {"autorange": "reversed", "automargin": True},
                             "xaxis": {"title": {"text": t("gs.x")}}, "legend": {"orientation": "h", "y": -0.12}},
                      height=24 * r["layers"] + 120)
    show_chart(fig, key=state.item(KEYS.chart, "stack"), title=t("gs.title"),
               alt=t("gs.alt", layers=r["layers"], cached=r["cached"], shared=r["layers"] - r["cached"]))


def sharing_section(n_tokens: int, dtype: str) -> None:
    """Gemma 4's sharing (issue 55): the layer stack, which layer each reads, and a meter of the cache it keeps."""
    st.subheader(t("gs.title"))
    st.markdown(t("gs.intro"))
    problems: page.Problems = []
    n = shared_control(problems)
    r = page.guarded([], lambda: compute.gemma4_sharing(n, n_tokens, DTYPES[dtype]))
    if r is None:
        problems.append(("error", t("gs.plan.bad", n=n, layers=compute.GEMMA4_LAYERS)))
    page.show_problems(problems)
    if r is None:
        return
    st.progress(min(1.0, r["fraction"]), text=t("gs.meter", shared=f"{r['shared_gib']:,.3f}", alone=f"{r['alone_gib']:,.3f}",
                                               pct=f"{r['fraction']:.0%}", n=f"{r['tokens']:,}", cached=r["cached"],
                                               layers=r["layers"]))
    stack_chart(r)
    st.caption(t("gs.caption", model=r["name"]))


def kept_section(dtype: str) -> None:
    """What a 2026 model keeps per token (issue 55): the chart every page links to, at this page's number format;
    its heading's anchor (#kept-2026) is the stable link."""
    st.subheader(t("kept.title"), anchor=concept_panels.KEPT_ANCHOR)
    st.markdown(t("kept.intro"))
    problems: page.Problems = []
    r = page.guarded(problems, lambda: compute.kept_curves(DTYPES[dtype]))
    page.show_problems(problems)
    if r is not None:
        concept_panels.kept_chart(r, key=state.item(KEYS.chart, "kept"), dtype=t("kvs.dtype." + dtype))

main()
