"""Panels of the concept pages that the tutorial draws too (one function each, called by both): the KV cache
step by step, MLA's latent, the delta rule's state, the
multi-head page's size controls and head maps, the position page's permutation experiment. Keys are
the caller's (each page has its own room in :mod:`ui.state`)."""

from __future__ import annotations

from urllib.parse import urlencode

import numpy as np
import pandas as pd
import streamlit as st

import core
from attention_lab import colours, scenario

from . import compute, nav, settings, state
from .i18n import t
from .widgets.figures import line_figure, show_chart
from .widgets.heatmap import heatmap, show_heatmap
from .widgets.layout import dim_labels, shape_badge

MH_D_MODELS = (2, 3, 4, 6, 8, 12, 16)  # d_model on the multi-head page and in its lesson
PS_DIMS = (2, 4, 6, 8, 12, 16)  # the width d of the permutation experiment


# ------------------------------------------------------------------ multi-head
def head_sizes(key_d: str, key_h: str, cols, *, d: int = 8, heads: int = 2) -> tuple[int, int]:
    """d_model and the number of heads H (a divisor of d_model; ``heads`` when it is one, else the
    largest), as select sliders in the first two of ``cols``; ``d`` is d_model's first value."""
    with cols[0]:
        st.session_state.setdefault(key_d, d)
        st.select_slider(t("mh.d_model"), options=MH_D_MODELS, key=key_d)
    d_model = int(st.session_state[key_d])
    divisors = [h for h in range(1, d_model + 1) if d_model % h == 0]
    if st.session_state.get(key_h) not in divisors:
        st.session_state[key_h] = heads if heads in divisors else divisors[-1]
    with cols[1]:
        st.select_slider(t("mh.heads"), options=divisors, key=key_h, help=t("mh.heads.help"))
    return d_model, int(st.session_state[key_h])


def seeded_inputs(tokens, d: int) -> tuple:
    """The multi-head page's numbers for the tokens (``attention_lab.scenario.multi_head_numbers``, cached)."""
    return scenario.multi_head_numbers(tokens, d, int(settings.get("seed")), embed=compute.embedding,
                                       project=compute.projection)


def head_maps(tr, labels, dec: int, *, key: str, per_row: int, limit: int | None = None) -> None:
    """The heads' weights maps, ``per_row`` side by side (the first ``limit`` heads; all without one)."""
    H = tr.weights.shape[1]
    shown = H if limit is None else min(H, limit)
    for start in range(0, shown, per_row):
        for h, col in zip(range(start, min(shown, start + per_row)), st.columns(per_row), strict=False):
            with col:
                st.markdown(f"**{t('mh.head', h=h)}**")
                show_heatmap(heatmap(tr.weights[0, h].numpy(), x_labels=labels, y_labels=labels, x_title=t("axis.key"),
                                     y_title=t("axis.query"), decimals=min(dec, 2), sequential=True),
                             key=state.item(key, h))


# ------------------------------------------------------------------ position
def permutation_inputs(tokens, d: int) -> tuple:
    """The position page's numbers for the tokens (``attention_lab.scenario.permutation_numbers``, cached)."""
    return scenario.permutation_numbers(tokens, d, int(settings.get("seed")), embed=compute.embedding,
                                        project=compute.projection)


def permutation_maps(c: dict, permuted: list[str], dec: int, *, keys: tuple[str, str], box, why: str = "",
                     narrow: bool = False) -> None:
    """The one view of a permutation experiment (``compute.permutation_check``'s result): SA(PX) beside P·SA(X)
    (rows: the tokens in the new order) and the sentence "max |…| = gap — equal/differ. why" in ``box``
    (st.success, st.warning or st.info). ``keys``: the two maps' keys; ``narrow``: maps of more than four
    columns one under the other (a column of the page)."""
    d = c["sa_px"].shape[1]
    cols = (st.container(), st.container()) if narrow and d > 4 else st.columns(2)
    for col, (name, key) in zip(cols, (("sa_px", keys[0]), ("p_sa_x", keys[1])), strict=True):
        with col:
            st.caption("SA(PX)" if name == "sa_px" else "P · SA(X)")
            show_heatmap(heatmap(c[name], x_labels=dim_labels(d, "v"), y_labels=permuted, x_title=t("axis.dim"),
                                 y_title=t("axis.query"), decimals=dec), key=key)
    equal = core.lab.within_rounding(c["max_diff"])
    box(t("ps.diff", gap=core.lab.gap_text(c["max_diff"])) + " — " + t("ps.equal" if equal else "ps.differ")
        + (". " + why if why else ""))


