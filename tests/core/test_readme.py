"""The README is a guide that cannot drift from the code: its python examples run (the recipes' worked examples
among them, with a counter on the one attention function), every name and file it gives exists, its pages table is
ui/nav.py's, its layout lists every module, and the order of core's sub-packages it states holds."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _text() -> str:
    return README.read_text(encoding="utf-8")


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", _text(), flags=re.S)


def _section(title: str) -> str:
    """The README's text under a ``## title`` heading, up to the next ``## `` heading."""
    return _text().split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_readme_python_examples_run(capsys, monkeypatch, attention_calls):
    """Every python block runs as written, each in a fresh namespace from the repository's root; the variant and the
    model recipes compute their attention through the one function (counted), and the printed values are right."""
    blocks = _blocks()
    assert len(blocks) >= 5, "README has lost its examples (use, variant, model, page, lesson)"
    monkeypatch.chdir(ROOT)
    calls = {}
    for code in blocks:
        before = len(attention_calls)
        exec(compile(code, "README.md", "exec"), {"__name__": "readme_example"})
        name = re.search(r"^def (\w+)", code, flags=re.M)
        calls[name.group(1) if name else code.split("\n", 1)[0]] = len(attention_calls) - before
    out = capsys.readouterr().out
    assert "0.2091, 0.2091, 0.2091, 0.3726" in out and "torch.Size([1, 2, 5, 5])" in out
    from attention_lab import tutorial

    assert f"{len(tutorial.LESSONS)} lessons" in out
    assert calls.get("scalable_softmax_attention", 0) >= 1, "the variant recipe does not call the one attention function"
    assert calls.get("tiny_decoder", 0) >= 2, "the model recipe does not call the one attention function per layer"


def _core_imports(code: str) -> set[str]:
    tree = ast.parse(code)
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return {n for n in names if n == "core" or n.startswith("core.")}


def test_the_variant_and_model_recipes_build_on_the_packages_below_them():
    """A new variant uses the mechanism only; a new model the mechanism and the variants (the order stated in
    "Why core is cut in four")."""
    by_def = {m.group(1): code for code in _blocks() if (m := re.search(r"^def (\w+)", code, flags=re.M))}
    variant, model = by_def["scalable_softmax_attention"], by_def["tiny_decoder"]
    assert _core_imports(variant) and all(n.startswith("core.mechanism") for n in _core_imports(variant))
    assert _core_imports(model) and all(n.startswith(("core.mechanism", "core.variants")) for n in _core_imports(model))


def test_the_pages_table_is_the_navigation():
    """One row per page of ui.nav.PAGES, in its order, with its file and its curriculum ids; the tutorial's row gives
    the number of lessons."""
    from attention_lab import tutorial
    from ui import nav

    rows = [line for line in _section("The pages").splitlines() if re.search(r"`app_pages/\w+\.py`", line)]
    files = [re.search(r"`(app_pages/\w+\.py)`", r).group(1) for r in rows]
    assert files == [p.file for p in nav.PAGES], "the pages table does not follow ui/nav.py"
    for row, page in zip(rows, nav.PAGES, strict=True):
        assert row.rstrip(" |").rsplit("|", 1)[1].strip() == page.curriculum, f"{page.name}: curriculum ids differ"
    assert f"{len(tutorial.LESSONS)} lessons" in rows[files.index("app_pages/tutorial.py")]


def _resolve(dotted: str):
    """The object a dotted name names: the longest importable module prefix, then attributes."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)  # AttributeError: the README names what is not there
        return obj
    raise ImportError(dotted)


def test_every_python_name_the_readme_gives_exists():
    """Every `core.…`, `serving.…`, `attention_lab.…`, `ui.…` and `bench.…` name in backticks imports as written."""
    names = set()
    for code in re.findall(r"`([^`\n]+)`", _text()):
        for m in re.finditer(r"(?<![\w./])((?:core|serving|attention_lab|ui|bench)(?:\.[A-Za-z_]\w*)+)", code):
            names.add(m.group(1))
    assert len(names) > 25
    missing = []
    for name in sorted(names):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as e:
            missing.append(f"{name}: {e}")
    assert not missing, "the README names what is not there:\n" + "\n".join(missing)


LISTED = ("core", "core/mechanism", "core/variants", "core/models", "core/playground", "serving", "ui", "ui/compute",
          "ui/widgets", "attention_lab", "attention_lab/tutorial", "attention_lab/live", "bench")


def test_every_file_the_readme_gives_exists_and_the_layout_lists_every_module():
    text = _text()
    path = re.compile(r"(?<![\w/.])((?:core|serving|ui|app_pages|attention_lab|assets|bench|scripts|tests)/[\w/.{},-]+"
                      r"\.(?:py|json|js|css|md|sh)\b)")
    paths = {m for code in re.findall(r"`([^`\n]+)`", text) for m in path.findall(code)
             if "{" not in m and "<" not in m and "*" not in m}
    assert len(paths) > 10
    assert not [p for p in sorted(paths) if not (ROOT / p).exists()], "the README names files that are not there"
    layout = _section("Layout")
    unlisted = [f"{folder}/{p.name}" for folder in LISTED if (ROOT / folder).is_dir()
                for p in sorted((ROOT / folder).glob("*.py")) if p.name != "__init__.py"
                and not re.search(rf"(?<![\w.]){re.escape(p.stem)}(\.py)?(?!\w)", layout)]
    assert not unlisted, "modules the layout does not name: " + ", ".join(unlisted)


# what each of core's sub-packages may import besides the leaves beside them (LEAVES): those before it in the chain,
# and the module of the lab that the README names as borrowed
BUILDS_ON = {
    "core.mechanism": ("core.mechanism",),
    "core.variants": ("core.mechanism", "core.variants"),
    "core.models": ("core.mechanism", "core.variants", "core.models"),
    "core.playground": ("core.mechanism", "core.variants", "core.playground"),
}
LEAVES = ("core.checks", "core.seeded", "core.shapes", "core.tolerances")
BORROWED = ("core.playground.tokens",)


def _imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    found |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    return {n for n in found if n.startswith("core.") and n not in LEAVES}


def test_core_sub_packages_import_nothing_above_them():
    """mechanism ← variants ← models, and playground on mechanism and variants: an import back up fails here. The
    README says so ("Why core is cut in four"), naming the leaves and what is borrowed."""
    back_up = [f"{path.relative_to(ROOT)} imports {name}"
               for pkg, allowed in BUILDS_ON.items() for path in sorted((ROOT / pkg.replace(".", "/")).glob("*.py"))
               for name in sorted(_imports_of(path))
               if name not in BORROWED and not any(name == a or name.startswith(a + ".") for a in allowed)]
    assert not back_up, "an import back up core's chain:\n" + "\n".join(back_up)
    text = _text()
    assert "`core.mechanism` ← `core.variants`" in text and all(f"`{b}`" in text for b in BORROWED)
    assert all(f"`{leaf.replace('.', '/')}.py`" in text for leaf in LEAVES)


def test_the_readme_stays_a_guide():
    assert len(_text().splitlines()) <= 300, "README.md is a guide of at most 300 lines; history goes to CHANGELOG.md"
