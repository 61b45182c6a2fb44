"""Regenerate the Korean web font in static/ (a development step; the result is committed).

    python -m venv /tmp/fontenv && /tmp/fontenv/bin/pip install fonttools brotli
    /tmp/fontenv/bin/python scripts/make_korean_font.py

Source: Noto Sans CJK KR from Debian's fonts-noto-cjk (SIL Open Font License 1.1, see
static/OFL.txt). The subset keeps every Hangul syllable (U+AC00–D7A3), the Hangul Jamo blocks
and CJK punctuation: about 0.6 MB per weight as WOFF2. Latin text keeps Streamlit's own font.
After it, run scripts/make_svg_font.py: the slices of the regular weight that SVG exports embed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "/usr/share/fonts/opentype/noto/NotoSansCJK-{weight}.ttc"
KR_FONT_NUMBER = 1  # the collection's faces: JP, KR, SC, TC, HK, then the Mono ones
RANGES = [(0xAC00, 0xD7A3), (0x1100, 0x11FF), (0x3130, 0x318F), (0xA960, 0xA97F), (0xD7B0, 0xD7FF),
          (0x3000, 0x303F)]


def main() -> None:
    unicodes = ",".join(f"U+{a:04X}-{b:04X}" for a, b in RANGES)
    for weight, css_weight in (("Regular", 400), ("Bold", 700)):
        out = ROOT / "static" / f"attention-lab-kr-{css_weight}.woff2"
        subprocess.run([sys.executable, "-m", "fontTools.subset", SOURCE.format(weight=weight),
                        f"--font-number={KR_FONT_NUMBER}", f"--unicodes={unicodes}", "--flavor=woff2",
                        "--layout-features=*", "--no-hinting", "--desubroutinize", f"--output-file={out}"],
                       check=True)
        print(out.relative_to(ROOT), out.stat().st_size // 1024, "KB")


if __name__ == "__main__":
    main()
