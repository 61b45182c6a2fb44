"""Writing one token at a time: causal attention computed row by row with a growing KV cache,
the new query's row, the cache, the full matrix it equals, and the work per step."""

from __future__ import annotations

import streamlit as st

from core.playground.lab import gap_text, within_rounding
from ui import compute, link, page, settings, state
from ui.concept_panels import kv_cache_maps, kv_new_row
from ui.i18n import t
from ui.inputs import numbers_panel
from ui.text import shorts
from ui.widgets.figures import line_figure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import token_labels
from ui.widgets.steps import stepper

KEYS = state.KV_CACHE
D_MODELS = (8, 16)
HEADS = (1, 2, 4)
MAX_DECODED_TOKENS = 32  # the page decodes at most this many tokens (every step is drawn)


def divisors(h: int) -> list[int]:
    return [g for g in range(1, h + 1) if h % g == 0]


def shape_controls(problems: page.Problems) -> tuple[int, int, int, float | None]:
    """d_model, H, G (a divisor of H) and the RoPE base (None: no positions)."""
    c1, c2, c3, c4 = st.columns(4)
    with c1:
        st.session_state.setdefault(KEYS.d_model, 8)
        st.select_slider(t("kv.d_model"), options=D_MODELS, key=KEYS.d_model)
    with c2:
        st.session_state.setdefault(KEYS.heads, 2)
        st.select_slider(t("kv.heads"), options=HEADS, key=KEYS.heads)
    H = int(st.session_state[KEYS.heads]) if st.session_state[KEYS.heads] in HEADS else 2
    with c3:
        G = kv_heads_control(KEYS.kv_heads, H, problems)
    with c4:
        st.session_state.setdefault(KEYS.rope, False)
        st.toggle(t("kv.rope"), key=KEYS.rope, help=t("kv.rope.help"))
    d = int(st.session_state[KEYS.d_model]) if st.session_state[KEYS.d_model] in D_MODELS else 8
    return d, H, G, 10000.0 if st.session_state[KEYS.rope] else None


def kv_heads_control(key: str, H: int, problems: page.Problems) -> int:
    """G among the divisors of H; a value that does not divide H (a tampered state) is named and replaced."""
    options = divisors(H)
    current = st.session_state.get(key, options[-1])
    if current not in options:
        problems.append(("error", t("kv.g.bad", g=current, h=H, options=", ".join(map(str, options)))))
        current = options[-1]
    st.session_state[key] = current
    st.selectbox(t("kv.kv_heads"), options, key=key, help=t("kv.kv_heads.help"))
    return int(current)


def step_controls(n: int, problems: page.Problems) -> int:
    """◀ / ▶ (or the ← → keys) move the decoding step; returns how many tokens are fed in (1 … n), so the
    step shown is t = that − 1 (tokens and steps are counted from 0 everywhere in the app)."""
    return stepper(n, problems, step_key=KEYS.step, prev_key=KEYS.step_prev, next_key=KEYS.step_next,
                   keys_key=KEYS.arrow_keys, bad=t("kv.step.bad", last=n - 1),
                   now=lambda step: t("kv.step.now", t=step - 1, last=n - 1))


def full_matrix(r: dict, step: int, labels: list[str], dec: int) -> None:
    """Head 0's full causal matrix with row t outlined, and the check that they are the same numbers."""
    st.markdown(f"**{t('kv.full.title')}**")
    show_heatmap(heatmap(r["full_weights"][0], x_labels=labels, y_labels=labels, x_title=t("axis.key"),
                         y_title=t("axis.query"), sequential=True, decimals=dec, highlight_row=step - 1), key=KEYS.full)
    gap = r["gaps"][step - 1]
    out = r["out_gaps"][step - 1]
    same = within_rounding(max(gap, out))
    page.check_box(same, t("kv.full.check" if same else "kv.full.differ", t=step - 1, gap=gap_text(gap), out=gap_text(out)))


def cost(r: dict, step: int) -> None:
    """Multiply-adds of step t with the cache and without it, what a cached step is made of, and the running totals."""
    st.subheader(t("kv.cost.title"))
    st.markdown(t("kv.cost.now", t=step - 1, cached=f"{r['madds_cached'][step - 1]:,}",
                  full=f"{r['madds_recompute'][step - 1]:,}"))
    shown = min(4, len(r["madds_cached"]))
    st.markdown(t("kv.cost.per_step", fixed=f"{r['macs_fixed']:,}", per_key=f"{r['macs_per_key']:,}",
                  first=f"0 … {shown - 1}" if shown > 1 else "0",
                  cached=", ".join(f"{c:,}" for c in r["madds_cached"][:shown]),
                  recompute=", ".join(f"{c:,}" for c in r["madds_recompute"][:shown])))
    x = list(range(1, len(r["madds_cached"]) + 1))
    fig = line_figure([{"type": "scatter", "mode": "lines+markers", "x": x, "y": r["cum_cached"], "name": t("kv.cost.cached")},
                       {"type": "scatter", "mode": "lines+markers", "x": x, "y": r["cum_recompute"],
                        "name": t("kv.cost.recompute")}],
                      {"xaxis": {"title": {"text": t("kv.cost.x")}}, "yaxis": {"title": {"text": t("kv.cost.y")}}})
    show_chart(fig, key=KEYS.cost, title=t("kv.cost.title"))
    st.caption(t("kv.cost.caption", total_c=f"{r['cum_cached'][-1]:,}", total_f=f"{r['cum_recompute'][-1]:,}"))


# the page's own controls and the step shown (the tokens: the scenario's); checked again before they are drawn
KEPT = (link.Kept(KEYS.d_model, "kv_d", link.one_of(D_MODELS), 8),
        link.Kept(KEYS.heads, "kv_h", link.one_of(HEADS), 2),
        link.Kept(KEYS.kv_heads, "kv_g", link.whole(1, max(HEADS)), None),
        link.Kept(KEYS.rope, "kv_rope", link.flag, False, link.show_flag),
        link.Kept(KEYS.step, "kv_step", link.whole(1, MAX_DECODED_TOKENS), 1))  # not "step": the Playground's view


def main() -> None:
    problems: page.Problems = []
    link.keep("kv_cache", KEPT, problems)
    dec, seed = settings.get("precision"), int(settings.get("seed"))
    st.markdown(t("kv.intro"))
    st.latex(r"\alpha_t = \mathrm{softmax}\!\Big(\frac{q_t\,[k_0 \dots k_t]^\top}{\sqrt{d_{head}}}\Big),\quad "
             r"o_t = \alpha_t\,[v_0 \dots v_t]")
    tokens = numbers_panel(problems, tokens_only=True, help_text=t("kv.numbers.help"), max_tokens=MAX_DECODED_TOKENS,
                           cut_message="kv.too_long")
    d, H, G, rope = shape_controls(problems)
    r = page.guarded(problems, lambda: compute.decode(tuple(tokens), d, H, G, rope, seed), keep=KEYS.last)
    step = step_controls(len(tokens), problems) if r else 1
    page.show_problems(problems)
    if r is None:
        return
    st.caption(t("kv.random"))
    labels = shorts(token_labels(tokens))
    kv_new_row(r, step, labels, dec, key=KEYS.new_row)
    kv_cache_maps(r, step, labels, dec, keys=(KEYS.keys, KEYS.values))
    full_matrix(r, step, labels, dec)
    cost(r, step)


main()
