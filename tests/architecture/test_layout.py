"""Static checks of the code's shape (AST only, no new dependency): no import cycles, session-state
keys only from the registry (ui/state.py), no ui module importing a page, no page importing
torch, functions in app_pages/ and ui/ short enough to read, names that do not clash with the
math, and tests that neither wait by the clock nor call other tests."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "serving", "ui", "app_pages", "bench", "scripts", "attention_lab")
MAX_LINES = 60


def sources() -> dict[str, Path]:
    """Module name → file for every Python file of the project (pages are modules named app_pages.<name>)."""
    files = {"app": ROOT / "app.py"}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            files[".".join(parts)] = path
    return files


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The project modules a module imports (absolute and relative), at any depth of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[:len(pkg) - node.level + 1]
                base = ".".join(pkg + ([base] if base else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            targets = subs or [base]  # `from . import x` imports the submodule x, not the package again
        else:
            continue
        for tgt in targets:
            while tgt and tgt not in known:
                tgt = tgt.rpartition(".")[0]
            if tgt and tgt != name:
                out.add(tgt)
    return out


def graph() -> dict[str, set[str]]:
    files = sources()
    return {name: imports(name, path, set(files)) for name, path in files.items()}


def find_cycle(g: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(g.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(g):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_the_checker_finds_a_cycle_and_a_literal_key():
    """The checks below can fail: a made-up cycle and a made-up literal key are caught."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    bad = ast.parse('import streamlit as st\nst.session_state["x.y"] = 1\nst.text_input("t", key=f"x.{1}")\n')
    assert len(literal_keys(bad)) == 2


def test_no_import_cycles_anywhere():
    cycle = find_cycle(graph())
    assert cycle is None, " → ".join(cycle)


def test_ui_never_imports_a_page_and_no_page_imports_another_or_torch():
    g = graph()
    for name, deps in g.items():
        if name.startswith("ui"):
            assert not [d for d in deps if d.startswith("app_pages")], name
        if name.startswith("app_pages."):
            assert not [d for d in deps if d.startswith("app_pages")], name
    for path in (ROOT / "app_pages").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not [m for m in mods if m == "torch" or m.startswith("torch.")], f"{path.name} imports torch"


def test_core_never_imports_streamlit_or_plotly():
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not mods & {"streamlit", "plotly", "ui", "app_pages"}, path.name


def _imported_roots(path: Path) -> set[str]:
    """Top-level names of every module a file imports, at any depth (lazy imports inside functions too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return mods | {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}


def test_the_notebook_package_never_imports_streamlit_plotly_or_the_app():
    """attention_lab (notebook views, notebook export, shared building blocks) runs in a kernel without
    Streamlit; the app imports it, never the other way round."""
    files = sorted((ROOT / "attention_lab").rglob("*.py"))
    assert any(p.name == "notebook.py" for p in files)
    for path in files:
        assert not _imported_roots(path) & {"streamlit", "plotly", "ui", "app_pages"}, path.name
    # the checker sees lazy imports too (it can fail)
    probe = ROOT / "tests" / "architecture" / "_probe_lazy_import.py"
    probe.write_text("def f():\n    import streamlit as st\n    from ui import state\n", encoding="utf-8")
    try:
        assert _imported_roots(probe) >= {"streamlit", "ui"}
    finally:
        probe.unlink()


def test_serving_never_imports_streamlit_plotly_or_the_app():
    """The serving engine (the decode schedulers, the training queue, the fair share) runs without Streamlit:
    the tests and the benchmarks drive it directly, and the decoding process imports it alone."""
    files = sorted((ROOT / "serving").rglob("*.py"))
    assert {p.stem for p in files} >= {"decoding", "decode_process", "training", "fair", "scheduler"}
    for path in files:
        assert not _imported_roots(path) & {"streamlit", "plotly", "ui", "app_pages", "attention_lab"}, path.name


_ENGINE = {"socket", "subprocess", "concurrent", "multiprocessing"}  # what a serving engine is made of


def test_ui_holds_no_serving_engine():
    """The four modules of the engine left ui/ for serving/, and no module of ui/ that imports no Streamlit runs
    threads of work, processes or sockets of its own (such a module belongs to serving/)."""
    for gone in ("decoding", "decode_process", "training", "fair", "server_log"):
        assert not (ROOT / "ui" / f"{gone}.py").exists(), gone
    offenders = []
    for path in sorted((ROOT / "ui").rglob("*.py")):
        roots = _imported_roots(path)
        if "streamlit" not in roots and (roots & _ENGINE or "Thread" in path.read_text(encoding="utf-8")):
            offenders.append(str(path.relative_to(ROOT)))
    assert not offenders, offenders


def _top_level_names(tree: ast.Module) -> set[str]:
    out = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for n in tree.body:
        if isinstance(n, ast.Assign):
            out |= {x.id for t in n.targets for x in ast.walk(t) if isinstance(x, ast.Name)}
    return {n for n in out if not n.startswith("_")}


def test_compute_is_one_module_per_family_and_re_exports_each_name_once():
    """ui/compute/ is a package of family modules (there is no ui/compute.py beside it: Python would import the
    package and never see the file); ``ui.compute`` re-exports every public name of every family, each defined once."""
    assert not (ROOT / "ui" / "compute.py").exists(), "ui/compute.py is shadowed by the package ui/compute/: add a module there"
    init = ast.parse((ROOT / "ui" / "compute" / "__init__.py").read_text(encoding="utf-8"))
    exported = next(ast.literal_eval(n.value) for n in init.body if isinstance(n, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets))
    seen: dict[str, str] = {}
    for path in sorted((ROOT / "ui" / "compute").glob("*.py")):
        if path.name == "__init__.py":
            continue
        for name in _top_level_names(ast.parse(path.read_text(encoding="utf-8"))):
            assert name not in seen, f"{name} in {seen.get(name)} and {path.name}"
            seen[name] = path.name
    assert sorted(exported) == sorted(seen), set(exported) ^ set(seen)


def _protocol_members(proto: type) -> dict[str, object]:
    """A Protocol's own methods and properties by name (what an implementation must have)."""
    return {n: v for n, v in vars(proto).items() if not n.startswith("_") and (callable(v) or isinstance(v, property))}


