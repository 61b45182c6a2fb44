"""The Attention Playground (C1–C2, C4–C9, C11, C13–C16, C18–C19, C33, C39)."""

from ui import playground, safe, settings

settings.page_setup("playground")
safe.run(playground.render)
