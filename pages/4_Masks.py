"""Masks: causal, padding, window, custom; order of operations; fully masked rows (C11, C12, C35, C39)."""

from ui import masks_page, safe, settings

settings.page_setup("masks")
safe.run(masks_page.render)