def _lacks(proto: type, cls: type) -> list[str]:
    """The Protocol's members ``cls`` lacks or has with other parameters (names and kinds; properties as properties)."""
    import inspect

    out = []
    for name, member in _protocol_members(proto).items():
        mine = inspect.getattr_static(cls, name, None)
        if mine is None or isinstance(member, property) != isinstance(mine, property):
            out.append(name)
        elif not isinstance(member, property):
            want = [(p.name, p.kind) for p in inspect.signature(member).parameters.values()]
            have = [(p.name, p.kind) for p in inspect.signature(mine).parameters.values()]
            if want != have:
                out.append(f"{name}{have} != {want}")
    return out


def test_both_decode_schedulers_implement_the_one_protocol():
    """serving.scheduler.DecodeScheduler is what sessions call; the scheduler in a thread and the one in a process
    both have each of its methods, with the same parameters (a class that lacks one is caught)."""
    from serving.decode_process import ProcessScheduler
    from serving.decoding import Scheduler
    from serving.scheduler import DecodeScheduler

    assert set(_protocol_members(DecodeScheduler)) == {"submit", "submit_many", "find", "cancel", "free_pages", "stats",
                                                        "close"}
    for cls in (Scheduler, ProcessScheduler):
        assert _lacks(DecodeScheduler, cls) == [], cls.__name__

    class Partial:  # the checker can fail: a method missing, one with other parameters, a property as a method
        def submit(self, request): ...
        def submit_many(self, requests, extra): ...
        def free_pages(self): ...

    assert set(_lacks(DecodeScheduler, Partial)) >= {"find", "cancel", "stats", "close", "free_pages"}
    assert any(x.startswith("submit_many") for x in _lacks(DecodeScheduler, Partial))
    assert not isinstance(Partial(), DecodeScheduler)  # runtime_checkable agrees


def test_core_holds_no_export_code():
    """The notebook / snippet export (bilingual prose, #20) lives outside core."""
    assert not (ROOT / "core" / "codegen.py").exists()
    for path in (ROOT / "core").rglob("*.py"):
        assert "codegen" not in _imported_roots(path) and "attention_lab" not in _imported_roots(path), path.name


def test_core_holds_no_lessons_or_text():
    """The tutorial's lessons, exercise parsing, strings and progress live in attention_lab.tutorial (#20):
    no module of core is a tutorial, none names the lesson or string files (assets/lessons, assets/i18n,
    assets/explain) and none imports the tutorial."""
    assert not (ROOT / "core" / "tutorial.py").exists() and not (ROOT / "core" / "tutorial").exists()
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        words = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        assert not [w for w in words if w in ("lessons", "i18n", "explain") or "assets/lessons" in w
                    or "assets/i18n" in w], path.name
        parts = {part for m in _imported_modules(path) for part in m.split(".")}
        assert "tutorial" not in parts, path.name


