"""MemoryForest: the one engine object every face (CLI, workbench, MCP, REST) calls.

Thread-safe: reads run concurrently (a SQLite connection per thread); builds are serialized
so there is one writer at a time.
"""
from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.models import registry as components
from forest.config import Settings, load_settings
from forest.storage.sql.opening import open_database
from forest.storage.private_files import make_private_dir, tighten
from forest.errors import AlreadyInLibrary, ConfigError, ForestError, InvalidInput, ServiceUnavailable
from forest.records import (
    Archive,
    ContextResult,
    MemoryNode,
    MergeStep,
    Progress,
    ProgressFn,
    Representative,
    ScoredNode,
)
from forest.storage.archives import ForestStore
from forest.text import counted
from forest.validation import check_model_id, check_query, check_top_k, check_unicode

# The engine's heavier parts (chunking, the build, the agent, research and personal memory) are
# imported by the methods that use them, so a CLI command loads only what it runs.
if TYPE_CHECKING:
    from forest.recall.agent import AgentLoop, AgentState
    from forest.recall.compare import Comparison
    from forest.tree.build import ArchiveBuilder, BuildParams
    from forest.tree.chunking import Chunk
    from forest.doctor import DoctorReport
    from forest.ingest.document import Document
    from forest.models.embedders import Embedder
    from forest.models.llm import StructuredLLM
    from forest.tree.grow import ArchivePair
    from forest.library import PaperIdentity, SamePaper
    from forest.tree.outline import DocumentOutline
    from forest.views.page_preview import SourcePreview
    from forest.personal.service import PersonalMemory
    from forest.models.rerankers import Reranker
    from forest.research.claims import Conflict, Statement
    from forest.research.memory import ResearchMemory, ResearchTurn
    from forest.recall.retrieval import Retriever
    from forest.storage.source_files import SourceFiles
    from forest.storage.ownership import Ownership
    from forest.models.summarizers import Summarizer
    from forest.storage.vectors.base import VectorStore

SEARCH_MODES = ("vector", "bm25", "hybrid")
MAX_TOP_K = 200


def _no_progress(_: Progress) -> None:
    pass


