import subprocess
import sys
from pathlib import Path

import pytest
import torch

import core
from core import tokens

ROOT = Path(__file__).resolve().parents[2]


def test_tokenize_keeps_korean_and_other_scripts():
    assert tokens.tokenize("  나는 오늘\t사과를\n먹었다 ") == ["나는", "오늘", "사과를", "먹었다"]
    assert tokens.tokenize("<b>x</b> 😀 día") == ["<b>x</b>", "😀", "día"]
    assert tokens.tokenize("") == []


def test_embedding_is_deterministic_per_token():
    a = tokens.embed(["the", "cat", "the"], 5, seed=3)
    b = tokens.embed(["dog", "the"], 5, seed=3)
    assert torch.equal(a[0], a[2]) and torch.equal(a[0], b[1])
    assert not torch.equal(a[0], a[1])
    assert not torch.equal(a[0], tokens.embed(["the"], 5, seed=4)[0])


def test_embedding_is_stable_across_processes():
    code = "import core; print(core.tokens.embed(['사과를'], 3, seed=0).tolist())"
    runs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
            for _ in range(2)}
    assert len(runs) == 1


def test_one_hot_and_c18():
    oh = tokens.one_hot(["a", "b", "a"])
    assert oh.tolist() == [[1, 0], [0, 1], [1, 0]]
    assert tokens.c18_embedding().tolist() == [[1, 0, 1], [0, 1, 1], [1, 1, 0], [1, 1, 1]]
    assert len(tokens.C19_TOKENS) == 7


def test_projection_is_seeded():
    assert torch.equal(tokens.projection(3, 2, seed=0, name="W_q"), tokens.projection(3, 2, seed=0, name="W_q"))
    assert not torch.equal(tokens.projection(3, 2, seed=0, name="W_q"), tokens.projection(3, 2, seed=0, name="W_k"))
    with pytest.raises(ValueError, match="d_in must be a positive integer, got 0"):
        tokens.projection(0, 2, seed=0, name="W")


def test_import_core_needs_only_torch_and_numpy():
    code = ("import sys, core; bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'streamlit','plotly','pandas','ui'}); print(bad); sys.exit(1 if bad else 0)")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_core_source_never_imports_ui_libraries():
    for path in (ROOT / "core").rglob("*.py"):
        text = path.read_text()
        for lib in ("streamlit", "plotly", "pandas"):
            assert f"import {lib}" not in text and f"from {lib}" not in text, path


def test_available_devices_lists_cpu_first():
    assert core.available_devices()[0] == "cpu"
