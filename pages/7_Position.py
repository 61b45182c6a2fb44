"""Permutation equivariance and positional encodings (C23, C24, C37)."""

from ui import position, safe, settings

settings.page_setup("position")
safe.run(position.render)