def permutation_experiment(X, W: dict, perm, permuted, d: int, dec: int, *, keys: tuple[str, str],
                           explain: bool = True, narrow: bool = False) -> None:
    """The position page's experiment (and its lesson's): the permutation experiment without and with sinusoidal
    positions, each drawn by :func:`permutation_maps`, and the page's sentence on why (``explain``)."""
    n = X.shape[0]
    for with_pe in (False, True):
        pe = core.positional.sinusoidal(n, d).numpy() if with_pe else None
        c = compute.permutation_check(X, perm, W["W_q"], W["W_k"], W["W_v"], positions=pe)
        st.markdown(f"**{t('ps.with_pe' if with_pe else 'ps.without_pe')}**")
        equal = core.lab.within_rounding(c["max_diff"])
        why = ("ps.explain.pe.same" if equal else "ps.explain.pe") if with_pe else "ps.explain.set"
        box = st.info if with_pe and equal else (st.success if equal != with_pe else st.warning)  # info: nothing moved
        permutation_maps(c, permuted, dec, keys=(state.item(keys[0], with_pe), state.item(keys[1], with_pe)), box=box,
                         why=t(why) if explain else "", narrow=narrow)


# ------------------------------------------------------------------ the KV cache, step by step
def kv_new_row(r: dict, step: int, labels: list[str], dec: int, *, key: str) -> None:
    """Token t's query over the cache (``compute.decode``'s rows): one row per head, t + 1 columns (``step`` = t + 1
    tokens fed in)."""
    w = r["rows"][step - 1]  # (H, t + 1)
    st.markdown(t("kv.row.title", tok=labels[step - 1], t=step - 1, k=step))
    show_heatmap(heatmap(w, x_labels=labels[:step], y_labels=[f"h{h}" for h in range(w.shape[0])],
                         x_title=t("kv.axis.cached"), y_title=t("kv.axis.head"), sequential=True, decimals=dec), key=key)
    st.caption(t("kv.row.caption", h=w.shape[0], k=step))


def kv_cache_maps(r: dict, step: int, labels: list[str], dec: int, *, keys: tuple[str, str],
                  stacked: bool = False) -> None:
    """The cache after step t: t + 1 keys and as many values, G · d_head wide (side by side, or one under the other
    where ``stacked``)."""
    width = r["keys"].shape[1]
    cols = (st.container(), st.container()) if stacked else st.columns(2)
    for col, (name, key) in zip(cols, (("keys", keys[0]), ("values", keys[1])), strict=True):
        with col:
            st.markdown(f"**{t('kv.cache.' + name, t=step - 1)}**")
            show_heatmap(heatmap(r[name][:step], x_labels=dim_labels(width, "k" if name == "keys" else "v"),
                                 y_labels=labels[:step], x_title=t("axis.dim"), y_title=t("kv.axis.cached"),
                                 decimals=dec), key=key)
    shape_badge(t("kv.cache.shape", k=step, g=r["G"], dh=r["d_head"]))


