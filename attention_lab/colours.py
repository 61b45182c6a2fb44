"""The maps' colour scales and the contrast arithmetic the display needs (WCAG 2.2, 1.4.3 / 1.4.11).

Display only: no number a page states comes from here. The scales are ColorBrewer's Blues
(sequential: weights, masks) and RdBu (diverging: scores, signed values); both keep adjacent
steps apart under simulated protanopia, deuteranopia and tritanopia (tests/app/test_a11y_colours.py).
"""

from __future__ import annotations

import numpy as np

# colour stops (t ∈ [0, 1] → r, g, b): sequential for weights and masks, diverging for signed values
SEQ = ((0.0, (247, 251, 255)), (0.5, (107, 174, 214)), (1.0, (8, 48, 107)))
DIV = ((0.0, (33, 102, 172)), (0.5, (247, 247, 247)), (1.0, (178, 24, 43)))
MASKED_RGB = (226, 232, 240)  # a masked cell's grey; its −∞ (or hatching on a canvas) says "masked" without colour
MASKED_BG = "#e2e8f0"
MASKED_FG = "#334155"  # 9.4 : 1 on the masked grey
DARK, LIGHT = "#000000", "#ffffff"  # a cell's number is whichever of the two contrasts more with the cell


def scale(sequential: bool):
    """A map's colour stops: :data:`SEQ` for weights and masks, :data:`DIV` for signed values."""
    return SEQ if sequential else DIV


def rgb_at(t: np.ndarray, stops) -> np.ndarray:
    """Colour of each value t ∈ [0, 1] by linear interpolation between the stops: (..., 3) ints."""
    xs = [p for p, _ in stops]
    return np.stack([np.interp(np.clip(t, 0, 1), xs, [c[ch] for _, c in stops]) for ch in range(3)], axis=-1).round()


def linear(rgb: np.ndarray) -> np.ndarray:
    """sRGB 0…255 → linear light 0…1 (the sRGB transfer curve), (..., 3)."""
    c = np.asarray(rgb, dtype=float) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB colours (..., 3) → (...)."""
    return linear(rgb) @ np.array([0.2126, 0.7152, 0.0722])


def contrast(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """WCAG contrast ratio (1 … 21) between two colours (or arrays of them)."""
    la, lb = luminance(a), luminance(b)
    return (np.maximum(la, lb) + 0.05) / (np.minimum(la, lb) + 0.05)


def hex_rgb(colour: str) -> tuple[int, int, int]:
    """'#rrggbb' → (r, g, b)."""
    h = colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def text_on(rgb: np.ndarray) -> np.ndarray:
    """For each cell colour (..., 3), True where black text contrasts more than white.

    Black and white cross at a luminance of about 0.18, where both give 4.58 : 1, so the
    chosen one is always ≥ 4.5 : 1 on any colour whatever the scale."""
    lum = luminance(rgb)
    return (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05)


def text_colour(rgb: np.ndarray, masked: np.ndarray | bool = False) -> np.ndarray:
    """The colour of a cell's number, as '#rrggbb' strings (...): :data:`DARK` or :data:`LIGHT` by
    :func:`text_on`, :data:`MASKED_FG` on a masked cell (which is drawn in :data:`MASKED_RGB`)."""
    black = text_on(rgb)
    return np.where(masked, MASKED_FG, np.where(black, DARK, LIGHT))


# eight line colours told apart with each colour-vision deficiency: Okabe & Ito's ("Color Universal Design", 2008)
# with its yellow (1.2 : 1 on white) replaced by a grey; every line also has its own marker and dash, so colour is
# never the only cue
OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#6B6B6B", "#0072B2", "#D55E00", "#CC79A7")
