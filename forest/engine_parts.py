"""The parts a MemoryForest is made of: the settings, the database and its stores, the models
(embedder, reranker, summarizer, LLM), the vector store, kept PDFs, and the packages' working
objects (the tree pipeline, the retriever, research and personal memory). Each
is made on first use, so `forest archives` or `forest tree` start at once; close() releases them.
"""
from __future__ import annotations

import threading
from functools import cached_property
from typing import TYPE_CHECKING, Any

from forest.config import Settings, load_settings
from forest.models import registry as components
from forest.storage.archives import ForestStore
from forest.storage.private_files import make_private_dir
from forest.storage.sql.opening import open_database

if TYPE_CHECKING:
    from forest.models.embedders import Embedder
    from forest.models.llm import StructuredLLM
    from forest.models.rerankers import Reranker
    from forest.models.summarizers import Summarizer
    from forest.personal.service import PersonalMemory
    from forest.recall.retrieval import Retriever
    from forest.research.memory import ResearchMemory
    from forest.storage.ownership import Ownership
    from forest.storage.source_files import SourceFiles
    from forest.storage.vectors.base import VectorStore
    from forest.tree.pipeline import TreePipeline


class EngineParts:
    """The store and the models an engine works with, each made on first use."""

    def __init__(self, settings: Settings | None = None, *, embedder: Embedder | None = None,
                 reranker: Reranker | None = None, summarizer: Summarizer | None = None,
                 vectors: VectorStore | None = None, vector_snapshots: bool = False, **overrides: Any) -> None:
        """Parts not given are built from the settings on first use (see forest.models.registry).
        `vector_snapshots`: a short command's engine, which reads the embedded store's vectors from
        snapshots when it can (see forest.storage.ownership.open_embedded)."""
        self.settings = (settings or load_settings()).replace(**overrides)
        for name, part in (("embedder", embedder), ("reranker", reranker), ("summarizer", summarizer),
                           ("vectors", vectors)):
            if part is not None:
                self.__dict__[name] = part  # takes precedence over the cached_property
        make_private_dir(self.settings.data_dir)  # kept PDFs, an embedded Chroma, beside any database
        self.db = open_database(self.settings)
        self.store = ForestStore(self.db)
        self._build_lock = self.db.writer_lock()  # taken in turn with every other process's writers
        self._init_lock = threading.Lock()
        self._made_vectors = vectors is None  # a store the caller passed in is the caller's to close
        self._ownership: Ownership | None = None
        self._vector_snapshots = vector_snapshots

    # --- parts, made on first use (so `forest archives` starts at once) -----------------------
    @cached_property
    def embedder(self) -> Embedder:
        with self._init_lock:
            return components.make_embedder(self.settings)

    @cached_property
    def vectors(self) -> VectorStore:
        embedder = self.embedder
        with self._init_lock:
            return components.make_vector_store(self.settings, embedder, self._vector_snapshots)

    @cached_property
    def reranker(self) -> Reranker:
        embedder = self.embedder
        with self._init_lock:
            return components.make_reranker(self.settings, embedder)

    @cached_property
    def summarizer(self) -> Summarizer:
        with self._init_lock:
            return components.make_summarizer(self.settings)

    @cached_property
    def llm(self) -> StructuredLLM | None:
        """The LLM in force; None offline (every use then takes its offline default)."""
        with self._init_lock:
            return components.make_llm(self.settings)

    @cached_property
    def sources(self) -> SourceFiles:
        """The original PDFs, kept so citations can open their pages."""
        from forest.storage.source_files import SourceFiles

        return SourceFiles(self.settings.sources_path)

    @cached_property
    def pipeline(self) -> TreePipeline:
        """Every write of trees: ingest, append, rebuild, join, import, delete."""
        from forest.tree.pipeline import TreePipeline

        return TreePipeline(self.store, self.vectors, self.embedder, lambda: self.summarizer, self.sources,
                            self._build_lock, self.settings)

    @cached_property
    def retriever(self) -> Retriever:
        from forest.recall.retrieval import Retriever

        return Retriever(self.store, self.vectors, self.embedder, self.reranker,
                         self.settings.hybrid_vector_weight, self.settings.hybrid_fusion)

    @cached_property
    def research(self) -> ResearchMemory:
        """Research memory: directives, workspace, episodic events, knowledge."""
        from forest.research.memory import ResearchMemory

        embedder, vectors, llm = self.embedder, self.vectors, self.llm
        with self._init_lock:
            return ResearchMemory(self.db, self.store, embedder, vectors, self.settings, llm)

    @cached_property
    def personal(self) -> PersonalMemory:
        """Personal memory as a service: process_memory, the memory tool, the knowledge graph."""
        from forest.personal.service import PersonalMemory

        embedder, llm = self.embedder, self.llm
        with self._init_lock:
            return PersonalMemory(self.db, embedder, self.settings, llm)

    @property
    def drill_threshold(self) -> float:
        """The relevance a drill-down keeps children by, unless a call names its own."""
        return self.settings.drill_threshold

    @property
    def supported_suffixes(self) -> tuple[str, ...]:
        """The file types ingest reads."""
        from forest.ingest import SUPPORTED_SUFFIXES

        return SUPPORTED_SUFFIXES

    def models_in_use(self) -> dict[str, dict[str, Any]]:
        """The LLM and the embedder in force: provider, model, URL without secrets."""
        from forest.models import catalog

        return {"llm": catalog.llm_in_use(self.settings, self.llm),
                "embedder": catalog.embedder_in_use(self.settings, self.embedder)}

    def own_store(self) -> None:
        """Servers call this before serving: they must own the embedded vector store (or are refused)."""
        from forest.storage.ownership import claim_for_server

        if self._ownership is None:
            self._ownership = claim_for_server(self.settings)

    def close(self) -> None:
        if "personal" in self.__dict__:
            self.personal.stop()  # its writer finishes the item in hand; the rest stays queued
        if self._made_vectors and "vectors" in self.__dict__:
            self.vectors.close()
        if self._ownership is not None:
            self._ownership.release()
            self._ownership = None
        self.db.close()
