"""Images from outside: sample pictures and validated uploads (PNG/JPEG only, bounded in bytes and
pixels, checked by Pillow), resized to the ViT page's 96 × 96."""

from __future__ import annotations

import base64
import io
import threading
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

SIZE = 96  # every image is shown at 96 × 96 pixels
IMAGES = Path(__file__).resolve().parent.parent / "assets" / "images"
MAX_UPLOAD = 1024 * 1024
MAX_SIDE = 4096
MAX_PIXELS = MAX_SIDE * MAX_SIDE
# one decode at a time per server: a 4096 × 4096 PNG needs ~112 MB while it is decoded (RGBA, then RGB);
# the others wait for it (eight uploads at once, measured: BENCHMARKS.md, "Figures behind the code").
_DECODING = threading.BoundedSemaphore(1)


def load(data: bytes) -> np.ndarray:
    """PNG/JPEG bytes → (96, 96, 3) floats in [0, 1]; raises ValueError with an i18n key."""
    if len(data) > MAX_UPLOAD:
        raise ValueError("vt.err.size")
    try:
        with Image.open(io.BytesIO(data)) as probe:
            if probe.format not in ("PNG", "JPEG"):
                raise ValueError("vt.err.format")
            if probe.size[0] * probe.size[1] > MAX_PIXELS:
                raise ValueError("vt.err.too_large")
            probe.verify()
        with _DECODING, Image.open(io.BytesIO(data)) as img:
            return np.asarray(img.convert("RGB").resize((SIZE, SIZE)), dtype=np.float32) / 255.0
    except Image.DecompressionBombError:  # Pillow's own refusal (over ~179 M pixels) happens in open()
        raise ValueError("vt.err.too_large") from None
    except (UnidentifiedImageError, OSError, SyntaxError):
        raise ValueError("vt.err.broken") from None


def png_uri(arr: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray((np.clip(arr, 0, 1) * 255).astype(np.uint8)).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
