"""Streamlit's internals are reached from one module, for one pinned version (issue #32): the pin in
requirements.txt and pyproject.toml agrees with ui/streamlit_internals.EXPECTED_STREAMLIT, the adapter refuses
another version with a clear message, and no other module of the app reaches an internal."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest
import streamlit
import tomllib

from ui import streamlit_internals as internals

ROOT = Path(__file__).resolve().parents[2]
ADAPTER = ROOT / "ui" / "streamlit_internals.py"
APP_CODE = [ROOT / "app.py", *(p for d in ("app_pages", "ui", "attention_lab", "core") for p in sorted((ROOT / d).rglob("*.py")))]


def _pin(requirement: str) -> str | None:
    m = re.fullmatch(r"\s*streamlit\s*==\s*([\w.]+)\s*(#.*)?", requirement)
    return m.group(1) if m else None


def test_requirements_pin_streamlit_exactly_to_the_adapters_version():
    lines = [ln for ln in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
             if re.match(r"\s*streamlit\b", ln)]
    assert [_pin(ln) for ln in lines] == [internals.EXPECTED_STREAMLIT], lines
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert [_pin(d) for d in deps if re.match(r"\s*streamlit\b", d)] == [internals.EXPECTED_STREAMLIT], deps


def test_the_installed_streamlit_is_the_pinned_one():
    assert streamlit.__version__ == internals.EXPECTED_STREAMLIT
    internals.check_version()


def test_another_version_is_refused_loudly():
    with pytest.raises(internals.UnsupportedStreamlit,
                       match=r"needs streamlit==1\.67\.0 \(installed: 1\.68\.0\).*pip install -r requirements\.txt"):
        internals.check_version("1.68.0")


# the runtime's managers and the upload manager's own fields (its lock is ``._lock`` in a subclass: the class
# itself is only reachable through the first names)
FORBIDDEN_TEXT = ("._session_mgr", "runtime.get_instance(", "__class__ =", "streamlit.runtime.memory_uploaded_file_manager",
                  "MemoryUploadedFileManager", "uploaded_file_mgr", ".file_storage", "._total_bytes", "._file_count")


def _streamlit_names(tree: ast.AST) -> set[str]:
    """Names a module binds to streamlit or one of its modules / objects (``import streamlit as st``,
    ``from streamlit import runtime``, ``from streamlit.x import y``)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.split(".")[0] == "streamlit"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "streamlit":
            names |= {a.asname or a.name for a in node.names}
    return names


def _code_only(source: str) -> str:
    """The source with its comments and string literals blanked (a docstring may name an internal), lines kept."""
    lines = source.splitlines(keepends=True)
    for tok in reversed(list(tokenize.generate_tokens(io.StringIO(source).readline))):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            (r0, c0), (r1, c1) = tok.start, tok.end
            if r0 == r1:
                lines[r0 - 1] = lines[r0 - 1][:c0] + " " * (c1 - c0) + lines[r0 - 1][c1:]
            else:
                lines[r0 - 1] = lines[r0 - 1][:c0] + "\n"
                for r in range(r0, r1 - 1):
                    lines[r] = "\n"
                lines[r1 - 1] = lines[r1 - 1][c1:]
    return "".join(lines)


def private_streamlit_uses(source: str) -> list[tuple[int, str]]:
    """(line, what) for every reach into a Streamlit internal: the forbidden texts above, an underscore
    attribute of a name bound to streamlit (``st._x``, ``runtime._x``, ``runtime.get_instance()._x``) or of
    what it returns, and an assignment to ``__class__``."""
    out = [(n, t) for n, line in enumerate(_code_only(source).splitlines(), 1) for t in FORBIDDEN_TEXT if t in line]
    tree = ast.parse(source)
    names = _streamlit_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            base = node.value
            while isinstance(base, ast.Attribute | ast.Call | ast.Subscript):
                base = base.func if isinstance(base, ast.Call) else base.value
            if isinstance(base, ast.Name) and base.id in names:
                out.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "__class__"
                                                 for t in node.targets):
            out.append((node.lineno, "__class__ ="))
    return sorted(set(out))


def test_the_checker_finds_internals():
    src = ("from streamlit import runtime\nimport streamlit as st\n"
           "m = runtime.get_instance()._session_mgr\nst._main\nx.__class__ = int\nst.session_state.get('a')\n"
           '"""a docstring naming runtime.get_instance()._session_mgr\nand ._file_count"""  # or ._session_mgr\n'
           "n = mgr._file_count\n")
    lines = [n for n, _ in private_streamlit_uses(src)]
    assert lines == [3, 3, 3, 4, 5, 9], lines


def test_only_the_adapter_reaches_streamlit_internals():
    assert ADAPTER in APP_CODE
    found = {str(p.relative_to(ROOT)): uses for p in APP_CODE if p != ADAPTER
             and (uses := private_streamlit_uses(p.read_text(encoding="utf-8")))}
    assert not found, found
