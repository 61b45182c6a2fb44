"""attention_lab.codegen (was core.codegen): the Playground's scenario as a `core` snippet, a plain-PyTorch
snippet and a notebook.

Every snippet is executed in a fresh interpreter (all scenarios batched into one process per kind,
each snippet exec'd in its own namespace) and its printed numbers are compared with the page's
numbers (core.lab.playground called directly), with a pure-Python loop written here, and for the
score functions it can express with torch's own scaled_dot_product_attention.
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import core
from attention_lab import codegen

ROOT = Path(__file__).resolve().parents[2]
MARK = "@@@ scenario "
PLAYGROUND_KEYS = ("X_q", "X_kv", "qkv", "W_q", "W_k", "W_v", "Q", "K", "V", "score", "params", "scale",
                   "temperature", "mask", "convention")
C18_X = np.array([[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 1]], dtype=np.float32)
C18_TOKENS = ["나는", "오늘", "사과를", "먹었다"]
NASTY_TOKENS = ["it's", '<b>"bold"</b>', "back\\slash", "new\nline", '"""', "\nprint('INJECTED')", "한국어\u2028\u202e\r`"]


def _rand(seed: int, *shape: int, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _args(**kw) -> dict:
    """The dict the Playground passes: every key present, None where unused, float32 numpy arrays."""
    base = {k: None for k in PLAYGROUND_KEYS} | {"qkv": "identity", "score": "scaled_dot", "params": {},
                                                   "temperature": 1.0, "convention": "row", "device": "cpu"}
    return base | kw


def _causal(n_q: int, n_k: int) -> np.ndarray:
    return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)


