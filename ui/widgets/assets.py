"""Where the components' files are, the helpers every component of the app puts first, and the map components'
code served as files."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import streamlit as st

from attention_lab.strings import LANGS, translate

log = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "assets" / "components"
DOM_LIB = (ASSETS / "dom_lib.js").read_text(encoding="utf-8")
SILENT_LIB = (ASSETS / "silent_lib.js").read_text(encoding="utf-8")  # put first by the invisible components

# The components whose code the server serves as a file, and the component files each file joins. A component given
# its code as text sends it inline with every element: the maps' 37 KB with every map, on every rerun (a Playground
# rerun sent 167 KiB; forty pages finishing their writing at once, 53 KB each: BENCHMARKS.md, "Where a stall waits").
SERVED_DIR = ROOT / "static" / "components"  # written by scripts/make_components.py; the server's static files
SERVED_URL = "app/static/components/"  # where the server serves them, relative to the page (as the fonts are)
SERVED = {
    "maps": ("dom_lib.js", "heatmap_lib.js", "maps.js"),
    "heatmap": ("dom_lib.js", "heatmap_lib.js", "heatmap.js"),
}


def joined(name: str) -> str:
    """The served component ``name``'s code: its files (:data:`SERVED`) joined, in order."""
    return "".join((ASSETS / f).read_text(encoding="utf-8") for f in SERVED[name])


def served_js(name: str) -> str:
    """The JavaScript to give the component ``name``: a loader (~1 KB, ``loader.js``) that imports its code from the
    server's static files, fetched once by the browser, so that each element carries its data only. The code itself
    (:func:`joined`) when the server does not serve static files (``server.enableStaticServing``) or when
    ``static/components/<name>.js`` is missing or is not that code (run ``python scripts/make_components.py``)."""
    code = joined(name)
    path = SERVED_DIR / f"{name}.js"
    if not st.get_option("server.enableStaticServing"):
        return code
    if not path.is_file() or path.read_text(encoding="utf-8") != code:
        log.warning("%s is missing or out of date (python scripts/make_components.py): its code goes inline", path)
        return code
    version = hashlib.sha256(code.encode("utf-8")).hexdigest()[:12]  # a new address whenever the code changes
    failed = {lang: translate("a11y.map.load_failed", lang) for lang in LANGS}
    return ((ASSETS / "loader.js").read_text(encoding="utf-8")
            .replace("__CODE__", f"{SERVED_URL}{name}.js?v={version}")
            .replace("__FAILED__", json.dumps(failed, ensure_ascii=False)))
