"""Embedders, rerankers, summarizers and Claude, chosen by name (registry)."""