def _imported_modules(path: Path) -> set[str]:
    """Full names of the modules a file imports (relative ones without their dots)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return mods | {f"{n.module or ''}.{a.name}".strip(".") for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                   for a in n.names}


def _combine_calls(tree: ast.AST) -> list[int]:
    """Lines calling ``combine`` of core.masks: ``masks.combine(…)``, ``core.masks.combine(…)``, or a
    ``combine`` imported from core.masks."""
    imported = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                and (n.module or "").endswith("masks") for a in n.names if a.name == "combine"}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr == "combine" and (
                    (isinstance(f.value, ast.Attribute) and f.value.attr in ("masks", "_masks"))
                    or (isinstance(f.value, ast.Name) and f.value.id in ("masks", "_masks"))):
                out.append(node.lineno)
            elif isinstance(f, ast.Name) and f.id in imported:
                out.append(node.lineno)
    return out


def test_one_scenario_builder():
    """The scenario's mask is built in one place (attention_lab.scenario.mask, the builder the Playground,
    the pages and the tutorial's checkers share): no other module of the app calls core.masks.combine."""
    assert _combine_calls(ast.parse("import core\ncore.masks.combine(2, 2)\n")) == [2]
    assert _combine_calls(ast.parse("from core.mechanism.masks import combine as c\nc(2, 2)\n")) == [2]
    callers = [name for name, path in sources().items() if not name.startswith("core")
               and _combine_calls(ast.parse(path.read_text(encoding="utf-8")))]
    assert callers == ["attention_lab.scenario"], callers
    # the tutorial's checkers reach core through the builder, not through a path of their own
    for path in (ROOT / "attention_lab" / "tutorial").rglob("*.py"):
        mods = _imported_modules(path)
        assert not [m for m in mods if m.endswith("masks") or m == "core.lab.c18_lookup"], path.name


def _scenario_calls(tree: ast.AST, names: set[str]) -> list[str]:
    """The calls ``scenario.<name>(…)`` (or ``<name>(…)`` imported from attention_lab.scenario) in a module."""
    imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").endswith("scenario") for a in node.names if a.name in names}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in names and isinstance(f.value, ast.Name) and f.value.id == "scenario":
                out.append(f.attr)
            elif isinstance(f, ast.Name) and f.id in imported:
                out.append(f.id)
    return out


def test_one_path_from_the_scenario_to_its_numbers():
    """attention_lab.scenario.numbers is the one path from a scenario to its numbers: ui.inputs (every page
    that shares the scenario, the Playground and the tutorial) calls it; build() (the tutorial's checkers)
    calls it inside the module. No other module assembles the pieces itself."""
    pieces = {"numbers", "Numbers", "qkv_matrices", "playground_args", "embedding", "score_params"}
    assert _scenario_calls(ast.parse("from attention_lab import scenario\nscenario.numbers({}, [], [], seed=0)\n"),
                           pieces) == ["numbers"]
    callers = {name: calls for name, path in sources().items() if name != "attention_lab.scenario"
               and (calls := _scenario_calls(ast.parse(path.read_text(encoding="utf-8")), pieces))}
    # ui.compute caches the embedding for numbers(); the score functions page adds the other functions' parameters
    assert callers == {"ui.inputs": ["numbers", "score_params"], "ui.compute.concepts": ["embedding"]}, callers


def _query_writes(tree: ast.AST) -> list[int]:
    """Lines that write ``st.query_params`` (an item set or deleted, or a method that changes it)."""
    def is_qp(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "query_params"
    out = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else []
        if any(isinstance(x, ast.Subscript) and is_qp(x.value) for x in targets):
            out.append(node.lineno)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and is_qp(node.func.value)
              and node.func.attr in ("from_dict", "update", "clear", "pop", "setdefault")):
            out.append(node.lineno)
    return out


def test_the_link_is_written_one_way():
    """Only ui.link writes st.query_params (the frame, once per run); the Playground writes its link through
    the address bar component alone."""
    assert _query_writes(ast.parse("st.query_params['a'] = '1'\ndel st.query_params['a']\nst.query_params.from_dict({})\n")) \
        == [1, 2, 3]
    writers = [name for name, path in sources().items() if not name.startswith("bench.")  # (AppTest's own URL)
               and _query_writes(ast.parse(path.read_text(encoding="utf-8")))]
    assert writers == ["ui.link"], writers


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _is_literal(node: ast.AST) -> bool:
    return (isinstance(node, ast.Constant) and isinstance(node.value, str)) or isinstance(node, ast.JoinedStr)


