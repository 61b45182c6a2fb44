"""Where positions go: added to X (sinusoidal, learned), rotated into q and k (RoPE), or added
to the scores as a bias (ALiBi) — and the permutation experiment run with each."""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui.concept_panels import permutation_inputs, permutation_maps
from ui.i18n import labeller, t
from ui.inputs import numbers_panel
from ui.text import md, shorts
from ui.widgets.heatmap import fits_one_element, heatmap, show_heatmap, show_maps
from ui.widgets.layout import dim_labels, token_labels
from ui.widgets.rope import rope_views

KEYS = state.LLM_POSITIONS
KINDS = ("sinusoidal", "learned", "rope", "alibi")
D = 8  # the width of the page's embeddings and heads
ALIBI_HEADS = (1, 2, 4, 8)
BASE_MAX = 1e9
MAX_DRAWN_TOKENS = 32  # tokens this page draws (each position's map and vectors)
ALIBI_SLOPE = 0.5  # the experiment's one head's slope m


def kind_control(problems: page.Problems) -> str:
    if st.session_state.setdefault(KEYS.kind, "rope") not in KINDS:
        problems.append(("error", t("lp.kind.bad")))
        st.session_state[KEYS.kind] = "rope"
    st.radio(t("lp.kind"), KINDS, key=KEYS.kind, horizontal=True, format_func=labeller("lp.kind."))
    return st.session_state[KEYS.kind]


