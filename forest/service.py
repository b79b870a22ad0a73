"""MemoryForest: the one engine object every face (CLI, workbench, MCP, REST) calls.

Thread-safe: reads run concurrently (a SQLite connection per thread); builds are serialized
so there is one writer at a time.
"""
from __future__ import annotations

import threading
from functools import cached_property
from pathlib import Path
from typing import Any

from forest import components
from forest.build import ArchiveBuilder, BuildParams, Progress, ProgressFn
from forest.chunking import chunk_text
from forest.config import Settings, load_settings
from forest.db import Database
from forest.doctor import DoctorReport, examine, repair
from forest.embedders import Embedder
from forest.errors import ConfigError, InvalidInput
from forest.records import Archive, ContextResult, MemoryNode, Representative, ScoredNode
from forest.rerankers import Reranker
from forest.retrieval import Retriever
from forest.store import ForestStore
from forest.summarizers import Summarizer
from forest.vectors import VectorStore

MAX_MODEL_ID = 200
MAX_QUERY_CHARS = 4000


def _no_progress(_: Progress) -> None:
    pass


class MemoryForest:
    def __init__(self, settings: Settings | None = None, *, embedder: Embedder | None = None,
                 reranker: Reranker | None = None, summarizer: Summarizer | None = None,
                 vectors: VectorStore | None = None, **overrides: Any) -> None:
        """Parts not given are built from the settings on first use (see forest.components)."""
        self.settings = (settings or load_settings()).replace(**overrides)
        for name, part in (("embedder", embedder), ("reranker", reranker), ("summarizer", summarizer),
                           ("vectors", vectors)):
            if part is not None:
                self.__dict__[name] = part  # takes precedence over the cached_property
        self.db = Database(self.settings.sqlite_path)
        self.store = ForestStore(self.db)
        self._build_lock = threading.Lock()
        self._init_lock = threading.Lock()

    # Models load on first use, so `forest archives` or `forest tree` start instantly.
    @cached_property
    def embedder(self) -> Embedder:
        with self._init_lock:
            return components.make_embedder(self.settings)

    @cached_property
    def vectors(self) -> VectorStore:
        embedder = self.embedder
        with self._init_lock:
            return components.make_vector_store(self.settings, embedder)

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
    def retriever(self) -> Retriever:
        return Retriever(self.store, self.vectors, self.embedder, self.reranker)

    # --- writing ----------------------------------------------------------------------------
    def ingest_text(self, model_id: str, name: str, text: str, *, source: str | None = None,
                    chunk_size: int | None = None, chunk_overlap: int | None = None,
                    threshold: float | None = None, progress: ProgressFn | None = None) -> Archive:
        """Build one archive (one tree, or several roots if merging stops early) from `text`."""
        model_id = _check_model_id(model_id)
        name = (name or "").strip()
        if not name:
            raise InvalidInput("the archive needs a name")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"document {name!r} is empty: there is nothing to remember")
        if len(text) > self.settings.max_document_chars:
            raise InvalidInput(f"document {name!r} has {len(text):,} characters, over the limit of "
                               f"{self.settings.max_document_chars:,} (setting max_document_chars)")
        if chunk_size is not None and chunk_overlap is None and self.settings.chunk_overlap >= chunk_size:
            chunk_overlap = chunk_size // 10
        try:
            run = self.settings.replace(chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                                        merge_threshold=threshold)
        except ConfigError as exc:  # a bad per-call chunk size or overlap is the caller's input
            raise InvalidInput(str(exc)) from None
        progress = progress or _no_progress
        chunks = chunk_text(text, run.chunk_size, run.chunk_overlap)
        progress(Progress("chunk", len(chunks), len(chunks), f"{len(chunks)} chunks"))
        if not chunks:
            raise InvalidInput(f"document {name!r} has no text to chunk")
        params = BuildParams(run.merge_threshold, run.max_node_chars, run.embed_batch_size)
        recorded = {"chunk_size": run.chunk_size, "chunk_overlap": run.chunk_overlap,
                    "merge_threshold": run.merge_threshold, "max_node_chars": run.max_node_chars,
                    "embedder": self.embedder.name}
        builder = ArchiveBuilder(self.store, self.vectors, self.embedder, self.summarizer)
        with self._build_lock:
            archive_id = self.store.create_archive(model_id, name, source, recorded)
            builder.build(archive_id, model_id, chunks, params, progress)
        return self.store.archive(model_id, archive_id)

    def ingest_file(self, path: str | Path, model_id: str, *, name: str | None = None,
                    **options: Any) -> Archive:
        from ingest import load_document

        document = load_document(path, max_bytes=self.settings.max_document_chars * 4)
        return self.ingest_text(model_id, name or document.name, document.text, source=document.source, **options)

    def delete_archive(self, model_id: str, archive_id: int) -> None:
        self.store.archive(_check_model_id(model_id), archive_id)  # NotFound across model_ids
        with self._build_lock:
            # Hidden first: if the process dies between the two stores, doctor finds a
            # non-ready archive and finishes the job instead of re-embedding it.
            self.store.set_status(archive_id, "failed", "being deleted")
            self.vectors.delete(model_id, self.store.archive_node_ids(archive_id))
            self.store.delete_archive_rows(archive_id)

    def export_archive(self, model_id: str, archive_id: int, with_vectors: bool = False) -> dict[str, Any]:
        """One JSON-ready document holding the archive (and, on request, its vectors)."""
        from forest.archive_io import export_archive

        return export_archive(self.store, self.vectors, self.embedder.name, _check_model_id(model_id),
                              archive_id, with_vectors)

    def import_archive(self, model_id: str, document: Any, name: str | None = None) -> Archive:
        """Recreate an exported archive under `model_id` with new ids; nothing is written if invalid."""
        from forest.archive_io import import_archive

        with self._build_lock:
            archive_id = import_archive(self.store, self.vectors, self.embedder, _check_model_id(model_id),
                                        document, name)
        return self.store.archive(model_id, archive_id)

    # --- reading ----------------------------------------------------------------------------
    def archives(self, model_id: str) -> list[Archive]:
        return self.store.archives(_check_model_id(model_id))

    def archive(self, model_id: str, archive_id: int) -> Archive:
        return self.store.archive(_check_model_id(model_id), archive_id)

    def model_ids(self) -> list[str]:
        return self.store.model_ids()

    def tree(self, model_id: str, archive_id: int) -> list[MemoryNode]:
        return self.store.archive_nodes(_check_model_id(model_id), archive_id)

    def node(self, model_id: str, node_id: int) -> MemoryNode:
        return self.store.node(_check_model_id(model_id), node_id)

    def children(self, model_id: str, node_id: int) -> list[MemoryNode]:
        self.store.node(_check_model_id(model_id), node_id)
        return self.store.children(model_id, node_id)

    def search(self, model_id: str, query: str, top_k: int | None = None) -> list[ScoredNode]:
        return self.retriever.search(_check_model_id(model_id), _check_query(query), self._top_k(top_k))

    def retrieve(self, model_id: str, query: str, top_k: int | None = None) -> list[Representative]:
        """retrieve_from_memory: representative nodes, one per tree touched (seed 000 §4.3)."""
        return self.retriever.retrieve(_check_model_id(model_id), _check_query(query), self._top_k(top_k))

    def explore(self, model_id: str, node_id: int, query: str, threshold: float | None = None) -> list[ScoredNode]:
        """archive_drill_down: the node's direct children reranked, those >= threshold."""
        threshold = self.settings.drill_threshold if threshold is None else threshold
        if not 0 <= threshold <= 1:
            raise InvalidInput(f"threshold is a 0-1 relevance score, got {threshold}")
        return self.retriever.drill_down(_check_model_id(model_id), int(node_id), _check_query(query), threshold)

    def context(self, model_id: str, question: str, budget_tokens: int | None = None,
                top_k: int | None = None) -> ContextResult:
        budget = self.settings.context_budget_tokens if budget_tokens is None else budget_tokens
        if budget < 1:
            raise InvalidInput(f"the token budget must be positive, got {budget}")
        return self.retriever.context(_check_model_id(model_id), _check_query(question), budget,
                                      self._top_k(top_k), self.settings.drill_threshold)

    # --- maintenance ------------------------------------------------------------------------
    def doctor(self, repair_drift: bool = False) -> DoctorReport:
        with self._build_lock:
            report = examine(self.db, self.store, self.vectors)
            if repair_drift and not report.healthy:
                repair(self.db, self.store, self.vectors, self.embedder, report)
        return report

    def close(self) -> None:
        self.db.close()

    def _top_k(self, top_k: int | None) -> int:
        top_k = self.settings.top_k if top_k is None else top_k
        if not 1 <= top_k <= 200:
            raise InvalidInput(f"top_k must be between 1 and 200, got {top_k}")
        return top_k


def _check_model_id(model_id: str) -> str:
    if not isinstance(model_id, str) or not model_id.strip():
        raise InvalidInput("model_id is required")
    if len(model_id) > MAX_MODEL_ID or not model_id.isprintable():
        raise InvalidInput(f"model_id must be printable text of at most {MAX_MODEL_ID} characters")
    return model_id


def _check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the query has {len(query):,} characters, over the limit of {MAX_QUERY_CHARS:,}")
    return query
