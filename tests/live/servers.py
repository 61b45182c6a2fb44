"""A real ``redis-server`` for the live class's tests (``bench.serve.start_redis``: a free port, stopped afterwards);
without the program the tests that need it are skipped and say so (scripts/test.sh installs it with apt-get)."""

from __future__ import annotations

import pytest

from bench import serve


def start_redis():
    """A running ``redis-server`` on loopback → (its URL, the process). Skips when there is no redis-server."""
    try:
        return serve.start_redis()
    except FileNotFoundError as err:
        pytest.skip(str(err))


def stop(proc) -> None:
    serve.stop(proc)
