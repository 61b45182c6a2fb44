"""The downloaded notebooks, executed: the Playground's (the default scenario, and a causal mask with
projections) and every lesson's. nbclient runs them in a python3 kernel started in the repository
(as "start Jupyter from the Attention Lab folder" says; an installed copy is tests/packaging's
subject); their outputs must hold the maps — the widget's state and the static SVG — with the
numbers the page shows (AppTest reads the page's weights map, at the page's precision) and the
numbers of softmax(QKᵀ/√d_k)V written here in numpy for the scenario (not core's code, which made both).
The Korean notebooks are checked for English prose and comments."""

from __future__ import annotations

import base64
import re

import nbformat
import numpy as np
import pytest

from attention_lab import codegen, scenario
from attention_lab import tutorial as tut
from attention_lab.notebook import values_in
from tests.app.helpers import PG_WEIGHTS, heat, no_errors, open_tab, page
from ui import state
from ui.pipeline import weights_key

from .nbrun import execute_all

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
DEC = 3
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def args_of(lt: tut.LessonTrace) -> dict:
    """The notebook's arguments for a scenario's numbers (what the page passes to the download)."""
    tr, A = lt.trace, lt.trace.attn
    np_ = lambda t: None if t is None else t.detach().numpy()  # noqa: E731
    direct = tr.qkv == "direct"
    return {"X_q": np_(tr.X_q), "X_kv": np_(tr.X_kv), "qkv": tr.qkv, "W_q": np_(tr.W_q), "W_k": np_(tr.W_k),
            "W_v": np_(tr.W_v), "Q": np_(tr.Q) if direct else None, "K": np_(tr.K) if direct else None,
            "V": np_(tr.V) if direct else None, "score": A.score, "params": {k: np_(v) for k, v in A.params.items()},
            "scale": A.scale, "temperature": A.temperature, "mask": None if A.mask is None else np_(A.mask),
            "convention": "row", "tokens_q": list(lt.q_tokens), "tokens_k": list(lt.k_tokens)}


def _playground_weights(changes: dict) -> np.ndarray:
    at = page(precision=DEC)
    if changes.get("qkv"):
        open_tab(at, "qkv")
        at.radio(key=state.SCENARIO.qkv).set_value(changes["qkv"]).run()
    if changes.get("causal"):
        open_tab(at, "mask")
        at.checkbox(key=state.SCENARIO.causal).check().run()
    no_errors(at)
    return heat(at, PG_WEIGHTS)


def _lesson_weights(lesson) -> np.ndarray:
    """The lesson's weights map as the page shows it; a lesson whose panel is its own (multi-head, position, RoPE, and
    the cache, model, latent, state and kept-per-token panels of the decoder lessons) draws no map of its scenario's
    weights: there, core's numbers for the scenario (tests/app/test_tutorial_page.py holds them equal to the page's
    snippets), rounded as shown."""
    if lesson.panel in ("multihead", "position", "rope", "cache", "model", "latent", "state", "kept"):
        return tut.scenario_trace(lesson.scenario_dict()).weights.numpy().astype(float).round(DEC)
    at = page("app_pages/tutorial.py", query={"lesson": lesson.id}, precision=DEC)
    for ex in lesson.exercises:  # a prediction hides the weights until it is revealed
        if ex.kind == "predict":
            at.button(key=state.item(state.TUTORIAL.reveal, "button", ex.id)).click().run()
    no_errors(at)
    for key in (weights_key(state.TUTORIAL.pipeline), state.TUTORIAL.weights):
        try:
            return heat(at, key)
        except (KeyError, LookupError, AssertionError, StopIteration):
            continue
    raise AssertionError(f"no weights map on lesson {lesson.id}")


PLAYGROUND = {"default": {}, "causal_projection": {"qkv": "projection", "causal": True}}


def _cases() -> list[tuple[str, dict, str]]:
    """(name, scenario state, language): the Playground's two, then every lesson's."""
    out = [(f"playground-{name}", scenario.DEFAULTS | changes, "en" if name == "default" else "ko")
           for name, changes in PLAYGROUND.items()]
    return out + [(f"lesson-{lesson.id}", lesson.scenario_dict(), "en") for lesson in tut.LESSONS]


