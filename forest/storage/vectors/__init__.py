"""The vector stores: the VectorStore interface, Chroma, pgvector, Qdrant, the owner's endpoint, snapshots."""
