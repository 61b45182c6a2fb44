from pathlib import Path

import pytest
import torch

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device here")),
    pytest.param(
        "mps",
        marks=pytest.mark.skipif(
            not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()),
            reason="no MPS device here",
        ),
    ),
]


@pytest.fixture(params=DEVICES)
def device(request):
    """Every device test runs on CPU, and on CUDA/MPS when present (skipped, never failed, without)."""
    return request.param


BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def pytest_collection_modifyitems(config, items):
    """Every test under tests/browser is a browser test (so `-m "not browser"` never starts Chromium)."""
    for item in items:
        if BROWSER_DIR in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.browser)
