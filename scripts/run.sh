#!/usr/bin/env bash
# Set up (first time) and run the app: bash scripts/run.sh  → http://localhost:8501
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m streamlit run app.py --browser.gatherUsageStats false "$@"