def literal_keys(tree: ast.AST) -> list[int]:
    """Line numbers of session-state keys written as string literals: ``st.session_state["…"]``,
    ``.get/.pop/.setdefault("…")`` on it, ``"…" in st.session_state`` and ``key="…"`` of a widget."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_session_state(node.value) and _is_literal(node.slice):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and _is_session_state(f.value) and f.attr in ("get", "pop", "setdefault")
                    and node.args and _is_literal(node.args[0])):
                lines.append(node.lineno)
            lines += [node.lineno for kw in node.keywords if kw.arg in ("key", "click_queue") and _is_literal(kw.value)]
        elif isinstance(node, ast.Compare) and _is_literal(node.left) and any(_is_session_state(c) for c in node.comparators):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("folder", ["app_pages", "ui", "tests/app", "tests/browser"])
def test_session_state_keys_come_from_the_registry(folder):
    offenders = []
    for path in [ROOT / "app.py"] + sorted((ROOT / folder).rglob("*.py")):
        if path.name == "state.py" and path.parent.name == "ui":
            continue
        offenders += [f"{path.relative_to(ROOT)}:{n}" for n in literal_keys(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offenders, offenders


def test_functions_in_pages_and_ui_are_short_enough_to_read():
    long = []
    for path in [ROOT / "app.py", *sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "ui").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_LINES:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} ({n} lines)")
    assert not long, long


def _calls(tree: ast.AST, names: set[str]) -> list[int]:
    """Lines that call an attribute or a function by one of these names (``page.wait_for_timeout(…)``)."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name in names:
                out.append(node.lineno)
    return out


def test_tests_wait_for_facts_not_for_the_clock():
    """No test waits a fixed time for the page (``wait_for_timeout``); the checker finds one."""
    assert _calls(ast.parse("page.wait_for_timeout(200)\n"), {"wait_for_timeout"}) == [1]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "tests").rglob("*.py"))
                 for n in _calls(ast.parse(p.read_text(encoding="utf-8")), {"wait_for_timeout"})]
    assert not offenders, offenders


_CLOCKS = {"monotonic", "perf_counter", "time"}  # time.monotonic() … : a loop that reads one has a deadline


def _is_sleep(node: ast.AST, bare: set[str]) -> bool:
    """``time.sleep(…)`` / ``asyncio.sleep(…)``, or ``sleep(…)`` where ``from time import sleep`` made it a name."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if isinstance(f, ast.Attribute):
        return f.attr == "sleep" and isinstance(f.value, ast.Name) and f.value.id in {"time", "asyncio"}
    return isinstance(f, ast.Name) and f.id in bare


def _has_deadline(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """The loop's condition, iterable or body reads a clock (``time.monotonic()``) or something named *deadline*."""
    parts = [loop.test] if isinstance(loop, ast.While) else [loop.iter]
    for node in (n for part in [*parts, *loop.body] for n in ast.walk(part)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _CLOCKS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "time":
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"monotonic", "perf_counter"}:
            return True
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if "deadline" in name.lower():
            return True
    return False


def _fixed_sleeps(tree: ast.AST) -> list[int]:
    """Lines of sleeps not inside a polling loop: the nearest enclosing ``while``/``for`` (in the same function)
    must check a deadline, so the sleep only paces a wait for a fact."""
    bare = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module in {"time", "asyncio"}
            for a in n.names if a.name == "sleep"}
    out = []

    def visit(node: ast.AST, loop) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_sleep(child, bare) and (loop is None or not _has_deadline(loop)):
                out.append(child.lineno)
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, None)  # a function's body runs where it is called, not in this loop
            elif isinstance(child, (ast.For, ast.AsyncFor, ast.While)):
                visit(child, child)
            else:
                visit(child, loop)

    visit(tree, None)
    return sorted(out)


