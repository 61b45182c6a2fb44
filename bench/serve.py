"""The one way tests and benchmarks start the app's server: ``streamlit run`` on a free port of
127.0.0.1, ready once ``/_stcore/health`` answers ``ok``, stopped by its process id.

Used by the browser tests (tests/browser/conftest.py and the tests that restart their own server),
the deploy tests (tests/deploy/conftest.py: two replicas, and nginx's health check) and the
benchmarks (bench/classroom.py, bench/playground.py, bench/breakdown.py). No pytest here: a server
that does not come up raises :class:`ServerError`, which fails the test that needed it.

    with serve() as server:          # app.py, headless, no file watcher
        urllib.request.urlopen(server.url + "/Playground")
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEALTH = "/_stcore/health"
HOST = "127.0.0.1"
STREAMLIT = ("-m", "streamlit", "run")  # what follows the Python executable
# as scripts/run.sh and the Dockerfile serve: two malloc arenas, not one per thread (40 sessions' threads otherwise
# keep 200–400 MB more; BENCHMARKS.md, "A class writing at once"); a value in the environment wins
SERVER_ENV = {"MALLOC_ARENA_MAX": "2"}
# the system Chromium without the sandbox, GPU and its calls to the internet (../shared/STACK-NOTES.md)
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


class ServerError(RuntimeError):
    """The server exited, or did not answer its health check in time."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def chromium() -> str | None:
    """The system Chromium ($CHROMIUM first), or None."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def healthy(url: str, timeout: float = 2) -> bool:
    """Whether ``url`` answers its health check with ``ok`` now."""
    try:
        with urllib.request.urlopen(url + HEALTH, timeout=timeout) as resp:
            return resp.read().strip() == b"ok"
    except OSError:
        return False


def wait_healthy(url: str, proc: subprocess.Popen | None = None, seconds: float = 120, what: str = "streamlit") -> None:
    """Return once ``url`` answers its health check; ServerError when ``proc`` exits first or after ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServerError(f"{what} exited with {proc.returncode} before answering {url}{HEALTH}")
        if healthy(url):
            return
        time.sleep(0.2)  # polling the health check: the wait ends on its answer, not on this interval
    raise ServerError(f"{what} did not answer {url}{HEALTH} within {seconds:.0f} s")


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
    """End a process by its id (``sig``, then SIGKILL after ``timeout`` seconds) and reap it."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@dataclass
class Server:
    """A started ``streamlit run`` process (see :func:`start`)."""

    proc: subprocess.Popen
    port: int
    log: Path | None = None
    _out: object = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def addr(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def ws_url(self) -> str:
        """Streamlit's websocket (what a browser tab talks to)."""
        return f"ws://{HOST}:{self.port}/_stcore/stream"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(self, seconds: float = 120) -> Server:
        wait_healthy(self.url, self.proc, seconds, f"streamlit on port {self.port}" + (f" (log: {self.log})" if self.log else ""))
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        stop(self.proc, sig)
        if self._out is not None:
            self._out.close()
            self._out = None


def start(script: str = "app.py", *, port: int | None = None, log: Path | None = None, append: bool = False,
          cwd: Path = ROOT, env: dict | None = None, options: Sequence[str] = (),
          launcher: Sequence[str] = STREAMLIT) -> Server:
    """Start ``streamlit run script`` (headless, on 127.0.0.1, no usage statistics, no file watcher: the
    code does not change under a running server, as in the Docker image) and return at once; call
    :meth:`Server.wait` before using it. ``log``: the server's output (appended to with ``append``;
    else nowhere); ``options``: more ``streamlit run`` options; ``env``: added to this process's
    environment; ``launcher``: what follows the Python executable (bench.breakdown starts an
    instrumented Streamlit)."""
    port = port or free_port()
    out = open(log, "a" if append else "w") if log is not None else None  # noqa: SIM115 (closed by Server.stop)
    cmd = [sys.executable, *launcher, script, "--server.headless", "true", "--server.port", str(port),
           "--server.address", HOST, "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
           *options]
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=out or subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            env={**SERVER_ENV, **os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    return Server(proc, port, log, out)


@contextlib.contextmanager
def serve(script: str = "app.py", *, seconds: float = 120, **kwargs) -> Iterator[Server]:
    """A healthy server for the duration of the block (see :func:`start` for the arguments)."""
    server = start(script, **kwargs)
    try:
        server.wait(seconds)
        yield server
    finally:
        server.stop()


def start_redis(seconds: float = 60) -> tuple[str, subprocess.Popen]:
    """A ``redis-server`` on a free port of loopback, with nothing saved to disk, answering PING → (its URL, the
    process; stop it with :func:`stop`). Raises FileNotFoundError without the program, ServerError when it does not
    answer within ``seconds``."""
    import redis

    exe = shutil.which("redis-server")
    if exe is None:
        raise FileNotFoundError("redis-server is not installed (scripts/test.sh installs it with apt-get as root)")
    port = free_port()
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", HOST, "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(host=HOST, port=port)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # until it answers a PING (the fact its users need)
        try:
            client.ping()
            return f"redis://{HOST}:{port}/0", proc
        except redis.ConnectionError:
            if proc.poll() is not None:
                raise ServerError("redis-server exited") from None
            time.sleep(0.1)
    proc.kill()
    raise ServerError(f"redis-server did not answer within {seconds:.0f} s")
