"""Helpers for AppTest page tests: start a page, read figures back, compare with core."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
PLAYGROUND = "pages/1_Playground.py"


def page(path: str = PLAYGROUND, *, query: dict | None = None, precision: int = 6, run: bool = True) -> AppTest:
    """AppTest of a page with full precision shown (so numbers can be compared with core).

    Starts at app.py (the real entrypoint, as a browser does) and switches to ``path``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if query:
        query = {"prec": str(precision)} | query
        for k, v in query.items():
            at.query_params[k] = v
    at.session_state["settings._init"] = True
    at.session_state["settings.lang"] = "en"
    at.session_state["settings.seed"] = 0
    at.session_state["settings.device"] = "cpu"
    at.session_state["settings.precision"] = precision
    if query:
        # let the URL decide the settings too, as a fresh browser session would
        del at.session_state["settings._init"]
    if path != "app.py":
        at.switch_page(path)
    return at.run() if run else at


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def figure(at: AppTest, key: str) -> dict:
    for el in at.get("plotly_chart"):
        if el.proto.id.endswith(f"-{key}"):
            return json.loads(el.proto.spec)
    raise AssertionError(f"no chart with key {key}; have {[e.proto.id[-30:] for e in at.get('plotly_chart')]}")


def heat(at: AppTest, key: str) -> np.ndarray:
    """The z values of a heatmap figure (None → NaN)."""
    z = figure(at, key)["data"][0]["z"]
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def ticks(at: AppTest, key: str, axis: str = "x") -> list[str]:
    return figure(at, key)["layout"][f"{axis}axis"]["ticktext"]


def editor(at: AppTest, name: str):
    """The data editor of matrix ``name`` (its key starts with pg.ed.<name>.)."""
    for df in at.dataframe:
        if (df.key or "").startswith(f"pg.ed.{name}."):
            return df
    raise AssertionError(f"no editor for {name}; have {[d.key for d in at.dataframe]}")


def edit(at: AppTest, name: str, cells: dict[int, dict[str, object]]) -> AppTest:
    """Simulate typing into cells of a matrix editor, then rerun."""
    key = editor(at, name).key
    at.session_state[key] = {"edited_rows": cells, "added_rows": [], "deleted_rows": []}
    return at.run()


def texts(at: AppTest) -> str:
    """All visible text of markdown, captions, info/warning/error/success boxes."""
    parts = []
    for kind in ("markdown", "caption", "info", "warning", "error", "success", "title", "subheader", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def decode(a):
    """Plotly sends numpy arrays as {'dtype', 'bdata' (base64), 'shape'?}; lists as lists."""
    if isinstance(a, dict) and "bdata" in a:
        arr = np.frombuffer(base64.b64decode(a["bdata"]), dtype=np.dtype(a["dtype"]))
        if "shape" in a:
            arr = arr.reshape([int(s) for s in str(a["shape"]).split(",")])
        return arr.astype(float)
    return a


def close(a, b, tol=2e-6) -> None:
    np.testing.assert_allclose(np.asarray(decode(a), dtype=float), np.asarray(b, dtype=float), atol=tol, rtol=0)