def test_fixed_sleeps_checker():
    """What the sleep checker flags and what it lets through."""
    flagged = [
        "import time\ntime.sleep(1)\n",  # bare
        "import time\nfor _ in range(3):\n    time.sleep(1)\n",  # a loop, but no deadline: 3 s, fixed
        "import time\nwhile not done():\n    time.sleep(0.1)\n",  # no deadline: may never end
        "from time import sleep\nsleep(2)\n",
        "import asyncio\nasync def f():\n    await asyncio.sleep(1)\n",
        "import time\nwhile time.monotonic() < deadline:\n    def f():\n        time.sleep(1)\n",  # runs where f is called
    ]
    for code in flagged:
        assert _fixed_sleeps(ast.parse(code)), code
    allowed = [
        "import time\nend = time.monotonic() + 5\nwhile not ok():\n    assert time.monotonic() < end\n    time.sleep(0.1)\n",
        "import time\ndeadline = time.monotonic() + 5\nwhile not ok() and time.monotonic() < deadline:\n    time.sleep(0.1)\n",
        "import time\nfor _ in range(50):\n    if ok() or self.deadline_passed():\n        break\n    time.sleep(0.1)\n",
        "import time\nmonkeypatch.setattr(time, 'sleep', lambda s: None)\n",  # not a call of sleep
    ]
    for code in allowed:
        assert _fixed_sleeps(ast.parse(code)) == [], code


def test_tests_sleep_only_while_polling_for_a_fact():
    """A test may sleep only inside a loop that checks a deadline (polling for the fact it needs);
    a fixed sleep passes or fails with the machine's load."""
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "tests").rglob("*.py"))
                 for n in _fixed_sleeps(ast.parse(p.read_text(encoding="utf-8")))]
    assert not offenders, offenders


def test_every_browser_test_is_marked_browser():
    """`-m "not browser"` selects no test under tests/browser (so it never starts Chromium)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", "not browser", str(ROOT / "tests" / "browser")],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    selected = [line for line in out.stdout.splitlines() if "::" in line]
    assert out.returncode == 5 and not selected, (out.returncode, selected[:5], out.stdout[-500:])
    everything = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                 str(ROOT / "tests" / "browser")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert len([line for line in everything.stdout.splitlines() if "::" in line]) > 20



def registry_named_k(tree: ast.AST) -> list[int]:
    """Lines that name a page's key registry ``K`` (``K = state.MASKS``): K is the key matrix."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "K" for t in node.targets)
            and isinstance(node.value, ast.Attribute) and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "state"]


def single_letter_names(tree: ast.AST) -> list[int]:
    """Lines that bind N, O, S or M at a module's top level (as constants beside the formulas)."""
    return [node.lineno for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
            and any(isinstance(n, ast.Name) and n.id in {"N", "O", "S", "M"}
                    for t in node.targets for n in ([t] if isinstance(t, ast.Name) else getattr(t, "elts", [])))]


def test_names_do_not_clash_with_the_math():
    """A page's session keys are ``KEYS = state.<PAGE>`` (``K`` is the key matrix, ``Numbers.K``), and one
    class of the project is named ``View`` (ui/view.py: how the Playground is shown)."""
    assert registry_named_k(ast.parse("K = state.MASKS\nKEYS = state.MASKS\n")) == [1]
    files = [*sorted((ROOT / "app_pages").glob("*.py")), *sorted((ROOT / "tests").rglob("*.py"))]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in files
                 for n in registry_named_k(ast.parse(p.read_text(encoding="utf-8")))]
    assert not offenders, offenders
    # the tutorial's token positions are not N, O, S, M (count, output, scores, mask in the formulas)
    assert single_letter_names(ast.parse("N, O, S, M = 0, 1, 2, 3\nNANEUN = 0\n")) == [1]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in [*sorted((ROOT / "attention_lab").rglob("*.py")), *files]
                 for n in single_letter_names(ast.parse(p.read_text(encoding="utf-8")))]
    assert not offenders, offenders
    views = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sources().values()
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ClassDef) and node.name == "View"]
    assert len(views) == 1 and views[0].startswith("ui/view.py:"), views


def test_no_test_calls_another_test():
    """A test that calls others runs them twice and hides which one failed."""
    def calls_tests(tree: ast.AST) -> list[int]:
        return [c.lineno for fn in tree.body if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test")
                for c in ast.walk(fn) if isinstance(c, ast.Call)
                and getattr(c.func, "id", getattr(c.func, "attr", "")).startswith("test_")]
    assert calls_tests(ast.parse("def test_a():\n    test_b()\n")) == [2]
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "tests").rglob("test_*.py"))
                 for n in calls_tests(ast.parse(p.read_text(encoding="utf-8")))]
    assert not offenders, offenders
