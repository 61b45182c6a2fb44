"""RoPE drawn: one 2-D pair of a query turning as its position grows, and the score q·k after RoPE against the
relative distance from two starts, with the checks that a rotation keeps lengths and that the two pairings are
one rotation. One renderer for the positions page and the RoPE lesson (``ui.compute.position_panel`` computes
what it draws)."""

from __future__ import annotations

import streamlit as st

from core import tolerances

from ..i18n import t
from ..page import check_box
from .figures import line_figure, show_chart


def rope_views(r: dict, pair: int, *, rotation_key: str, distance_key: str, stacked: bool = False) -> None:
    """The turning pair and the score against the distance: side by side, or one under the other (``stacked``,
    for a narrow column)."""
    st.latex(r"\begin{pmatrix} q'_a \\ q'_b \end{pmatrix} = \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ "
             r"\sin m\theta_i & \cos m\theta_i \end{pmatrix} \begin{pmatrix} q_a \\ q_b \end{pmatrix},\quad "
             r"\theta_i = b^{-2i/d}")
    c1, c2 = (st.container(), st.container()) if stacked else st.columns(2)
    track = r["track"]  # (positions, 2)
    with c1:
        lines = [{"type": "scatter", "mode": "lines", "x": [0, float(a)], "y": [0, float(b)], "showlegend": False,
                  "line": {"width": 1, "color": "#94a3b8"}} for a, b in track]
        pts = {"type": "scatter", "mode": "markers+text", "x": track[:, 0].tolist(), "y": track[:, 1].tolist(),
               "text": [str(m) for m in range(len(track))], "textposition": "top center", "name": t("lp.track.pos")}
        fig = line_figure([*lines, pts], {"xaxis": {"title": {"text": f"q_{r['dims'][0]}"}, "zeroline": True},
                                          "yaxis": {"title": {"text": f"q_{r['dims'][1]}"}, "scaleanchor": "x"}})
        show_chart(fig, key=rotation_key, title=t("lp.track.title", i=pair, theta=f"{r['theta']:.4g}"))
        st.caption(t("lp.track.caption", i=pair, a=r["dims"][0], b=r["dims"][1], theta=f"{r['theta']:.4g}",
                     norm=f"{r['norm_gap']:.2g}"))
    with c2:
        x = r["offsets"].tolist()
        fig = line_figure([{"type": "scatter", "mode": "lines+markers", "x": x, "y": r["scores"][s].tolist(),
                            "name": t("lp.dist.start", s=s)} for s in r["scores"]],
                          {"xaxis": {"title": {"text": t("lp.dist.x")}}, "yaxis": {"title": {"text": t("lp.dist.y")}}})
        show_chart(fig, key=distance_key, title=t("lp.dist.title"))
        check_box(r["shift_gap"] < tolerances.LOOSE_EQUAL, t("lp.dist.check", gap=f"{r['shift_gap']:.2g}"))
    check_box(r["pairing_gap"] < tolerances.EQUAL, t("lp.pairing.check", gap=f"{r['pairing_gap']:.2g}"))
    st.caption(t("lp.random"))
