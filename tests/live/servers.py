"""A real ``redis-server`` for the live class's tests: started on a free port, stopped afterwards; without
the program the tests that need it are skipped and say so (scripts/test.sh installs it with apt-get)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis():
    """A running ``redis-server`` on loopback → (its URL, the process). Skips when there is no redis-server."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (scripts/test.sh installs it with apt-get as root)")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    import redis

    client = redis.Redis(port=port)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until it answers a PING (the fact the tests need)
        try:
            client.ping()
            return f"redis://127.0.0.1:{port}/0", proc
        except redis.ConnectionError:
            if proc.poll() is not None:
                raise RuntimeError("redis-server exited") from None
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("redis-server did not answer within 60 s")


def stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