@pytest.fixture(scope="module")
def executed():
    """Every notebook built as the download builds it (with its pre-rendered outputs), then executed."""
    cases = _cases()
    built = {name: nbformat.reads(codegen.notebook_bytes(args_of(tut.scenario_trace(st)), title=name, lang=lang,
                                                          decimals=DEC).decode("utf-8"), as_version=4)
             for name, st, lang in cases}
    saved = {name: nbformat.from_dict(nbformat.reads(nbformat.writes(nb), as_version=4)) for name, nb in built.items()}
    for nb in built.values():  # executed from a clean slate: no outputs, no widget state
        nb.metadata.pop("widgets", None)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = [], None
    execute_all(list(built.values()), ROOT)
    return {"run": built, "saved": saved}


def _maps(nb, step: str) -> tuple[np.ndarray, list[list[str]]]:
    """The step's map in a notebook's outputs: its values from the widget's state, its printed values from the SVG."""
    cell = next(c for c in nb.cells if c.cell_type == "code" and f"steps=[{step!r}]" in c.source)
    html_out = next(o for o in cell.outputs if "text/html" in o.get("data", {}))
    view = next(o for o in cell.outputs if WIDGET_VIEW in o.get("data", {}))
    model = nb.metadata["widgets"][WIDGET_STATE]["state"][view["data"][WIDGET_VIEW]["model_id"]]
    assert model["model_module"] == "anywidget"
    spec = next(p for p in model["state"]["data"]["panels"] if p["key"] == step)["map"]
    z = spec["z"]
    if isinstance(z, str):
        z = np.frombuffer(base64.b64decode(z), dtype="<f8").reshape(len(spec["ys"]), len(spec["xs"]))
    z = np.array([[np.nan if v is None else v for v in row] for row in np.asarray(z, dtype=object).tolist()], dtype=float)
    return z, values_in(html_out["data"]["text/html"], step)


def by_hand(args: dict) -> dict[str, np.ndarray]:
    """Every step of the scenario's attention in float64 numpy, from the notebook's own arguments (its
    tokens' vectors, Q/K/V mode, weights, mask): Q, K, V; scores QKᵀ; scaled by 1/√d_k; masked (−∞ where
    the mask forbids); weights softmax by row; output weights·V. Every case is plain scaled dot-product
    attention at temperature 1 (asserted)."""
    assert (args["score"], args["temperature"], args["params"], args["convention"]) == ("scaled_dot", 1.0, {}, "row")
    f64 = lambda a: np.asarray(a, dtype=np.float64)  # noqa: E731
    X_q, X_kv = f64(args["X_q"]), f64(args["X_kv"])
    if args["qkv"] == "identity":
        Q, K, V = X_q, X_kv, X_kv
    elif args["qkv"] == "direct":
        Q, K, V = f64(args["Q"]), f64(args["K"]), f64(args["V"])
    else:
        assert args["qkv"] == "projection"
        Q, K, V = X_q @ f64(args["W_q"]), X_kv @ f64(args["W_k"]), X_kv @ f64(args["W_v"])
    d_k = Q.shape[1]
    assert abs(args["scale"] - 1 / np.sqrt(d_k)) < 1e-12
    scores = Q @ K.T  # (n_q, n_k)
    scaled = scores / np.sqrt(d_k)
    allowed = np.ones(scaled.shape, dtype=bool) if args["mask"] is None else np.asarray(args["mask"], dtype=bool)
    assert allowed.any(axis=1).all()  # every query sees a key
    masked = np.where(allowed, scaled, -np.inf)
    e = np.exp(masked - masked.max(axis=1, keepdims=True))
    weights = e / e.sum(axis=1, keepdims=True)
    return {"scores": scores, "scaled": scaled, "masked": masked, "weights": weights, "output": weights @ V}


