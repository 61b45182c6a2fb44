"""``attention-lab``: start the app (``streamlit run app.py``) from wherever it is installed.

    attention-lab                          # → http://localhost:8501
    attention-lab --server.port 8600       # any of streamlit's own options
    attention-lab --where                  # print the folder the app runs from, and stop

The app runs from its folder (a checkout or ``pip install -e .``: this repository; a wheel: the copy
under ``<prefix>/share/attention-lab``), so its ``.streamlit/config.toml`` applies. ``bash
scripts/run.sh`` does the same from a checkout, creating ``.venv`` first."""

from __future__ import annotations

import os
import subprocess
import sys

from core.models.paths import app_root


def command(args: list[str]) -> list[str]:
    """The streamlit command line that serves the app with ``args`` (streamlit's own options)."""
    return [sys.executable, "-m", "streamlit", "run", str(app_root() / "app.py"), "--browser.gatherUsageStats", "false",
            *args]


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = app_root()
    if args == ["--where"]:
        print(root)
        return 0
    if not (root / "app.py").is_file():
        print(f"attention-lab: app.py not found in {root}; reinstall with `pip install -e .` from the Attention Lab folder",
              file=sys.stderr)
        return 2
    if os.name == "posix":  # become the server: a signal to this process (Ctrl-C, terminate) reaches streamlit itself
        os.chdir(root)
        os.execv(sys.executable, command(args))
    return subprocess.call(command(args), cwd=root)


if __name__ == "__main__":
    raise SystemExit(main())