def _scenarios() -> dict[str, dict]:
    s = {}
    # 1. source 001's example: Q = K = V = X, scaled dot, Korean tokens
    s["c18_scaled_dot"] = _args(X_q=C18_X, X_kv=C18_X, tokens_q=C18_TOKENS, tokens_k=C18_TOKENS)
    # 2. dot + causal mask + projections + temperature ≠ 1
    X = _rand(1, 5, 4)
    s["dot_causal_projection_T"] = _args(
        X_q=X, X_kv=X, qkv="projection", W_q=_rand(2, 4, 3), W_k=_rand(3, 4, 3), W_v=_rand(4, 4, 2), score="dot",
        temperature=0.5, mask=_causal(5, 5), tokens_q=["when", "you", "play", "the", "game"],
        tokens_k=["when", "you", "play", "the", "game"])
    # 3. general + padding, cross attention (n_q = 3 ≠ n_k = 5)
    pad = np.ones((3, 5), dtype=bool)
    pad[:, 3:] = False
    s["general_padding_cross"] = _args(
        X_q=_rand(5, 3, 4), X_kv=_rand(6, 5, 4), qkv="projection", W_q=_rand(7, 4, 3), W_k=_rand(8, 4, 3),
        W_v=_rand(9, 4, 3), score="general", params={"W": _rand(10, 3, 3)}, mask=pad,
        tokens_q=["I", "ate", "apples"], tokens_k=["나는", "사과를", "먹었다", "<pad>", "<pad>"])
    # 4. additive + one clicked (blocked) cell, Q, K, V given directly (d_q ≠ d_k), column convention
    blocked = np.ones((4, 4), dtype=bool)
    blocked[1, 2] = False
    s["additive_blocked_direct_column"] = _args(
        X_q=C18_X, X_kv=C18_X, qkv="direct", Q=_rand(11, 4, 2), K=_rand(12, 4, 3), V=_rand(13, 4, 2), score="additive",
        params={"W_a": _rand(14, 3, 2), "U_a": _rand(15, 3, 3), "w_a": _rand(16, 3)}, temperature=1.5,
        mask=blocked, convention="column", tokens_q=C18_TOKENS, tokens_k=C18_TOKENS)
    # 5. cosine + a query that sees nothing + a zero vector, column convention, tokens with quotes/HTML/newlines
    X = _rand(17, 7, 3)
    X[2] = 0.0
    m = np.ones((7, 7), dtype=bool)
    m[4] = False
    m[0, 6] = False
    s["cosine_fully_masked_column_nasty_tokens"] = _args(
        X_q=X, X_kv=X, score="cosine", mask=m, convention="column", tokens_q=NASTY_TOKENS, tokens_k=NASTY_TOKENS)
    # 6. scaled dot with the explicit 1/√d_k, cross attention with a causal mask (n_q < n_k), column convention
    s["sqrt_dk_cross_causal_column"] = _args(
        X_q=_rand(18, 3, 4), X_kv=_rand(19, 6, 4), scale=1.0 / math.sqrt(4), mask=_causal(3, 6), convention="column",
        tokens_q=["a", "b", "c"], tokens_k=["u", "v", "w", "x", "y", "z"])
    # 7. edited cells (arbitrary numbers), scale "none" (1) with T = 2, padding and a fully masked query
    Q = np.array([[0.1, -3.75, 1e-3], [123.456, -0.0, 7e-8], [2.5, 2.5, -1.0]], dtype=np.float32)
    K = np.array([[0.3333333, 1.0, -2.0], [1e-5, -0.25, 0.5], [3.1415927, 0.0, 1.0], [-1.5, 0.75, 0.125]], np.float32)
    V = np.array([[1.0, -1.0], [123.456, 0.001], [-7.5, 2.0], [0.0, 99.9]], dtype=np.float32)
    m = np.ones((3, 4), dtype=bool)
    m[:, 3] = False
    m[1] = False
    s["edited_scale_none_T2_direct"] = _args(
        X_q=_rand(45, 3, 2), X_kv=_rand(46, 4, 2), qkv="direct", Q=Q, K=K, V=V, scale=1.0, temperature=2.0, mask=m,
        tokens_q=["q0", "q1", "q2"],
        tokens_k=["k0", "k1", "k2", "<pad>"])
    # 8. dot, direct, cross attention with d_v ≠ d_k, no tokens given
    s["dot_direct_cross_no_tokens"] = _args(X_q=_rand(47, 2, 3), X_kv=_rand(48, 5, 3), qkv="direct",
                                            Q=_rand(20, 2, 3), K=_rand(21, 5, 3), V=_rand(22, 5, 4), score="dot")
    # 9. general in column convention: causal and one query that sees nothing, T = 0.8
    X = _rand(23, 4, 3)
    m = _causal(4, 4)
    m[1] = False
    s["general_column_causal_fully_masked"] = _args(
        X_q=X, X_kv=X, qkv="projection", W_q=_rand(24, 3, 2), W_k=_rand(25, 3, 2), W_v=_rand(26, 3, 3),
        score="general", params={"W": _rand(27, 2, 2)}, temperature=0.8, mask=m, convention="column",
        tokens_q=C18_TOKENS, tokens_k=C18_TOKENS)
    # 10. additive, cross attention with projections, d_a = 3, T = 0.7, row convention
    s["additive_cross_projection"] = _args(
        X_q=_rand(28, 2, 3), X_kv=_rand(29, 4, 3), qkv="projection", W_q=_rand(30, 3, 2), W_k=_rand(31, 3, 2),
        W_v=_rand(32, 3, 3), score="additive",
        params={"W_a": _rand(33, 3, 2), "U_a": _rand(34, 3, 2), "w_a": _rand(35, 3)}, temperature=0.7,
        tokens_q=["the", "cat"], tokens_k=["le", "chat", "est", "là"])
    # 11. plain nested lists of Python floats (a JSON import), X_kv None, scale "sqrt_dk" given for dot
    s["nested_lists_dot_sqrt_dk"] = _args(X_q=[[0.1, 0.2], [0.3, -0.4], [1.5, 2.25]], score="dot",
                                          scale=1.0 / math.sqrt(2), tokens_q=["x", "y", "z"])
    # 12. float64 numpy input keeps all its digits (core computes in float64)
    X = _rand(36, 4, 3, dtype=np.float64) / 3
    s["float64_scaled_dot_causal"] = _args(X_q=X, X_kv=X, mask=_causal(4, 4), tokens_q=C18_TOKENS,
                                           tokens_k=C18_TOKENS)
    return s


