"""PersonalMemory: memory as a service for agents (seed 003 NeuroMemory v2, seed 004 memory tools).

process_memory is Y-shaped (seed 003 §2.2): the sync path retrieves at once (vector top k and the
knowledge graph around the entities the input names) and returns; the async path puts the input
in a durable SQLite queue first and a worker thread classifies its privacy and writes it. A
write that fails is logged and retried with backoff; it never turns into a failed retrieval
(seed 003 §7), and queued input survives a crash or restart (the worker resumes it). Input that
could not even be queued would be lost: that reply says so (status fallback, queued false).

Secrets are redacted (forest.personal.redact) from every text and metadata value before anything
is stored or searched; an id holding one is refused. Deleting erases: the text leaves the files.

The memory access tool (seed 004) adds, searches, updates, deletes and shows history, scoped by
user_id, agent_id, run_id and metadata; every change is in the history. A new memory that
contradicts an old one about the same subject supersedes it (an UPDATE with history).
"""
from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from collections.abc import Callable
from typing import Any

import numpy as np

from forest.config import Settings
from forest.storage.db import Database
from forest.models.embedders import Embedder
from forest.errors import ForestError, InvalidInput, NotFound
from forest.models.llm import ClaudeJSON
from forest.personal.graph import (
    NAMED,
    Triple,
    TripleExtractor,
    entities_in,
    entity_key,
    format_path,
    graph_paths,
    relation_relevance,
    relations_for,
)
from forest.personal.memory_store import PersonalMemoryRecord, PersonalStore, QueuedInput
from forest.personal.privacy import PRIVATE, PrivacyClassifier
from forest.personal.redact import redact, redact_metadata, secret_format
from forest.personal.tags import extract_tags
from forest.personal.timeframe import periods_in, within
from forest.validation import check_text, in_id_range

log = logging.getLogger("forest.personal")

ACTIONS = ("add", "search", "update", "delete", "history")
MAX_MEMORY_CHARS = 4000
MAX_BATCH = 100
MAX_ATTEMPTS = 5
RETRY_BASE_SECONDS = 2.0
# A memory is read in its conversation: the input said just before it (same user and scope, at
# most this long before; a common session timeout) is indexed with it for BM25.
CONVERSATION_GAP_SECONDS = 30 * 60
WORKER_BATCH = 32  # offline: one embedding call for the batch; with Claude, one item at a time
# A claim outlives the slowest batch (Claude: up to 3 x 60 s an item); after it another worker may retry.
LEASE_SECONDS = 600.0
# Two memories are about the same subject when their calibrated similarity reaches this.
SAME_SUBJECT = 0.6
SAME_NEGATED = SAME_SUBJECT + 0.15   # the same statement, one side negated
# Relations a subject has one value of at a time: a new value supersedes the old memory.
SINGLE_VALUED = frozenset(["lives in", "works at", "works for", "is married to", "born in", "is from", "住在",
                           "工作于", "结婚", "来自", "出生于"])
_NEGATION = re.compile(r"\b(?:not|no longer|don't|doesn't|didn't|never|stopped|quit)\b|不再|不|没有|没|别", re.I)
_METADATA_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_ID = re.compile(r"^[\w.:@/-]{1,200}$")


