"""The Vision Transformer's front end: an image cut into patches, each patch a token, and the
attention over them (click a patch to see where it attends) — by default in a small ViT trained to
tell circles, squares and triangles apart (core.models.vit_trained), or with seeded random weights."""

from __future__ import annotations

import numpy as np
import streamlit as st

from core import vit
from ui import compute, link, page, settings, state
from ui import scenario_state as ss
from ui.i18n import labeller, t
from ui.images import IMAGES, MAX_SIDE, MAX_UPLOAD, SIZE, load, png_uri
from ui.widgets.bars import show_bars, weight_bars
from ui.widgets.figures import PrebuiltFigure, show_chart
from ui.widgets.heatmap import heatmap, show_heatmap
from ui.widgets.layout import file_uploader, shape_badge

KEYS = state.VISION_TRANSFORMER
SAMPLES = ("house", "face", "checkerboard")
MODES = ("trained", "random")  # the weights: the shipped ViT trained on generated shapes, or seeded random
N_SHAPES = 6  # generated sample images offered in trained mode


def _patch(value: str) -> int:
    """A link's patch: −1 (the class token) or a patch number."""
    if value == "-1":
        return -1
    return link.whole(0, 4096)(value)


# What the page keeps in its link (issue 35): the weights, the chosen image and patch size, the class token,
# the layer and the patch looked at. An uploaded image is not kept: the page says so beside the uploader.
KEPT = (
    link.Kept(KEYS.weights, "weights", link.one_of(MODES), MODES[0]),
    link.Kept(KEYS.gen_choice, "shape", link.one_of((*range(N_SHAPES), "upload")), 0),
    link.Kept(KEYS.gen_seed, "images", link.whole(0, 10_000), 0),
    link.Kept(KEYS.choice, "sample", link.one_of((*SAMPLES, "upload")), SAMPLES[0]),
    link.Kept(KEYS.P, "P", link.whole(1, SIZE), 16),
    link.Kept(KEYS.cls, "cls", link.flag, True, link.show_flag),
    link.Kept(KEYS.layer, "vitlayer", link.whole(0, 64), None),
    link.Kept(KEYS.query, "patch", _patch, None),
)


def on_upload() -> None:
    f = st.session_state.get(KEYS.upload)
    if f is None:
        return
    try:
        st.session_state[KEYS.image] = load(f.getvalue())
        st.session_state[KEYS.source] = "upload"
        st.session_state.pop(KEYS.error, None)
    except ValueError as err:
        st.session_state[KEYS.error] = str(err)


