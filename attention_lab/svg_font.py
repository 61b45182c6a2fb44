"""The glyphs an SVG picture needs from the shipped Korean font, as ``@font-face`` rules to put inside it.

The font comes in slices (``static/svg-font/``: WOFF2 files and ``slices.json``, their
``unicode-range``; made by ``scripts/make_svg_font.py``); a picture carries only the slices that hold
its characters, so its Korean renders on a machine without a Korean font at a few tens of KB. The
server's chart pictures (``ui/widgets/chart_svg.py``) use this module; the maps, drawn in the browser,
read the same files (``assets/components/heatmap_lib.js``: ``svgFontFaces``)."""

from __future__ import annotations

import base64
import functools
import json

from core._paths import app_root

SLICES = app_root() / "static" / "svg-font"


@functools.cache
def _slices() -> tuple[tuple[str, str, tuple[tuple[int, int], ...]], ...]:
    """(file, unicode-range, runs) of every slice; empty when the slices are not installed."""
    try:
        manifest = json.loads((SLICES / "slices.json").read_text(encoding="utf-8"))
    except OSError:
        return ()
    out = []
    for s in manifest["slices"]:
        runs = []
        for part in s["unicode_range"].split(","):
            lo, _, hi = part.strip()[2:].partition("-")
            runs.append((int(lo, 16), int(hi or lo, 16)))
        out.append((s["file"], s["unicode_range"], tuple(runs)))
    return tuple(out)


@functools.cache
def _data(file: str) -> str:
    return base64.b64encode((SLICES / file).read_bytes()).decode("ascii")


def used_slices(text: str) -> list[int]:
    """Indices of the slices holding a character of ``text`` (none for text without Korean)."""
    slices, used = _slices(), set()
    for cp in {ord(c) for c in text if ord(c) >= 0x1100}:
        for k, (_, _, runs) in enumerate(slices):
            if any(a <= cp <= b for a, b in runs):
                used.add(k)
                break
    return sorted(used)


def font_faces(text: str, family: str = "attention-lab-kr") -> str:
    """CSS ``@font-face`` rules (the font data inline, base64) for the characters of ``text``;
    "" when it needs none. One face per slice, with its ``unicode-range``; every weight from
    the regular face, declared as 400 so that the browser synthesises bold for a bold title."""
    slices = _slices()
    return "\n".join(f"@font-face {{ font-family: '{family}'; font-weight: 400; unicode-range: {slices[k][1]}; "
                     f"src: url(data:font/woff2;base64,{_data(slices[k][0])}) format('woff2'); }}"
                     for k in used_slices(text))