class PersonalMemory:
    def __init__(self, db: Database, embedder: Embedder, settings: Settings, llm: ClaudeJSON | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = PersonalStore(db)
        self.db = db
        self.embedder = embedder
        self.settings = settings
        self.clock = clock
        self.privacy = PrivacyClassifier(embedder, llm)
        self.extractor = TripleExtractor(llm)
        self.llm = llm
        self._claim = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._health: dict[str, Any] = {"failures": 0, "last_error": None, "last_error_at": None, "written": 0}
        self.store.tag_untagged(embedder.name)
        self.store.index_missing()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._worker: threading.Thread | None = None
        self._worker_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.settings.memory_enabled

    # --- process_memory ---------------------------------------------------------------------
    def process_memory(self, user_id: str, text: str, *, agent_id: str | None = None, run_id: str | None = None,
                       metadata: dict[str, Any] | None = None, observed_at: float | None = None) -> dict[str, Any]:
        """The sync path's context now; the write happens in the background. If the input cannot
        be queued (the database is full, locked or broken) the reply says so: status "fallback",
        metadata.queued false and the reason; the retrieval's context is returned all the same."""
        user_id, text = check_user_id(user_id), redact(check_text(text, "input", MAX_MEMORY_CHARS)).text
        scope, metadata = _scope(agent_id, run_id), _metadata(metadata)
        if not self.enabled:
            return _context("disabled", [], [], 0.0)
        started = time.perf_counter()
        vector, at = None, observed_at or self.clock()
        try:
            vector = self._passage_vector(text)
            chunks, relations = self._retrieve(user_id, text, vector)
            status = "success"
        except Exception:  # seed 003 §7: a failed retrieval is an empty context, never an error
            log.exception("retrieval failed for user %s", user_id)
            chunks, relations, status = [], [], "fallback"
        elapsed = (time.perf_counter() - started) * 1000
        try:
            self.store.enqueue(user_id, text, scope, metadata, at, self.clock(), vector, self.embedder.name)
        except Exception as exc:  # nothing holds the input now: the caller must know it was not kept
            log.exception("could not queue the input of user %s for writing", user_id)
            return _context("fallback", chunks, relations, elapsed,
                            f"the input was not queued for writing and will not be remembered: {type(exc).__name__}")
        self._ensure_worker()
        self._wake.set()
        return _context(status, chunks, relations, elapsed)

    def _passage_vector(self, text: str) -> np.ndarray:
        """The one vector of an input: the passage the memory will be stored as, which also finds
        its context; a query embedding would be a second. What was said before it is not embedded
        (it would triple the cost of a write): BM25 reads it (memory_store.CONTEXT_WEIGHT)."""
        return self.embedder.embed_passages([text])[0]

    def debug_process_memory(self, user_id: str, text: str) -> str:
        """seed 003 §3.3: the whole flow in words, run synchronously: retrieval with scores, graph
        paths, the storage decision and its reason, time per stage, the raw data."""
        user_id, text = check_user_id(user_id), redact(check_text(text, "input", MAX_MEMORY_CHARS)).text
        if not self.enabled:
            return "=== Memory disabled ===\nMEMORY_ENABLED=false: nothing was retrieved or stored."
        timings: dict[str, float] = {}
        began = time.perf_counter()
        now = self.clock()
        vector = self._passage_vector(text)
        chunks = self._vector_chunks(user_id, text, vector)
        timings["vector retrieval"] = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        start, relations = self._graph(user_id, text)
        paths = graph_paths(relations, start, self.settings.graph_max_depth)   # the walks behind the relations
        timings["graph retrieval"] = (time.perf_counter() - began) * 1000
        began = time.perf_counter()
        item = QueuedInput(0, user_id, None, None, text, {}, now, 0, vector=vector, embedder=self.embedder.name)
        prepared = self._prepare([item])[0]
        prepared.queue_item = None  # not queued: what was said last is its context
        with self.db.transaction() as conn:
            decision = self._apply(conn, prepared)
        timings["classification and storage"] = (time.perf_counter() - began) * 1000
        lines = ["=== Retrieval ===", f"[vector search] query: {text!r}"]
        lines += [f"  - match: {c['memory']!r} (score: {c['score']:.2f})" for c in chunks] or ["  - no match"]
        lines.append(f"[graph search] start: {', '.join(start) or '(no known entity in the input)'}")
        lines += [f"  - path {n}: {format_path(p)}" for n, p in enumerate(paths, 1)] or ["  - no path"]
        lines += ["", "=== Storage decision ===",
                  f"[privacy] {decision['privacy']['label']} by {decision['privacy']['decided_by']}: "
                  f"{decision['privacy']['reason']}",
                  f"[decision] {decision['action']}: {decision['why']}"]
        lines += ["", "=== Timing ===", *(f"- {stage}: {ms:.1f} ms" for stage, ms in timings.items()),
                  f"- total: {sum(timings.values()):.1f} ms"]
        lines += ["", "=== Raw data ===", f"vector results: {chunks}",
                  f"graph triples: {[(t.source, t.relationship, t.target) for t in relations]}",
                  f"decision: {decision}"]
        return "\n".join(lines)

    def _retrieve(self, user_id: str, text: str,
                  vector: np.ndarray) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
        _, relations = self._graph(user_id, text)
        return self._vector_chunks(user_id, text, vector), [t.to_dict() for t in relations]

    def _graph(self, user_id: str, text: str) -> tuple[list[str], list[Triple]]:
        """The known entities the text names (the user for I, me, my) and the relations around them
        that bear on it (see relations_for)."""
        return relations_for(self._triples(user_id), text, user_id, self.settings.graph_max_depth,
                             self.settings.graph_max_relations)

    def _vector_chunks(self, user_id: str, text: str, vector: np.ndarray) -> list[dict[str, Any]]:
        return [{"memory": record.memory, "score": round(score, 4), "id": record.id}
                for record, score in self._search(user_id, text, self.settings.vector_top_k, vector=vector)]

    def _search(self, user_id: str, query: str, top_k: int, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None,
                vector: np.ndarray | None = None) -> list[tuple[PersonalMemoryRecord, float]]:
        """Hybrid retrieval; the score returned is the memory's calibrated similarity to the query
        (`vector`: the query's, when already embedded)."""
        ids, combined, similarity = self._scores(user_id, query, scope, metadata, vector)
        best = [ids[i] for i in np.argsort(-combined, kind="stable")[:top_k]]
        records = self.store.memories_by_id(user_id, best)
        return [(records[i], similarity[i]) for i in best if i in records]

    def _scores(self, user_id: str, query: str, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None,
                vector: np.ndarray | None = None) -> tuple[list[int], np.ndarray, dict[int, float]]:
        """Every live memory's combined score, from four routes:
        - dense: exact cosine over the user's memories (a user holds thousands, not millions);
        - lexical: BM25 (FTS5) with our tokenizer, every query term a quoted phrase;
        - graph: memories stating facts about the entities the query names or their neighbours in
          the user's graph, in proportion to how many;
        - time: when the query names a period (a year, a month, a date), the memories said in it.
        Dense and BM25 scores live on different scales, so each is standardised over the user's
        memories (z-score) and added, and so are the graph route's fact counts; a time match adds
        one standard deviation (a period is coarse: it holds whole sessions). The z-score sum was
        chosen over reciprocal rank fusion on LoCoMo's dev conversations (bench/eval_locomo.py).)"""
        ids, matrix = self.store.vectors(user_id, self.embedder.name, scope, metadata)
        if not ids:
            return [], np.zeros(0), {}
        cosine = matrix @ (self.embedder.embed_query(query) if vector is None else vector)
        similarity = dict(zip(ids, map(float, np.asarray(self.embedder.calibrate(cosine), dtype=float))))
        lexical = dict(self.store.lexical(user_id, query, len(ids), scope, metadata))
        combined = _standardised(cosine) + _standardised(np.array([lexical.get(i, 0.0) for i in ids]))
        facts = self._graph_memories(user_id, query)
        if facts:  # specific evidence, standardised like the other routes: a rare match weighs much
            combined += _standardised(np.array([float(facts.get(i, 0)) for i in ids]))
        periods = periods_in(query)
        if periods:
            said = self.store.times(user_id)
            combined += np.array([1.0 if within(said.get(i), periods) else 0.0 for i in ids])
        return ids, combined, similarity

    def _graph_memories(self, user_id: str, query: str) -> dict[int, int]:
        """Memory id -> facts it states about the entities one hop away from those the query names,
        along a relation the query names ("Tom's wife" follows Tom -is married to-> Anna and finds
        what is said about Anna). The first hop's own memories name the entity, so words and
        vectors find them; the graph adds the second hop, which shares no word with the question."""
        triples = self._triples(user_id)
        start = {entity_key(e) for e in entities_in(query, {t.source for t in triples} | {t.target for t in triples},
                                                    user_id)}
        if not start:
            return {}
        relevance = relation_relevance(query)
        reached: set[str] = set()
        for t in triples:
            ends = (entity_key(t.source), entity_key(t.target))
            # the relation named: a where/who alone would reach every place or person
            if (ends[0] in start) != (ends[1] in start) and relevance(t.relationship) == NAMED:
                reached.add(ends[1] if ends[0] in start else ends[0])
        return self.store.fact_memories(user_id, sorted(reached))

    def _triples(self, user_id: str) -> list[Triple]:
        return [Triple(*t) for t in self.store.triples(user_id)]

    # --- the write worker -------------------------------------------------------------------
    def _ensure_worker(self) -> None:
        with self._worker_lock:
            if self._worker is None or not self._worker.is_alive():
                self._release_orphans()
                self._stop.clear()
                self._worker = threading.Thread(target=self._run_worker, name="personal-memory-writer", daemon=True)
                self._worker.start()

    def start(self) -> None:
        """Resume queued input left by an earlier process (called when a server starts)."""
        self._ensure_worker()
        self._wake.set()

    def drain(self, timeout: float = 60.0) -> bool:
        """Wait until no queued input is due (tests, evaluation); False on timeout."""
        self._ensure_worker()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._idle.clear()
            self._wake.set()
            if not self.store.outstanding(self.clock()) and self._idle.wait(0.05):
                return True
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._worker is not None:
            self._worker.join(timeout=10)

    def worker_state(self) -> dict[str, Any]:
        """This process's write worker, for the Server page: whether it runs, the queue's depth by
        status (every user), failures since start and the last error. (`forest doctor`, from any
        process, reads the queue itself: PersonalStore.queue_health.)"""
        return {"running": self._worker is not None and self._worker.is_alive(), "queue": self.store.queue_totals(),
                **self._health}

    def _release_orphans(self) -> None:
        try:
            self.store.release_orphans(socket.gethostname(), _process_alive)
        except Exception as exc:
            self._failed("releasing the claims of dead processes", exc)

    def _failed(self, what: str, exc: Exception) -> None:
        log.error("personal memory writer: %s failed: %s", what, exc, exc_info=exc)
        self._health.update(failures=self._health["failures"] + 1, last_error=f"{what}: {type(exc).__name__}: {exc}",
                            last_error_at=self.clock())

    def _run_worker(self) -> None:
        """Never ends on an exception: every failure is logged, counted and retried later."""
        while not self._stop.is_set():
            try:
                batch = self.store.claim(self.clock(), 1 if self.llm else WORKER_BATCH, self._claim, LEASE_SECONDS)
            except Exception as exc:
                self._failed("claiming queued input", exc)
                self._stop.wait(1.0)
                continue
            if not batch:
                self._idle.set()
                # Another worker process that died holding a claim (a kill, a crash): its items
                # are taken over now, not when its lease runs out minutes later.
                self._release_orphans()
                self._wake.wait(timeout=1.0)
                self._wake.clear()
                continue
            try:
                prepared = self._prepare(batch)
            except Exception as exc:  # e.g. the embedder failed: every item is retried later
                self._failed("preparing a batch", exc)
                for item in batch:
                    self._retry(item, exc)
                continue
            for item, plan in zip(batch, prepared):
                self._commit(item, plan)
            self._finish_erasures()

    def _finish_erasures(self) -> None:
        """Input the privacy filter discarded leaves the files (see Database.finish_erasures)."""
        try:
            self.db.finish_erasures()
        except Exception as exc:  # the mark stays: the next batch or the next open finishes it
            self._failed("erasing discarded input", exc)

    def _commit(self, item: QueuedInput, plan: _Plan) -> None:
        """One short transaction: the memory, its facts and "done" commit together, only while the
        claim is still ours (exactly once)."""
        try:
            with self.db.transaction() as conn:
                if not self.store.holds(conn, item, self.clock()):
                    log.warning("queued input %d: the claim ran out before writing; another worker has it", item.id)
                    return
                decision = self._apply(conn, plan)
                self.store.finish(conn, item, decision)
            self._health["written"] += 1
        except Exception as exc:  # logged and retried; the caller already has its context
            self._failed(f"writing queued input {item.id}", exc)
            self._retry(item, exc)

    def _retry(self, item: QueuedInput, exc: Exception) -> None:
        give_up = item.attempts + 1 >= MAX_ATTEMPTS
        log.warning("writing queued input %d of user %s failed (attempt %d%s): %s", item.id, item.user_id,
                    item.attempts + 1, ", giving up" if give_up else "", exc)
        try:
            self.store.retry_later(item, f"{type(exc).__name__}: {exc}",
                                   self.clock() + RETRY_BASE_SECONDS * 2 ** item.attempts, give_up)
        except Exception as again:  # the lease runs out and the item is claimed again
            self._failed(f"scheduling a retry of queued input {item.id}", again)

    def _prepare(self, batch: list[QueuedInput]) -> list[_Plan]:
        """Everything slow, outside any transaction: privacy classification, embedding (one call
        for the batch), triple extraction and the contradiction check."""
        if self.settings.memory_privacy_filter:
            privacy = [d.to_dict() for d in self.privacy.classify_many([item.input for item in batch])]
        else:
            privacy = [{"label": PRIVATE, "reason": "privacy filter off", "decided_by": "setting"}] * len(batch)
        kept = [i for i, p in enumerate(privacy) if p["label"] == PRIVATE]
        # process_memory's vector when it made one with this embedder; the rest (queued by an
        # older version, or by a process whose embedding failed) in one call
        vectors = [batch[i].vector if batch[i].embedder == self.embedder.name else None for i in kept]
        missing = [n for n, v in enumerate(vectors) if v is None]
        if missing:
            texts = [batch[kept[n]].input for n in missing]
            for n, v in zip(missing, self.embedder.embed_passages(texts)):
                vectors[n] = v
        plans = [_Plan(item.user_id, item.input, {"agent_id": item.agent_id, "run_id": item.run_id}, item.metadata,
                       item.observed_at, "process_memory", privacy[n], queue_item=item.id)
                 for n, item in enumerate(batch)]
        for i, vector in zip(kept, vectors):
            self._plan_write(plans[i], vector)
        return plans

    def _plan_write(self, plan: _Plan, vector: np.ndarray) -> None:
        """The slow part of a write (with Claude, a request): its facts."""
        plan.vector = vector
        plan.triples = self.extractor.extract(plan.text, speaker=plan.user_id)

    def _apply(self, conn, plan: _Plan) -> dict[str, Any]:
        """The short write: add the memory (or supersede), inside `conn`'s transaction."""
        if plan.privacy["label"] != PRIVATE:
            return {"privacy": plan.privacy, "action": "discarded", "why": "public knowledge is left to the main model"}
        memory_id, action, why = self._add_or_supersede(conn, plan)
        return {"privacy": plan.privacy, "action": action, "why": why, "memory_id": memory_id}

    def _add_or_supersede(self, conn, plan: _Plan) -> tuple[int, str, str]:
        """A contradiction replaces the old memory only when every fact of it is contradicted (or
        it is the same statement negated); otherwise only its contradicted facts are retired and
        the new memory is added beside it, so "I live in Paris" keeps "my sister Mia is a doctor".
        The contradiction is looked for inside the write's transaction, so a memory written just
        before (in the same worker batch, or by another process) is seen. Reasons name memories
        by id, never by their text: a deleted memory's words stay in no other record."""
        user_id, at = plan.user_id, plan.at
        old, conflicts = self._contradicted(user_id, plan.text, plan.vector, plan.triples)
        context = self.store.said_before(conn, user_id, plan.scope, at, CONVERSATION_GAP_SECONDS, plan.queue_item) \
            if plan.actor == "process_memory" else None
        if old is not None and conflicts is None:
            why = f"contradicts memory {old.id} about the same subject"
            if self.store.update(conn, user_id, old.id, plan.text, plan.vector, self.embedder.name, at, plan.actor,
                                 why, plan.metadata, context):
                self.store.drop_facts(conn, user_id, old.id)
                self.store.add_triples(conn, user_id, old.id, _keyed(plan.triples), at)
                return old.id, "superseded", why
        memory_id = self.store.add(conn, user_id, plan.text, plan.vector, self.embedder.name, plan.scope,
                                   plan.metadata, at, plan.actor, context=context)
        self.store.add_triples(conn, user_id, memory_id, _keyed(plan.triples), at)
        if old is not None and conflicts:
            self.store.drop_facts(conn, user_id, old.id, conflicts)
            return memory_id, "stored", f"replaces {len(conflicts)} fact(s) of memory {old.id}, which keeps its others"
        return memory_id, "stored", "private information about the user"

    def _contradicted(self, user_id: str, text: str, vector: np.ndarray,
                      triples) -> tuple[PersonalMemoryRecord | None, list[tuple[str, str, str]] | None]:
        """The live memory the new one contradicts, and which of its facts (None: all of it).
        A contradiction is the same single-valued relation of the same subject with another value
        (the facts that differ; None when those are all the memory states), or the same statement
        negated (high similarity, one side negated: the whole memory)."""
        ids, matrix = self.store.vectors(user_id, self.embedder.name)
        if not ids:
            return None, None
        new_facts = {(entity_key(t.source), t.relationship): entity_key(t.target) for t in triples
                     if t.relationship in SINGLE_VALUED}
        # Without a single-valued fact only a negation can contradict, and only a close one: the
        # memories below that are not read (a chat holds hundreds on the same subject). The old
        # memories' facts are the stored ones (never extracted again: with Claude, a request each).
        floor = SAME_SUBJECT if new_facts else SAME_NEGATED
        similarity = np.asarray(self.embedder.calibrate(matrix @ vector), dtype=float)
        records = self.store.memories_by_id(user_id, [ids[i] for i in np.flatnonzero(similarity >= floor)])
        stated = self.store.facts_of(user_id, list(records)) if new_facts else {}
        negated = bool(_NEGATION.search(text))
        for i in np.argsort(-similarity, kind="stable"):
            record = records.get(ids[i])
            if record is None:
                break
            facts = stated.get(record.id, [])
            conflicts = [f for f in facts if new_facts.get(f[:2], f[2]) != f[2]]
            if conflicts:
                return record, None if len(conflicts) == len(set(facts)) else conflicts
            if negated != bool(_NEGATION.search(record.memory)) and similarity[i] >= SAME_NEGATED:
                return record, None
        return None, None

    def reembed(self, user_id: str | None = None, batch: int = 64) -> int:
        """Re-embed live memories (of one user, or all) with the configured embedder: the way out
        of an embedder mismatch. Returns how many were re-embedded."""
        sql = "SELECT id, memory FROM personal_memories WHERE deleted_at IS NULL"
        rows = self.db.query(sql + (" AND user_id = ?" if user_id else "") + " ORDER BY id",
                             (check_user_id(user_id),) if user_id else ())
        for start in range(0, len(rows), batch):
            part = rows[start:start + batch]
            vectors = self.embedder.embed_passages([r["memory"] for r in part])
            with self.db.transaction() as conn:
                conn.executemany("UPDATE personal_memories SET embedding = ?, embedder = ? WHERE id = ?",
                                 [(np.asarray(v, dtype=np.float32).tobytes(), self.embedder.name, r["id"])
                                  for r, v in zip(part, vectors)])
        return len(rows)

    # --- the memory access tool (seed 004) --------------------------------------------------
    def memory_tool(self, action: str, user_id: str, *, text: str | list[str] | None = None,
                    query: str | None = None, memory_id: int | None = None, agent_id: str | None = None,
                    run_id: str | None = None, metadata: dict[str, Any] | None = None,
                    filters: dict[str, Any] | None = None, top_k: int = 5, actor: str | None = None) -> dict[str, Any]:
        """{operation, status: success | fallback | disabled, payload}. Bad input and unknown ids
        give status fallback with the reason, never an exception."""
        if action not in ACTIONS:
            return _reply(action, "fallback", {"error": f"action must be one of {', '.join(ACTIONS)}"})
        if not self.enabled:
            return _reply(action, "disabled", {"reason": "MEMORY_ENABLED=false: memory is switched off; nothing "
                                                         "was read or written"})
        try:
            user_id = check_user_id(user_id)
            if memory_id is not None and not in_id_range(memory_id):
                raise NotFound(f"memory {memory_id} not found for this user")
            scope = _scope(agent_id, run_id)
            metadata = _metadata(metadata)
            who = actor or agent_id or "memory_tool"
            if action == "add":
                return _reply(action, "success", {"results": self.add(user_id, text, scope, metadata, who)})
            if action == "search":
                filters = dict(filters or {})
                scope_filter = _scope(filters.pop("agent_id", agent_id), filters.pop("run_id", run_id))
                found = self._search(user_id, redact(check_text(query or "", "query", MAX_MEMORY_CHARS)).text,
                                     _top_k(top_k), scope_filter, _metadata(filters))
                return _reply(action, "success", {"results": [{**r.to_dict(), "score": round(s, 4)}
                                                              for r, s in found]})
            if action == "history":
                entries = self.store.history(user_id, memory_id)
                return _reply(action, "success", {"history": [e.to_dict() for e in entries]})
            if memory_id is None:
                raise InvalidInput(f"{action} needs a memory_id")
            now = self.clock()
            if action == "update":  # embedding and extraction before the transaction
                new = redact(check_text(text if isinstance(text, str) else "", "memory", MAX_MEMORY_CHARS)).text
                vector, triples = self.embedder.embed_passages([new])[0], self.extractor.extract(new, speaker=user_id)
            with self.db.transaction() as conn:
                if action == "update":
                    done = self.store.update(conn, user_id, memory_id, new, vector, self.embedder.name, now, who)
                    if done:
                        self.store.drop_facts(conn, user_id, memory_id)
                        self.store.add_triples(conn, user_id, memory_id, _keyed(triples), now)
                else:
                    done = self.store.delete(conn, user_id, memory_id, now, who)
            if not done:
                raise NotFound(f"memory {memory_id} not found for this user")
            if action == "delete":
                self.db.finish_erasures()
            return _reply(action, "success", {"memory_id": memory_id, "history": [
                e.to_dict() for e in self.store.history(user_id, memory_id)]})
        except ForestError as exc:
            return _reply(action, "fallback", {"error": str(exc)})

    def add(self, user_id: str, text: str | list[str] | None, scope: dict[str, str | None],
            metadata: dict[str, Any], actor: str) -> list[dict[str, Any]]:
        """Batch add (explicit writes skip the privacy filter); each may supersede an old memory."""
        texts = [text] if isinstance(text, str) else list(text or [])
        if not texts or len(texts) > MAX_BATCH:
            raise InvalidInput(f"add needs 1 to {MAX_BATCH} memories as text")
        texts = [redact(check_text(t, "memory", MAX_MEMORY_CHARS)).text for t in texts]
        results = []
        vectors = self.embedder.embed_passages(texts)
        for memory, vector in zip(texts, vectors):
            plan = _Plan(user_id, memory, scope, metadata, self.clock(), actor, {})
            self._plan_write(plan, vector)
            with self.db.transaction() as conn:
                memory_id, event, why = self._add_or_supersede(conn, plan)
            results.append({"memory_id": memory_id, "memory": memory,
                            "event": "UPDATE" if event == "superseded" else "ADD", "reason": why})
        return results

    def tags(self, user_id: str, dry_run: bool = True, limit: int = 20) -> dict[str, Any]:
        """Preference and topic tags from the user's memories; dry_run returns the candidates
        only, otherwise they are upserted (applying again changes nothing)."""
        user_id = check_user_id(user_id)
        candidates = extract_tags(user_id, (m.memory for m in self.store.memories(user_id)), self._triples(user_id),
                                  _top_k(limit))
        if not dry_run and candidates:
            self.store.upsert_tags(user_id, candidates, self.clock())
        return {"candidates": candidates, "applied": [] if dry_run else candidates,
                "stored": self.store.tags(user_id)}

    def memories(self, user_id: str) -> list[PersonalMemoryRecord]:
        """The user's live memories, oldest first (the workbench's list)."""
        return self.store.memories(check_user_id(user_id))

    def write_queue(self, user_id: str, limit: int = 50) -> dict[str, Any]:
        """The queue's counts for the user and its latest items with their decisions."""
        user_id = check_user_id(user_id)
        return {"state": self.store.queue_state(user_id), "items": self.store.decisions(user_id, limit)}

    def clear_user_memory(self, user_id: str) -> dict[str, Any]:
        user_id = check_user_id(user_id)
        with self.db.transaction() as conn:
            removed = self.store.clear(conn, user_id)
        self.db.finish_erasures()
        return {"user_id": user_id, "memories_removed": removed}

    def user_graph(self, user_id: str) -> dict[str, Any]:
        """get_user_graph: every entity and relation of the user."""
        triples = self._triples(check_user_id(user_id))
        entities = sorted({t.source for t in triples} | {t.target for t in triples})
        return {"user_id": user_id, "entities": entities, "relations": [t.to_dict() for t in triples]}


@dataclass
class _Plan:
    """A write worked out outside the transaction; _apply commits it in a short one."""
    user_id: str
    text: str
    scope: dict[str, str | None]
    metadata: dict[str, Any]
    at: float
    actor: str
    privacy: dict[str, str]
    vector: np.ndarray | None = None
    triples: list[Triple] | None = None
    queue_item: int | None = None   # process_memory input: its queue id (what was said before it is its context)


# Words that name the same relation: a question says "wife", a triple says "is married to".
def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _standardised(values: np.ndarray) -> np.ndarray:
    """(x - mean) / standard deviation; all zeros when the values do not vary."""
    spread = float(values.std())
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values, dtype=float)


