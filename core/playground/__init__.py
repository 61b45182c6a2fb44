"""The lab's own experiments: the Playground's trace, the C18 tokens, pitfalls, scaling."""