SCENARIOS = _scenarios()


def _page(args: dict):
    """The page's numbers: core.lab.playground called directly with the Playground's keyword arguments."""
    kw = {k: args[k] for k in PLAYGROUND_KEYS}
    kw["params"] = kw["params"] or None
    return core.lab.playground(**kw).attn


# ---------------------------------------------------------------------------
# Independent references (no core): row-convention Q, K, V in float64, then
# a pure-Python loop (every score) and torch's SDPA (the scores it can express)
# ---------------------------------------------------------------------------

def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _row_qkv(args: dict):
    if args["qkv"] == "direct":
        return _f64(args["Q"]), _f64(args["K"]), _f64(args["V"])
    Xq = _f64(args["X_q"])
    Xkv = Xq if args["X_kv"] is None else _f64(args["X_kv"])
    if args["qkv"] == "identity":
        return Xq, Xkv, Xkv
    return Xq @ _f64(args["W_q"]), Xkv @ _f64(args["W_k"]), Xkv @ _f64(args["W_v"])


def _loop_reference(args: dict) -> tuple[np.ndarray, np.ndarray]:
    """Weights and output, one (query, key) pair at a time, in the scenario's convention."""
    Q, K, V = _row_qkv(args)
    p = {k: _f64(v) for k, v in (args["params"] or {}).items()}
    score = args["score"]
    scale = args["scale"] if args["scale"] is not None else (1 / math.sqrt(K.shape[1]) if score == "scaled_dot" else 1.0)

    def f(q, k):
        if score in ("dot", "scaled_dot"):
            return sum(a * b for a, b in zip(q, k, strict=True))
        if score == "cosine":
            nq, nk = max(math.hypot(*q), 1e-12), max(math.hypot(*k), 1e-12)
            return sum(a * b for a, b in zip(q, k, strict=True)) / (nq * nk)
        if score == "general":
            return float(k @ p["W"] @ q)
        return float(p["w_a"] @ np.tanh(p["W_a"] @ q + p["U_a"] @ k))

    n_q, n_k = Q.shape[0], K.shape[0]
    mask = np.ones((n_q, n_k), dtype=bool) if args["mask"] is None else np.asarray(args["mask"], dtype=bool)
    W = np.zeros((n_q, n_k))
    for i in range(n_q):
        logits = {j: f(Q[i], K[j]) * scale / args["temperature"] for j in range(n_k) if mask[i, j]}
        if logits:
            top = max(logits.values())
            z = sum(math.exp(v - top) for v in logits.values())
            for j, v in logits.items():
                W[i, j] = math.exp(v - top) / z
    O = W @ V
    return (W, O) if args["convention"] == "row" else (W.T, O.T)


