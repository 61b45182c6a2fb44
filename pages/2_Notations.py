"""Row-vector vs column-vector notation, side by side (C1, C2, C11, C34)."""

from ui import notations, safe, settings

settings.page_setup("notations")
safe.run(notations.render)
