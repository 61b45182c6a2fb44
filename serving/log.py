"""The server's own log lines (stderr, beside Streamlit's): what the benchmarks and the real-server tests count."""

from __future__ import annotations

import logging
import sys


def server_log(name: str, what: str) -> logging.Logger:
    """The logger ``name``, writing "<time> <what>: <message>" at INFO to stderr (set up once per process)."""
    log = logging.getLogger(name)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(f"%(asctime)s {what}: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log
