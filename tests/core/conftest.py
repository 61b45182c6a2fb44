"""Fixtures the core tests share."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture
def attention_calls(monkeypatch):
    """Calls of ``core.mechanism.attention.attention`` (their keyword arguments) while the test runs, however a module
    imported the name: the function is replaced by a counting wrapper in every core module that holds it."""
    import core  # noqa: F401  (every core module that holds the function is loaded)
    import core.mechanism.attention as home

    real, seen = home.attention, []

    def counting(*args, **kwargs):
        seen.append(kwargs)
        return real(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if (name == "core" or name.startswith("core.")) and getattr(module, "attention", None) is real:
            monkeypatch.setattr(module, "attention", counting)
    return seen
