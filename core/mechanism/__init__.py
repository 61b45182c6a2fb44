"""The one attention function and its parts: masks, positions, norms, heads, caches."""
