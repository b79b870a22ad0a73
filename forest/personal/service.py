"""PersonalMemory: memory as a service for agents (the NeuroMemory v2 and mem0 memory-tool specs).

process_memory is Y-shaped, as NeuroMemory v2 asks: the sync path retrieves at once (vector top k
and the knowledge graph around the entities the input names) and returns; the async path puts the
input in a durable queue first (a table of the store, SQLite or PostgreSQL) and a worker thread
classifies its privacy and writes it. A write that fails is logged and retried with backoff; it
never turns into a failed retrieval (silent degradation), and queued input survives a crash or
restart (the worker resumes it). Input that could not even be queued would be lost: that reply says
so (status fallback, queued false).

Secrets are redacted (forest.redaction) from every text and metadata value before anything
is stored or searched; an id holding one is refused. Deleting erases: the text leaves the files.

The memory access tool (mem0 memory-tool spec) adds, searches, updates, deletes and shows history, scoped by
user_id, agent_id, run_id and metadata; every change is in the history. A statement that gives a
new value of a one-value fact ("Actually I moved: I live in Munich now") or says it ended ("I quit")
supersedes the earlier memory (an UPDATE with history; what a compound memory says that still holds
is kept) and closes its edge in the graph; "I also ..." ends nothing.

PersonalMemory composes the parts, one job each: recall (the sync read path, hybrid scoring),
policy (privacy, contradictions, what a write keeps), writer (the queue's worker thread) and
tool (the memory access tool's dispatch).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from forest.config import Settings, without_password
from forest.errors import ConfigError
from forest.models.embedders import Embedder
from forest.models.llm import StructuredLLM
from forest.personal.graph import Triple, TripleExtractor, format_path, graph_paths
from forest.personal.graph_mirror import GraphMirror
from forest.personal.memory_store import PersonalStore, QueuedInput
from forest.personal.policy import WritePolicy
from forest.personal.privacy import PrivacyClassifier
from forest.personal.recall import PersonalRecall
from forest.personal.records import (
    Cleared,
    EntityCount,
    MemoryContext,
    PersonalMemoryRecord,
    QueueCounts,
    QueuedWrite,
    Tag,
    TagReport,
    ToolReply,
    UserGraph,
    WorkerState,
    WriteQueue,
)
from forest.personal.tags import extract_tags
from forest.personal.tool import MemoryTool
from forest.personal.writer import WriteWorker
from forest.storage.graphs import open_graph_store
from forest.storage.sql.database import Database
from forest.validation import check_top_k, checked_metadata, checked_scope, checked_text, checked_user_id
from forest.limits import MAX_TOP_K_MEMORIES

log = logging.getLogger("forest.personal")


class PersonalMemory:
    """The parts composed: recall (the read path), policy (what a write keeps and supersedes),
    the write worker and the memory tool."""

    def __init__(self, db: Database, embedder: Embedder, settings: Settings, llm: StructuredLLM | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = PersonalStore(db)
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.privacy = PrivacyClassifier(embedder, llm)
        self.extractor = TripleExtractor(llm)
        self.llm = llm
        if settings.graph_url:  # the knowledge graph mirrored in a Cypher store (forest.personal.graph_mirror)
            self.store.mirror = GraphMirror(open_graph_store(settings.graph_url), without_password(settings.graph_url))
        self.store.tag_untagged(embedder.name)
        self.store.index_missing()
        now = self._now  # the parts read the clock through this one, which a test may replace
        self.recall = PersonalRecall(self.store, embedder, settings)
        self.policy = WritePolicy(self.store, embedder, settings, self.privacy, self.extractor)
        self.writer = WriteWorker(db, self.store, self.policy, now, one_at_a_time=llm is not None)
        self.tool = MemoryTool(db, self.store, embedder, settings, self.extractor, self.recall, self.policy, now)

    def _now(self) -> float:
        return self.clock()

    @property
    def enabled(self) -> bool:
        return self.settings.memory_enabled

    # --- process_memory ---------------------------------------------------------------------
    def process_memory(self, user_id: str, text: str, *, agent_id: str | None = None, run_id: str | None = None,
                       metadata: dict[str, Any] | None = None, observed_at: float | None = None) -> MemoryContext:
        """The sync path's context now; the write happens in the background. If the input cannot
        be queued (the database is full, locked or broken) the reply says so: status "fallback",
        metadata.queued false and the reason; the retrieval's context is returned all the same."""
        user_id, text = checked_user_id(user_id), checked_text(text, "input")
        scope, metadata = checked_scope(agent_id, run_id), checked_metadata(metadata)
        if not self.enabled:
            return MemoryContext("disabled", (), (), 0.0, queued=False)
        started = time.perf_counter()
        vector, at = None, observed_at or self.clock()
        try:
            vector = self.recall.passage_vector(text)
            chunks, relations = self.recall.context(user_id, text, vector)
            status = "success"
        except Exception:  # as the spec asks, a failed retrieval is an empty context, never an error
            log.exception("retrieval failed for user %s", user_id)
            chunks, relations, status = [], [], "fallback"
        elapsed = (time.perf_counter() - started) * 1000
        try:
            self.store.enqueue(user_id, text, scope, metadata, at, self.clock(), vector, self.embedder.name)
        except Exception as exc:  # nothing holds the input now: the caller must know it was not kept
            log.exception("could not queue the input of user %s for writing", user_id)
            return MemoryContext("fallback", tuple(chunks), tuple(relations), elapsed, queued=False,
                                 error="the input was not queued for writing and will not be remembered: "
                                       f"{type(exc).__name__}")
        self.writer.wake()
        return MemoryContext(status, tuple(chunks), tuple(relations), elapsed, queued=True)

    def debug_process_memory(self, user_id: str, text: str) -> str:
        """The spec's debug mode: the whole flow in words, run synchronously: retrieval with scores, graph
        paths, the storage decision and its reason, time per stage, the raw data."""
        user_id, text = checked_user_id(user_id), checked_text(text, "input")
        if not self.enabled:
            return "=== Memory disabled ===\nMEMORY_ENABLED=false: nothing was retrieved or stored."
        timings: dict[str, float] = {}
        began = time.perf_counter()
        now = self.clock()
        vector = self.recall.passage_vector(text)
        chunks = self.recall.vector_chunks(user_id, text, vector)
        timings["vector retrieval"] = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        start, relations = self.recall.graph(user_id, text)
        paths = graph_paths(relations, start, self.settings.graph_max_depth)   # the walks behind the relations
        timings["graph retrieval"] = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        item = QueuedInput(0, user_id, None, None, text, {}, now, 0, vector=vector, embedder=self.embedder.name)
        prepared = self.policy.prepare([item])[0]
        prepared.queue_item = None  # not queued: what was said last is its context
        with self.store.writing(user_id) as conn:
            decision = self.policy.apply(conn, prepared)
        timings["classification and storage"] = (time.perf_counter() - began) * 1000
        lines = ["=== Retrieval ===", f"[vector search] query: {text!r}"]
        lines += [f"  - match: {c.record.memory!r} (score: {round(c.score, 4):.2f})" for c in chunks] or \
            ["  - no match"]
        lines.append(f"[graph search] start: {', '.join(start) or '(no known entity in the input)'}")
        lines += [f"  - path {n}: {format_path(p)}" for n, p in enumerate(paths, 1)] or ["  - no path"]
        lines += ["", "=== Storage decision ===",
                  f"[privacy] {decision['privacy']['label']} by {decision['privacy']['decided_by']}: "
                  f"{decision['privacy']['reason']}",
                  f"[decision] {decision['action']}: {decision['why']}"]
        lines += ["", "=== Timing ===", *(f"- {stage}: {ms:.1f} ms" for stage, ms in timings.items()),
                  f"- total: {sum(timings.values()):.1f} ms"]
        lines += ["", "=== Raw data ===", f"vector results: {[c.context_dict() for c in chunks]}",
                  f"graph triples: {[(t.source, t.relationship, t.target) for t in relations]}",
                  f"decision: {decision}"]
        return "\n".join(lines)

    def memory_tool(self, action: str, user_id: str, **arguments: Any) -> ToolReply:
        """The memory access tool (MemoryTool.run): its reply (operation, status, payload); only an
        outage (ServiceUnavailable) raises."""
        return self.tool.run(action, user_id, **arguments)

    # --- the write worker -------------------------------------------------------------------
    def start(self) -> None:
        """Resume queued input left by an earlier process (called when a server starts)."""
        self.writer.wake()

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until no queued input is due (tests, evaluation); False on timeout."""
        return self.writer.drain(timeout)

    def stop(self) -> None:
        self.writer.stop()

    def worker_state(self) -> WorkerState:
        return self.writer.state()

    def reembed(self, user_id: str | None = None, batch: int = 64,
                progress: Callable[[int, int], None] | None = None) -> int:
        """Re-embed live memories (of one user, or all) with the configured embedder: the way out
        of an embedder mismatch. Returns how many were re-embedded."""
        rows = self.store.live_texts(checked_user_id(user_id) if user_id else None)
        for start in range(0, len(rows), batch):
            part = rows[start:start + batch]
            vectors = self.embedder.embed_passages([text for _, text in part])
            self.store.set_embeddings(self.embedder.name, [(memory_id, np.asarray(v, dtype=np.float32).tobytes())
                                                           for (memory_id, _), v in zip(part, vectors)])
            if progress:
                progress(start + len(part), len(rows))
        return len(rows)

    def tags(self, user_id: str, dry_run: bool = True, limit: int = 20) -> TagReport:
        """Preference and topic tags from the user's memories; dry_run returns the candidates
        only, otherwise they are upserted (applying again changes nothing)."""
        user_id = checked_user_id(user_id)
        candidates = extract_tags(user_id, (m.memory for m in self.store.memories(user_id)),
                                  self.recall.triples(user_id), check_top_k(limit, MAX_TOP_K_MEMORIES))
        if not dry_run and candidates:
            self.store.upsert_tags(user_id, candidates, self.clock())
        found = tuple(Tag(**t) for t in candidates)
        return TagReport(found, () if dry_run else found, tuple(Tag(**t) for t in self.store.tags(user_id)))

    def memories(self, user_id: str) -> list[PersonalMemoryRecord]:
        """The user's live memories, oldest first (the workbench's list)."""
        return self.store.memories(checked_user_id(user_id))

    def queue_write(self, user_id: str, text: str, *, agent_id: str | None = None, run_id: str | None = None,
                    metadata: dict[str, Any] | None = None, observed_at: float | None = None) -> int:
        """process_memory's write path alone, without its retrieval (mem0's asynchronous add): the
        input queued for the worker; returns the queue item's id (queued_write reports it)."""
        user_id, text = checked_user_id(user_id), checked_text(text, "input")
        scope, metadata = checked_scope(agent_id, run_id), checked_metadata(metadata)
        if not self.enabled:  # as process_memory: nothing is remembered while memory is switched off
            raise ConfigError("personal memory is switched off (setting memory_enabled): nothing was queued")
        now = self.clock()
        item_id = self.store.enqueue(user_id, text, scope, metadata, observed_at or now, now)
        self.writer.wake()
        return item_id

    def queued_write(self, user_id: str, item_id: int) -> QueuedWrite | None:
        """One queue item of the user: status (pending, done, failed), whether a worker holds it,
        attempts, its decision and last error; None if the user has no such item."""
        return self.store.queue_item(checked_user_id(user_id), item_id, self.clock())

    def memory(self, user_id: str, memory_id: int) -> PersonalMemoryRecord | None:
        """One live memory of the user, or None (another user's id finds nothing)."""
        return self.store.memory(checked_user_id(user_id), memory_id)



    def entities(self, user_id: str | None = None) -> list[EntityCount]:
        """Who has live memories: each user (or only `user_id`), and the agents and runs within,
        with counts and first and last write times."""
        return self.store.entities(None if user_id is None else checked_user_id(user_id))

    def write_queue(self, user_id: str, limit: int = 50) -> WriteQueue:
        """The queue's counts for the user and its latest items with their decisions."""
        user_id = checked_user_id(user_id)
        return WriteQueue(QueueCounts(**self.store.queue_state(user_id)), tuple(self.store.decisions(user_id, limit)))

    def clear_user_memory(self, user_id: str) -> Cleared:
        user_id = checked_user_id(user_id)
        with self.store.writing(user_id) as conn:
            removed = self.store.clear(conn, user_id)
        self.db.finish_erasures()
        return Cleared(user_id, removed)

    def user_graph(self, user_id: str, include_ended: bool = False) -> UserGraph:
        """get_user_graph: every entity and relation of the user that holds now (from the graph
        mirror when it answers for the user); include_ended: also those a later statement
        superseded, each with its validity (valid_from, valid_to: null while it holds), from SQL."""
        user_id = checked_user_id(user_id)
        if include_ended:
            return UserGraph(user_id, tuple(self.store.fact_history(user_id)))
        mirror = self.store.mirror
        edges = mirror.read(user_id, lambda graph: graph.current_edges(user_id)) if mirror else None
        return UserGraph(user_id, tuple(self.recall.triples(user_id) if edges is None else
                                        (Triple(e.source, e.relationship, e.target) for e in edges)))
