"""The Vision Transformer's patches and attention over an image (C32)."""

from ui import safe, settings, vit_page

settings.page_setup("vit")
safe.run(vit_page.render)