def check_user_id(user_id: str) -> str:
    if not isinstance(user_id, str) or not user_id:
        raise InvalidInput("user_id is required")
    if not _ID.match(user_id):
        raise InvalidInput("user_id must be 1-200 letters, digits or . : @ / - _")
    return _no_secret("user_id", user_id)


def _no_secret(name: str, value: str) -> str:
    """Ids are stored, shown and compared in clear, so one that holds a secret (by its format: a
    key, a token, a card number) is refused rather than stored or redacted into another id."""
    if kind := secret_format(value):
        raise InvalidInput(f"{name} looks like a secret ({kind}): ids are stored in clear, never put a secret in one")
    return value


def _scope(agent_id: str | None, run_id: str | None) -> dict[str, str | None]:
    for name, value in (("agent_id", agent_id), ("run_id", run_id)):
        if value is not None and (not isinstance(value, str) or not _ID.match(value)):
            raise InvalidInput(f"{name} must be 1-200 letters, digits or . : @ / - _")
        if value is not None:
            _no_secret(name, value)
    return {"agent_id": agent_id, "run_id": run_id}


def _metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Checked metadata, its text values redacted (a key is an identifier, a value free text)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or len(metadata) > 20:
        raise InvalidInput("metadata must be an object of at most 20 keys")
    for key, value in metadata.items():
        if not _METADATA_KEY.match(str(key)) or not isinstance(value, (str, int, float, bool)):
            raise InvalidInput(f"metadata key {key!r}: keys are identifiers, values strings, numbers or booleans")
        _no_secret(f"metadata key {key!r}", key)
    return redact_metadata(metadata)


def _top_k(top_k: int) -> int:
    if not isinstance(top_k, int) or not 1 <= top_k <= 100:
        raise InvalidInput(f"top_k must be between 1 and 100, got {top_k!r}")
    return top_k


def _keyed(triples) -> list[tuple[str, str, str, str, str]]:
    return [(t.source, t.relationship, t.target, entity_key(t.source), entity_key(t.target)) for t in triples]


def _context(status: str, chunks: list[dict[str, Any]], relations: list[dict[str, str]],
             elapsed_ms: float, not_queued: str | None = None) -> dict[str, Any]:
    """process_memory's reply; `not_queued`: why the input was not queued (it will not be kept)."""
    metadata = {"retrieval_time_ms": round(elapsed_ms, 1), "has_memory": bool(chunks or relations),
                "queued": not_queued is None and status != "disabled"}
    if not_queued:
        metadata["error"] = not_queued
    return {"status": status, "vector_chunks": chunks, "graph_relations": relations, "metadata": metadata}


def _reply(operation: str, status: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"operation": operation, "status": status, "payload": payload}
