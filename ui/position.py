"""Position page (C23, C24, C37): self-attention sees a set — the permutation experiment —
and positional encodings that make order visible."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core

from . import compute, settings, shared
from .i18n import t
from .render import dim_labels, heatmap, shape_badge, show_heatmap
from .text import md, shorts

DIMS = (2, 4, 6, 8, 12, 16)


@st.cache_data(max_entries=64, show_spinner=False)
def _check(X: np.ndarray, perm: tuple[int, ...], W_q, W_k, W_v, pe: np.ndarray | None):
    c = core.lab.permutation_check(X, perm, W_q=W_q, W_k=W_k, W_v=W_v, positions=pe)
    return {"sa_x": c.sa_x.numpy(), "sa_px": c.sa_px.numpy(), "p_sa_x": c.p_sa_x.numpy(), "max_diff": c.max_diff}


def _parse_perm(text: str, n: int) -> tuple[int, ...] | None:
    try:
        perm = tuple(int(v) for v in text.replace(",", " ").split())
    except ValueError:
        return None
    return perm if sorted(perm) == list(range(n)) else None


def _shuffle() -> None:
    n = st.session_state.get("ps._n", 1)
    st.session_state["ps.shuffles"] = st.session_state.get("ps.shuffles", 0) + 1
    g = np.random.default_rng([int(settings.get("seed")), st.session_state["ps.shuffles"]])  # seeded, reproducible
    st.session_state["ps.perm"] = " ".join(str(i) for i in g.permutation(n))


def render() -> None:
    problems: list = []
    shared.start(problems)
    dec = settings.get("precision")
    seed = int(settings.get("seed"))
    st.markdown(t("ps.intro"))
    tokens = shared.numbers_panel(problems, tokens_only=True, help_text=t("ps.numbers.help"))
    n = len(tokens)
    st.session_state["ps._n"] = n
    c1, c2 = st.columns([1, 2])
    with c1:
        st.session_state.setdefault("ps.d", 8)
        st.select_slider(t("ps.d"), options=DIMS, key="ps.d")
    d = int(st.session_state["ps.d"])
    X = compute.embedding("random", tuple(tokens), d, seed)[0]
    W = {w: compute.projection(d, d, seed, f"ps.{w}") for w in ("W_q", "W_k", "W_v")}
    labels = shorts(shared.token_labels(tokens))

    st.subheader(t("ps.perm.title"))
    default = " ".join(str(i) for i in reversed(range(n)))
    if st.session_state.get("ps._perm_n") not in (None, n):  # the tokens changed: start from the reverse order
        st.session_state["ps.perm"] = default
    st.session_state["ps._perm_n"] = n
    st.session_state.setdefault("ps.perm", default)
    perm = _parse_perm(st.session_state["ps.perm"], n)
    if perm is None:
        problems.append(("error", t("ps.perm.bad", n=n - 1)))
        perm = _parse_perm(default, n)
    with c2:
        p1, p2 = st.columns([3, 1])
        with p1:
            st.text_input(t("ps.perm"), key="ps.perm", help=t("ps.perm.help", n=n - 1))
        with p2:
            st.button(t("ps.shuffle"), on_click=_shuffle, key="ps.shuffle")
    shared.show_problems(problems)
    permuted = [labels[i] for i in perm]
    st.markdown(t("ps.perm.now", order=" · ".join(md(s) for s in permuted)))

    dl = dim_labels(d, "v")
    for with_pe in (False, True):
        pe = core.positional.sinusoidal(n, d).numpy() if with_pe else None
        c = _check(X, perm, W["W_q"], W["W_k"], W["W_v"], pe)
        st.markdown(f"**{t('ps.with_pe' if with_pe else 'ps.without_pe')}**")
        a, b = st.columns(2)
        with a:
            st.caption("SA(PX)")
            show_heatmap(heatmap(c["sa_px"], x_labels=dl, y_labels=permuted, x_title=t("axis.dim"),
                                 y_title=t("axis.query"), decimals=dec), key=f"ps.sa_px.{with_pe}")
        with b:
            st.caption("P · SA(X)")
            show_heatmap(heatmap(c["p_sa_x"], x_labels=dl, y_labels=permuted, x_title=t("axis.dim"),
                                 y_title=t("axis.query"), decimals=dec), key=f"ps.p_sa_x.{with_pe}")
        equal = c["max_diff"] < 1e-5
        (st.success if equal != with_pe else st.warning)(
            t("ps.diff", gap=f"{c['max_diff']:.3g}") + " — " + t("ps.equal" if equal else "ps.differ") + ". "
            + t("ps.explain.pe" if with_pe else "ps.explain.set"))

    _encodings(n, d, labels, dec, seed)
    _same_token(tokens, d, dec, seed)


def _encodings(n, d, labels, dec, seed) -> None:
    st.subheader(t("ps.enc"))
    st.latex(r"PE_{pos,\,2i} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\qquad "
             r"PE_{pos,\,2i+1} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)")
    m = max(n, 16)
    pos = [str(p) for p in range(m)]
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('ps.sin')}**")
        show_heatmap(heatmap(core.positional.sinusoidal(m, d).numpy(), x_labels=dim_labels(d), y_labels=pos,
                             x_title=t("axis.dim"), y_title=t("ps.position"), decimals=min(dec, 2)), key="ps.sin")
    with c2:
        st.markdown(f"**{t('ps.learned')}**")
        show_heatmap(heatmap(core.positional.learned(m, d, seed=seed).numpy(), x_labels=dim_labels(d), y_labels=pos,
                             x_title=t("axis.dim"), y_title=t("ps.position"), decimals=min(dec, 2)), key="ps.learned")
    st.markdown(t("ps.add_concat"))
    shape_badge(f"add: X ({n}×{d}) + PE ({n}×{d}) → ({n}×{d})")
    shape_badge(f"concatenate: [X ({n}×{d}) | PE ({n}×{d})] → ({n}×{2 * d})")


def _same_token(tokens, d, dec, seed) -> None:
    st.subheader(t("ps.same"))
    seen: dict[str, int] = {}
    pair = None
    for i, tok in enumerate(tokens):
        if tok in seen:
            pair = (seen[tok], i)
            break
        seen[tok] = i
    if pair is None:
        tokens = ["the", "cat", "saw", "the", "dog"]
        pair = (0, 3)
        st.caption(t("ps.same.example"))
    X = compute.embedding("random", tuple(tokens), d, seed)[0]
    Xp = core.positional.add(core.tokens.embed(tokens, d, seed=seed), core.positional.sinusoidal(len(tokens), d)).numpy()
    i, j = pair
    rows = [f"{i} {tokens[i]}", f"{j} {tokens[j]}"]
    c1, c2 = st.columns(2)
    with c1:
        st.markdown(f"**{t('ps.same.x')}**")
        show_heatmap(heatmap(X[[i, j]], x_labels=dim_labels(d), y_labels=rows, x_title=t("axis.dim"),
                             y_title=t("ps.position"), decimals=dec), key="ps.same.x")
        st.caption(t("ps.diff", gap=f"{core.max_abs_diff(X[i], X[j]):.3g}"))
    with c2:
        st.markdown(f"**{t('ps.same.xp')}**")
        show_heatmap(heatmap(Xp[[i, j]], x_labels=dim_labels(d), y_labels=rows, x_title=t("axis.dim"),
                             y_title=t("ps.position"), decimals=dec), key="ps.same.xp")
        st.caption(t("ps.diff", gap=f"{core.max_abs_diff(Xp[i], Xp[j]):.3g}"))
