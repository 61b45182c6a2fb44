#!/usr/bin/env bash
# Set up and run every test: lint, core unit/property tests, AppTest page tests and
# real-browser tests (system Chromium; installed with apt-get when missing and we are root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
# a CJK font so Korean text renders in the browser tests' screenshots
fc-list :lang=ko 2>/dev/null | grep -q . || need_apt+=(fonts-noto-cjk)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${need_apt[*]} with apt-get"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "WARNING: please install ${need_apt[*]} (needed by the browser tests)" >&2
  fi
fi

.venv/bin/python -m ruff check .
.venv/bin/python -m pytest "$@"
