"""Vision Transformer page (C32): an image cut into patches, patch tokens, and attention over them."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import numpy as np
import streamlit as st
from PIL import Image, UnidentifiedImageError

from core import vit

from . import settings, shared
from .i18n import labeller, t
from .render import PrebuiltFigure, heatmap, shape_badge, show_heatmap

SIZE = 96  # every image is shown at 96 × 96 pixels
IMAGES = Path(__file__).resolve().parent.parent / "assets" / "images"
SAMPLES = ("house", "face", "checkerboard")
MAX_UPLOAD = 1024 * 1024
MAX_PIXELS = 4096 * 4096
CLICKS = "vt.clicks"


def _load(data: bytes) -> np.ndarray:
    """PNG/JPEG bytes → (96, 96, 3) floats in [0, 1]; raises ValueError with an i18n key."""
    if len(data) > MAX_UPLOAD:
        raise ValueError("vt.err.size")
    try:
        with Image.open(io.BytesIO(data)) as probe:
            if probe.format not in ("PNG", "JPEG"):
                raise ValueError("vt.err.format")
            if probe.size[0] * probe.size[1] > MAX_PIXELS:
                raise ValueError("vt.err.pixels")
            probe.verify()
        with Image.open(io.BytesIO(data)) as img:
            img = img.convert("RGB").resize((SIZE, SIZE))
            return np.asarray(img, dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError, SyntaxError, Image.DecompressionBombError):
        raise ValueError("vt.err.broken") from None


def _png_uri(arr: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray((np.clip(arr, 0, 1) * 255).astype(np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


@st.cache_data(max_entries=32, show_spinner=False)
def _trace(img: np.ndarray, P: int, cls: bool, seed: int) -> dict:
    tr = vit.vit_attention(img, P, d_model=16, seed=seed, cls=cls)
    n = tr.patches.shape[0]
    maps = np.stack([tr.attention_map(q).numpy() for q in range(tr.attn.weights.shape[0])])  # (tokens, rows, cols)
    return {"N": n, "dim": tr.patches.shape[1], "grid": tr.grid, "maps": maps, "tokens": tuple(tr.tokens.shape),
            "mean_colour": tr.patches.reshape(n, P * P, 3).mean(dim=1).numpy()}


def _on_upload() -> None:
    f = st.session_state.get("vt.upload")
    if f is None:
        return
    try:
        st.session_state["vt.image"] = _load(f.getvalue())
        st.session_state["vt.source"] = "upload"
        st.session_state.pop("vt.error", None)
    except ValueError as err:
        st.session_state["vt.error"] = str(err)


def render() -> None:
    problems: list = []
    shared.start(problems)
    seed = int(settings.get("seed"))
    dec = min(settings.get("precision"), 3)
    st.markdown(t("vt.intro"))
    for _, cell in st.session_state.pop(CLICKS, []) or []:
        st.session_state["vt.query"] = int(cell[0]) * st.session_state.get("vt._cols", 1) + int(cell[1])
    c1, c2 = st.columns([1, 1])
    with c1:
        st.radio(t("vt.sample"), SAMPLES + ("upload",), key="vt.choice", horizontal=True,
                 format_func=labeller("vt.sample."))
    with c2:
        st.file_uploader(t("vt.upload"), type=["png", "jpg", "jpeg"], key="vt.upload", on_change=_on_upload,
                         help=t("vt.upload.help", kb=MAX_UPLOAD // 1024))
    if st.session_state.get("vt.error"):
        problems.append(("error", t(st.session_state["vt.error"], kb=MAX_UPLOAD // 1024)))
    choice = st.session_state["vt.choice"]
    if choice == "upload" and st.session_state.get("vt.image") is not None:
        img = st.session_state["vt.image"]
    else:
        if choice == "upload":
            problems.append(("info", t("vt.no_upload")))
        name = choice if choice in SAMPLES else SAMPLES[0]
        img = _load((IMAGES / f"{name}.png").read_bytes())
    shared.show_problems(problems)

    sizes = [p for p in vit.patch_sizes(SIZE, SIZE) if p >= 4 and p <= 32]
    if st.session_state.get("vt.P") not in sizes:
        st.session_state["vt.P"] = 16
    a, b = st.columns(2)
    with a:
        st.select_slider(t("vt.P"), options=sizes, key="vt.P", help=t("vt.P.help"))
    with b:
        st.toggle(t("vt.cls"), key="vt.cls", value=st.session_state.get("vt.cls", True), help=t("vt.cls.help"))
    P, cls = int(st.session_state["vt.P"]), bool(st.session_state["vt.cls"])
    tr = _trace(img, P, cls, seed)
    rows, cols = tr["grid"]
    st.session_state["vt._cols"] = cols
    st.latex(r"N = \frac{H}{P}\cdot\frac{W}{P} = " + f"\\frac{{{SIZE}}}{{{P}}}\\cdot\\frac{{{SIZE}}}{{{P}}} = {tr['N']}"
             + r",\qquad P^2 C = " + f"{P}^2 \\cdot 3 = {tr['dim']}")
    shape_badge(f"image ({SIZE}×{SIZE}×3) → patches ({tr['N']}×{tr['dim']}) · W_E ({tr['dim']}×16) → ({tr['N']}×16)"
                + (f" → + [CLS] → {tr['tokens'][0]}×16" if cls else ""))

    q = st.session_state.get("vt.query", -1 if cls else 0)
    if q >= tr["N"] or (q < 0 and not cls):
        q = -1 if cls else 0
    token = q + 1 if cls else q  # the row of the attention matrix
    amap = tr["maps"][token]
    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('vt.image')}**")
        shapes = [{"type": "line", "x0": k * P - 0.5, "x1": k * P - 0.5, "y0": -0.5, "y1": SIZE - 0.5,
                   "line": {"color": "white", "width": 1}} for k in range(1, cols)]
        shapes += [{"type": "line", "y0": k * P - 0.5, "y1": k * P - 0.5, "x0": -0.5, "x1": SIZE - 0.5,
                    "line": {"color": "white", "width": 1}} for k in range(1, rows)]
        if q >= 0:
            r, c = divmod(q, cols)
            shapes.append({"type": "rect", "x0": c * P - 0.5, "x1": (c + 1) * P - 0.5, "y0": r * P - 0.5,
                           "y1": (r + 1) * P - 0.5, "line": {"color": "#dc2626", "width": 3}})
        data = [{"type": "image", "source": _png_uri(img), "hoverinfo": "skip"},
                {"type": "heatmap", "z": np.kron(amap, np.ones((P, P))).round(4).tolist(), "opacity": 0.55,
                 "colorscale": "Inferno", "showscale": False, "hovertemplate": "α = %{z}<extra></extra>"}]
        st.plotly_chart(PrebuiltFigure({"data": data, "layout": {
            "height": 420, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}, "shapes": shapes,
            "xaxis": {"visible": False, "range": [-0.5, SIZE - 0.5]},
            "yaxis": {"visible": False, "range": [SIZE - 0.5, -0.5], "scaleanchor": "x"}}}),
            key="vt.overlay", config={"displayModeBar": False})
        st.caption(t("vt.overlay", who=t("vt.cls_token") if q < 0 else t("vt.patch", p=q)))
    with right:
        st.markdown(f"**{t('vt.grid')}**")
        show_heatmap(heatmap(amap, x_labels=[str(c) for c in range(cols)], y_labels=[str(r) for r in range(rows)],
                             x_title=t("vt.col"), y_title=t("vt.row"), decimals=dec, sequential=True, clickable=True,
                             highlight=None if q < 0 else divmod(q, cols)), key="vt.grid", click_queue=CLICKS)
        if cls and st.button(t("vt.use_cls"), key="vt.use_cls"):
            st.session_state["vt.query"] = -1
            st.rerun()
        st.caption(t("vt.pool" if not cls else "vt.cls.note"))
