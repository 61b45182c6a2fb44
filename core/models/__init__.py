"""Real and trained models built on core.mechanism and core.variants."""