# ------------------------------------------------------------------ latent attention's cache
def mla_latent_maps(r: dict, labels: list[str], dec: int, *, keys: tuple[str, str], cols=None) -> None:
    """What MLA caches (``compute.mla``): c_KV (n × d_c) and k_R (n × d_R), in ``cols`` (two columns by default)."""
    cols = cols or st.columns(2)
    for col, (name, key, title, prefix) in zip(cols, (("c_kv", keys[0], "mla.latent", "c"),
                                                      ("k_rope", keys[1], "mla.rope_key", "r")), strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            z = r[name]
            show_heatmap(heatmap(z, x_labels=dim_labels(z.shape[1], prefix), y_labels=labels, x_title=t("axis.dim"),
                                 y_title=t("mla.axis.token"), decimals=dec), key=key)
    shape_badge(t("mla.cache.shape", n=len(labels), dc=r["c_kv"].shape[1], dr=r["k_rope"].shape[1]))


# ------------------------------------------------------------------ the delta rule's state
def delta_state(r: dict, rule: str, step: int, labels: list[str], dec: int, *, keys: tuple[str, str],
                stacked: bool = False) -> None:
    """Token t's write and read (``compute.delta_rule``'s run of one rule): the state S_t (d_k × d_v) beside k_t,
    v_t, what S predicted for k_t, what was written, q_t and what it retrieves."""
    i, d = step - 1, r["states"].shape[1]
    cols = (st.container(), st.container()) if stacked else st.columns(2)
    with cols[0]:
        st.markdown(f"**{t('dr.state', t=i)}**")
        show_heatmap(heatmap(r["states"][i], x_labels=dim_labels(d, "v"), y_labels=dim_labels(d, "k"),
                             x_title=t("dr.axis.v"), y_title=t("dr.axis.k"), decimals=dec), key=keys[0])
        shape_badge(t("dr.state.shape", d=d))
    names = ["k", "v", "pred", "write", "q", "out"] if rule != "linear" else ["k", "v", "write", "q", "out"]
    source = {"k": r["k"], "v": r["v"], "pred": r["pred"], "write": r["write"], "q": r["q"], "out": r["output"]}
    with cols[1]:
        st.markdown(f"**{t('dr.write.title', t=i)}**")
        show_heatmap(heatmap(np.stack([source[k][i] for k in names]), x_labels=dim_labels(d, "d"),
                             y_labels=[t("dr.vec." + k, t=i) for k in names], x_title=t("axis.dim"),
                             y_title=t("dr.axis.vector"), decimals=dec), key=keys[1])
    st.markdown(t("dr.read.now", t=i, scale=f"{r['scale']:g}"))


# ------------------------------------------------------------------ what a 2026 model keeps (issue 55)
KEPT_ANCHOR = "kept-2026"  # the chart's stable link: the KV-sharing page's section, #kept-2026
KEPT_SYMBOLS = ("circle", "square", "diamond", "cross", "x", "triangle-up", "star", "hexagon")
KEPT_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "solid", "dash", "dot")


def kept_figure(r: dict):
    """One line per model: GiB kept for one sequence against the context length, both axes log."""
    data = [{"type": "scatter", "mode": "lines+markers", "x": r["contexts"], "y": row["gib"],
             "name": f"{row['name']} · {t('kept.mech.' + row['mechanism'])}",
             "line": {"color": colours.OKABE_ITO[i], "dash": KEPT_DASHES[i]},
             "marker": {"symbol": KEPT_SYMBOLS[i], "size": 7}} for i, row in enumerate(r["rows"])]
    return line_figure(data, {"xaxis": {"title": {"text": t("kept.x")}, "type": "log", "dtick": 1},
                              "yaxis": {"title": {"text": t("kept.y")}, "type": "log", "dtick": 1},
                              "legend": {"orientation": "h", "y": -0.3}}, height=460)


def kept_chart(r: dict, *, key: str, dtype: str) -> None:
    """The chart every page links to (issue 55): what eight models keep per sequence, from core.kept over the
    registry; under it the 1M-token cost of each as text and a table naming every source. ``r``: compute.kept_curves."""
    million = f"{r['million']:,}"
    lines = [t("kept.at_million", name=row["name"], gib=f"{row['million_gib']:,.2f}", values=f"{row['million']:,}")
             + (" " + t("kept.flat") if row["flat"] else "")
             + (" " + t("kept.past", context=f"{row['context']:,}") if row["past"] else "") for row in r["rows"]]
    alt = t("kept.alt", n=len(r["rows"]), lo=f"{r['contexts'][0]:,}", hi=f"{r['contexts'][-1]:,}",
            million=million, list="; ".join(f"{row['name']} {row['million_gib']:,.2f} GiB" for row in r["rows"]))
    show_chart(kept_figure(r), key=key, title=t("kept.chart.title", dtype=dtype), alt=alt)
    st.markdown(t("kept.million", million=million, dtype=dtype) + "\n\n" + "\n".join(f"- {x}" for x in lines))
    st.markdown(t("kept.v4", csa=f"{r['csa']:g}", hca=f"{r['hca']:g}", mla=f"{r['mla']:g}", w=r["window"]))
    table = [{t("kvs.col.model"): row["name"], t("kept.col.mech"): t("kept.mech." + row["mechanism"]),
              t("kept.col.million"): f"{row['million_gib']:,.2f}",
              t("kept.col.context"): f"{row['context']:,}" if row["context"] else "—",
              t("kept.col.source"): row["source"]} for row in r["rows"]]
    st.dataframe(pd.DataFrame(table), hide_index=True, width="stretch", key=state.item(key, "table"))
    st.caption(t("kept.caption"))


def kept_link() -> None:
    """A link to the chart (its page's section, #kept-2026) that keeps the learner's settings (language, …)."""
    url = nav.PAGE_BY_NAME["kv_sharing"].url
    st.markdown(t("kept.link", url=f"{url}?{urlencode(settings.query())}#{KEPT_ANCHOR}"))