def rope_controls(problems: page.Problems) -> tuple[float, str, int]:
    """The base b (> 0, finite), the pairing, and which 2-D pair to draw."""
    base = st.session_state.setdefault(KEYS.base, 10000.0)
    if isinstance(base, bool) or not isinstance(base, (int, float)) or not math.isfinite(base) or not 0 < base <= BASE_MAX:
        problems.append(("error", t("lp.base.bad", value=str(base)[:40], max=f"{BASE_MAX:.0e}")))
        st.session_state[KEYS.base] = base = 10000.0
    if st.session_state.setdefault(KEYS.pairing, "adjacent") not in ("adjacent", "half"):
        st.session_state[KEYS.pairing] = "adjacent"
    if st.session_state.setdefault(KEYS.pair_dim, 0) not in range(D // 2):
        st.session_state[KEYS.pair_dim] = 0
    c1, c2, c3 = st.columns(3)
    with c1:
        st.number_input(t("lp.base"), min_value=0.0, max_value=BASE_MAX, key=KEYS.base, format="%.6g",
                        help=t("lp.base.help", l2="Llama 2", l3="Llama 3"))
    with c2:
        st.selectbox(t("lp.pairing"), ("adjacent", "half"), key=KEYS.pairing, format_func=labeller("lp.pairing."))
    with c3:
        st.selectbox(t("lp.pair"), tuple(range(D // 2)), key=KEYS.pair_dim, help=t("lp.pair.help"))
    return float(base), st.session_state[KEYS.pairing], int(st.session_state[KEYS.pair_dim])


def alibi_panel(r: dict, dec: int) -> None:
    """The bias −m_h (i − j) of every head as maps, with the slopes."""
    st.latex(r"\mathrm{logits}_{ij} = \frac{q_i^\top k_j}{\sqrt{d}} - m_h\,(i - j),\qquad j \le i")
    H = st.select_slider(t("lp.alibi.heads"), options=ALIBI_HEADS, key=KEYS.alibi_heads)
    bias, slopes = r["bias"], r["slopes"]
    labels = [str(i) for i in range(bias.shape[-1])]
    specs = [heatmap(np.where(np.isneginf(bias[h]), 0, bias[h]), x_labels=labels, y_labels=labels,
                     x_title=t("axis.key"), y_title=t("axis.query"), neg_inf=np.isneginf(bias[h]), decimals=dec,
                     compact=True) for h in range(H)]
    panels = [{"key": state.item(KEYS.alibi, h), "title": t("lp.alibi.head", h=h, m=f"{slopes[h]:.4g}"), "mathml": "",
               "shape": "", "map": s, "before": [], "after": [], "warning": None} for h, s in enumerate(specs)]
    if fits_one_element(specs):
        show_maps(panels, key=KEYS.alibi, per_row=min(2, H))
    else:
        for p in panels:
            show_heatmap(p["map"], key=p["key"])
    st.caption(t("lp.alibi.caption", slopes=", ".join(f"{m:.4g}" for m in slopes)))


def added_panel(table: np.ndarray, kind: str, dec: int) -> None:
    st.latex(r"\tilde x_i = x_i + p_i")
    show_heatmap(heatmap(table, x_labels=dim_labels(table.shape[1]), y_labels=[str(i) for i in range(table.shape[0])],
                         x_title=t("axis.dim"), y_title=t("ps.position"), decimals=min(dec, 2)), key=KEYS.rotation)
    st.caption(t("lp.added." + kind))


def experiment(c: dict, base_gap: float, perm: tuple[int, ...], labels: list[str], kind: str, dec: int) -> None:
    """SA(PX) beside P·SA(X) with the chosen positions (and the gap without any, for comparison)."""
    st.subheader(t("lp.perm.title", kind=t("lp.kind." + kind)))
    st.caption(t("lp.perm.none", gap=gap_text(base_gap)))
    st.markdown(t("ps.perm.now", order=" · ".join(md(labels[i]) for i in perm)))
    box = st.success if within_rounding(c["max_diff"]) else st.warning
    permutation_maps(c, [labels[i] for i in perm], dec, keys=(KEYS.sa_px, KEYS.p_sa_x), box=box,
                     why=t("lp.perm." + kind))


# the page's own controls (the tokens: the scenario's); each is checked again before it is drawn
KEPT = (link.Kept(KEYS.kind, "pos", link.one_of(KINDS), "rope"),
        link.Kept(KEYS.base, "base", link.number(1e-9, BASE_MAX), 10000.0),
        link.Kept(KEYS.pairing, "pairing", link.one_of(("adjacent", "half")), "adjacent"),
        link.Kept(KEYS.pair_dim, "pair", link.whole(0, D // 2 - 1), 0),
        link.Kept(KEYS.alibi_heads, "alibi_h", link.one_of(ALIBI_HEADS), 4))


def main() -> None:
    problems: page.Problems = []
    link.keep("llm_positions", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("lp.intro"))
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("ps.numbers.help"), max_tokens=MAX_DRAWN_TOKENS)
    kind = kind_control(problems)
    base, pairing, pair = rope_controls(problems) if kind == "rope" else (10000.0, "adjacent", 0)
    st.session_state.setdefault(KEYS.alibi_heads, 4)
    if st.session_state[KEYS.alibi_heads] not in ALIBI_HEADS:
        st.session_state[KEYS.alibi_heads] = 4
    perm = (*range(1, len(tokens)), 0)  # the first token moved to the end (a reversal would leave |i − j| unchanged)
    X, W = permutation_inputs(tokens, D)  # the position page's numbers: the same X and W for the same tokens
    how = {"rope": {"rope_base": base}, "alibi": {"alibi_slope": ALIBI_SLOPE}}.get(kind, {})
    if kind in ("sinusoidal", "learned"):
        how = {"positions": compute.position_table(kind, len(tokens), D, seed).numpy()}
    c = page.guarded(problems, lambda: compute.permutation_check(X, perm, W["W_q"], W["W_k"], W["W_v"], **how))
    none = page.guarded(problems, lambda: compute.permutation_check(X, perm, W["W_q"], W["W_k"], W["W_v"]))
    panel = page.guarded(problems, lambda: compute.position_panel(kind, len(tokens), D, seed, base, pairing, pair,
                                                                  int(st.session_state[KEYS.alibi_heads])))
    page.show_problems(problems)
    if panel is not None:
        if kind == "rope":
            rope_views(panel, pair, rotation_key=KEYS.rotation, distance_key=KEYS.distance)
        elif kind == "alibi":
            alibi_panel(panel, dec)
        else:
            added_panel(panel["table"], kind, dec)
    if c is not None and none is not None:
        experiment(c, none["max_diff"], perm, shorts(token_labels(tokens)), kind, dec)


main()
