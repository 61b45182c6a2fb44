"""Slice the shipped Korean font into small WOFF2 files for the maps' SVG export (a development step;
the result is committed in static/svg-font/).

    python -m venv /tmp/fontenv && /tmp/fontenv/bin/pip install fonttools brotli wordfreq==3.1.1
    /tmp/fontenv/bin/python scripts/make_svg_font.py

An exported SVG carries only the slices that hold its characters, each as an ``@font-face`` with its
``unicode-range`` (assets/components/dom_lib.js: ``shippedFont``), so the picture's Korean renders
on a machine without a Korean font and weighs tens of KB instead of the whole 0.6 MB subset.

Order: Hangul syllables by frequency (wordfreq's Korean list plus the app's own Korean text, which
every map title and axis uses), the rare ones after in code order; the slices grow with rarity
(TIERS), so a sentence of common words touches a few small files. The CJK punctuation with the
compatibility Jamo, and the conjoining Jamo, make two more slices. Measured (README, "Pictures for
slides"): the worked example's weights map carries 6 slices, 31 KB of base64 (the whole font: 608 KB,
0.8 MB as base64); a 16-token sentence 10 slices, 66 KB.

Source: static/attention-lab-kr-400.woff2 (made by scripts/make_korean_font.py; SIL OFL 1.1).
"""

from __future__ import annotations

import collections
import io
import json
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "static" / "attention-lab-kr-400.woff2"
OUT = ROOT / "static" / "svg-font"
SYLLABLES = (0xAC00, 0xD7A3)
TIERS = ((400, 40), (1621, 100), (None, 500))  # (up to this frequency rank, slice size): 43 syllable slices
KOREAN_TEXT = ("assets/i18n/ko*.json", "assets/explain/*.ko.md", "assets/lessons/*.ko.*")


def _is_syllable(cp: int) -> bool:
    return SYLLABLES[0] <= cp <= SYLLABLES[1]


def frequency_order(syllables: list[int]) -> list[int]:
    """The font's syllables, most frequent first (each source weighs the same), then the rest in code order."""
    import wordfreq

    words = collections.Counter()
    for word, f in wordfreq.get_frequency_dict("ko").items():
        words.update({ord(c): f for c in word if _is_syllable(ord(c))})
    app = collections.Counter()
    for pattern in KOREAN_TEXT:
        for path in sorted(ROOT.glob(pattern)):
            app.update(ord(c) for c in path.read_text(encoding="utf-8") if _is_syllable(ord(c)))
    tw, ta = sum(words.values()) or 1, sum(app.values()) or 1
    score = {c: words[c] / tw + app[c] / ta for c in syllables}
    return sorted(syllables, key=lambda c: (-score[c], c))


def unicode_range(cps: list[int]) -> str:
    """CSS ``unicode-range`` of the code points: runs of consecutive ones as ``U+A-B``."""
    runs: list[list[int]] = []
    for c in sorted(cps):
        if runs and c == runs[-1][1] + 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"U+{a:X}" if a == b else f"U+{a:X}-{b:X}" for a, b in runs)


def woff2(cps: list[int]) -> bytes:
    opts = subset.Options()
    opts.flavor, opts.layout_features, opts.hinting, opts.desubroutinize = "woff2", ["*"], False, True
    font = TTFont(SOURCE)
    sub = subset.Subsetter(opts)
    sub.populate(unicodes=cps)
    sub.subset(font)
    buf = io.BytesIO()
    font.flavor = "woff2"
    font.save(buf)
    return buf.getvalue()


def slices(cmap: dict[int, str]) -> list[list[int]]:
    order = frequency_order([c for c in sorted(cmap) if _is_syllable(c)])
    out, i = [], 0
    for upto, size in TIERS:
        end = len(order) if upto is None else min(upto, len(order))
        while i < end:
            out.append(order[i:min(i + size, end)])
            i += len(out[-1])
    rest = [c for c in sorted(cmap) if not _is_syllable(c)]
    out.append([c for c in rest if 0x3000 <= c <= 0x318F])  # CJK punctuation, compatibility Jamo (ㄱ, ㅏ)
    out.append([c for c in rest if not 0x3000 <= c <= 0x318F])  # conjoining Jamo (decomposed text), old Hangul
    return out


def main() -> None:
    cmap = TTFont(SOURCE).getBestCmap()
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("kr-400-*.woff2"):
        old.unlink()
    entries = []
    for k, cps in enumerate(slices(cmap)):
        name = f"kr-400-{k:02d}.woff2"
        data = woff2(cps)
        (OUT / name).write_bytes(data)
        entries.append({"file": name, "bytes": len(data), "unicode_range": unicode_range(cps)})
    manifest = {"about": "Slices of static/attention-lab-kr-400.woff2 for SVG export (scripts/make_svg_font.py)",
                "family": "attention-lab-kr", "weight": 400, "slices": entries}
    (OUT / "slices.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    total = sum(e["bytes"] for e in entries)
    print(len(entries), "slices,", total // 1024, "KB in all; largest", max(e["bytes"] for e in entries) // 1024, "KB")


if __name__ == "__main__":
    main()
