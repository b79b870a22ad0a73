"""Builds the swappable parts (embedder, reranker, summarizer, LLM, vector store) from Settings.

Parts register by name through entry points, one group per kind. Memory Forest's own parts are
declared in its pyproject.toml (factories in forest.models.providers, and the vector stores' in
forest.storage.vectors.providers) and found the same way as a
plugin's: a package that declares

    [project.entry-points."memory_forest.embedders"]
    my-embedder = "my_package:make_embedder"

is chosen with `embedder = "my-embedder"` in forest.toml (or FOREST_EMBEDDER=my-embedder).
A factory's module is imported only when its part is made, so a command loads only the parts it
uses. A built-in name is looked up in Memory Forest's own metadata alone (one small file), and a
plugin declaring the same name does not replace it; any other name is looked up across every
installed distribution (read once per process). Each group's factories are called as:

    memory_forest.embedders      factory(settings) -> Embedder
    memory_forest.rerankers      factory(settings, embedder) -> Reranker
    memory_forest.summarizers    factory(settings, llm) -> Summarizer   (llm: the configured one, or None)
    memory_forest.llms           factory(settings) -> StructuredLLM (forest.models.llm)
    memory_forest.vector_stores  factory(settings, embedder, use_snapshots) -> VectorStore
"""
from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from forest.config import Settings
from forest.errors import ConfigError

if TYPE_CHECKING:
    from forest.models.embedders import Embedder
    from forest.models.llm import StructuredLLM
    from forest.models.rerankers import Reranker
    from forest.models.summarizers import Summarizer
    from forest.storage.vectors.base import VectorStore

# The setting that names a part of each kind -> its entry-point group.
GROUPS = {"embedder": "memory_forest.embedders", "reranker": "memory_forest.rerankers",
          "summarizer": "memory_forest.summarizers", "llm": "memory_forest.llms",
          "vector_store": "memory_forest.vector_stores"}
DISTRIBUTION = "memory-forest"  # whose metadata declares the built-ins (pyproject.toml)


@functools.cache
def built_in() -> importlib.metadata.EntryPoints:
    """Memory Forest's own entry points; none when it runs from a source tree not installed."""
    try:
        return importlib.metadata.distribution(DISTRIBUTION).entry_points
    except importlib.metadata.PackageNotFoundError:
        return importlib.metadata.EntryPoints(())


@functools.cache
def installed() -> importlib.metadata.EntryPoints:
    """Every installed distribution's entry points, read once per process (a plugin installed
    into a running process is seen after `installed.cache_clear()`)."""
    return importlib.metadata.entry_points()


# The LLM setting's name for "no LLM": every caller takes its offline path.
OFFLINE = "offline"


def names(kind: str) -> list[str]:
    """The registered names a setting of this kind may take (besides "auto", and "offline" for the LLM)."""
    return sorted(set(installed().select(group=GROUPS[kind]).names))


def factory(kind: str, name: str) -> Callable[..., Any]:
    """The factory registered under `name` for this kind of part; a ConfigError naming the
    installed ones when there is none."""
    found = list(built_in().select(group=GROUPS[kind], name=name)) or \
        list(installed().select(group=GROUPS[kind], name=name))
    if not found:
        known = names(kind)
        raise ConfigError(
            f"unknown {kind} {name!r}; installed: {', '.join(map(repr, known))}" if known else
            f"unknown {kind} {name!r}: no {kind} is installed (entry-point group {GROUPS[kind]!r}); "
            "Memory Forest's own are declared in its package metadata: reinstall it (pip install -e .)")
    if len({entry.value for entry in found}) > 1:
        raise ConfigError(f"{kind} {name!r} is registered by more than one package: "
                          + "; ".join(f"{_origin(entry)} ({entry.value})" for entry in found))
    try:
        return found[0].load()
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{kind} {name!r} from {_origin(found[0])} could not be loaded "
                          f"({found[0].value}): {exc}") from exc


def choice(settings: Settings, kind: str) -> str:
    """The name in force for a kind of part, "auto" resolved: the reranker a cross-encoder when
    reranker_model_dir is set, else "embedding"; the LLM "claude" when its key is set, else
    "offline"; the summarizer "llm" when there is an LLM, else "textrank"; the vector store "chroma"."""
    named = getattr(settings, kind)
    if named != "auto":
        return named
    if kind == "reranker":
        return "flag" if settings.reranker_model_dir else "embedding"
    if kind == "llm":
        return "claude" if settings.anthropic_api_key else OFFLINE
    if kind == "summarizer":
        return "llm" if choice(settings, "llm") != OFFLINE else "textrank"
    if kind == "vector_store":
        return "chroma"
    return named


def make_embedder(settings: Settings) -> Embedder:
    embedder = factory("embedder", settings.embedder)(settings)
    if settings.redis_url:
        from forest.storage.valkey import SharedVectorCache, link

        # The identity a vector depends on: the model, and for a served one its server and query prefix.
        identity = "|".join((embedder.name, str(embedder.dim), settings.embedding_base_url or "",
                             settings.embedding_query_prefix))
        embedder.shared_cache = SharedVectorCache(link(settings.redis_url), identity, settings.query_cache_ttl_seconds)
    return embedder


def make_reranker(settings: Settings, embedder: Embedder) -> Reranker:
    return factory("reranker", choice(settings, "reranker"))(settings, embedder)


def make_summarizer(settings: Settings) -> Summarizer:
    return factory("summarizer", choice(settings, "summarizer"))(settings, make_llm(settings))


def make_llm(settings: Settings) -> StructuredLLM | None:
    """The named LLM, or None for "offline": every caller then uses its offline default."""
    named = choice(settings, "llm")
    return None if named == OFFLINE else factory("llm", named)(settings)


def make_vector_store(settings: Settings, embedder: Embedder, use_snapshots: bool = False) -> VectorStore:
    """"auto" is "chroma": a Chroma server when chroma_host names one, else the embedded store."""
    return factory("vector_store", choice(settings, "vector_store"))(settings, embedder, use_snapshots)


def _origin(entry: importlib.metadata.EntryPoint) -> str:
    return entry.dist.name if entry.dist is not None else "an unnamed distribution"
