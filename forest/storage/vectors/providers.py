"""The vector stores Memory Forest ships, declared in pyproject.toml as entry points like any
plugin's (forest.models.registry reads the group memory_forest.vector_stores): each factory takes
the settings, the embedder whose vectors it keeps, and whether a short command may read vector
snapshots. Each imports its implementation when called, so loading this module costs nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from forest.config import Settings
from forest.errors import ConfigError

if TYPE_CHECKING:
    from forest.storage.vectors.base import VectorStore


class Embedding(Protocol):
    """What a vector store knows of its embedder: its name (vectors of two embedders never mix)
    and the width of its vectors."""

    name: str
    dim: int


def chroma(settings: Settings, embedder: Embedding, use_snapshots: bool) -> VectorStore:
    """A Chroma server when chroma_host names one; else Chroma under the data directory, opened by
    the one process that owns it and reached through it by every other (forest.storage.ownership),
    reading vector snapshots if `use_snapshots` (see forest.storage.ownership.open_embedded)."""
    from forest.storage.ownership import open_embedded

    if settings.chroma_host:
        return chroma_server(settings, embedder, use_snapshots)
    return open_embedded(settings.chroma_path, embedder.name, embedder.dim, use_snapshots)


def chroma_server(settings: Settings, embedder: Embedding, use_snapshots: bool) -> VectorStore:
    from forest.storage.vectors.chroma import ChromaVectorStore

    if not settings.chroma_host:
        raise ConfigError("vector_store 'chroma-server' needs chroma_host (FOREST_CHROMA_HOST or CHROMA_HOST)")
    return ChromaVectorStore(host=settings.chroma_host, port=settings.chroma_port,
                             embedder_name=embedder.name, dim=embedder.dim)


def pgvector_store(settings: Settings, embedder: Embedding, use_snapshots: bool) -> VectorStore:
    """Vectors in the PostgreSQL of database_url (pgvector), beside the rows they belong to."""
    from forest.storage.vectors.pgvector import PgVectorStore

    if not settings.server_database:
        raise ConfigError("vector_store 'pgvector' keeps the vectors in PostgreSQL: set database_url "
                          "(FOREST_DATABASE_URL=postgresql://...) too")
    return PgVectorStore(settings.database_url, embedder_name=embedder.name, dim=embedder.dim)


def qdrant_store(settings: Settings, embedder: Embedding, use_snapshots: bool) -> VectorStore:
    """A Qdrant server at qdrant_url, or qdrant-client's local mode when qdrant_url is a directory."""
    from forest.storage.vectors.qdrant import QdrantVectorStore

    if not settings.qdrant_url:
        raise ConfigError("vector_store 'qdrant' needs qdrant_url (FOREST_QDRANT_URL=http://host:6333)")
    return QdrantVectorStore(settings.qdrant_url, api_key=settings.qdrant_api_key,
                             embedder_name=embedder.name, dim=embedder.dim)