def choose_image(problems: list) -> np.ndarray:
    c1, c2 = st.columns([1, 1])
    with c1:
        st.radio(t("vt.sample"), SAMPLES + ("upload",), key=KEYS.choice, horizontal=True, format_func=labeller("vt.sample."))
    with c2:
        file_uploader(t("vt.upload"), types=["png", "jpg", "jpeg"], key=KEYS.upload, limit_kb=MAX_UPLOAD // 1024,
                      on_change=on_upload, help=t("vt.upload.help", kb=MAX_UPLOAD // 1024))
        st.caption(t("vt.upload.not_kept"))
    if st.session_state.get(KEYS.error):
        problems.append(("error", t(st.session_state[KEYS.error], kb=MAX_UPLOAD // 1024, side=MAX_SIDE)))
    choice = st.session_state[KEYS.choice]
    if choice == "upload" and st.session_state.get(KEYS.image) is not None:
        return st.session_state[KEYS.image]
    if choice == "upload":
        problems.append(("info", t("vt.no_upload")))
    return load((IMAGES / f"{choice if choice in SAMPLES else SAMPLES[0]}.png").read_bytes())


def patch_controls() -> tuple[int, bool]:
    sizes = [p for p in vit.patch_sizes(SIZE, SIZE) if 4 <= p <= 32]
    if st.session_state.get(KEYS.P) not in sizes:
        st.session_state[KEYS.P] = 16
    a, b = st.columns(2)
    with a:
        st.select_slider(t("vt.P"), options=sizes, key=KEYS.P, help=t("vt.P.help"))
    with b:
        st.session_state.setdefault(KEYS.cls, True)
        st.toggle(t("vt.cls"), key=KEYS.cls, help=t("vt.cls.help"))
    return int(st.session_state[KEYS.P]), bool(st.session_state[KEYS.cls])


def overlay(img, amap, P: int, grid: tuple[int, int], q: int) -> None:
    """The image with the patch grid, the chosen patch framed, and the attention laid over it."""
    rows, cols = grid
    shapes = [{"type": "line", "x0": k * P - 0.5, "x1": k * P - 0.5, "y0": -0.5, "y1": SIZE - 0.5,
               "line": {"color": "white", "width": 1}} for k in range(1, cols)]
    shapes += [{"type": "line", "y0": k * P - 0.5, "y1": k * P - 0.5, "x0": -0.5, "x1": SIZE - 0.5,
                "line": {"color": "white", "width": 1}} for k in range(1, rows)]
    if q >= 0:
        r, c = divmod(q, cols)
        shapes.append({"type": "rect", "x0": c * P - 0.5, "x1": (c + 1) * P - 0.5, "y0": r * P - 0.5,
                       "y1": (r + 1) * P - 0.5, "line": {"color": "#dc2626", "width": 3}})
    data = [{"type": "image", "source": png_uri(img), "hoverinfo": "skip"},
            {"type": "heatmap", "z": np.kron(amap, np.ones((P, P))).round(4).tolist(), "opacity": 0.55,
             "colorscale": "Inferno", "showscale": False, "hovertemplate": "α = %{z}<extra></extra>"}]
    show_chart(PrebuiltFigure({"data": data, "layout": {
        "height": 420, "margin": {"l": 0, "r": 0, "t": 0, "b": 0}, "shapes": shapes,
        "xaxis": {"visible": False, "range": [-0.5, SIZE - 0.5]},
        "yaxis": {"visible": False, "range": [SIZE - 0.5, -0.5], "scaleanchor": "x"}}}),
        key=KEYS.overlay, title=t("vt.image"))


def chosen_query(n: int, cls: bool, cols: int) -> int:
    """The patch whose attention is shown (clicked on the grid), or −1 for the class token."""
    for _, cell in st.session_state.pop(KEYS.clicks, []) or []:
        st.session_state[KEYS.query] = int(cell[0]) * cols + int(cell[1])
    q = st.session_state.get(KEYS.query, -1 if cls else 0)
    return (-1 if cls else 0) if q >= n or (q < 0 and not cls) else q


def random_view(img, seed: int, dec: int) -> None:
    """Any patch size, a class token or pooling, seeded random weights (the mechanics only)."""
    P, cls = patch_controls()
    tr = compute.vit_attention(img, P, cls, seed)
    rows, cols = tr["grid"]
    st.latex(r"N = \frac{H}{P}\cdot\frac{W}{P} = " + f"\\frac{{{SIZE}}}{{{P}}}\\cdot\\frac{{{SIZE}}}{{{P}}} = {tr['N']}"
             + r",\qquad P^2 C = " + f"{P}^2 \\cdot 3 = {tr['dim']}")
    shape_badge(t("vt.shape", size=SIZE, n=tr["N"], dim=tr["dim"]) + (t("vt.shape.cls", n=tr["tokens"][0]) if cls else ""))
    st.warning(t("vt.random"))
    q = chosen_query(tr["N"], cls, cols)
    amap = tr["maps"][q + 1 if cls else q]  # the row of the attention matrix
    attention_panels(img, amap, P, (rows, cols), q, cls, dec, t("vt.trained.label.random"))


def attention_panels(img, amap, P: int, grid: tuple[int, int], q: int, cls: bool, dec: int, label: str) -> None:
    """The image with the attention laid over it, beside the attention as a clickable patch grid."""
    rows, cols = grid
    left, right = st.columns(2)
    with left:
        st.markdown(f"**{t('vt.image')}**")
        st.caption(label)
        overlay(img, amap, P, (rows, cols), q)
        st.caption(t("vt.overlay", who=t("vt.cls_token") if q < 0 else t("vt.patch", p=q)))
    with right:
        st.markdown(f"**{t('vt.grid')}**")
        st.caption(label)
        show_heatmap(heatmap(amap, x_labels=[str(c) for c in range(cols)], y_labels=[str(r) for r in range(rows)],
                             x_title=t("vt.col"), y_title=t("vt.row"), decimals=dec, sequential=True, clickable=True,
                             highlight=None if q < 0 else divmod(q, cols)), key=KEYS.grid, click_queue=KEYS.clicks)
        if cls and st.button(t("vt.use_cls"), key=KEYS.use_cls):
            st.session_state[KEYS.query] = -1
            st.rerun()
        st.caption(t("vt.pool" if not cls else "vt.cls.note"))


# ------------------------------------------------------------------ the trained ViT (core.models.vit_trained)
def weights_mode() -> str:
    """The trained ViT by default when its checkpoint is there; random weights otherwise or on request."""
    if not compute.vit_trained_ready():
        st.caption(t("vt.trained.missing"))
        return "random"
    st.session_state.setdefault(KEYS.weights, MODES[0])
    st.radio(t("vt.trained.switch"), MODES, key=KEYS.weights, horizontal=True, format_func=labeller("vt.trained.mode."))
    return str(st.session_state[KEYS.weights])


def _new_images() -> None:
    st.session_state[KEYS.gen_seed] = int(st.session_state.get(KEYS.gen_seed, 0)) + 1


def choose_shape(problems: list) -> tuple[np.ndarray, int | None]:
    """A generated image (its true class known) or the learner's upload (class unknown: None)."""
    images, labels = compute.vit_shapes(compute.SHAPES_SEED + int(st.session_state.get(KEYS.gen_seed, 0)), N_SHAPES)
    for i, col in enumerate(st.columns(N_SHAPES + 1)[:N_SHAPES]):
        shape = t(f"vt.trained.class.{compute.shape_classes()[int(labels[i])]}")
        col.image(images[i], caption=t("vt.trained.sample", i=i + 1), width=96, clamp=True,
                  alt=t("a11y.vt.sample", i=i + 1, shape=shape, size=SIZE))
    options = tuple(range(N_SHAPES)) + ("upload",)
    upload = t("vt.sample.upload")  # bound now, in this run's language
    c1, c2 = st.columns([1, 1])
    with c1:
        st.radio(t("vt.sample"), options, key=KEYS.gen_choice, horizontal=True,
                 format_func=lambda o: upload if o == "upload" else str(o + 1))
        st.button(t("vt.trained.new"), key=KEYS.new_images, on_click=_new_images)
    with c2:
        file_uploader(t("vt.upload"), types=["png", "jpg", "jpeg"], key=KEYS.upload, limit_kb=MAX_UPLOAD // 1024,
                      on_change=on_upload, help=t("vt.upload.help", kb=MAX_UPLOAD // 1024))
        st.caption(t("vt.upload.not_kept"))
    if st.session_state.get(KEYS.error):
        problems.append(("error", t(st.session_state[KEYS.error], kb=MAX_UPLOAD // 1024, side=MAX_SIDE)))
    choice = st.session_state.get(KEYS.gen_choice, 0)
    if choice == "upload" and st.session_state.get(KEYS.image) is not None:
        return st.session_state[KEYS.image], None
    if choice == "upload":
        problems.append(("info", t("vt.no_upload")))
        choice = 0
    return images[int(choice)], int(labels[int(choice)])


def prediction(tr: dict, truth: int | None, dec: int) -> None:
    """What the model says, with its probabilities, and (for a generated image) whether it is right."""
    names = [t(f"vt.trained.class.{c}") for c in tr["classes"]]
    pred = int(tr["pred"])
    st.markdown(t("vt.trained.says", label=names[pred], p=f"{tr['probs'][pred]:.1%}"))
    show_bars(weight_bars(names, tr["probs"], dec), key=KEYS.probs)
    if truth is None:
        st.caption(t("vt.trained.upload_note"))
    elif truth == pred:
        st.success(t("vt.trained.right", label=names[truth]))
    else:
        st.warning(t("vt.trained.wrong", label=names[truth]))


def model_scores() -> None:
    """Accuracy on fresh generated images and where the class token looks, measured once per server."""
    with st.spinner(t("vt.trained.measuring", n=compute.SCORE_IMAGES)):
        sc = compute.vit_trained_scores()
    st.info(t("vt.trained.accuracy", n=sc["n"], acc=f"{sc['accuracy']:.1%}")
            + " " + t("vt.trained.focus", on=f"{sc['on_shape']:.0%}", area=f"{sc['area']:.0%}", ratio=f"{sc['ratio']:.1f}"))


def trained_view(img, truth: int | None, dec: int) -> None:
    tr = compute.vit_trained_trace(img)
    P, (rows, cols) = tr["P"], tr["grid"]
    layers = tr["maps"].shape[0]
    c1, c2 = st.columns([2, 1])
    with c1:
        prediction(tr, truth, dec)
    with c2:
        if st.session_state.get(KEYS.layer) not in range(layers):  # first visit, or a link's layer it does not have
            st.session_state[KEYS.layer] = layers - 1
        st.select_slider(t("vt.trained.layer"), options=list(range(layers)), key=KEYS.layer, help=t("vt.trained.layer.help"))
    model_scores()
    shape_badge(t("vt.trained.shape", size=SIZE, P=P, n=tr["N"], dim=tr["dim"], d=tr["d"], heads=tr["heads"]))
    layer = int(st.session_state[KEYS.layer])
    q = chosen_query(tr["N"], True, cols)
    amap = tr["maps"][layer, q + 1]  # (rows, cols): row q + 1 of the layer's head-averaged weights
    attention_panels(img, amap, P, (rows, cols), q, True, dec, t("vt.trained.label.trained", l=layer, H=tr["heads"]))


def main() -> None:
    problems: page.Problems = []
    ss.start(problems)
    seed, dec = int(settings.get("seed")), min(settings.get("precision"), 3)
    st.markdown(t("vt.intro"))
    link.keep("vision_transformer", KEPT, problems)
    if st.session_state.get(KEYS.gen_choice, 0) not in (*range(N_SHAPES), "upload"):
        st.session_state[KEYS.gen_choice] = 0
    mode = weights_mode()
    if mode == "trained":
        img, truth = choose_shape(problems)
        page.show_problems(problems)
        trained_view(img, truth, dec)
        return
    img = choose_image(problems)
    page.show_problems(problems)
    random_view(img, seed, dec)


main()
