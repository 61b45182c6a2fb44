"""The notebook's static SVG prints every cell's number at ≥ 4.5 : 1 against its cell (WCAG 2.2, 1.4.3), with the
app's rule (attention_lab.colours.text_on), on every colour of both scales and on masked cells (issue #32).

The contrast is computed here from WCAG's definition, not with attention_lab.colours."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np

import core
from attention_lab import colours, heatmap_spec
from attention_lab import notebook as N
from core import masks, tokens

SVG = "{http://www.w3.org/2000/svg}"


def _channel(c8: int) -> float:
    c = c8 / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def wcag_contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2.x contrast ratio: (L1 + 0.05) / (L2 + 0.05) with relative luminance 0.2126 R + 0.7152 G + 0.0722 B."""
    la, lb = (0.2126 * _channel(r) + 0.7152 * _channel(g) + 0.0722 * _channel(bl) for r, g, bl in (a, b))
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _rgb(colour: str) -> tuple[int, int, int]:
    if colour.startswith("#"):
        return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
    r, g, b = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", colour).groups()
    return int(r), int(g), int(b)


def cell_contrasts(svg: str) -> list[tuple[str, float]]:
    """(cell value, contrast of its text against its rectangle) for every cell that prints a value."""
    out = []
    for cell in ET.fromstring(svg).iter(f"{SVG}g"):
        if cell.get("class") != "cell":
            continue
        text = cell.find(f"{SVG}text")
        if text is None:
            continue
        out.append((cell.get("data-v"), wcag_contrast(_rgb(cell.find(f"{SVG}rect").get("fill")), _rgb(text.get("fill")))))
    return out


def test_the_contrast_function_matches_wcags_known_values():
    assert round(wcag_contrast((0, 0, 0), (255, 255, 255)), 2) == 21.0
    assert round(wcag_contrast((0x76, 0x76, 0x76), (255, 255, 255)), 2) == 4.54
    assert wcag_contrast((5, 5, 5), (5, 5, 5)) == 1.0


def test_every_colour_of_both_scales_gets_readable_text_in_the_notebook_svg():
    z = np.linspace(-1.0, 1.0, 16 * 16).reshape(16, 16)  # every step of the diverging scale
    labels = [str(i) for i in range(16)]
    for values, sequential in ((z, False), ((z + 1) / 2, True)):
        spec = heatmap_spec.heatmap(values, x_labels=labels, y_labels=labels, x_title="k", y_title="q",
                                    sequential=sequential, decimals=2)
        body, _, _ = N.map_svg(spec, step="m")
        found = cell_contrasts(f'<svg xmlns="http://www.w3.org/2000/svg">{body}</svg>')
        assert len(found) == 256
        worst = min(found, key=lambda vc: vc[1])
        assert worst[1] >= 4.5, worst


def test_every_cell_of_a_playground_notebook_svg_including_masked_ones_is_readable():
    X = tokens.c18_embedding()
    svg = N.show(core.lab.playground(X, X, mask=masks.causal(4)), tokens=["a", "b", "c", "d"]).svg()
    found = cell_contrasts(svg)
    assert len(found) >= 4 * 16 and any(v == "−∞" for v, _ in found)  # scores, scaled, masked, weights, output
    worst = min(found, key=lambda vc: vc[1])
    assert worst[1] >= 4.5, worst


def test_the_notebook_and_the_app_choose_the_same_text_colour_for_every_cell():
    z = np.linspace(-3.0, 3.0, 16 * 16).reshape(16, 16)
    labels = [str(i) for i in range(16)]
    ninf = np.zeros_like(z, dtype=bool)
    ninf[0, 1:] = True
    spec = heatmap_spec.heatmap(z, x_labels=labels, y_labels=labels, x_title="k", y_title="q", neg_inf=ninf)
    body, _, _ = N.map_svg(spec, step="m")
    cells = [c for c in ET.fromstring(f'<svg xmlns="http://www.w3.org/2000/svg">{body}</svg>').iter(f"{SVG}g")
             if c.get("class") == "cell"]
    notebook_fg = [c.find(f"{SVG}text").get("fill") for c in cells]
    assert notebook_fg == [fg for row in spec["fg"] for fg in row]
    assert colours.MASKED_FG in notebook_fg
