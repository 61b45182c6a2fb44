"""Order and position: self-attention sees a set — shuffle the tokens and the output only
shuffles — and positional encodings that make order visible."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core
from attention_lab.labels import parse_perm
from ui import compute, link, page, settings, state
from ui import scenario_state as ss
from ui.concept_panels import PS_DIMS, permutation_experiment, permutation_inputs
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import md, shorts
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import dim_labels, shape_badge, token_labels

KEYS = state.POSITION


def shuffle() -> None:
    """A new order, seeded by the seed setting and the number of shuffles so far (reproducible)."""
    n = st.session_state.get(KEYS.n, 1)
    st.session_state[KEYS.shuffles] = st.session_state.get(KEYS.shuffles, 0) + 1
    g = np.random.default_rng([int(settings.get("seed")), st.session_state[KEYS.shuffles]])
    st.session_state[KEYS.perm] = " ".join(str(i) for i in g.permutation(n))


def permutation_controls(n: int, problems: list) -> tuple[int, tuple[int, ...]]:
    """The width d, and the order typed or shuffled (the reversed order when the tokens change)."""
    st.session_state[KEYS.n] = n
    c1, c2 = st.columns([1, 2])
    with c1:
        st.session_state.setdefault(KEYS.d, 8)
        st.select_slider(t("ps.d"), options=PS_DIMS, key=KEYS.d)
    default = " ".join(str(i) for i in reversed(range(n)))
    if st.session_state.get(KEYS.perm_n) not in (None, n):
        st.session_state[KEYS.perm] = default
    st.session_state[KEYS.perm_n] = n
    st.session_state.setdefault(KEYS.perm, default)
    perm = parse_perm(st.session_state[KEYS.perm], n)
    if perm is None:
        problems.append(("error", t("ps.perm.bad", n=n - 1)))
        perm = parse_perm(default, n)
    with c2:
        p1, p2 = st.columns([3, 1])
        with p1:
            st.text_input(t("ps.perm"), key=KEYS.perm, help=t("ps.perm.help", n=n - 1))
        with p2:
            st.button(t("ps.shuffle"), on_click=shuffle, key=KEYS.shuffle)
    return int(st.session_state[KEYS.d]), perm


def experiment(X, W: dict, perm, labels, d: int, dec: int) -> None:
    """SA(PX) beside P·SA(X), without and with positional encodings."""
    permuted = [labels[i] for i in perm]
    st.markdown(t("ps.perm.now", order=" · ".join(md(s) for s in permuted)))
    permutation_experiment(X, W, perm, permuted, d, dec, keys=(KEYS.sa_px, KEYS.p_sa_x))


def encodings(n: int, d: int, dec: int, seed: int) -> None:
    st.subheader(t("ps.enc"))
    st.latex(r"PE_{pos,\,2i} = \sin\!\left(\frac{pos}{10000^{2i/d}}\right),\qquad "
             r"PE_{pos,\,2i+1} = \cos\!\left(\frac{pos}{10000^{2i/d}}\right)")
    m = max(n, 16)
    tables = ((KEYS.sin, "ps.sin", core.positional.sinusoidal(m, d)), (KEYS.learned, "ps.learned",
                                                                     core.positional.learned(m, d, seed=seed)))
    for col, (key, title, table) in zip(st.columns(2), tables, strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            show_heatmap(heatmap(table.numpy(), x_labels=dim_labels(d), y_labels=[str(p) for p in range(m)],
                                 x_title=t("axis.dim"), y_title=t("ps.position"), decimals=min(dec, 2)), key=key)
    st.markdown(t("ps.add_concat"))
    shape_badge(t("ps.add.shape", n=n, d=d))
    shape_badge(t("ps.concat.shape", n=n, d=d, d2=2 * d))


def same_token(tokens, d: int, dec: int, seed: int) -> None:
    """The same token at two positions: identical rows of X, different rows of X + PE."""
    st.subheader(t("ps.same"))
    pair = next(((tokens.index(tok), i) for i, tok in enumerate(tokens) if tokens.index(tok) != i), None)
    if pair is None:
        tokens, pair = ["the", "cat", "saw", "the", "dog"], (0, 3)
        st.caption(t("ps.same.example"))
    X = compute.embedding("random", tuple(tokens), d, seed)[0]  # (n, d): the experiment's X for these tokens
    Xp = compute.added_positions(X, "sinusoidal", seed)  # (n, d): X + PE
    i, j = pair
    rows = [f"{i} {tokens[i]}", f"{j} {tokens[j]}"]
    for col, (key, title, M) in zip(st.columns(2), ((KEYS.same_x, "ps.same.x", X), (KEYS.same_xp, "ps.same.xp", Xp)),
                                    strict=True):
        with col:
            st.markdown(f"**{t(title)}**")
            show_heatmap(heatmap(M[[i, j]], x_labels=dim_labels(d), y_labels=rows, x_title=t("axis.dim"),
                                 y_title=t("ps.position"), decimals=dec), key=key)
            st.caption(t("ps.diff", gap=core.lab.gap_text(core.max_abs_diff(M[i], M[j]))))


# the page's own controls (the rest: the scenario); the order is parsed again where it is used
KEPT = (link.Kept(KEYS.d, "ps_d", link.one_of(PS_DIMS), 8), link.Kept(KEYS.perm, "perm", link.text(4000), None))


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    link.keep("position", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("ps.intro"))
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("ps.numbers.help"))
    st.subheader(t("ps.perm.title"))
    d, perm = permutation_controls(len(tokens), problems)
    page.show_problems(problems)
    X, W = permutation_inputs(tokens, d)
    experiment(X, W, perm, shorts(token_labels(tokens)), d, dec)
    encodings(len(tokens), d, dec, seed)
    same_token(tokens, d, dec, seed)


main()
