"""Where the components' files are, and the helpers every component of the app puts first."""

from __future__ import annotations

from pathlib import Path

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "components"
DOM_LIB = (ASSETS / "dom_lib.js").read_text(encoding="utf-8")
SILENT_LIB = (ASSETS / "silent_lib.js").read_text(encoding="utf-8")  # put first by the invisible components
