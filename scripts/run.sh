#!/usr/bin/env bash
# Set up (first time) and run the app: bash scripts/run.sh  → http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# two malloc arenas, not one per thread: 40 sessions' threads otherwise keep 200–400 MB more (BENCHMARKS.md)
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
exec .venv/bin/python -m streamlit run app.py --browser.gatherUsageStats false "$@"
