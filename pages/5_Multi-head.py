"""Multi-head attention: heads, the reshape, the wrong transpose, the paper form (C17, C20–C22, C36, C38)."""

from ui import multihead, safe, settings

settings.page_setup("multihead")
safe.run(multihead.render)
