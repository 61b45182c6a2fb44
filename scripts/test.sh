#!/usr/bin/env bash
# Set up and run every test: lint, core unit/property tests, AppTest page tests and
# real-browser tests (system Chromium; installed with apt-get when missing and we are root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# nginx: the two-replica test runs a session through Debian's nginx with session affinity
[ -x /usr/sbin/nginx ] || need_apt+=(nginx)
# redis-server: the live class's store contract and its Redis backend run against a real server
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
# no CJK system font is needed: the app ships its Korean web font, and the browser tests hide
# the machine's CJK fonts to prove it (tests/browser/conftest.py)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "WARNING: please install ${need_apt[*]} (needed by the browser tests)" >&2
  fi
fi

.venv/bin/python -m ruff check .
# the 30 slowest tests at the end: the suite must stay under 45 minutes on a quiet 2-core machine
.venv/bin/python -m pytest --durations=30 "$@"
