"""Two replicas of the app behind Debian's nginx, configured from deploy/nginx.conf."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench import serve

ROOT = Path(__file__).resolve().parents[2]
NGINX_SITE = ROOT / "deploy" / "nginx.conf"
APT_PACKAGE = "nginx"  # Debian's package for /usr/sbin/nginx


def nginx_binary() -> str | None:
    found = os.environ.get("NGINX") or shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None


@contextlib.contextmanager
def two_replicas(logs: Path, env: dict | None = None):
    """Two `streamlit run app.py` servers, as the deployment runs them (headless, no file watcher), with ``env``
    added to their environment: bench.serve.Server objects (port, proc, log, url, addr)."""
    started = [serve.start(log=logs / f"replica-{i}.log", env=env) for i in range(2)]
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda r: r.wait(90), started))
        yield started
    finally:
        for r in started:
            r.stop()


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):
    with two_replicas(tmp_path_factory.mktemp("replicas")) as started:
        yield started


@dataclass
class Proxy:
    url: str
    proc: subprocess.Popen
    conf: Path
    access_log: Path
    error_log: Path
    binary: str

    def log_lines(self) -> list[dict]:
        """The access log as dicts (format "attnlab" of deploy/nginx.conf)."""
        out = []
        pattern = re.compile(r'"(?P<request>[^"]*)" (?P<status>\d{3}) \d+ upstream=(?P<upstream>\S*) route=(?P<route>\S*)')
        for line in self.access_log.read_text(errors="replace").splitlines():
            m = pattern.search(line)
            if m:
                out.append(m.groupdict())
        return out

    def lines_with(self, text: str, count: int, seconds: float = 10) -> list[dict]:
        """The log lines whose request contains text, once there are count of them (nginx writes a line
        after the response has gone, so it may lag the client by a moment)."""
        deadline = time.monotonic() + seconds
        while True:
            lines = [x for x in self.log_lines() if text in x["request"]]
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.1)

    def reload(self) -> None:
        """Graceful reload (SIGHUP): new workers; the old ones close their websockets after worker_shutdown_timeout."""
        self.proc.send_signal(signal.SIGHUP)


def render_config(prefix: Path, listen_port: int, upstreams: list[str]) -> Path:
    """deploy/nginx.conf inside a main configuration of our own: the lines marked "# @…" are replaced."""
    site = NGINX_SITE.read_text(encoding="utf-8")
    replaced = {"@listen": f"    listen 127.0.0.1:{listen_port};",
                "@replicas": "\n".join(f"    server {u} max_fails=3 fail_timeout=10s;" for u in upstreams),
                "@access_log": f"    access_log {prefix / 'access.log'} attnlab;"}
    lines = []
    for line in site.splitlines():
        marker = next((m for m in replaced if line.rstrip().endswith("# " + m)), None)
        lines.append(replaced.pop(marker) if marker else line)
    assert not replaced, f"deploy/nginx.conf lost its marked lines: {sorted(replaced)}"
    (prefix / "site.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp = prefix / "tmp"
    main = f"""
worker_processes 1;
pid {prefix / 'nginx.pid'};
error_log {prefix / 'error.log'} info;
worker_shutdown_timeout 2s;  # a reload closes the old worker's websockets after 2 s
events {{ worker_connections 256; }}
http {{
    client_body_temp_path {tmp / 'body'};
    proxy_temp_path {tmp / 'proxy'};
    fastcgi_temp_path {tmp / 'fastcgi'};
    uwsgi_temp_path {tmp / 'uwsgi'};
    scgi_temp_path {tmp / 'scgi'};
    proxy_max_temp_file_size 0;  # stream large responses instead of spilling them to disk
    include {prefix / 'site.conf'};
}}
"""
    conf = prefix / "nginx.conf"
    conf.write_text(main, encoding="utf-8")
    return conf


@pytest.fixture(scope="module")
def proxy(replicas, tmp_path_factory):
    binary = nginx_binary()
    if binary is None:
        pytest.skip(f"nginx is not installed (apt-get install {APT_PACKAGE}): replica test NOT run")
    prefix = tmp_path_factory.mktemp("nginx")
    (prefix / "tmp").mkdir()
    port = serve.free_port()
    conf = render_config(prefix, port, [r.addr for r in replicas])
    base = [binary, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(conf)]
    check = subprocess.run([*base, "-t"], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, f"nginx -t refused the rendered deploy/nginx.conf:\n{check.stderr}"
    proc = subprocess.Popen([*base, "-g", "daemon off;"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        serve.wait_healthy(url, proc, 20, "nginx")
        yield Proxy(url, proc, conf, prefix / "access.log", prefix / "error.log", binary)
    finally:
        serve.stop(proc, signal.SIGQUIT)  # graceful stop