def _sdpa_reference(args: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.nn.functional.scaled_dot_product_attention; the weights are SDPA with V = I."""
    Q, K, V = (torch.from_numpy(a) for a in _row_qkv(args))
    score = args["score"]
    if score == "cosine":
        Q, K = F.normalize(Q, dim=-1, eps=1e-12), F.normalize(K, dim=-1, eps=1e-12)
    if score == "general":
        Q = Q @ torch.from_numpy(_f64(args["params"]["W"])).T  # kᵀ W q = q'ᵀ k with q' = W q, i.e. Q' = Q Wᵀ
    default = 1 / math.sqrt(K.shape[1]) if score == "scaled_dot" else 1.0
    scale = (default if args["scale"] is None else args["scale"]) / args["temperature"]
    mask = None if args["mask"] is None else torch.as_tensor(np.asarray(args["mask"], dtype=bool))
    eye = torch.eye(K.shape[0], dtype=torch.float64)
    W = F.scaled_dot_product_attention(Q, K, eye, attn_mask=mask, scale=scale)
    O = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, scale=scale)
    return (W, O) if args["convention"] == "row" else (W.T, O.T)


# ---------------------------------------------------------------------------
# Running the snippets: one fresh interpreter per kind, every snippet in its own namespace
# ---------------------------------------------------------------------------

def _batch_script(snippets: dict[str, str]) -> str:
    return (
        "import sys, traceback\n"
        f"SNIPPETS = {snippets!r}\n"
        "for name, src in SNIPPETS.items():\n"
        f"    print({MARK!r} + name, flush=True)\n"
        "    try:\n"
        "        exec(compile(src, name, 'exec'), {'__name__': '__main__'})\n"
        "    except BaseException:\n"
        "        traceback.print_exc(file=sys.stdout)\n"
        "    sys.stdout.flush()\n"
    )


def _parse(stdout: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    name = None
    for line in stdout.splitlines():
        if line.startswith(MARK):
            name = line[len(MARK):]
            out[name] = {"lines": []}
            continue
        if name is None:
            continue
        out[name]["lines"].append(line)
        for key, prefix in (("weights", codegen.WEIGHTS_PREFIX), ("output", codegen.OUTPUT_PREFIX)):
            if line.startswith(prefix):
                out[name][key] = torch.tensor(json.loads(line[len(prefix):]), dtype=torch.float64)
    return out


NOTEBOOK_SCENARIO = "general_padding_cross"
_EXECUTE = """
import sys
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, sys.argv[2])
"""


@pytest.fixture(scope="module")
def procs(tmp_path_factory) -> dict:
    """Three fresh interpreters started at once (2 cores, each pays the torch import): the core snippets
    from the repository root (import core works), the plain-PyTorch snippets from an empty folder
    without PYTHONPATH (import core would fail), and nbclient executing one notebook in a python3 kernel."""
    bare_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    empty = tmp_path_factory.mktemp("no_core_here")
    scripts = {kind: _batch_script({n: fn(a) for n, a in SCENARIOS.items()})
               for kind, fn in (("core", codegen.core_snippet), ("torch", codegen.torch_snippet))}
    nb_in, nb_out = empty.parent / "scenario.ipynb", empty.parent / "executed.ipynb"
    nb_in.write_bytes(codegen.notebook_bytes(SCENARIOS[NOTEBOOK_SCENARIO], title="Cross attention",
                                             formulas_md="$$S = Q W^\\top K^\\top$$"))
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    started = {
        "core": subprocess.Popen([sys.executable, "-c", scripts["core"]], cwd=ROOT,
                                 env=bare_env | {"PYTHONPATH": str(ROOT)}, **pipes),
        "torch": subprocess.Popen([sys.executable, "-c", scripts["torch"]], cwd=empty, env=bare_env, **pipes),
        "notebook": subprocess.Popen([sys.executable, "-c", _EXECUTE, str(nb_in), str(nb_out), str(ROOT)], cwd=empty,
                                     env=bare_env, **pipes),
    }
    yield started | {"notebook_path": nb_out}
    for p in started.values():
        if p.poll() is None:
            p.kill()
            p.wait()


def _finish(proc: subprocess.Popen) -> str:
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr
    return stdout


@pytest.fixture(scope="module")
def runs(procs) -> dict[str, dict[str, dict]]:
    """The parsed output of every snippet: runs[kind][scenario] with "weights", "output", "lines"."""
    return {kind: _parse(_finish(procs[kind])) for kind in ("core", "torch")}


@pytest.fixture(scope="module")
def executed_notebook(procs):
    _finish(procs["notebook"])
    return nbformat.read(procs["notebook_path"], as_version=4)


def _result(runs, kind: str, name: str) -> dict:
    r = runs[kind][name]
    assert "weights" in r and "output" in r, "\n".join(r["lines"])
    return r


def _close(got: torch.Tensor, want, atol: float) -> None:
    want = torch.as_tensor(want, dtype=torch.float64)
    assert got.shape == want.shape
    torch.testing.assert_close(got, want, atol=atol, rtol=atol)


@pytest.mark.parametrize("name", SCENARIOS)
def test_core_snippet_reproduces_the_page(runs, name):
    r, page = _result(runs, "core", name), _page(SCENARIOS[name])
    _close(r["weights"], page.weights.double(), 1e-6)
    _close(r["output"], page.output.double(), 1e-6)


@pytest.mark.parametrize("name", SCENARIOS)
def test_torch_snippet_reproduces_the_page(runs, name):
    r, page = _result(runs, "torch", name), _page(SCENARIOS[name])
    _close(r["weights"], page.weights.double(), 1e-5)
    _close(r["output"], page.output.double(), 1e-5)


@pytest.mark.parametrize("name", SCENARIOS)
def test_both_snippets_match_a_pair_by_pair_loop(runs, name):
    W, O = _loop_reference(SCENARIOS[name])
    for kind in ("core", "torch"):
        r = _result(runs, kind, name)
        _close(r["weights"], W, 1e-5)
        _close(r["output"], O, 1e-5)


SDPA_SCENARIOS = [n for n, a in SCENARIOS.items() if a["score"] in ("scaled_dot", "dot", "cosine", "general")]


def test_sdpa_covers_the_scaled_dot_product():
    assert {SCENARIOS[n]["score"] for n in SDPA_SCENARIOS} == {"scaled_dot", "dot", "cosine", "general"}
    assert any(SCENARIOS[n]["score"] == "scaled_dot" and SCENARIOS[n]["mask"] is not None for n in SDPA_SCENARIOS)


@pytest.mark.parametrize("name", SDPA_SCENARIOS)
def test_torch_snippet_matches_torch_sdpa(runs, name):
    W, O = _sdpa_reference(SCENARIOS[name])
    r = _result(runs, "torch", name)
    _close(r["weights"], W, 1e-5)
    _close(r["output"], O, 1e-5)


def test_float64_input_keeps_its_digits(runs):
    page = _page(SCENARIOS["float64_scaled_dot_causal"])
    assert page.weights.dtype == torch.float64
    for kind in ("core", "torch"):
        r = _result(runs, kind, "float64_scaled_dot_causal")
        _close(r["weights"], page.weights, 1e-12)
        _close(r["output"], page.output, 1e-12)


def test_fully_masked_query_gives_zeros(runs):
    r = _result(runs, "torch", "edited_scale_none_T2_direct")
    assert torch.equal(r["weights"][1], torch.zeros(4)) and torch.equal(r["output"][1], torch.zeros(2))
    r = _result(runs, "core", "cosine_fully_masked_column_nasty_tokens")
    assert torch.equal(r["weights"][:, 4], torch.zeros(7))  # column convention: query 4 is a column


def test_snippets_print_readable_numbers_and_no_errors(runs):
    for kind in ("core", "torch"):
        for name in SCENARIOS:
            text = "\n".join(runs[kind][name]["lines"])
            assert "Traceback" not in text and "weights α" in text and "tensor([[" in text, text
            assert "INJECTED" not in {line.strip() for line in runs[kind][name]["lines"]}


# ---------------------------------------------------------------------------
# The source text itself
# ---------------------------------------------------------------------------

def _literal_rows(src: str, name: str) -> list[str]:
    """The lines of the literal ``name = torch.tensor([ ... ])``."""
    lines = src.splitlines()
    start = lines.index(f"{name} = torch.tensor([")
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("]"))
    return lines[start + 1:end]


def test_matrices_one_row_per_line_with_token_labels_and_shapes():
    src = codegen.core_snippet(SCENARIOS["c18_scaled_dot"])
    rows = _literal_rows(src, "X")
    assert len(rows) == 4 and all(r.strip().startswith("[") for r in rows)
    assert [r.split("# ")[1] for r in rows] == [repr(t) for t in C18_TOKENS]
    assert "(n, d_model) = (4, 3)" in src and "core.lab.playground(" in src
    src = codegen.torch_snippet(SCENARIOS["dot_causal_projection_T"])
    assert "Q = X @ W_q  # (n_q, d_model) @ (d_model, d_k) → (n_q, d_k)" in src
    assert "W_v = torch.tensor([" in src and "(d_model, d_v) = (4, 2)" in src
    src = codegen.core_snippet(SCENARIOS["additive_blocked_direct_column"])  # queries of width 2, keys of width 3
    assert "(n_q, d_q) = (4, 2)" in src and "(n_k, d_k) = (4, 3)" in src and "(d_a, d_q) = (3, 2)" in src


@pytest.mark.parametrize("name", SCENARIOS)
def test_tokens_never_escape_their_quotes(name):
    args = SCENARIOS[name]
    for src in (codegen.core_snippet(args), codegen.torch_snippet(args)):
        tree = ast.parse(src)
        calls = [node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call) and
                 isinstance(node.func, ast.Attribute)]
        assert "system" not in calls and all(isinstance(n, (ast.Import, ast.Assign, ast.Expr)) for n in tree.body)
        for tok in args.get("tokens_q") or []:
            assert repr(tok) in src
        assert "INJECTED" not in {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
        assert not set(src) & set("\r\u2028\u202e\x00")  # no raw line separators or bidi overrides


def test_torch_snippet_has_only_the_scenarios_path():
    hallmarks = {"additive": "torch.tanh", "cosine": ".norm(", "general": "\nW = torch.tensor("}
    for name, args in SCENARIOS.items():
        src = codegen.torch_snippet(args)
        assert "import core" not in src and "core." not in src
        for score, mark in hallmarks.items():
            assert (mark in src) == (args["score"] == score), (name, score)
        # 1/√d_k: the scaled dot product's own scale, or chosen explicitly (every explicit scale ≠ 1 here is 1/√d_k)
        sqrt_dk = args["score"] == "scaled_dot" if args["scale"] is None else args["scale"] != 1.0
        assert ("scale = 1 / math.sqrt(d_k)" in src) == sqrt_dk, name
        assert ("dim=0" in src) == (args["convention"] == "column"), name
        assert ("masked_fill" in src) == (args["mask"] is not None), name
        assert ("W_q" in src) == (args["qkv"] == "projection"), name


def test_float32_literals_are_the_shortest_exact_decimals():
    src = codegen.core_snippet(SCENARIOS["edited_scale_none_T2_direct"])
    row = _literal_rows(src, "Q")[0].replace(" ", "")
    assert row.startswith("[0.1,-3.75,0.001],") and "123.456" in src and "7e-08" in src and "-0.0" in src
    assert "0.10000000149" not in src


# ---------------------------------------------------------------------------
# Size limit and bad input
# ---------------------------------------------------------------------------

def test_too_many_tokens_is_refused_with_a_clear_message():
    n = codegen.MAX_CODE_TOKENS
    ok = _args(X_q=_rand(40, n, 4), X_kv=_rand(40, n, 4), tokens_q=[f"t{i}" for i in range(n)])
    assert codegen.size_problem(ok) is None
    compile(codegen.core_snippet(ok), "ok", "exec")
    big = _args(X_q=_rand(41, n + 1, 4), X_kv=_rand(41, n + 1, 4))
    assert "too large" in codegen.size_problem(big)
    for fn in (codegen.core_snippet, codegen.torch_snippet):
        with pytest.raises(ValueError, match=f"too large to copy as code: {n + 1} queries.*limit is {n} tokens"):
            fn(big)
    with pytest.raises(ValueError, match="too large"):
        codegen.notebook(big, title="t", formulas_md=None)
    cross = _args(X_q=_rand(42, 2, 4), X_kv=_rand(43, 512, 4))
    with pytest.raises(ValueError, match="512 keys"):
        codegen.core_snippet(cross)
    wide = _args(X_q=_rand(44, 3, 65), X_kv=_rand(44, 3, 65))  # one-hot over a large vocabulary
    with pytest.raises(ValueError, match=r"X_q has shape \(3, 65\)"):
        codegen.torch_snippet(wide)
    # with Q, K, V given directly X is not embedded, so a wide X does not count
    direct = _args(X_q=_rand(44, 3, 65), X_kv=_rand(44, 3, 65), qkv="direct", Q=_rand(45, 3, 2), K=_rand(46, 3, 2),
                   V=_rand(47, 3, 2))
    src = codegen.core_snippet(direct)
    assert codegen.size_problem(direct) is None and "X_q = torch" not in src and "\nX = torch" not in src


def test_malformed_args_raise_value_error():
    good = SCENARIOS["c18_scaled_dot"]
    with pytest.raises(ValueError, match="unknown argument"):
        codegen.core_snippet(good | {"temprature": 2.0})
    with pytest.raises(ValueError, match="mask"):
        codegen.core_snippet(good | {"mask": np.ones((3, 4), dtype=bool)})
    with pytest.raises(ValueError, match="params\\['W'\\]"):
        codegen.torch_snippet(good | {"score": "general"})
    with pytest.raises(ValueError, match="unknown score"):
        codegen.torch_snippet(good | {"score": "luong"})
    with pytest.raises(ValueError, match="NaN"):
        codegen.core_snippet(good | {"X_q": np.full((4, 3), np.nan, dtype=np.float32)})


# ---------------------------------------------------------------------------
# The notebook
# ---------------------------------------------------------------------------

def test_notebook_structure_and_download_bytes():
    args = SCENARIOS["cosine_fully_masked_column_nasty_tokens"]
    formulas = [r"$$\alpha = \mathrm{softmax}(S)$$", r"$$o = \sum_i \alpha_i v_i$$"]
    nb = codegen.notebook(args, title="My <script>scenario</script>", formulas_md=formulas)
    nbformat.validate(nb)
    kinds = [c.cell_type for c in nb.cells]
    # title, 2 formula cells, core, the pipeline (import + 5 steps), plain PyTorch, the check
    assert kinds[0] == "markdown" and kinds[-1] == "code" and kinds.count("code") == 1 + 1 + 5 + 1 + 1
    assert "$$" in nb.cells[1].source and nb.cells[2].source == formulas[1]
    assert "<script>" not in nb.cells[0].source and "&lt;script&gt;" in nb.cells[0].source
    # the scenario text (tokens with HTML and backticks) sits inside a fence, shown literally
    head = nb.cells[0].source
    fence_at = head.index("```")
    assert "<b>" not in head[:fence_at] and repr(NASTY_TOKENS[1]) in head[fence_at:]
    codes = [c.source for c in nb.cells if c.cell_type == "code"]
    assert codes[0].strip() == codegen.core_snippet(args).strip()
    assert codes[-2].strip() == codegen.torch_snippet(args).strip()
    assert "max" in codes[-1] and "abs()" in codes[-1]
    steps = [c for c in codes if c.splitlines()[-1].startswith(("show(tr, steps=", "show(attn, steps="))]
    assert [c.split("steps=[")[1].split("]")[0] for c in steps] == ["'scores'", "'scaled'", "'masked'", "'weights'", "'output'"]
    # every step's markdown: its title, its formula in $$…$$ and its shape, before the cell that draws it
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and cell.source in steps:
            md = nb.cells[i - 1].source
            assert md.startswith("### ") and md.count("$$") == 2 and "Shape: `" in md
    # saved with its outputs: every code cell ran; each step's cell holds the SVG and the widget's view
    assert all(c.execution_count for c in nb.cells if c.cell_type == "code")
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    for cell in (c for c in nb.cells if c.cell_type == "code" and c.source in steps):
        kinds_out = [list(o.data) for o in cell.outputs]
        assert "image/svg+xml" in kinds_out[0] and "text/html" in kinds_out[0]
        assert state[cell.outputs[1].data["application/vnd.jupyter.widget-view+json"]["model_id"]]
    raw = codegen.notebook_bytes(args, title="t", formulas_md=None, lang="ko")
    back = nbformat.reads(raw.decode("utf-8"), as_version=4)
    nbformat.validate(back)
    assert back.metadata.kernelspec.name == "python3" and "$$" in back.cells[1].source
    assert any("시나리오" in c.source for c in back.cells if c.cell_type == "markdown")
    assert "모양: `" in raw.decode("utf-8") and "# 어텐션 가중치와 출력에서" in raw.decode("utf-8")


def test_the_saved_outputs_are_what_the_cells_print():
    """The pre-rendered stream outputs are the snippets' own printed lines (the page's numbers)."""
    args = SCENARIOS["dot_causal_projection_T"]
    nb = codegen.notebook(args, title="t")
    page = _page(args)
    texts = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells if c.cell_type == "code"]
    for text in (texts[0], texts[-2]):
        parsed = _parse(MARK + "x\n" + text)["x"]
        _close(parsed["weights"], page.weights.double(), 1e-6)
        _close(parsed["output"], page.output.double(), 1e-6)


def test_notebook_executes_top_to_bottom_with_the_pages_numbers(executed_notebook):
    from jupyter_client.kernelspec import find_kernel_specs

    assert "python3" in find_kernel_specs()
    nbformat.validate(executed_notebook)
    code = [c for c in executed_notebook.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code) and not any(o.output_type == "error" for c in code for o in c.outputs)
    texts = ["".join(o.get("text", "") for o in c.outputs) for c in code]
    page = _page(SCENARIOS[NOTEBOOK_SCENARIO])
    texts = [texts[0], texts[-2], texts[-1]]
    for text in texts[:2]:  # the core cell and the plain-PyTorch cell
        parsed = _parse(MARK + NOTEBOOK_SCENARIO + "\n" + text)[NOTEBOOK_SCENARIO]
        _close(parsed["weights"], page.weights.double(), 1e-5)
        _close(parsed["output"], page.output.double(), 1e-5)
    assert "max |Δ weights| = " in texts[2]
    diff = float(texts[2].split("max |Δ weights| = ")[1].split(",")[0])
    assert diff < 1e-5


def test_the_mask_is_described_as_the_page_describes_it():
    """Causal, PAD keys and clicked cells, read off the matrix (the page builds it from those three)."""
    X = C18_X
    base = _args(X_q=X, X_kv=X, tokens_q=C18_TOKENS, tokens_k=C18_TOKENS)

    def lines(mask, lang="en"):
        return codegen._describe(codegen._scenario(base | {"mask": mask}), lang)

    causal = _causal(4, 4)
    pad = causal.copy()
    pad[:, 2] = False
    clicked = causal.copy()
    clicked[3, 0] = False
    only_clicked = np.ones((4, 4), dtype=bool)
    only_clicked[1, 2] = False
    text = "\n".join(lines(pad))
    assert "causal mask: query i sees keys j ≤ i only" in text and "PAD keys, masked for every query: '사과를'" in text
    assert "blocked (query → key) cells" not in text and "8 of 16" in text
    text = "\n".join(lines(clicked))
    assert "causal mask" in text and "blocked (query → key) cells: '먹었다' → '나는'" in text and "7 of 16" in text
    text = "\n".join(lines(only_clicked))
    assert "causal" not in text and "PAD" not in text and "'오늘' → '사과를'" in text
    nothing = only_clicked.copy()
    nothing[0, :] = False
    assert "queries that see no key (weights and output 0): '나는'" in "\n".join(lines(nothing))
    assert "인과 마스크" in "\n".join(lines(pad, "ko")) and "마스크: 없음" in "\n".join(lines(None, "ko"))
