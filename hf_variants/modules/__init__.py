"""Shared building blocks used by every variant (attention, embeddings, FFN, layer stack, heads, padding)."""
