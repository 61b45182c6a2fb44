"""Where the shipped files are: ``assets/`` beside the packages (a checkout, or ``pip install -e .``),
else the copy a wheel installs under ``<prefix>/share/attention-lab`` (pyproject's data-files)."""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path


def app_root() -> Path:
    """The folder holding ``app.py`` and ``assets/``: the checkout, or the wheel's shared copy."""
    here = Path(__file__).resolve().parents[2]  # core/models/paths.py → the checkout
    if (here / "assets").is_dir():
        return here
    for prefix in (sysconfig.get_path("data"), sys.prefix):
        shared = Path(prefix) / "share" / "attention-lab"
        if (shared / "assets").is_dir():
            return shared
    return here


ASSETS = app_root() / "assets"
