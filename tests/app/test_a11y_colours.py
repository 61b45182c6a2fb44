"""Contrast and colour vision of the maps (WCAG 2.2 AA 1.4.1, 1.4.3, 1.4.11): the numbers printed in
cells on every colour of both scales, and the scales under simulated colour-vision deficiencies."""

from __future__ import annotations

import numpy as np
import pytest

from ui.widgets import colours
from ui.widgets.heatmap import heatmap

WHITE = np.array([255, 255, 255])
# Machado, Oliveira & Fernandes (2009), severity 1.0, applied to linear RGB
CVD = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
    "normal": np.eye(3).tolist(),
}
SCALES = {"sequential (weights)": colours.SEQ, "diverging (scores)": colours.DIV}


def _wcag_reference(rgb) -> float:
    """Relative luminance written out from WCAG 2.2's definition, one colour at a time."""
    out = []
    for c in rgb:
        s = c / 255
        out.append(s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4)
    return 0.2126 * out[0] + 0.7152 * out[1] + 0.0722 * out[2]


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    """Linear sRGB → CIELAB (D65)."""
    xyz = linear_rgb @ np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]).T
    xyz = xyz / np.array([0.95047, 1.0, 1.08883])
    d = 6 / 29
    f = np.where(xyz > d ** 3, np.cbrt(xyz), xyz / (3 * d * d) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])], axis=-1)


def test_luminance_and_contrast_match_wcag_definition():
    rng = np.random.default_rng(0)
    for rgb in rng.integers(0, 256, (50, 3)):
        assert colours.luminance(rgb) == pytest.approx(_wcag_reference(rgb), abs=1e-12)
    assert colours.contrast(np.array([0, 0, 0]), WHITE) == pytest.approx(21.0)
    assert colours.contrast(np.array(colours.hex_rgb("#767676")), WHITE) == pytest.approx(4.54, abs=0.01)


@pytest.mark.parametrize("name", SCALES)
def test_cell_numbers_reach_4_5_to_1_on_every_colour_of_the_scale(name):
    rgb = colours.rgb_at(np.linspace(0, 1, 2001), SCALES[name])  # the whole scale, 2001 steps
    black = colours.text_on(rgb)
    text = np.where(black[:, None], np.array(colours.hex_rgb(colours.DARK)), np.array(colours.hex_rgb(colours.LIGHT)))
    ratios = colours.contrast(rgb, text)
    assert ratios.min() >= 4.5, (name, rgb[ratios.argmin()], ratios.min())
    # the other choice is never better: the rule picks by contrast, not by a brightness guess
    other = np.where(black[:, None], np.array(colours.hex_rgb(colours.LIGHT)), np.array(colours.hex_rgb(colours.DARK)))
    assert (colours.contrast(rgb, other) <= ratios + 1e-12).all()


def test_the_printed_maps_use_the_rule_and_mark_masked_cells_without_colour():
    z = np.linspace(-3, 3, 16).reshape(4, 4)
    neg = np.zeros((4, 4), dtype=bool)
    neg[0, 1] = True
    spec = heatmap(z, x_labels=list("abcd"), y_labels=list("abcd"), x_title="k", y_title="q", neg_inf=neg)
    for i in range(4):
        for j in range(4):
            bg = spec["bg"][i][j]
            rgb = colours.hex_rgb(bg) if bg.startswith("#") else tuple(int(v) for v in bg[4:-1].split(","))
            assert colours.contrast(np.array(rgb), np.array(colours.hex_rgb(spec["fg"][i][j]))) >= 4.5, (i, j)
    assert spec["text"][0][1] == "−∞"  # a symbol as well as the grey


@pytest.mark.parametrize("deficiency", CVD)
@pytest.mark.parametrize("name", SCALES)
def test_scales_stay_distinguishable_under_colour_vision_deficiencies(name, deficiency):
    """Adjacent tenths of the scale stay ≥ 6 ΔE*ab apart as seen with the deficiency (a just-noticeable
    difference is about 2.3); on the diverging scale, values of opposite sign stay apart too."""
    stops = SCALES[name]
    t = np.linspace(0, 1, 11)
    seen = np.clip(colours.linear(colours.rgb_at(t, stops)) @ np.array(CVD[deficiency]).T, 0, 1)
    lab = _lab(seen)
    steps = np.linalg.norm(np.diff(lab, axis=0), axis=1)
    assert steps.min() >= 6.0, (name, deficiency, steps.round(1))
    lightness = lab[:, 0]
    if stops is colours.SEQ:  # sequential: lightness falls monotonically, so order survives any deficiency
        assert (np.diff(lightness) < 0).all()
    else:
        mirror = np.linalg.norm(lab[:4] - lab[::-1][:4], axis=1)  # −x against +x for |x| ≥ 0.4 of the range
        assert mirror.min() >= 15.0, (deficiency, mirror.round(1))


def test_masked_grey_and_its_text():
    assert colours.contrast(np.array(colours.MASKED_RGB), np.array(colours.hex_rgb(colours.MASKED_FG))) >= 4.5
    assert colours.hex_rgb(colours.MASKED_BG) == colours.MASKED_RGB
