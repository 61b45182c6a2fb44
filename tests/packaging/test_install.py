"""Installing Attention Lab like a Python package (pyproject.toml).

A fresh virtual environment gets the project with ``pip install -e . --no-deps`` (and, in a second
one, the wheel ``pip wheel`` builds); then ``core`` and ``attention_lab`` are imported from a folder
that is not the repository, and the ``attention-lab`` command is checked. To avoid downloading
torch (~1.5 GB with its dependencies) again, the fresh environments see the test environment's own
site-packages through a ``.pth`` file written after the install: the project itself comes only
from the install under test (its ``core`` must resolve to the install, not to the current folder).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import urllib.request
import zipfile
from pathlib import Path

import pytest
import tomllib

from bench import serve

ROOT = Path(__file__).resolve().parents[2]
CHECK = """
import json, sys
import core, attention_lab, attention_lab.notebook, attention_lab.codegen, attention_lab.tutorial
from core import tokens
X = tokens.c18_embedding()
w = core.attention(X, X, X).weights[3].tolist()
print(json.dumps({"core": core.__file__, "nb": attention_lab.notebook.__file__, "root": str(core.models.paths.app_root()),
                  "w": w, "streamlit": "streamlit" in sys.modules,
                  "lesson": attention_lab.tutorial.lesson_markdown(attention_lab.tutorial.LESSONS[0].id, "ko")[:40]}))
"""


def _env() -> dict:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _run(cmd, cwd, timeout=600) -> str:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def _fresh_venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", path], cwd=path.parent)
    return path / "bin" / "python"


def _see_test_site_packages(py: Path) -> None:
    """torch, streamlit & co. from this environment (not the project: it is not installed here)."""
    site = _run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], cwd=py.parent).strip()
    Path(site, "_attention_lab_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")


def _import_check(py: Path, elsewhere: Path) -> dict:
    import json

    return json.loads(_run([py, "-c", CHECK], cwd=elsewhere).strip().splitlines()[-1])


def test_dependencies_are_declared_as_in_requirements_txt():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [line.strip() for line in (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]
    assert sorted(declared["dependencies"]) == sorted(reqs)
    extra = " ".join(declared["optional-dependencies"]["notebook"])
    assert "ipykernel" in extra and re.search(r"\b(jupyterlab|notebook)\b", extra)
    assert declared["scripts"]["attention-lab"] == "attention_lab.cli:main"


@pytest.fixture(scope="module")
def editable(tmp_path_factory):
    base = tmp_path_factory.mktemp("editable")
    py = _fresh_venv(base / "venv")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", "-e", ROOT], cwd=base, timeout=900)
    _see_test_site_packages(py)
    elsewhere = base / "somewhere_else"
    elsewhere.mkdir()
    return py, elsewhere


def test_editable_install_imports_core_from_another_folder(editable):
    py, elsewhere = editable
    got = _import_check(py, elsewhere)
    assert Path(got["core"]).resolve() == ROOT / "core" / "__init__.py"
    assert Path(got["nb"]).resolve() == ROOT / "attention_lab" / "notebook.py"
    assert Path(got["root"]).resolve() == ROOT
    assert [round(v, 4) for v in got["w"]] == [0.2091, 0.2091, 0.2091, 0.3726]
    assert not got["streamlit"], "core and the notebook views must not import streamlit"
    assert got["lesson"].startswith("# ")
    # without the install, the same folder cannot import core (the check is not passing by accident)
    bare = subprocess.run([sys.executable, "-I", "-c", "import core"], cwd=elsewhere, capture_output=True, text=True)
    assert bare.returncode != 0 and "No module named 'core'" in bare.stderr


def test_the_console_command_serves_the_app(editable):
    py, elsewhere = editable
    cmd = py.parent / "attention-lab"
    assert Path(_run([cmd, "--where"], cwd=elsewhere).strip()).resolve() == ROOT
    port = serve.free_port()
    proc = subprocess.Popen([cmd, "--server.headless", "true", "--server.port", str(port)], cwd=elsewhere, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        try:  # the post-condition: the server answers its health check
            serve.wait_healthy(f"http://127.0.0.1:{port}", proc, 120, "attention-lab")
        except serve.ServerError as err:
            pytest.fail(f"{err}\n{proc.stdout.read() if proc.poll() is not None else ''}")
        page = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10).read().decode()
        assert "<title>" in page or "streamlit" in page.lower()
    finally:
        proc.terminate()  # the command became the server (exec): terminating it ends the server, nothing is left behind
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    with pytest.raises(OSError, match=rf"\[Errno {errno.ECONNREFUSED}\]"):  # no server outlived the command: refused
        urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2)


def test_the_wheel_carries_the_packages_and_the_app_and_runs_from_its_install(tmp_path):
    wheels, src = tmp_path / "dist", tmp_path / "src"  # built from a copy: setuptools writes build/ into the source
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "__pycache__",
                                                             "test-artifacts", ".ruff_cache", ".hypothesis"))
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, src], cwd=tmp_path, timeout=900)
    (wheel,) = wheels.glob("attention_lab-0.1.0-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = "attention_lab-0.1.0.data/data/share/attention-lab/"
    for name in ("core/__init__.py", "core/models/paths.py", "attention_lab/notebook.py", "attention_lab/widget.js",
                 "attention_lab/codegen.py", "attention_lab/scenario.py", "attention_lab/tutorial/lessons.py",
                 data + "assets/lessons/exercises.ko.json", data + "app.py", data + "ui/pipeline.py",
                 data + "app_pages/playground.py",
                 data + "assets/components/maps.js", data + "assets/i18n/ko.notebook.json", data + ".streamlit/config.toml",
                 data + "assets/checkpoints/vit_shapes.pt", data + "static/attention-lab-kr-400.woff2",
                 data + "static/svg-font/slices.json", data + "static/svg-font/kr-400-00.woff2",
                 data + "static/components/maps.js", data + "static/components/heatmap.js"):
        assert name in names, name
    assert not [n for n in names if n.startswith(("ui/", "app_pages/", "tests/", "bench/"))]
    py = _fresh_venv(tmp_path / "venv")
    _run([py, "-m", "pip", "install", "-q", "--no-deps", wheel], cwd=tmp_path, timeout=900)
    _see_test_site_packages(py)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    got = _import_check(py, elsewhere)
    share = (tmp_path / "venv" / "share" / "attention-lab").resolve()
    assert Path(got["core"]).resolve().is_relative_to((tmp_path / "venv").resolve())
    assert Path(got["root"]).resolve() == share and (share / "app.py").is_file()
    assert [round(v, 4) for v in got["w"]] == [0.2091, 0.2091, 0.2091, 0.3726] and got["lesson"].startswith("# ")
    assert Path(_run([py.parent / "attention-lab", "--where"], cwd=elsewhere).strip()).resolve() == share
    # the installed app runs: its home page as AppTest sees it, from the installed copy
    _run([py, "-c", "from streamlit.testing.v1 import AppTest\n"
                    "at = AppTest.from_file('app.py', default_timeout=90).run()\n"
                    "assert not at.exception, at.exception\nprint(len(at.markdown))"], cwd=share, timeout=300)
