"""core.models.decoder split along its seams (issue #32): every core/decoder*.py file short enough to read, every name
the project imports from core.models.decoder still there, and the new modules free of streamlit and of core.models.decoder."""

from __future__ import annotations

import ast
from pathlib import Path

from core.models import decoder

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("app_pages", "ui", "core", "attention_lab", "tests", "bench", "scripts")
MAX_LINES = 350


def decoder_files() -> list[Path]:
    return sorted((ROOT / "core" / "models").glob("decoder*.py"))


def names_from_decoder(tree: ast.AST, in_core: bool) -> set[str]:
    """Names a module takes from core.models.decoder: ``from core.models.decoder import x`` (``from .decoder import x``
    inside core.models), and ``m.x`` where ``m`` is core.models.decoder bound by ``from core.models import decoder
    [as m]`` (``from . import decoder`` inside core.models) or ``import core.models.decoder`` (then
    ``core.models.decoder.x``)."""
    names, aliases, dotted = set(), set(), False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            absolute = node.level == 0 and node.module == "core.models.decoder"
            relative = in_core and node.level == 1 and node.module == "decoder"
            if absolute or relative:
                names |= {a.name for a in node.names}
            elif (node.level == 0 and node.module == "core.models") or (in_core and node.level == 1 and node.module is None):
                aliases |= {a.asname or a.name for a in node.names if a.name == "decoder"}
        elif isinstance(node, ast.Import):
            dotted |= any(a.name == "core.models.decoder" and a.asname is None for a in node.names)
            aliases |= {a.asname for a in node.names if a.name == "core.models.decoder" and a.asname}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id in aliases:
            names.add(node.attr)
        elif (dotted and isinstance(base, ast.Attribute) and base.attr == "decoder"
              and isinstance(base.value, ast.Attribute) and base.value.attr == "models"
              and isinstance(base.value.value, ast.Name) and base.value.value.id == "core"):
            names.add(node.attr)
    return names - {"*"}


def used_names() -> dict[str, list[str]]:
    """Name → the files that take it from core.models.decoder, over the project's packages and tests."""
    used: dict[str, list[str]] = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.parent == ROOT / "core" and path.name.startswith("decoder"):
                continue  # the decoder's own modules
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for name in names_from_decoder(tree, in_core=path.parts[len(ROOT.parts)] == "core"):
                used.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return used


def imported_modules(path: Path) -> set[str]:
    """The modules a file imports, at any depth; relative ones inside core as ``core.<name>``."""
    mods = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ("core." if node.level else "") + (node.module or "")
            mods.add(base.rstrip("."))
            mods |= {f"{base}.{a.name}".replace("..", ".") for a in node.names}
    return mods


def test_the_collector_sees_every_kind_of_import():
    tree = ast.parse("from core.models.decoder import A\nfrom core.models import decoder as d, pretrained\nd.B\n"
                     "import core.models.decoder\ncore.models.decoder.C\nfrom . import decoder\ndecoder.D\n")
    assert names_from_decoder(tree, in_core=False) == {"A", "B", "C"}
    assert names_from_decoder(tree, in_core=True) == {"A", "B", "C", "D"}
    assert names_from_decoder(ast.parse("from .decoder import E\n"), in_core=True) == {"E"}
    assert names_from_decoder(ast.parse("from .decoder import E\n"), in_core=False) == set()


def test_every_decoder_file_is_short_enough_to_read():
    files = decoder_files()
    assert {p.name for p in files} >= {"decoder.py", "decoder_load.py", "decoder_forward.py", "decoder_heads.py"}
    long = {p.name: n for p in files if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"more than {MAX_LINES} lines: {long}"


def test_every_name_the_project_takes_from_core_decoder_is_there():
    used = used_names()
    # the collector found the imports the project is known to make (the page, the loader, the tests)
    assert {"load_smollm2", "next_token_probs", "head_stats", "ModelNotInstalled", "INSTALL_HINT", "forward"} <= set(used)
    missing = {name: files for name, files in used.items() if not hasattr(decoder, name)}
    assert not missing, f"no longer in core.models.decoder: {missing}"
    assert set(decoder.__all__) <= set(vars(decoder)), "core.models.decoder.__all__ names something it lacks"


def test_the_new_modules_import_neither_streamlit_nor_core_decoder():
    for path in decoder_files():
        if path.name == "decoder.py":
            continue
        mods = imported_modules(path)
        assert not [m for m in mods if m.split(".")[0] == "streamlit"], f"{path.name} imports streamlit"
        assert not [m for m in mods if m == "core.models.decoder" or m.startswith("core.models.decoder.")], \
            f"{path.name} imports core.models.decoder (a cycle: core.models.decoder imports it)"