def _holds(nb, step: str, want: np.ndarray, kind: str) -> None:
    """The step's map (widget values and printed SVG values, both rounded to DEC) is ``want`` rounded; −∞ shows as
    no value in the widget and as "−∞" in the SVG."""
    z, printed = _maps(nb, step)
    tol = 0.5 * 10 ** -DEC + 1e-6  # rounding to DEC places, and core's float32
    assert z.shape == want.shape, f"{kind}: {step} {z.shape} != {want.shape}"
    inf = np.isneginf(want)
    assert (np.isnan(z) == inf).all() and np.abs(z[~inf] - want[~inf]).max() <= tol, f"{kind}: the widget's {step}"
    shown = np.array([[-np.inf if v == "−∞" else float(v) for v in row] for row in printed])
    assert (np.isneginf(shown) == inf).all() and np.abs(shown[~inf] - want[~inf]).max() <= tol, f"{kind}: the SVG's {step}"


@pytest.mark.parametrize("name", [c[0] for c in _cases()])
def test_the_notebook_executes_and_its_maps_hold_the_pages_numbers(executed, name):
    case = next(c for c in _cases() if c[0] == name)
    page_w = _playground_weights(PLAYGROUND[name.split("-", 1)[1]]) if name.startswith("playground") \
        else _lesson_weights(tut.lesson(name.split("-", 1)[1]))
    for kind in ("run", "saved"):  # executed by nbclient, and as the download saves it
        nb = executed[kind][name]
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.execution_count for c in code) and not any(o.output_type == "error" for c in code for o in c.outputs)
        z, printed = _maps(nb, "weights")
        np.testing.assert_allclose(z, page_w, atol=1e-12, err_msg=f"{kind}: the widget's weights")
        assert printed == [[f"{v:.{DEC}f}" for v in row] for row in page_w], f"{kind}: the SVG's weights"
        for step, want in by_hand(args_of(tut.scenario_trace(case[1]))).items():  # independent of core
            _holds(nb, step, want, kind)
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        assert markdown.count("$$") >= 12 and markdown.count("`") >= 10  # five formulas and five shapes at least
    assert case[2] in ("en", "ko")
    text = "".join(o.get("text", "") for c in executed["run"][name].cells for o in c.get("outputs", []))
    assert "max |Δ weights| = " in text


# ---------------------------------------------------------------------------- no English in the Korean notebook
ALLOWED = {"Attention", "Lab", "PyTorch", "Jupyter", "core", "attention", "lab", "trace", "softmax", "tanh", "torch",
           "float", "JSON", "SDPA", "PAD", "None", "dot", "general", "additive", "cosine", "Streamlit", "max", "import",
           "show", "print", "pip", "install", "mask", "json", "tensor", "dtype", "bool", "weights", "output", "attn",
           "tr", "math", "sqrt", "item", "abs", "norm", "shape", "set", "assert", "diff", "row", "col", "NaN"}


def english_words(text: str) -> list[str]:
    """Words of two or more ASCII letters left once math ($…$), code spans, quoted data (token
    reprs) and identifiers are removed — what an English sentence would leave behind."""
    text = re.sub(r"`{3,}\w*", " ", text)  # code fences and their language tag
    text = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"", " ", text)
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text)
    return [w for w in words if len(w) >= 2 and w.isalpha() and w not in ALLOWED]


def _prose_and_comments(nb) -> str:
    parts = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            parts.append(cell.source)
        else:
            for line in cell.source.splitlines():
                if "#" in line:
                    parts.append(line.split("#", 1)[1])
                m = re.match(r"\s*print\((['\"])(.*)\1\)$", line)  # printed sentences are prose too
                if m:
                    parts.append(m.group(2))
    return "\n".join(parts)


def test_the_english_check_can_fail():
    st = scenario.DEFAULTS | {"qkv": "projection", "causal": True}
    en = codegen.notebook(args_of(tut.scenario_trace(st)), title="t", lang="en", outputs=False)
    assert len(set(english_words(_prose_and_comments(en)))) > 30


@pytest.mark.parametrize("name", [c[0] for c in _cases()])
def test_the_korean_notebook_has_no_english_prose_or_comments(name):
    st = next(c[1] for c in _cases() if c[0] == name)
    for mode in ("projection", "direct", "identity"):  # the same scenario with each Q/K/V mode
        ko = codegen.notebook(args_of(tut.scenario_trace(st | {"qkv": mode})), title="제목", lang="ko", outputs=False)
        left = english_words(_prose_and_comments(ko))
        assert not left, f"{name} ({mode}): {sorted(set(left))}"
