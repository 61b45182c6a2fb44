"""One Transformer block, post-norm and pre-norm, and the cost of attention (C28–C31)."""

from ui import block_page, safe, settings

settings.page_setup("block")
safe.run(block_page.render)