class MemoryForest:
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
        # Writers of this store take turns with every other process's (forest.storage.locks).
        self._build_lock = self.db.writer_lock()
        self._init_lock = threading.Lock()
        self._made_vectors = vectors is None  # a store the caller passed in is the caller's to close
        self._ownership: Ownership | None = None
        self._vector_snapshots = vector_snapshots

    # Models load on first use, so `forest archives` or `forest tree` start instantly.
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

    def models_in_use(self) -> dict[str, dict[str, Any]]:
        """The LLM and the embedder in force: provider, model, URL without secrets."""
        from forest.models import catalog

        return {"llm": catalog.llm_in_use(self.settings, self.llm),
                "embedder": catalog.embedder_in_use(self.settings, self.embedder)}

    @cached_property
    def agent(self) -> AgentLoop:
        from forest.recall.agent import AgentLoop, LLMPolicy, OfflinePolicy

        # The agent loop's decision maker: the configured LLM, else the deterministic policy.
        llm = self.llm
        return AgentLoop(self, LLMPolicy(llm) if llm else OfflinePolicy())

    @cached_property
    def research(self) -> ResearchMemory:
        """Research memory (seed 002): directives, workspace, episodic events, knowledge."""
        from forest.research.memory import ResearchMemory

        embedder, vectors, llm = self.embedder, self.vectors, self.llm
        with self._init_lock:
            return ResearchMemory(self.db, self.store, embedder, vectors, self.settings, llm)

    @cached_property
    def personal(self) -> PersonalMemory:
        """Personal memory service (seeds 003, 004): process_memory, the memory tool, the graph."""
        from forest.personal.service import PersonalMemory

        embedder, llm = self.embedder, self.llm
        with self._init_lock:
            return PersonalMemory(self.db, embedder, self.settings, llm)

    @cached_property
    def sources(self) -> SourceFiles:
        """The original PDFs, kept so citations can open their pages."""
        from forest.storage.source_files import SourceFiles

        return SourceFiles(self.settings.sources_path)

    @cached_property
    def retriever(self) -> Retriever:
        from forest.recall.retrieval import Retriever

        return Retriever(self.store, self.vectors, self.embedder, self.reranker,
                         self.settings.hybrid_vector_weight, self.settings.hybrid_fusion)

    # --- writing ----------------------------------------------------------------------------
    def ingest_text(self, model_id: str, name: str, text: str, *, source: str | None = None,
                    **options: Any) -> Archive:
        """Build one archive from text or Markdown (headings become sections)."""
        from forest.ingest import text_document

        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f"document {name!r} is empty: there is nothing to remember")
        self._check_size(name, text)
        return self.ingest_document(model_id, text_document(name, text, source), **options)

    def ingest_file(self, path: str | Path, model_id: str, *, name: str | None = None,
                    progress: ProgressFn | None = None, **options: Any) -> Archive:
        """Build one archive from a .pdf, .txt or .md file, reporting every stage to `progress`."""
        model_id = check_model_id(model_id)
        document = self.read_file(path, progress)
        return self.ingest_document(model_id, document, name=name, progress=progress, **options)

    def ingest_document(self, model_id: str, document: Document, *, name: str | None = None,
                        chunk_size: int | None = None, chunk_overlap: int | None = None,
                        threshold: float | None = None, progress: ProgressFn | None = None,
                        on_duplicate: str = "skip", library: dict[str, Any] | None = None,
                        planned_against: Collection[int] | None = None) -> Archive:
        """Build one archive (one tree, or several roots if merging stops early) from `document`,
        named `name`, else the paper's title, else the document's, else its file name.
        `library`: what a researcher's library knows of the paper (LibraryEntry.metadata()), completed
        with what the PDF says of itself (title, authors, year, venue, DOI, arXiv id) and stored with
        the archive in the same write; its passages are then cited by author and year.
        `on_duplicate`, when the model_id's library holds this paper already (the same file, text,
        DOI, arXiv id, or title with first author and year: forest.library.identity): "skip" raises
        AlreadyInLibrary naming its archive, before anything is paid for and again under the writer
        lock (a call sent again after its reply was lost adds nothing); "replace" builds this one,
        then removes the archive held; "keep" builds it beside it.
        `planned_against`: the archives an import planned this document against (import_library),
        whose fate the plan decided; only archives made since (a concurrent import's) are checked,
        and one holding the same file is never built beside."""
        from forest.library import PaperIdentity, check_on_duplicate, cite_as, completed
        from forest.tree.build import all_or_nothing

        check_on_duplicate(on_duplicate)
        with self._kept_source(document) as keep:
            model_id = check_model_id(model_id)
            metadata = completed(library, document.metadata)
            name = (name or (metadata or {}).get("title") or document.title or document.name or "").strip()
            if not name:
                raise InvalidInput("the archive needs a name")
            run = self._run_settings(chunk_size, chunk_overlap, threshold)
            kept = document.kept_file or self.sources.name_for(document.source)  # copied with the write
            paper = PaperIdentity.of(metadata, (kept or "").removesuffix(".pdf"), [_fingerprint(document)])
            held = self._held_paper(model_id, paper, on_duplicate, planned_against=planned_against)
            progress = progress or _no_progress
            chunks = self._chunks(document, run, progress)
            params = _build_params(run)
            entry = _document_entry(document, 0, len(chunks))
            if kept:
                entry["file"] = kept
            recorded = {"chunker": run.chunker, "chunk_size": run.chunk_size, "chunk_overlap": run.chunk_overlap,
                        "merge_threshold": run.merge_threshold, "max_node_chars": run.max_node_chars,
                        "embedder": self.embedder.name, "documents": [entry]}
            # 'building': hidden from readers, and left alone by doctor while this process lives. The
            # summaries and vectors are made without the writer lock, so a slow summarizer (Claude)
            # holds up no delete, import or doctor; the lock is held for the write alone.
            archive_id = self.store.create_archive(model_id, name, document.source, recorded, metadata,
                                                   cite_as(metadata))
            builder = self._builder
            with all_or_nothing(self.store, self.vectors, archive_id, model_id) as written_ids:
                growth = builder.plan_document(chunks, _outline(document, chunks), params, progress)
                with self._build_lock:
                    held = self._held_paper(model_id, paper, on_duplicate, archive_id, planned_against) or held
                    keep()
                    builder.write(archive_id, model_id, growth, written_ids, progress)
        if on_duplicate == "replace" and held is not None:
            self.delete_archive(model_id, int(held.archive_id))
        return self.store.archive(model_id, archive_id)

    def _held_paper(self, model_id: str, paper: PaperIdentity, on_duplicate: str, building: int | None = None,
                    planned_against: Collection[int] | None = None) -> SamePaper | None:
        """The model_id's archive holding `paper` (not the one `building`, nor one of
        `planned_against`), if any; AlreadyInLibrary when the caller asked to skip it, or when an
        import's plan meets the same file built since (two imports of one folder at once)."""
        from forest.library import KnownDocument, find_same

        decided = set(planned_against or ())
        same = find_same(paper, [KnownDocument.of(a) for a in self.store.archives(model_id)
                                 if a.id != building and a.id not in decided])
        if same is not None and (on_duplicate == "skip" or (planned_against is not None
                                                             and same.reason == "the same file")):
            raise AlreadyInLibrary(same.said(), int(same.archive_id))
        return same

    def append_file(self, path: str | Path, model_id: str, archive_id: int, *,
                    progress: ProgressFn | None = None) -> Archive:
        """Add a document to an existing archive without rebuilding it (see forest.tree.grow)."""
        model_id = check_model_id(model_id)
        self.store.archive(model_id, archive_id)
        return self.append_document(model_id, archive_id, self.read_file(path, progress), progress=progress)

    def append_document(self, model_id: str, archive_id: int, document: Document, *,
                        progress: ProgressFn | None = None, allow_duplicate: bool = True) -> Archive:
        """Add `document` to an archive (see forest.tree.grow); with allow_duplicate=False a
        document whose text the model_id already holds is refused (InvalidInput)."""
        from forest.tree.grow import append_to_archive

        with self._kept_source(document) as keep:
            model_id = check_model_id(model_id)
            archive = self.store.archive(model_id, archive_id)
            recorded = archive.settings
            # Archives from before the chunker setting were cut by the recursive splitter.
            run = self._run_settings(recorded.get("chunk_size"), recorded.get("chunk_overlap"),
                                     recorded.get("merge_threshold"), recorded.get("chunker", "recursive"))
            self._check_embedder(archive)
            progress = progress or _no_progress
            chunks = self._chunks(document, run, progress)
            entry = _document_entry(document, 0, len(chunks))
            with self._build_lock:
                kept = keep()
                if kept:
                    entry["file"] = kept
                if not allow_duplicate:
                    self._refuse_held_text(model_id, document)
                append_to_archive(self._builder, model_id, archive_id, chunks, _outline(document, chunks),
                                  entry, _build_params(run), progress)
        return self.store.archive(model_id, archive_id)

    def rebuild_archive(self, model_id: str, archive_id: int, *, progress: ProgressFn | None = None) -> Archive:
        """Re-plan an archive's tree over its stored leaves and vectors (see forest.tree.grow)."""
        from forest.tree.grow import rebuild_archive

        model_id = check_model_id(model_id)
        archive = self.store.archive(model_id, archive_id)
        self._check_embedder(archive)
        recorded = archive.settings
        run = self._run_settings(recorded.get("chunk_size"), recorded.get("chunk_overlap"),
                                 recorded.get("merge_threshold"))
        with self._build_lock:
            rebuild_archive(self._builder, model_id, archive_id, _build_params(run), progress or _no_progress)
        return self.store.archive(model_id, archive_id)

    @property
    def _builder(self) -> ArchiveBuilder:
        from forest.tree.build import ArchiveBuilder

        return ArchiveBuilder(self.store, self.vectors, self.embedder, self.summarizer)

    @contextmanager
    def _kept_source(self, document: Document) -> Iterator[Callable[[], str | None]]:
        """One build of `document`: `keep()`, called under the build lock (prunes run under it),
        makes sure the store holds the document's PDF and names it: the copy read_file kept, else
        one made now. Afterwards read_file's hold on the copy ends, and if the build failed the
        copy goes again unless an archive names it."""
        def keep() -> str | None:
            if document.kept_file and self.sources.has(document.kept_file):
                return document.kept_file
            return self.sources.keep(document.source)

        try:
            yield keep
        except BaseException:
            if document.kept_file:
                self.sources.release(document.kept_file)
            with self._build_lock:
                self.sources.prune(self.store.kept_files())
            raise
        if document.kept_file:
            self.sources.release(document.kept_file)

    def _check_embedder(self, archive: Archive) -> None:
        if archive.settings.get("embedder", self.embedder.name) != self.embedder.name:
            raise ConfigError(f"archive {archive.id} was built with {archive.settings['embedder']}, "
                              f"this forest embeds with {self.embedder.name}")

    def _refuse_held_text(self, model_id: str, document: Document) -> None:
        fingerprint = _fingerprint(document)
        for archive in self.store.archives(model_id):
            if any(d.get("sha256") == fingerprint for d in archive.documents):
                raise InvalidInput(f"{document.name!r} is already in archive {archive.id} ({archive.name}): "
                                   "the same text was not added again")

    def read_file(self, path: str | Path, progress: ProgressFn | None = None) -> Document:
        """Parse one file into a Document (checks, size limits, "parse" progress). A PDF is copied
        into the store at once (Document.kept_file, held until its build starts), so the caller may
        delete the file before the build and its citations still open their pages."""
        from forest.ingest import load_document

        report = progress or _no_progress
        document = load_document(path, max_bytes=int(self.settings.max_file_mb * 1_000_000),
                                 on_page=lambda done, total: report(Progress("parse", done, total, "pages")))
        self._check_size(document.name, document.text)
        report(Progress("parse", 1, 1, counted(len(document.passages), "passage")))
        kept = self.sources.keep(document.source, hold=True)
        return dataclasses.replace(document, kept_file=kept) if kept else document

    def _check_size(self, name: str, text: str) -> None:
        check_unicode(text, f"document {name!r}")
        if len(text) > self.settings.max_document_chars:
            raise InvalidInput(f"document {name!r} has {len(text):,} characters, over the limit of "
                               f"{self.settings.max_document_chars:,} (setting max_document_chars)")

    def _run_settings(self, chunk_size: int | None, chunk_overlap: int | None,
                      threshold: float | None, chunker: str | None = None) -> Settings:
        if chunk_size is not None and chunk_overlap is None and self.settings.chunk_overlap >= chunk_size:
            chunk_overlap = chunk_size // 10
        try:
            return self.settings.replace(chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                                         merge_threshold=threshold, chunker=chunker)
        except ConfigError as exc:  # a bad per-call chunk size or overlap is the caller's input
            raise InvalidInput(str(exc)) from None

    @staticmethod
    def _chunks(document: Document, run: Settings, progress: ProgressFn) -> list[Chunk]:
        from forest.tree.leaves import leaf_chunks

        if not document.passages or not document.text.strip():
            raise InvalidInput(f"document {document.name!r} is empty: there is nothing to remember")
        chunks = leaf_chunks(document, run.chunker, run.chunk_size, run.chunk_overlap)
        progress(Progress("chunk", len(chunks), len(chunks), counted(len(chunks), "chunk")))
        if not chunks:
            raise InvalidInput(f"document {document.name!r} has no text to chunk")
        return chunks

    def delete_archive(self, model_id: str, archive_id: int) -> None:
        self.store.archive(check_model_id(model_id), archive_id)  # NotFound across model_ids
        with self._build_lock:
            # Hidden first: if the process dies between the two stores, doctor finds a
            # non-ready archive and finishes the job instead of re-embedding it.
            self.store.set_status(archive_id, "failed", "being deleted")
            self.vectors.delete(model_id, self.store.archive_node_ids(archive_id))
            self.store.delete_archive_rows(archive_id)
            self.sources.prune(self.store.kept_files())

    def export_archive(self, model_id: str, archive_id: int, with_vectors: bool = False) -> dict[str, Any]:
        """One JSON-ready document holding the archive (and, on request, its vectors)."""
        from forest.tree.archive_io import export_archive

        return export_archive(self.store, self.vectors, self.embedder.name, check_model_id(model_id),
                              archive_id, with_vectors)

    def import_archive(self, model_id: str, document: Any, name: str | None = None, *,
                       progress: ProgressFn | None = None, on_duplicate: str = "skip") -> Archive:
        """Recreate an exported archive under `model_id` with new ids; nothing is written if invalid.
        A paper the model_id holds already is skipped, replaced or kept beside as in
        ingest_document (`on_duplicate`). Checking and embedding (reported to `progress`) happen
        before the writer lock is taken, so other writers wait only for the write itself."""
        from forest.library import PaperIdentity, check_on_duplicate
        from forest.tree.archive_io import check_import, embed_import, write_import

        check_on_duplicate(on_duplicate)
        model_id = check_model_id(model_id)
        prepared = check_import(document, self.settings.max_document_chars, name)
        paper = PaperIdentity.of(prepared.library, text_sha256=prepared.text_fingerprints)
        held = self._held_paper(model_id, paper, on_duplicate)   # before the vectors are paid for
        embed_import(prepared, document, self.embedder, progress)
        with self._build_lock:
            held = self._held_paper(model_id, paper, on_duplicate) or held
            archive_id = write_import(self.store, self.vectors, model_id, prepared)
        if on_duplicate == "replace" and held is not None:
            self.delete_archive(model_id, int(held.archive_id))
        return self.store.archive(model_id, archive_id)

    def import_archive_text(self, model_id: str, raw: bytes | str, where: str = "the export",
                            name: str | None = None, **options: Any) -> Archive:
        """import_archive from an export file's text (`where` names it in errors), size-checked first."""
        from forest.tree.archive_io import read_export

        return self.import_archive(model_id, read_export(raw, where), name, **options)

    def import_archive_file(self, model_id: str, path: str | Path, name: str | None = None,
                            **options: Any) -> Archive:
        """import_archive from an export file, read within the import size limit."""
        from forest.ingest.files import read_limited
        from forest.tree.archive_io import MAX_IMPORT_BYTES

        raw = read_limited(path, MAX_IMPORT_BYTES, f"the import limit of {MAX_IMPORT_BYTES:,} bytes")
        return self.import_archive_text(model_id, raw, Path(path).name, name, **options)

    def similar_archives(self, model_id: str, threshold: float = 0.0) -> list[ArchivePair]:
        """Pairs of this model_id's archives, most similar first (seed 000 §7: merge candidates)."""
        from forest.tree.grow import similar_archives

        if not 0 <= threshold <= 1:
            raise InvalidInput(f"threshold is a 0-1 similarity, got {threshold}")
        return similar_archives(self.store, self.vectors, self.embedder, check_model_id(model_id), threshold)

    def join_archives(self, model_id: str, archive_ids: list[int], name: str | None = None) -> Archive:
        """Put the trees of several archives under one new super-root, in the first archive."""
        from forest.tree.grow import join_archives

        model_id = check_model_id(model_id)
        with self._build_lock:
            archive_id = join_archives(self.store, self.vectors, self.embedder, self.summarizer, model_id,
                                       archive_ids, name)
        return self.store.archive(model_id, archive_id)

    # --- reading ----------------------------------------------------------------------------
    def archives(self, model_id: str) -> list[Archive]:
        return self.store.archives(check_model_id(model_id))

    def archive_ids(self, model_id: str) -> list[int]:
        """The ids of archives() without their statistics: cheap enough to poll."""
        return self.store.archive_ids(check_model_id(model_id))

    def archive(self, model_id: str, archive_id: int) -> Archive:
        return self.store.archive(check_model_id(model_id), archive_id)

    def model_ids(self) -> list[str]:
        return self.store.model_ids()

    def tree(self, model_id: str, archive_id: int) -> list[MemoryNode]:
        return self.store.archive_nodes(check_model_id(model_id), archive_id)

    def node(self, model_id: str, node_id: int, full_text: bool = False) -> MemoryNode:
        """One node; with full_text, a summary node's content is its leaves' text joined."""
        node = self.store.node(check_model_id(model_id), node_id)
        return self.store.with_text(model_id, node) if full_text else node

    def source_preview(self, model_id: str, node_id: int) -> SourcePreview:
        """Where a node was read: its PDF pages with the passage located (forest.views.page_preview
        renders them), or its section's text for text documents."""
        from forest.views.page_preview import source_preview

        return source_preview(self.store, self.sources, check_model_id(model_id), node_id)

    def merge_history(self, model_id: str, archive_id: int) -> list[MergeStep]:
        return self.store.merge_history(check_model_id(model_id), archive_id)

    def children(self, model_id: str, node_id: int) -> list[MemoryNode]:
        self.store.node(check_model_id(model_id), node_id)
        return self.store.children(model_id, node_id)

    def search(self, model_id: str, query: str, top_k: int | None = None, mode: str = "vector",
               archive_ids: Sequence[int] | None = None) -> list[ScoredNode]:
        """Raw hits: mode 'vector' (semantic), 'bm25' (words, FTS5) or 'hybrid' (both, fused);
        within `archive_ids` if given (default: every archive of the model_id)."""
        return self.retriever.search(check_model_id(model_id), check_query(query), self._top_k(top_k),
                                     self._mode(mode), self._scope(model_id, archive_ids))

    def retrieve(self, model_id: str, query: str, top_k: int | None = None,
                 mode: str | None = None, archive_ids: Sequence[int] | None = None) -> list[Representative]:
        """retrieve_from_memory: representative nodes, one per tree touched (seed 000 §4.3)."""
        return self.retriever.retrieve(check_model_id(model_id), check_query(query), self._top_k(top_k),
                                       self._mode(mode), self._scope(model_id, archive_ids))

    def explore(self, model_id: str, node_id: int, query: str, threshold: float | None = None) -> list[ScoredNode]:
        """archive_drill_down: the node's direct children reranked, those >= threshold."""
        return self.retriever.drill_down(check_model_id(model_id), int(node_id), check_query(query),
                                         self._threshold(threshold))

    def context(self, model_id: str, question: str, budget_tokens: int | None = None,
                top_k: int | None = None, mode: str | None = None,
                archive_ids: Sequence[int] | None = None) -> ContextResult:
        budget = self.settings.context_budget_tokens if budget_tokens is None else budget_tokens
        if budget < 1:
            raise InvalidInput(f"the token budget must be positive, got {budget}")
        return self.retriever.context(check_model_id(model_id), check_query(question), budget,
                                      self._top_k(top_k), self._mode(mode), self._scope(model_id, archive_ids))

    def ask(self, model_id: str, question: str, top_k: int | None = None,
            threshold: float | None = None, archive_ids: Sequence[int] | None = None) -> AgentState:
        """The ANSWER/EXPLORE loop to its answer (seed 000 §3.2, §5.2): answer, cited nodes, trace;
        over `archive_ids` only if given (default: every archive of the model_id)."""
        return self._run_agent(model_id, question, top_k, threshold, archive_ids)

    def ask_in_session(self, model_id: str, session_id: str, question: str, top_k: int | None = None,
                       threshold: float | None = None,
                       archive_ids: Sequence[int] | None = None) -> tuple[AgentState, ResearchTurn]:
        """ask within a research session (seed 002 §4): the session's directives, knowledge and
        briefing go first into the loop's prompts; the turn is then remembered (events, conflict
        reconciliation, compaction when due)."""
        state = self._run_agent(model_id, question, top_k, threshold, archive_ids,
                                self.research.preamble(model_id, session_id))
        return state, self.research.record_turn(state, session_id)

    def _run_agent(self, model_id: str, question: str, top_k: int | None, threshold: float | None,
                   archive_ids: Sequence[int] | None, preamble: str = "") -> AgentState:
        return self.agent.run(check_model_id(model_id), check_query(question), self._top_k(top_k),
                              self._threshold(threshold), preamble, self._chosen(model_id, archive_ids))

    def start_asking(self, model_id: str, question: str, top_k: int | None = None, threshold: float | None = None,
                     archive_ids: Sequence[int] | None = None, session_id: str | None = None) -> AgentState:
        """The loop before its first step, to take one step at a time (step_asking): what `ask`
        runs to the end. In a research session its directives, knowledge and briefing go first
        into the prompts; remember the finished turn with research.record_turn."""
        model_id = check_model_id(model_id)
        preamble = self.research.preamble(model_id, session_id) if session_id is not None else ""
        return self.agent.start(model_id, check_query(question), self._top_k(top_k), self._threshold(threshold),
                                preamble, self._chosen(model_id, archive_ids))

    def step_asking(self, state: AgentState, explore_node_id: int | None = None) -> AgentState:
        """One decision of the loop: the policy's, or exploring `explore_node_id` (a person's choice,
        one of state.explorable)."""
        return self.agent.step(state, explore_node_id)

    def question_conflicts(self, model_id: str, session_id: str, question: str,
                           budget_tokens: int = 3000) -> list[Conflict]:
        """Likely conflicts among the passages a question's context gathers and the session's
        findings (the Reconcile page's proposals)."""
        leaves = self.context(model_id, question, budget_tokens).leaves
        return self.research.conflicts(model_id, session_id, [leaf.node.id for leaf in leaves])

    # --- comparing papers -------------------------------------------------------------------
    def compare(self, model_id: str, questions: Sequence[str], archive_ids: Sequence[int] | None = None,
                top_k: int | None = None, threshold: float | None = None) -> Comparison:
        """Compare papers (forest.recall.compare): every question asked of every paper (`archive_ids`,
        default every ready archive of the model_id), each cell the cited sentences that best answer
        it, or "not found" when none clears `threshold` (0-1, default compare.FOUND_THRESHOLD).
        Extractive: no LLM is called."""
        from forest.recall.agent import AgentLoop, OfflinePolicy
        from forest.recall.compare import FOUND_THRESHOLD, check_questions, check_table, compare_papers

        model_id = check_model_id(model_id)
        asked = check_questions(questions)
        chosen = self._scope(model_id, archive_ids)
        papers = [a for a in self.store.archives(model_id) if a.status == "ready" and (chosen is None or a.id in chosen)]
        check_table(papers, asked)
        return compare_papers(AgentLoop(self, OfflinePolicy()), self.retriever, model_id, asked, papers,
                              self._top_k(top_k), self._threshold(FOUND_THRESHOLD if threshold is None else threshold))

    # --- about the engine and its passages ---------------------------------------------------
    @property
    def answer_policy(self) -> str:
        """What decides the agent's steps: '<provider>:<model>' of the LLM in force, else the offline policy."""
        return self.agent.policy.label

    @property
    def supported_suffixes(self) -> tuple[str, ...]:
        """The file types ingest reads."""
        from forest.ingest import SUPPORTED_SUFFIXES

        return SUPPORTED_SUFFIXES

    def find_passages(self, model_id: str, query: str, top_k: int = 8) -> list[Statement]:
        """The passages (leaves) a query finds by hybrid search, best first, as statements the
        research part compares and reconciles."""
        hits = self.search(model_id, query, top_k=top_k, mode="hybrid")
        return self.research.passages(model_id, [h.node.id for h in hits if h.node.is_leaf], strict=False)

    @staticmethod
    def passage_label(statement: Statement) -> str:
        """'Ask the Right Questions (p. 7, §5.5 Results)': a statement's source and where in it."""
        from forest.research.claims import source_label

        return source_label(statement)

    # --- maintenance ------------------------------------------------------------------------
    def resume_pending_writes(self) -> None:
        """Servers call this at start: process_memory input queued by an earlier process that
        stopped before writing it is written now (the model loads only if there is some)."""
        from forest.personal.memory_store import PersonalStore

        if PersonalStore(self.db).has_pending():
            self.personal.start()

    def doctor(self, repair_drift: bool = False) -> DoctorReport:
        from forest.doctor import examine, repair

        with self._build_lock:
            mirror = self.personal.store.mirror if self.settings.graph_url else None
            report = examine(self.db, self.store, self.vectors, self.settings.data_dir, mirror)
            if repair_drift and not report.healthy:
                repair(self.db, self.store, self.vectors, self.embedder, report, self.settings.data_dir, mirror)
        return report

    # --- a researcher's library --------------------------------------------------------------
    def import_library(self, model_id: str, path: str | Path, progress: ProgressFn | None = None,
                       on_duplicate: str = "skip") -> dict[str, Any]:
        """Import a Zotero data directory, a BibTeX file or a folder (forest.library): each paper
        once (forest.library.plan). New papers become archives carrying their metadata, the
        library's completed by what each PDF says of itself (each in one write: an interrupted
        import run again continues where it stopped); held ones whose metadata changed are updated,
        a library item's new file replaces its archive; a paper held otherwise is skipped, replaced
        or kept beside (`on_duplicate`). Missing files, duplicates, unreadable documents and items
        without a document are reported without failing the rest. A model server that does not
        answer stops the import."""
        from forest.doctor import remove_builds, stale_builds
        from forest.library import KnownDocument, cite_as, plan_import, read_library

        model_id = check_model_id(model_id)
        progress = progress or _no_progress
        max_bytes = int(self.settings.max_file_mb * 1_000_000)
        reading = read_library(path, max_bytes)
        with self._build_lock:  # what an interrupted import was building goes, before it is built again
            remove_builds(self.db, self.store, self.vectors,
                          stale_builds(self.db, [a for a in self.store.all_archives() if a["model_id"] == model_id]))
        archives = self.store.archives(model_id)
        plan = plan_import(reading.entries, [KnownDocument.of(a) for a in archives], on_duplicate, max_bytes)
        names = {a.id: a.name for a in archives}
        imported, updated, replaced, failed, built_since = [], [], [], [], []
        for done, planned in enumerate(plan.to_build):
            progress(Progress("import", done, len(plan.to_build), planned.title))
            try:  # planned again under the writer lock: what a concurrent import built since is not built twice
                archive = self.ingest_file(planned.entry.path, model_id, name=planned.title,
                                           on_duplicate=on_duplicate, planned_against=set(names),
                                           library={**planned.metadata, "file_sha256": planned.sha256})
            except AlreadyInLibrary as exc:
                built_since.append({"title": planned.title, "path": str(planned.entry.path),
                                    "archive_id": exc.archive_id, "reason": str(exc)})
                continue
            except ServiceUnavailable:
                raise
            except ForestError as exc:  # this document cannot be read or built: the others go on
                failed.append({"title": planned.title, "path": str(planned.entry.path), "error": str(exc)})
                continue
            said = {"archive_id": archive.id, "title": archive.name, "cite_as": archive.cite_as}
            if planned.archive_id is None:
                imported.append(said)
                continue
            self.delete_archive(model_id, int(planned.archive_id))   # built in the place of the one held
            if "file" in planned.changed_fields:
                updated.append({**said, "replaces": planned.archive_id, "changed": list(planned.changed_fields)})
            else:
                replaced.append({**said, "replaces": planned.archive_id, "reason": planned.same.reason})
        progress(Progress("import", len(plan.to_build), len(plan.to_build)))
        for planned in (p for p in plan.changed if "file" not in p.changed_fields):
            metadata = {**planned.metadata, "file_sha256": planned.sha256}
            self.store.set_library(model_id, int(planned.archive_id), metadata, cite_as(metadata))
            updated.append({"archive_id": planned.archive_id, "title": names.get(planned.archive_id),
                            "cite_as": cite_as(metadata), "changed": list(planned.changed_fields)})
        return {
            "model_id": model_id, "source": str(reading.source), "kind": reading.kind, "on_duplicate": on_duplicate,
            "counts": {"imported": len(imported), "updated": len(updated), "unchanged": len(plan.unchanged),
                       "already": len(plan.already) + len(built_since), "replaced": len(replaced),
                       "missing": len(plan.missing),
                       "duplicates": len(plan.duplicates), "skipped": len(reading.skipped), "failed": len(failed)},
            "imported": imported, "updated": updated, "replaced": replaced, "failed": failed,
            "already": [{"title": p.title, "path": str(p.entry.path), "archive_id": p.archive_id,
                         "reason": p.same.said()} for p in plan.already] + built_since,
            "missing": [{"title": e.title, "path": str(e.path) if e.path else None, "reason": e.missing_reason}
                        for e in plan.missing],
            "duplicates": [{"title": d.entry.title, "path": str(d.entry.path), "same_as": d.same_as.title,
                            "reason": d.reason} for d in plan.duplicates],
            "skipped": [{"title": s.title, "key": s.source_key, "reason": s.reason} for s in reading.skipped],
            "notes": [{"title": e.title, "key": e.source_key, "note": note} for e in reading.entries for note in e.notes],
        }

    def bibtex(self, model_id: str, archive_ids: Sequence[int] | None = None) -> str:
        """The BibTeX of the archives' papers (all the model_id's imported ones if none are named);
        archives with no library metadata give none."""
        from forest.library import LibraryEntry, bibtex_of

        model_id = check_model_id(model_id)
        wanted = None if archive_ids is None else set(archive_ids)
        chosen = [a for a in self.store.archives(model_id) if a.library and (wanted is None or a.id in wanted)]
        return "\n".join(bibtex_of(LibraryEntry.from_metadata(a.library)) for a in chosen)

    def markdown_notes(self, model_id: str, sessions: Sequence[str] | None = None,
                       archive_ids: Sequence[int] | None = None) -> dict[str, str]:
        """The model_id's papers (`archive_ids` only, if given) and research sessions (all, if not
        named) as Markdown notes for Obsidian or any Markdown editor (forest.views.markdown_notes):
        {path in the folder: text}, the links between them relative to the folder."""
        from forest.views.markdown_notes import index_note, note_name, paper_note, session_file, session_note

        model_id = check_model_id(model_id)
        archives = [a for a in self.store.archives(model_id) if archive_ids is None or a.id in set(archive_ids)]
        sessions = list(self.research.sessions(model_id) if sessions is None else sessions)
        notes = {a.id: note_name(a) for a in archives}
        files = {f"papers/{notes[a.id]}": paper_note(a, self.tree(model_id, a.id)) for a in archives}
        for session_id in sessions:
            asked = self.research.questions(model_id, session_id)
            cited_ids = [c.get("node_id") for e in asked for c in e.get("cited", []) if isinstance(c.get("node_id"), int)]
            works = {node_id: node.archive_id for node_id, node in self.store.nodes(model_id, cited_ids).items()}
            files[f"sessions/{session_file(session_id)}"] = session_note(
                session_id, self.research.workspace(model_id, session_id), asked, notes, works)
        files["index.md"] = index_note(model_id, archives, notes, sessions)
        return files

    def export_markdown(self, model_id: str, folder: str | Path, sessions: Sequence[str] | None = None,
                        archive_ids: Sequence[int] | None = None) -> list[str]:
        """markdown_notes written under `folder`; returns the files written, relative to it."""
        files = self.markdown_notes(model_id, sessions, archive_ids)
        root = Path(folder)
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        return sorted(files)

    def reembed(self, model_id: str, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Re-embed the model_id with the configured embedder after a change of embedder: every
        node's vector (computed first, then the other embedder's vectors replaced in one step under
        the writer lock, so an interruption before it changes nothing) and its episodic events.
        Run again after an interruption during the step: it finishes the job."""
        from forest.doctor import node_vectors

        model_id = check_model_id(model_id)
        progress = progress or _no_progress
        ids = [r[0] for r in self.db.query("SELECT n.id FROM memory_nodes n JOIN archives a ON a.id = n.archive_id "
                                           "WHERE a.model_id = ? ORDER BY n.id", (model_id,))]
        def report(done: int, total: int) -> None:
            progress(Progress("embed", done, total, "nodes"))

        parts = list(node_vectors(self.db, self.embedder, model_id, ids, report))
        with self._build_lock:
            dropped = self.vectors.drop_other_embedders(model_id)
            for part_ids, vectors, metadatas in parts:
                self.vectors.upsert(model_id, part_ids, vectors, metadatas)
        events = self.research.reembed(model_id)
        return {"model_id": model_id, "embedder": self.embedder.name, "nodes_reembedded": len(ids),
                "vectors_of_other_embedders_dropped": dropped, "events_reembedded": events}

    def copy_store(self, target: Settings, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Copy this whole store into the empty store `target` names (another database, vector
        store or data directory: SQLite + Chroma to PostgreSQL + pgvector or Qdrant, and back):
        rows with their ids, vectors as they are (nothing is embedded again), kept PDFs. Then
        checks it: the same rows per table, the same vectors per model_id (a sample compared value
        for value), and the copy's search finding sampled nodes by their own vectors."""
        import shutil

        from forest.personal.memory_store import PersonalStore
        from forest.storage.copy import copy_rows, copy_vectors

        progress = progress or _no_progress
        health = self.doctor()
        if health.stale_builds or health.orphan_vectors or health.missing_vectors or health.bad_paths:
            raise ConfigError("the source store has drift between its database and vectors: run "
                              "`forest doctor --repair` first, then copy")
        destination = MemoryForest(target, embedder=self.embedder)
        try:
            with self._build_lock:  # no writer changes the source meanwhile
                rows = copy_rows(self.db, destination.db, progress)
                vectors = copy_vectors(self.db, self.vectors, destination.vectors, progress)
                PersonalStore(destination.db).index_missing()
                if Path(target.sources_path).resolve() != Path(self.settings.sources_path).resolve() \
                        and Path(self.settings.sources_path).is_dir():
                    shutil.copytree(self.settings.sources_path, target.sources_path, dirs_exist_ok=True)
                    tighten(target.data_dir)
            return {"rows": rows, "vectors": vectors, "checks": self._compare_stores(destination)}
        finally:
            destination.close()

    def _compare_stores(self, other: MemoryForest) -> dict[str, Any]:
        """What copy_store checks of a copy (a ForestError when it differs)."""
        import numpy as np

        from forest.storage.copy import row_counts

        problems = []
        if row_counts(self.db) != row_counts(other.db):
            problems.append(f"rows per table differ: {row_counts(self.db)} vs {row_counts(other.db)}")
        searched = found = 0
        for model_id in self.model_ids():
            ids = sorted(self.vectors.ids(model_id))
            if ids != sorted(other.vectors.ids(model_id)):
                problems.append(f"the vectors of model_id {model_id!r} differ in number or ids")
                continue
            sample = ids[:: max(1, len(ids) // 20)]
            mine, theirs = self.vectors.get_vectors(model_id, sample), other.vectors.get_vectors(model_id, sample)
            # Equal to float32's last bits: a store may normalise a cosine vector again on write.
            if any(not np.allclose(mine[i], theirs[i], rtol=0, atol=1e-6) for i in sample):
                problems.append(f"the vectors of model_id {model_id!r} differ in value")
            # The copy's index answers under the model_id with the right ids: a node's own vector
            # finds it first (or another node of the same vector: the same text embedded twice).
            # Not a question's top hit compared between the stores: Chroma's and pgvector's HNSW
            # are approximate, each may miss a different nearest neighbour, and a right copy would
            # be refused for the source's miss.
            for node_id in sample[:5]:
                searched += 1
                top = [i for i, _ in other.vectors.query(model_id, mine[node_id], 1)]
                found += top == [node_id] or bool(top) and np.allclose(
                    other.vectors.get_vectors(model_id, top)[top[0]], mine[node_id], rtol=0, atol=1e-6)
        if found < searched:
            problems.append(f"the copy's search misses {searched - found} of {searched} sampled nodes by their own vectors")
        if problems:
            raise ForestError("the copy differs from its source: " + "; ".join(problems))
        return {"rows_equal": True, "vectors_equal": True, "nodes_searched": searched, "found_by_own_vector": found}

    def own_store(self) -> None:
        """Servers call this before serving: they must own the embedded vector store, and are refused
        (a ForestError naming `chroma run`) when another process does. Nothing to own with a Chroma server."""
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

    def _mode(self, mode: str | None) -> str:
        """A search mode; retrieve and context default to the search_mode setting."""
        mode = self.settings.search_mode if mode is None else mode
        if mode not in SEARCH_MODES:
            raise InvalidInput(f"search mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
        return mode

    def _threshold(self, threshold: float | None) -> float:
        threshold = self.settings.drill_threshold if threshold is None else threshold
        if not 0 <= threshold <= 1:
            raise InvalidInput(f"threshold is a 0-1 relevance score, got {threshold}")
        return threshold

    def _scope(self, model_id: str, archive_ids: Sequence[int] | None) -> tuple[int, ...] | None:
        """The archives a search runs over: None for all of the model_id's (its whole index, the
        fast path), else the ids given (_chosen)."""
        chosen = self._chosen(model_id, archive_ids)
        if chosen is not None and set(chosen) == {a.id for a in self.store.archives(model_id) if a.status == "ready"}:
            return None
        return chosen

    def _chosen(self, model_id: str, archive_ids: Sequence[int] | None) -> tuple[int, ...] | None:
        """The papers a question is asked over, as chosen: None (all of the model_id's), else the
        ids given, each one of the model_id's archives (the agent answers each of several chosen
        papers, all of them included)."""
        if archive_ids is None:
            return None
        if isinstance(archive_ids, (str, bytes)) or not all(isinstance(a, int) and not isinstance(a, bool)
                                                            for a in archive_ids):
            raise InvalidInput("archive_ids must be a list of archive ids (integers)")
        chosen = tuple(sorted(set(archive_ids)))
        if not chosen:
            raise InvalidInput("choose at least one archive to ask over (or none to ask over all of them)")
        for archive_id in chosen:
            self.store.archive(check_model_id(model_id), archive_id)   # NotFound: not the model_id's
        return chosen

    def _top_k(self, top_k: int | None) -> int:
        return check_top_k(self.settings.top_k if top_k is None else top_k, MAX_TOP_K)


def _build_params(run: Settings) -> BuildParams:
    from forest.tree.build import BuildParams

    return BuildParams(run.merge_threshold, run.max_node_chars, run.embed_batch_size, run.tree_max_children)


def _outline(document: Document, chunks: list[Chunk]) -> DocumentOutline:
    from forest.tree.outline import DocumentOutline

    return DocumentOutline(document.title or document.name, [c.heading_path for c in chunks])


def _document_entry(document: Document, first_leaf: int, leaves: int) -> dict[str, Any]:
    """What the archive records about each document it holds (appends add more)."""
    return {"name": document.name, "title": document.title, "source": document.source,
            "pages": document.page_count, "first_leaf": first_leaf, "last_leaf": first_leaf + leaves - 1,
            "sha256": _fingerprint(document), "leaf_context": True}  # see build.stored_leaf_context


def _fingerprint(document: Document) -> str:
    """The same text gives the same fingerprint, whatever the file is called."""
    return hashlib.sha256(document.text.encode("utf-8")).hexdigest()
