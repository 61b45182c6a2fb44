"""Helpers for AppTest page tests: start a page, read figures back, compare with core."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from ui import state

ROOT = Path(__file__).resolve().parents[2]
PLAYGROUND = "app_pages/playground.py"


def pg_map(step: str) -> str:
    """The key of one of the Playground's pipeline maps (scores, scaled, masked, weights, output)."""
    return state.item(state.PLAYGROUND.pipeline, step)


PG_WEIGHTS = pg_map("weights")


def page(path: str = PLAYGROUND, *, query: dict | None = None, precision: int = 6, run: bool = True) -> AppTest:
    """AppTest of a page with full precision shown (so numbers can be compared with core).

    Starts at app.py (the real entrypoint, as a browser does) and switches to ``path``."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if query:
        query = {"prec": str(precision)} | query
        for k, v in query.items():
            at.query_params[k] = v
    at.session_state[state.SETTINGS._init] = True
    at.session_state[state.setting("lang")] = "en"
    at.session_state[state.setting("seed")] = 0
    at.session_state[state.setting("device")] = "cpu"
    at.session_state[state.setting("precision")] = precision
    if query:
        # let the URL decide the settings too, as a fresh browser session would
        del at.session_state[state.SETTINGS._init]
    if path == "app.py":  # the home page (the default page) is where a browser lands
        return at.run() if run else at
    at.run()  # land on the home page first, as a browser opening the app does, then switch
    at.landing_warnings = [w.value for w in at.warning]  # e.g. refused settings, shown where one lands
    at.switch_page(path)
    return at.run() if run else at


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def element_of(at: AppTest, key: str):
    for kind in ("bidi_component", "plotly_chart"):
        for el in at.get(kind):
            if el.proto.id.endswith(f"-{key}"):
                return kind, el
    raise AssertionError(f"no chart with key {key}")


def panels(at: AppTest) -> dict[str, dict]:
    """The maps drawn as panels of one element (the Playground's pipeline), by their own keys."""
    found = {}
    for el in at.get("bidi_component"):
        data = json.loads(el.proto.json) if el.proto.json else None
        if isinstance(data, dict) and "panels" in data:
            found |= {p["key"]: p for p in data["panels"]}
    return found


def warnings(at: AppTest) -> list[str]:
    """The page's warnings, the pipeline panels' own included."""
    return [str(w.value) for w in at.warning] + [p["warning"] for p in panels(at).values() if p["warning"]]


def address(at: AppTest) -> dict[str, str]:
    """The URL parameters the Playground put in the address bar (its address element)."""
    from urllib.parse import parse_qsl

    for el in at.get("bidi_component"):
        if el.proto.id.endswith(f"-{state.PLAYGROUND.address}"):
            url = json.loads(el.proto.json)["url"]
            assert url.startswith("?")
            return dict(parse_qsl(url[1:], keep_blank_values=True))
    raise AssertionError("the Playground drew no address element")


def inspector(at: AppTest) -> dict | None:
    """The data of the Playground's query inspector (one element), or None when it is not drawn."""
    for el in at.get("bidi_component"):
        data = json.loads(el.proto.json) if el.proto.json else None
        if isinstance(data, dict) and "sections" in data and "options" in data:
            return data
    return None


def chosen_query(at: AppTest) -> str:
    """The label of the query the inspector shows."""
    data = inspector(at)
    return data["options"][data["chosen"]]


def pick_query(at: AppTest, index: int) -> AppTest:
    """Pick a query in the inspector as its picker's callback does (the browser tests pick for real)."""
    at.session_state[state.scenario_kept("query")] = index
    return at.run()


def spec(at: AppTest, key: str) -> dict:
    """The data a chart was drawn from: the heatmap/bars component's JSON, or a plotly figure
    (a map drawn as a panel of the pipeline's one element: that panel's map; a chart of the query
    inspector: its bars)."""
    shown = panels(at)
    if key in shown:
        return shown[key]["map"]
    sections = {s["key"]: s for s in (inspector(at) or {}).get("sections", [])}
    if key in sections:
        return sections[key]["bars"]
    kind, el = element_of(at, key)
    return json.loads(el.proto.json if kind == "bidi_component" else el.proto.spec)


def is_plotly(at: AppTest, key: str) -> bool:
    return key not in panels(at) and element_of(at, key)[0] == "plotly_chart"


def heat(at: AppTest, key: str) -> np.ndarray:
    """The values of a heatmap as shown (rounded to the precision setting; −∞ cells → NaN)."""
    s = spec(at, key)
    z = s["data"][0]["z"] if "data" in s else s["z"]
    if isinstance(z, dict):  # a plotly image: plotly.js's typed array (base64 float32 bytes and the shape)
        assert z["dtype"] == "f4", z["dtype"]
        rows, cols = (int(v) for v in z["shape"].split(","))
        return np.frombuffer(base64.b64decode(z["bdata"]), dtype="<f4").reshape(rows, cols).astype(float)
    if isinstance(z, str):  # a canvas map sends its values as base64 float64 bytes, row by row
        return np.frombuffer(base64.b64decode(z), dtype="<f8").reshape(len(s["ys"]), len(s["xs"])).copy()
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def ticks(at: AppTest, key: str, axis: str = "x") -> list[str]:
    """The labels along a heatmap's columns (x) or rows (y)."""
    return spec(at, key)[f"{axis}s"]


def click(at: AppTest, key: str, row: int, col: int) -> AppTest:
    """A click on a heatmap cell as the page receives it (the browser tests click for real)."""
    at.session_state[state.PLAYGROUND.clicks] = [(key, (row, col))]
    return at.run()


def bars(at: AppTest, key: str) -> np.ndarray:
    """Bar segments as (segments, rows): for the α bars one row per key; for the stacked
    contributions one column per output dimension and one row per key."""
    rows = spec(at, key)["rows"]
    return np.array([[seg["value"] for seg in r["segments"]] for r in rows], dtype=float).T


def bar_totals(at: AppTest, key: str) -> np.ndarray:
    return np.array([r["total"] for r in spec(at, key)["rows"]], dtype=float)


def open_x_editor(at: AppTest) -> AppTest:
    """Unfold the X editor (folded by default), as a click on its expander does."""
    at.session_state[state.SCENARIO.x_fold_open] = True
    return at.run()


def editor(at: AppTest, name: str):
    """The data editor of matrix ``name`` (its key starts with pg.ed.<name>.); the X editors are
    unfolded first."""
    if name in ("X", "X_src"):
        fold = state.SCENARIO.x_fold_open
        if not (fold in at.session_state and at.session_state[fold]):
            open_x_editor(at)
    for df in at.dataframe:
        if (df.key or "").startswith(f"{state.EDITOR_PREFIX}{name}."):
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
    for p in panels(at).values():  # the pipeline drawn as one element: its panels' texts
        parts += [p["title"], p["shape"], *p["before"], *p["after"], p["warning"] or ""]
    return "\n".join(parts)


_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")


def shown(markdown: str) -> str:
    """What st.markdown shows for ``markdown``'s backslash escapes (CommonMark: a backslash before ASCII punctuation
    gives that character), so a test reads a message as the learner does."""
    return _ESCAPED.sub(r"\1", str(markdown))


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


def open_tab(at: AppTest, name: str) -> AppTest:
    """Open one of the Playground's setup tabs (embed, qkv, score, mask, share), as a click on it
    does: only the open tab's controls are drawn."""
    at.session_state[state.PLAYGROUND.tab_id] = name
    return at.run()
