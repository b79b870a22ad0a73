"""MemoryForest: the one engine object every face (CLI, workbench, MCP, REST) calls. A front hall:
each method checks what a face passed and hands the work to the package that owns it (tree/ for
writes, recall/ for search and questions, library/, storage/, views/, research/, personal/).
Its parts (stores, models, the packages' working objects) are made on first use (engine_parts).

Thread-safe: reads run concurrently (a SQLite connection per thread); writers take turns.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from forest.config import Settings
from forest.engine_parts import EngineParts
from forest.errors import ConfigError
from forest.records import (Archive, ContextResult, MemoryNode, MergeStep, ProgressFn, Representative, ScoredNode,
                            no_progress)
from forest.limits import MAX_TOP_K_PASSAGES
from forest.validation import (check_budget, check_model_id, check_query, check_search_mode, check_threshold,
                               check_top_k)

if TYPE_CHECKING:
    from forest.doctor import DoctorReport
    from forest.ingest.document import Document
    from forest.recall.agent import AgentLoop, AgentState
    from forest.recall.compare import Comparison
    from forest.research.claims import Conflict, Statement
    from forest.research.memory import ResearchTurn
    from forest.tree.grow import ArchivePair
    from forest.views.page_preview import SourcePreview

class MemoryForest(EngineParts):
    @cached_property
    def agent(self) -> AgentLoop:
        """The ANSWER/EXPLORE loop, decided by the configured LLM, else the deterministic policy."""
        from forest.recall.agent import AgentLoop, LLMPolicy, OfflinePolicy

        llm = self.llm
        return AgentLoop(self, LLMPolicy(llm) if llm else OfflinePolicy())

    # --- writing trees (forest.tree.pipeline) -------------------------------------------------
    def read_file(self, path: str | Path, progress: ProgressFn | None = None) -> Document:
        """Parse one file into a Document; a PDF is kept in the store at once (ingest.loaders.read_file)."""
        from forest.ingest.loaders import read_file

        return read_file(path, self.settings, self.sources, progress)

    def ingest_text(self, model_id: str, name: str, text: str, **options: Any) -> Archive:
        return self.pipeline.ingest_text(model_id, name, text, **options)

    def ingest_file(self, path: str | Path, model_id: str, **options: Any) -> Archive:
        return self.pipeline.ingest_file(path, check_model_id(model_id), **options)

    def ingest_document(self, model_id: str, document: Document, **options: Any) -> Archive:
        return self.pipeline.ingest_document(model_id, document, **options)

    def append_file(self, path: str | Path, model_id: str, archive_id: int, *,
                    progress: ProgressFn | None = None) -> Archive:
        self.store.archive(check_model_id(model_id), archive_id)  # before the file is read
        return self.append_document(model_id, archive_id, self.read_file(path, progress), progress=progress)

    def append_document(self, model_id: str, archive_id: int, document: Document, **options: Any) -> Archive:
        return self.pipeline.append_document(model_id, archive_id, document, **options)

    def rebuild_archive(self, model_id: str, archive_id: int, *, progress: ProgressFn | None = None) -> Archive:
        return self.pipeline.rebuild_archive(check_model_id(model_id), archive_id, progress)

    def delete_archive(self, model_id: str, archive_id: int) -> None:
        self.pipeline.delete_archive(check_model_id(model_id), archive_id)

    def export_archive(self, model_id: str, archive_id: int, with_vectors: bool = False) -> dict[str, Any]:
        return self.pipeline.export_archive(check_model_id(model_id), archive_id, with_vectors)

    def import_archive(self, model_id: str, document: Any, name: str | None = None, **options: Any) -> Archive:
        return self.pipeline.import_archive(check_model_id(model_id), document, name, **options)

    def import_archive_text(self, model_id: str, raw: bytes | str, where: str = "the export",
                            name: str | None = None, **options: Any) -> Archive:
        return self.pipeline.import_archive_text(check_model_id(model_id), raw, where, name, **options)

    def import_archive_file(self, model_id: str, path: str | Path, name: str | None = None, **options: Any) -> Archive:
        return self.pipeline.import_archive_file(check_model_id(model_id), path, name, **options)

    def similar_archives(self, model_id: str, threshold: float = 0.0) -> list[ArchivePair]:
        return self.pipeline.similar_archives(check_model_id(model_id), threshold)

    def join_archives(self, model_id: str, archive_ids: list[int], name: str | None = None) -> Archive:
        return self.pipeline.join_archives(check_model_id(model_id), archive_ids, name)

    def import_library(self, model_id: str, path: str | Path, progress: ProgressFn | None = None,
                       on_duplicate: str = "skip") -> dict[str, Any]:
        """A Zotero data directory, a BibTeX file or a folder, each paper once (forest.library.importing)."""
        from forest.library import read_library
        from forest.library.importing import import_library

        model_id, reading = check_model_id(model_id), read_library(path, self.settings.max_file_bytes)
        return import_library(self.pipeline, model_id, reading, progress or no_progress, on_duplicate)

    # --- reading trees ----------------------------------------------------------------------
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

    def children(self, model_id: str, node_id: int) -> list[MemoryNode]:
        self.store.node(check_model_id(model_id), node_id)
        return self.store.children(model_id, node_id)

    def merge_history(self, model_id: str, archive_id: int) -> list[MergeStep]:
        return self.store.merge_history(check_model_id(model_id), archive_id)

    def source_preview(self, model_id: str, node_id: int) -> SourcePreview:
        """Where a node was read: its PDF pages with the passage located, or its section's text."""
        from forest.views.page_preview import source_preview

        return source_preview(self.store, self.sources, check_model_id(model_id), node_id)

    # --- recall (forest.recall) ----------------------------------------------------------------
    def search(self, model_id: str, query: str, top_k: int | None = None, mode: str = "vector",
               archive_ids: Sequence[int] | None = None) -> list[ScoredNode]:
        """Raw hits: 'vector', 'bm25' or 'hybrid'; within `archive_ids` if given."""
        return self.retriever.search(check_model_id(model_id), check_query(query), self._top_k(top_k),
                                     self._mode(mode), self._scope(model_id, archive_ids))

    def retrieve(self, model_id: str, query: str, top_k: int | None = None,
                 mode: str | None = None, archive_ids: Sequence[int] | None = None) -> list[Representative]:
        """Representative nodes: the hits in one tree collapsed to their lowest common ancestor."""
        return self.retriever.retrieve(check_model_id(model_id), check_query(query), self._top_k(top_k),
                                       self._mode(mode), self._scope(model_id, archive_ids))

    def explore(self, model_id: str, node_id: int, query: str, threshold: float | None = None) -> list[ScoredNode]:
        """A node's direct children reranked, those >= threshold (a drill-down, one level)."""
        return self.retriever.drill_down(check_model_id(model_id), int(node_id), check_query(query),
                                         self._threshold(threshold))

    def context(self, model_id: str, question: str, budget_tokens: int | None = None, top_k: int | None = None,
                mode: str | None = None, archive_ids: Sequence[int] | None = None) -> ContextResult:
        budget = check_budget(self.settings.context_budget_tokens if budget_tokens is None else budget_tokens)
        return self.retriever.context(check_model_id(model_id), check_query(question), budget,
                                      self._top_k(top_k), self._mode(mode), self._scope(model_id, archive_ids))

    def ask(self, model_id: str, question: str, top_k: int | None = None,
            threshold: float | None = None, archive_ids: Sequence[int] | None = None) -> AgentState:
        """The ANSWER/EXPLORE loop to its answer: answer, cited nodes, trace."""
        return self.agent.finish(self.start_asking(model_id, question, top_k, threshold, archive_ids))

    def ask_in_session(self, model_id: str, session_id: str, question: str, top_k: int | None = None,
                       threshold: float | None = None,
                       archive_ids: Sequence[int] | None = None) -> tuple[AgentState, ResearchTurn]:
        """ask with the session's briefing first; the turn is then remembered (events, conflicts, compaction)."""
        state = self.agent.finish(self.start_asking(model_id, question, top_k, threshold, archive_ids, session_id))
        return state, self.research.record_turn(state, session_id)

    def start_asking(self, model_id: str, question: str, top_k: int | None = None, threshold: float | None = None,
                     archive_ids: Sequence[int] | None = None, session_id: str | None = None) -> AgentState:
        """The loop before its first step (then step_asking); in a research session its briefing first."""
        from forest.recall.scope import chosen_archives

        model_id = check_model_id(model_id)
        preamble = self.research.preamble(model_id, session_id) if session_id is not None else ""
        return self.agent.start(model_id, check_query(question), self._top_k(top_k), self._threshold(threshold),
                                preamble, chosen_archives(self.store, model_id, archive_ids))

    def step_asking(self, state: AgentState, explore_node_id: int | None = None) -> AgentState:
        """One decision: the policy's, or exploring `explore_node_id` (one of state.explorable)."""
        return self.agent.step(state, explore_node_id)

    def compare(self, model_id: str, questions: Sequence[str], archive_ids: Sequence[int] | None = None,
                top_k: int | None = None, threshold: float | None = None) -> Comparison:
        """Papers × questions, each cell the cited sentences that best answer it (forest.recall.compare)."""
        from forest.recall.agent import AgentLoop, OfflinePolicy
        from forest.recall.compare import FOUND_THRESHOLD, check_questions, compare_archives

        model_id, asked = check_model_id(model_id), check_questions(questions)
        return compare_archives(AgentLoop(self, OfflinePolicy()), self.retriever, self.store, model_id, asked,
                                self._scope(model_id, archive_ids), self._top_k(top_k),
                                check_threshold(FOUND_THRESHOLD if threshold is None else threshold))

    @property
    def answer_policy(self) -> str:
        """What decides the agent's steps: '<provider>:<model>' of the LLM in force, else the offline policy."""
        return self.agent.policy.label

    # --- research over passages ---------------------------------------------------------------
    def question_conflicts(self, model_id: str, session_id: str, question: str,
                           budget_tokens: int = 3000) -> list[Conflict]:
        """Likely conflicts among a question's context and the session's findings (Reconcile's proposals)."""
        leaves = self.context(model_id, question, budget_tokens).leaves
        return self.research.conflicts(model_id, session_id, [leaf.node.id for leaf in leaves])

    def find_passages(self, model_id: str, query: str, top_k: int = 8) -> list[Statement]:
        """The passages a hybrid search finds, as statements research compares and reconciles."""
        hits = self.search(model_id, query, top_k=top_k, mode="hybrid")
        return self.research.passages(model_id, [h.node.id for h in hits if h.node.is_leaf], strict=False)

    @staticmethod
    def passage_label(statement: Statement) -> str:
        """'Ask the Right Questions (p. 7, §5.5 Results)': a statement's source and where in it."""
        from forest.research.claims import source_label

        return source_label(statement)

    # --- exports ------------------------------------------------------------------------------
    def bibtex(self, model_id: str, archive_ids: Sequence[int] | None = None) -> str:
        """The BibTeX of the archives' papers (all the model_id's imported ones if none are named)."""
        from forest.library import bibtex_of_archives

        return bibtex_of_archives(self.store.archives(check_model_id(model_id)), archive_ids)

    def markdown_notes(self, model_id: str, sessions: Sequence[str] | None = None,
                       archive_ids: Sequence[int] | None = None) -> dict[str, str]:
        """Papers and research sessions as Markdown notes (forest.views.markdown_notes): {path: text}."""
        from forest.views.markdown_notes import markdown_notes

        return markdown_notes(self.store, self.research, check_model_id(model_id), sessions, archive_ids)

    def export_markdown(self, model_id: str, folder: str | Path, sessions: Sequence[str] | None = None,
                        archive_ids: Sequence[int] | None = None) -> list[str]:
        """markdown_notes written under `folder` and nowhere else (forest.storage.confined_files)."""
        from forest.storage.confined_files import write_confined

        return write_confined(folder, self.markdown_notes(model_id, sessions, archive_ids))

    # --- upkeep -------------------------------------------------------------------------------
    def resume_pending_writes(self) -> None:
        """Servers call this at start: queued process_memory input an earlier process left is written now."""
        from forest.personal.memory_store import PersonalStore

        if PersonalStore(self.db).has_pending():
            self.personal.start()

    def doctor(self, repair_drift: bool = False) -> DoctorReport:
        from forest.doctor import examine, repair

        with self._build_lock:
            mirror = self.personal.store.mirror if self.settings.graph_url else None
            report = examine(self.db, self.store, self.vectors, self.settings.data_dir, mirror)
            if repair_drift and not report.healthy:
                repair(self.db, self.store, self.vectors, self.sources, self.embedder, report, self.settings.data_dir, mirror)
        return report

    def reembed(self, model_id: str, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Re-embed the model_id's nodes and episodic events with the configured embedder."""
        from forest.tree.reembedding import reembed_nodes

        model_id = check_model_id(model_id)
        nodes, dropped = reembed_nodes(self.store, self.vectors, self.embedder, self._build_lock, model_id,
                                       progress or no_progress)
        return {"model_id": model_id, "embedder": self.embedder.name, "nodes_reembedded": nodes,
                "vectors_of_other_embedders_dropped": dropped, "events_reembedded": self.research.reembed(model_id)}

    def copy_store(self, target: Settings, progress: ProgressFn | None = None) -> dict[str, Any]:
        """Copy this whole store into the empty store `target` names (forest.storage.copy), then check it."""
        from forest.storage.copy import compare_stores, copy_store

        if self.doctor().drift:
            raise ConfigError("the source store has drift between its database and vectors: run "
                              "`forest doctor --repair` first, then copy")
        destination = MemoryForest(target, embedder=self.embedder)
        try:
            with self._build_lock:  # no writer changes the source meanwhile
                copied = copy_store(self.db, self.vectors, self.settings.sources_path, destination.db,
                                    destination.vectors, target.sources_path, target.data_dir, progress or no_progress)
            return {**copied, "checks": compare_stores(self.db, self.vectors, destination.db, destination.vectors,
                                                       self.model_ids())}
        finally:
            destination.close()

    # --- checks of what faces pass --------------------------------------------------------------
    def _mode(self, mode: str | None) -> str:
        return check_search_mode(self.settings.search_mode if mode is None else mode)

    def _threshold(self, threshold: float | None) -> float:
        return check_threshold(self.drill_threshold if threshold is None else threshold)

    def _scope(self, model_id: str, archive_ids: Sequence[int] | None) -> tuple[int, ...] | None:
        from forest.recall.scope import search_scope

        return search_scope(self.store, check_model_id(model_id), archive_ids)

    def _top_k(self, top_k: int | None) -> int:
        return check_top_k(self.settings.top_k if top_k is None else top_k, MAX_TOP_K_PASSAGES)
