"""The README's notebook example runs as written."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, "README has no python example"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "0.2091, 0.2091, 0.2091, 0.3726" in out and "torch.Size([1, 2, 5, 5])" in out


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
    """Every `core.…`, `attention_lab.…`, `ui.…` and `bench.…` name in backticks imports as written: the core
    table, "Where to change what" and the prose cannot drift from the code."""
    text = README.read_text(encoding="utf-8")
    names = set()
    for code in re.findall(r"`([^`\n]+)`", text):
        for m in re.finditer(r"(?<![\w./])((?:core|attention_lab|ui|bench)(?:\.[A-Za-z_]\w*)+)", code):
            names.add(m.group(1))
    assert len(names) > 40
    missing = []
    for name in sorted(names):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as e:
            missing.append(f"{name}: {e}")
    assert not missing, "the README names what is not there:\n" + "\n".join(missing)


def test_every_file_the_readme_gives_exists_and_the_layout_lists_every_module():
    text = README.read_text(encoding="utf-8")
    root = README.parent
    path = re.compile(r"(?<![\w/.])((?:core|ui|app_pages|attention_lab|assets|bench|scripts|tests)/[\w/.{},-]+"
                      r"\.(?:py|json|js|css|md|sh)\b)")
    paths = {m for code in re.findall(r"`([^`\n]+)`", text) for m in path.findall(code) if "{" not in m}
    assert len(paths) > 10
    assert not [p for p in sorted(paths) if not (root / p).exists()], "the README names files that are not there"
    layout = text.split("## Layout", 1)[1].split("### Where to change what", 1)[0]
    unlisted = [f"{folder}/{p.name}" for folder in ("ui", "ui/widgets", "attention_lab", "attention_lab/tutorial", "bench")
                for p in sorted((root / folder).glob("*.py")) if p.name != "__init__.py"
                and not re.search(rf"(?<![\w.]){re.escape(p.stem)}(\.py)?(?!\w)", layout)]
    assert not unlisted, "modules the layout does not name: " + ", ".join(unlisted)
