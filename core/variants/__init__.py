"""Attention as newer models change it; every variant calls core.mechanism.attention.attention."""
