"""Self vs cross attention, projections as a linear layer, the retrieval view (C13–C16)."""

from ui import safe, selfcross, settings

settings.page_setup("selfcross")
safe.run(selfcross.render)
