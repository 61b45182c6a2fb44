"""Write static/components/<name>.js for each component the server serves as a file (ui/widgets/assets.py, SERVED):
its component files from assets/components joined. Run after editing any of them; a test checks they are current.

    python scripts/make_components.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ui.widgets.assets import SERVED, SERVED_DIR, joined  # noqa: E402


def main() -> None:
    SERVED_DIR.mkdir(parents=True, exist_ok=True)
    for name in SERVED:
        path = SERVED_DIR / f"{name}.js"
        path.write_text(joined(name), encoding="utf-8")
        print(f"{path.relative_to(SERVED_DIR.parents[1])}: {path.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
