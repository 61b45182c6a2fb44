"""Two guards over the whole tree (issue 53, point 6), each checking the property, not a name list:

* no tolerance literal in the product code outside ``core/tolerances.py``: a small float in a comparison, an
  ``atol``/``rtol``/``tol``/``tolerance`` argument or default, or a value bound to a name that says TOL or TIE;
* no module imports another module's ``_private`` name (``from m import _x``), tests included.

Tests keep their own bounds at their assertions: each is the bound of the reference it compares with (a float64
module, transformers in float32, an issue's stated bar) and reads best where it is checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("core", "ui", "app_pages", "attention_lab", "serving", "bench", "scripts")
TOLERANCE_MODULE = ROOT / "core" / "tolerances.py"
TOL_ARGS = {"atol", "rtol", "tol", "tolerance"}


def _small(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is float and 0 < abs(node.value) < 1e-2


def tolerance_literals(source: str) -> list[int]:
    """Lines of the tolerance literals in one module's source (see the module doc)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            found |= {n.lineno for part in [node.left, *node.comparators] for n in ast.walk(part) if _small(n)}
        elif isinstance(node, ast.keyword) and node.arg in TOL_ARGS and isinstance(node.value, ast.Constant) \
                and type(node.value.value) is float:
            found.add(node.value.lineno)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            named = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
            named += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
            found |= {d.lineno for a, d in named if a.arg in TOL_ARGS and _small(d)}
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and type(node.value.value) is float:
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            if any("TOL" in n.upper() or "TIE" in n.upper() for n in names):
                found.add(node.lineno)
    return sorted(found)


def _product_files():
    files = [ROOT / "app.py"] + [p for d in PRODUCT for p in sorted((ROOT / d).rglob("*.py"))]
    return [p for p in files if p != TOLERANCE_MODULE]


def test_the_tolerance_scan_finds_each_form():
    src = ("ok = gap < 1e-5\nwarn = abs(a - b) <= TOL + 1e-9\nassert torch.allclose(x, y, atol=1e-6)\n"
           "def f(x, *, tol=5e-7): pass\nEQUAL_TOL = 1e-5\n_TIE = 1e-6\n"
           "eps_ok = 1e-6\nx = y.clamp_min(1e-30)\nbig = w > 0.99\nn = tolerance\n")
    assert tolerance_literals(src) == [1, 2, 3, 4, 5, 6]


def test_no_tolerance_literal_outside_the_one_module():
    found = {str(p.relative_to(ROOT)): lines for p in _product_files()
             if (lines := tolerance_literals(p.read_text(encoding="utf-8")))}
    assert not found, f"tolerance literals outside core/tolerances.py (name them there): {found}"


def private_imports(source: str) -> list[str]:
    """``from m import _x`` and imports of a ``_private`` module, as 'line: what'."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            module_private = any(p.startswith("_") and not p.startswith("__") for p in (node.module or "").split("."))
            names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if names or module_private:
                out.append(f"{node.lineno}: from {'.' * node.level}{node.module or ''} import {names or '…'}")
        elif isinstance(node, ast.Import):
            out += [f"{node.lineno}: import {a.name}" for a in node.names
                    if any(p.startswith("_") and not p.startswith("__") for p in a.name.split("."))]
    return out


def test_the_private_import_scan_finds_each_form():
    src = "from m import _x, y\nfrom ._tensor import a\nimport pkg._inner\nfrom m import __version__\nfrom . import z\n"
    assert private_imports(src) == ["1: from m import ['_x']", "2: from ._tensor import …", "3: import pkg._inner"]


def test_no_module_imports_another_modules_private_name():
    files = [ROOT / "app.py"] + [p for d in (*PRODUCT, "tests") for p in sorted((ROOT / d).rglob("*.py"))]
    found = {str(p.relative_to(ROOT)): hits for p in files if (hits := private_imports(p.read_text(encoding="utf-8")))}
    assert not found, f"private names imported across modules (make them public or keep them home): {found}"
