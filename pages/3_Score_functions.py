"""Score functions side by side, cosine vs dot, why √d_k (C3, C5–C10, C19)."""

from ui import safe, scores, settings

settings.page_setup("scores")
safe.run(scores.render)
