"""SQL for the personal memory tables (migration 6). Every statement is scoped by user_id: one
user never reads or changes another's memories, history, graph or queue."""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from forest.storage.sql.database import WAL, Connection, Database, mark_erased
from forest.errors import ForestError
from forest.records import iso
from forest.storage.fulltext import fulltext_for, memory_text_row
from forest.storage.fulltext.fts5 import query_phrases
from forest.storage.graphs.base import GraphEdge
from forest.personal.records import (EntityCount, FactSpan, HistoryEntry, PersonalMemoryRecord, QueuedDecision,
                                     QueuedWrite)

if TYPE_CHECKING:
    from forest.personal.graph_mirror import GraphMirror

SCOPE_KEYS = ("agent_id", "run_id")
MEMORY_INDEX = "personal_memory_text"
# A claim of `limit` items takes the input of at most limit / 8 users (4 for the worker's batch of
# 32): enough for one embedding call to batch, few enough that other workers find users to write for.
ITEMS_PER_CLAIMED_USER = 8


@dataclass
class QueuedInput:
    id: int
    user_id: str
    agent_id: str | None
    run_id: str | None
    input: str
    metadata: dict[str, Any]
    observed_at: float
    attempts: int
    claim: str = ""
    vector: np.ndarray | None = field(default=None, compare=False)   # made by process_memory, with `embedder`; None: not embedded yet
    embedder: str | None = None


@dataclass(frozen=True)
class SaidBefore:
    """A memory's conversation context: the memory kept of what was said just before it."""
    memory_id: int
    text: str


def writes_of(user_id: str) -> str:
    """The lock a user's writes take on a database that does not serialise writers: a write looks
    for the memories it contradicts or repeats inside its transaction, so two writes of one user
    must not interleave."""
    return f"personal:{user_id}"


class EmbedderMismatch(ForestError):
    """Stored vectors come from another embedder than the configured one: comparing them would
    mix two vector spaces, so search and writes refuse until the memories are re-embedded."""


class PersonalStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        self._fulltext = fulltext_for(db)
        # The Cypher store the graph is mirrored in (graph_url), told of every fact a write changes.
        self.mirror: GraphMirror | None = None

    @contextmanager
    def writing(self, user_id: str) -> Iterator[Connection]:
        """A write transaction of the user's, under their lock; the graph mirror is brought in step
        with it before it commits (still under the lock, so mirror writes keep the SQL order)."""
        with self.db.transaction(lock=writes_of(user_id)) as conn:
            yield conn
            if self.mirror is not None:
                self.mirror.sync(user_id, lambda user, keys: self.graph_edges(user, keys, conn))

    # --- memories ---------------------------------------------------------------------------
    def add(self, conn: Connection, user_id: str, memory: str, embedding: np.ndarray, embedder: str,
            scope: dict[str, str | None], metadata: dict[str, Any], at: float, actor: str, reason: str = "",
            context: SaidBefore | None = None) -> int:
        """A new memory; `embedding` is of the memory alone, its BM25 row also holds `context`."""
        memory_id = conn.execute(
            "INSERT INTO personal_memories (user_id, agent_id, run_id, memory, metadata, embedding, embedder, "
            "created_at, updated_at, context, context_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (user_id, scope.get("agent_id"), scope.get("run_id"), memory, json.dumps(metadata, ensure_ascii=False),
             _blob(embedding), embedder, at, at, *_context_columns(context))).fetchone()[0]
        self._index(conn, user_id, memory_id, memory, context and context.text)
        self._history(conn, user_id, memory_id, "ADD", None, memory, actor, reason, at)
        return memory_id

    def update(self, conn: Connection, user_id: str, memory_id: int, memory: str, embedding: np.ndarray,
               embedder: str, at: float, actor: str, reason: str = "",
               metadata: dict[str, Any] | None = None, context: SaidBefore | None = None) -> bool:
        """New text (and, given metadata, those keys set over the old ones) said in `context`;
        the change goes to the history."""
        old = conn.execute("SELECT memory, metadata FROM personal_memories WHERE user_id = ? AND id = ? "
                           "AND deleted_at IS NULL", (user_id, memory_id)).fetchone()
        if old is None:
            return False
        merged = {**json.loads(old[1]), **(metadata or {})}
        conn.execute("UPDATE personal_memories SET memory = ?, embedding = ?, embedder = ?, metadata = ?, "
                     "updated_at = ?, context = ?, context_id = ? WHERE id = ?",
                     (memory, _blob(embedding), embedder, json.dumps(merged, ensure_ascii=False), at,
                      *_context_columns(context), memory_id))
        self._unindex(conn, memory_id)
        self._index(conn, user_id, memory_id, memory, context and context.text)
        self._history(conn, user_id, memory_id, "UPDATE", old[0], memory, actor, reason, at)
        return True

    def delete(self, conn: Connection, user_id: str, memory_id: int, at: float, actor: str,
               reason: str = "") -> bool:
        """Erase the memory: its text, metadata and vector go, from the row, its history, its BM25
        row and the context of the memories said after it; the history keeps that it was added,
        changed and deleted, and when. The caller runs Database.finish_erasures after committing."""
        live = conn.execute("SELECT 1 FROM personal_memories WHERE user_id = ? AND id = ? AND deleted_at IS NULL",
                            (user_id, memory_id)).fetchone()
        if live is None:
            return False
        self.drop_facts(conn, user_id, memory_id, closed_too=True)
        conn.execute("UPDATE personal_memories SET memory = '', metadata = '{}', embedding = ?, context = NULL, "
                     "context_id = NULL, deleted_at = ?, updated_at = ? WHERE id = ?", (b"", at, at, memory_id))
        self._unindex(conn, memory_id)
        conn.execute("UPDATE personal_memory_history SET old_value = NULL, new_value = NULL, reason = '' "
                     "WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
        for said_after, memory in conn.execute("SELECT id, memory FROM personal_memories WHERE user_id = ? AND "
                                               "context_id = ? AND deleted_at IS NULL", (user_id, memory_id)).fetchall():
            conn.execute("UPDATE personal_memories SET context = NULL, context_id = NULL WHERE id = ?", (said_after,))
            self._unindex(conn, said_after)
            self._index(conn, user_id, said_after, memory)
        mark_erased(conn, MEMORY_INDEX)
        self._history(conn, user_id, memory_id, "DELETE", None, None, actor, reason, at)
        return True

    def same_memory(self, conn: Connection, user_id: str, memory: str, scope: dict[str, str | None],
                    metadata: dict[str, Any]) -> int | None:
        """The user's live memory in this scope with these words and this metadata, if any."""
        rows = conn.execute(f"SELECT id, metadata FROM personal_memories WHERE user_id = ? AND memory = ? "
                            f"AND agent_id {self.db.null_safe} ? AND run_id {self.db.null_safe} ? "
                            "AND deleted_at IS NULL ORDER BY id",
                            (user_id, memory, scope.get("agent_id"), scope.get("run_id"))).fetchall()
        return next((r[0] for r in rows if json.loads(r[1]) == metadata), None)

    def memory(self, user_id: str, memory_id: int) -> PersonalMemoryRecord | None:
        row = self.db.query_one(f"SELECT {_COLUMNS} FROM personal_memories WHERE user_id = ? AND id = ? "
                                "AND deleted_at IS NULL", (user_id, memory_id))
        return _record(row) if row else None

    def memories(self, user_id: str, scope: dict[str, str | None] | None = None,
                 metadata: dict[str, Any] | None = None) -> list[PersonalMemoryRecord]:
        """The user's live memories matching the scope (agent_id, run_id) and metadata filters."""
        sql, params = self._filtered(user_id, scope, metadata)
        return [_record(r) for r in self.db.query(f"SELECT {_COLUMNS} {sql} ORDER BY created_at, id", params)]

    def memories_by_id(self, user_id: str, ids: list[int]) -> dict[int, PersonalMemoryRecord]:
        if not ids:
            return {}
        rows = self.db.query(f"SELECT {_COLUMNS} FROM personal_memories WHERE user_id = ? AND deleted_at IS NULL "
                             f"AND id IN ({','.join('?' * len(ids))})", (user_id, *ids))
        return {r["id"]: _record(r) for r in rows}

    def vectors(self, user_id: str, embedder: str, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None) -> tuple[list[int], np.ndarray]:
        """Ids and vectors of the user's live memories; EmbedderMismatch if any vector comes from
        another embedder than `embedder`."""
        sql, params = self._filtered(user_id, scope, metadata)
        rows = self.db.query(f"SELECT id, embedding, embedder {sql} ORDER BY id", params)
        foreign = {r[2] for r in rows} - {embedder}
        if foreign:
            raise EmbedderMismatch(
                f"memories of user {user_id} were embedded by {', '.join(sorted(map(str, foreign)))}, but the "
                f"configured embedder is {embedder}: vectors of two embedders cannot be compared. Re-embed them "
                f"(PersonalMemory.reembed, `forest personal reembed`) or configure the embedder they were made with.")
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return [r[0] for r in rows], matrix.reshape(len(rows), -1) if rows else matrix.reshape(0, 0)

    def lexical(self, user_id: str, query: str, limit: int, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None) -> list[tuple[int, float]]:
        """(memory id, -bm25) of the user's best BM25 matches: each query term one quoted phrase; a
        word of the memory's conversation context weighs half a word of the memory (chosen on
        LoCoMo's dev conversations against context and text weighed alike: docs/benchmarks.md)."""
        phrases = query_phrases(query)
        if not phrases:
            return []
        sql, params = self._filtered(user_id, scope, metadata)
        with self.db.snapshot() as conn:
            return self._fulltext.memory_hits(getattr(conn, "raw", conn), user_id, phrases, limit,
                                              sql.removeprefix(_MEMORIES), params)

    def index_missing(self) -> int:
        """Index live memories that have no BM25 row (those written before migration 8, and those
        whose context migration 11 took away)."""
        with self.db.transaction() as conn:
            rows = conn.execute("SELECT id, user_id, memory, context FROM personal_memories m WHERE deleted_at IS NULL "
                                f"AND NOT EXISTS (SELECT 1 FROM personal_memory_text t WHERE t.{self._fulltext.MEMORY_TEXT_ID} = m.id)"
                                ).fetchall()
            self._index_many(conn, [(memory_id, user_id, memory, context)
                                    for memory_id, user_id, memory, context in rows])
        return len(rows)

    def live_texts(self, user_id: str | None = None) -> list[tuple[int, str]]:
        """(id, text) of every live memory, of one user or all, in id order."""
        sql = "SELECT id, memory FROM personal_memories WHERE deleted_at IS NULL"
        return [(r[0], r[1]) for r in self.db.query_tuples(
            sql + (" AND user_id = ?" if user_id else "") + " ORDER BY id", (user_id,) if user_id else ())]

    def set_embeddings(self, embedder: str, vectors: Sequence[tuple[int, bytes]]) -> None:
        """Replace memories' vectors ((id, float32 bytes)) with `embedder`'s, in one transaction."""
        with self.db.transaction() as conn:
            conn.executemany("UPDATE personal_memories SET embedding = ?, embedder = ? WHERE id = ?",
                             [(vector, embedder, memory_id) for memory_id, vector in vectors])

    def tag_untagged(self, embedder: str) -> None:
        """Vectors written before migration 8 carry no embedder: they were made by the one configured then."""
        with self.db.transaction() as conn:
            conn.execute("UPDATE personal_memories SET embedder = ? WHERE embedder IS NULL", (embedder,))

    def said_at(self, user_id: str) -> dict[int, float]:
        """When each live memory was said (created_at)."""
        rows = self.db.query("SELECT id, created_at FROM personal_memories WHERE user_id = ? AND deleted_at IS NULL",
                             (user_id,))
        return {r[0]: r[1] for r in rows}

    def said(self, user_id: str, ids: list[int]) -> dict[int, str]:
        """The words of each of these live memories, in one read."""
        if not ids:
            return {}
        rows = self.db.query(f"SELECT id, memory FROM personal_memories WHERE user_id = ? AND "
                             f"deleted_at IS NULL AND id IN ({','.join('?' * len(ids))})", (user_id, *ids))
        return {r[0]: r[1] for r in rows}

    def history(self, user_id: str, memory_id: int | None = None) -> list[HistoryEntry]:
        sql = "SELECT * FROM personal_memory_history WHERE user_id = ?"
        params: list[Any] = [user_id]
        if memory_id is not None:
            sql, params = sql + " AND memory_id = ?", params + [memory_id]
        rows = self.db.query(sql + " ORDER BY created_at, id", params)
        return [HistoryEntry(r["memory_id"], r["event"], r["old_value"], r["new_value"], r["actor"], r["reason"],
                             r["created_at"]) for r in rows]

    def clear(self, conn: Connection, user_id: str) -> int:
        """Everything of the user: memories, history, graph, tags and queued input. The caller runs
        Database.finish_erasures after committing."""
        count = conn.execute("SELECT count(*) FROM personal_memories WHERE user_id = ? AND deleted_at IS NULL",
                             (user_id,)).fetchone()[0]
        conn.execute(f"DELETE FROM personal_memory_text WHERE {self._fulltext.MEMORY_TEXT_ID} IN (SELECT id FROM personal_memories "
                     "WHERE user_id = ?)", (user_id,))
        conn.execute("DELETE FROM personal_triple_sources WHERE triple_id IN (SELECT id FROM personal_triples "
                     "WHERE user_id = ?)", (user_id,))
        for table in ("personal_triples", "personal_memory_history", "personal_tags", "personal_write_queue",
                      "personal_memories"):
            conn.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
        mark_erased(conn, MEMORY_INDEX)
        if self.mirror is not None:
            self.mirror.touch_user(user_id)
        return count

    def _history(self, conn: Connection, user_id: str, memory_id: int, event: str, old: str | None,
                 new: str | None, actor: str, reason: str, at: float) -> None:
        conn.execute("INSERT INTO personal_memory_history (memory_id, user_id, event, old_value, new_value, actor, "
                     "reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (memory_id, user_id, event, old, new, actor, reason, at))

    # --- knowledge graph --------------------------------------------------------------------
    def add_triples(self, conn: Connection, user_id: str, memory_id: int,
                    triples: list[tuple[str, str, str, str, str]], at: float) -> None:
        """(source, relationship, target, source_key, target_key); a known triple is kept once, and
        every memory that states it is recorded as its source. A closed fact stated again holds
        again from `at` (its earlier span stays in the history of the memories that said it)."""
        for t in triples:
            conn.execute(
                "INSERT INTO personal_triples (user_id, memory_id, source, relationship, target, source_key, "
                "target_key, created_at, valid_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (user_id, source_key, relationship, target_key) DO UPDATE SET "
                "valid_from = excluded.valid_from, valid_to = NULL WHERE personal_triples.valid_to IS NOT NULL",
                (user_id, memory_id, *t, at, at))
            conn.execute(
                "INSERT INTO personal_triple_sources (triple_id, memory_id) SELECT id, ? FROM "
                "personal_triples WHERE user_id = ? AND source_key = ? AND relationship = ? AND target_key = ? "
                "ON CONFLICT DO NOTHING", (memory_id, user_id, t[3], t[1], t[4]))
        if self.mirror is not None:
            self.mirror.touch(user_id, [(t[3], t[1], t[4]) for t in triples])

    def _stated(self, conn: Connection, user_id: str, memory_id: int,
                closed_too: bool) -> dict[int, tuple[str, str, str]]:
        """Triple id -> (source_key, relationship, target_key) of the facts the memory states (the
        open ones; with closed_too, also those superseded)."""
        return {r[0]: (r[1], r[2], r[3]) for r in conn.execute(
            "SELECT t.id, t.source_key, t.relationship, t.target_key FROM personal_triple_sources s "
            "JOIN personal_triples t ON t.id = s.triple_id WHERE s.memory_id = ? AND t.user_id = ?"
            + ("" if closed_too else " AND t.valid_to IS NULL"), (memory_id, user_id))}

    def _unlink(self, conn: Connection, triple_id: int, memory_id: int) -> int | None:
        """The memory no longer a source of the fact; another memory that states it, if any."""
        conn.execute("DELETE FROM personal_triple_sources WHERE triple_id = ? AND memory_id = ?", (triple_id, memory_id))
        left = conn.execute("SELECT memory_id FROM personal_triple_sources WHERE triple_id = ? LIMIT 1",
                            (triple_id,)).fetchone()
        if left is not None:
            conn.execute("UPDATE personal_triples SET memory_id = ? WHERE id = ?", (left[0], triple_id))
        return None if left is None else left[0]

    def drop_facts(self, conn: Connection, user_id: str, memory_id: int, closed_too: bool = False) -> None:
        """The memory no longer states its open facts (a correction, or with closed_too its erasure:
        also those superseded); a fact no memory states any more is removed, one another memory
        states stays."""
        stated = self._stated(conn, user_id, memory_id, closed_too)
        if self.mirror is not None:
            self.mirror.touch(user_id, list(stated.values()))
        for triple_id in stated:
            if self._unlink(conn, triple_id, memory_id) is None:
                conn.execute("DELETE FROM personal_triples WHERE id = ?", (triple_id,))

    def end_facts(self, conn: Connection, user_id: str, memory_id: int, at: float,
                  superseded: Iterable[tuple[str, str, str]], rewritten: bool = False,
                  still_stated: Iterable[tuple[str, str, str]] = ()) -> None:
        """A later statement ended open facts of the memory (keys). `superseded`: those it says no
        longer hold, closed at `at` (valid_to) whichever memories state them, and kept with their
        sources for what was true. `rewritten`: the memory now says the later statement (its facts
        in `still_stated`), so its other facts are no longer stated by it either: one another memory
        still states stays open without this one; any other is closed."""
        replaced = set(still_stated)
        ended = set(superseded) - replaced
        stated = {i: key for i, key in self._stated(conn, user_id, memory_id, False).items()
                  if key in ended or (rewritten and key not in replaced)}
        if self.mirror is not None:
            self.mirror.touch(user_id, list(stated.values()))
        for triple_id, key in stated.items():
            others = key not in ended and conn.execute(
                "SELECT 1 FROM personal_triple_sources WHERE triple_id = ? AND memory_id <> ? LIMIT 1",
                (triple_id, memory_id)).fetchone() is not None
            if others:
                self._unlink(conn, triple_id, memory_id)
            else:
                conn.execute("UPDATE personal_triples SET valid_to = ? WHERE id = ?", (at, triple_id))

    def fact_memories(self, user_id: str, entity_keys: list[str]) -> dict[int, int]:
        """Memory id -> how many facts it states about any of the entities (by key)."""
        if not entity_keys:
            return {}
        marks = ",".join("?" * len(entity_keys))
        rows = self.db.query(
            f"SELECT s.memory_id, count(*) FROM personal_triples t JOIN personal_triple_sources s ON s.triple_id = t.id "
            f"WHERE t.user_id = ? AND t.valid_to IS NULL AND (t.source_key IN ({marks}) OR t.target_key IN ({marks})) "
            f"GROUP BY s.memory_id",
            (user_id, *entity_keys, *entity_keys))
        return {r[0]: r[1] for r in rows}

    def facts_with(self, conn: Connection, user_id: str,
                   pairs: list[tuple[str, str]]) -> list[tuple[int, tuple[str, str, str]]]:
        """The live (memory_id, (source_key, relationship, target_key)) of these (source_key,
        relationship) pairs, read inside the write's transaction."""
        if not pairs:
            return []
        match = " OR ".join(["(t.source_key = ? AND t.relationship = ?)"] * len(pairs))
        rows = conn.execute(
            f"SELECT s.memory_id, t.source_key, t.relationship, t.target_key FROM personal_triple_sources s "
            f"JOIN personal_triples t ON t.id = s.triple_id JOIN personal_memories m ON m.id = s.memory_id "
            f"WHERE t.user_id = ? AND t.valid_to IS NULL AND m.deleted_at IS NULL AND ({match}) "
            f"ORDER BY s.memory_id, t.id",
            (user_id, *(v for pair in pairs for v in pair))).fetchall()
        return [(r[0], (r[1], r[2], r[3])) for r in rows]

    def facts_of(self, user_id: str, memory_ids: list[int]) -> dict[int, list[tuple[str, str, str]]]:
        """Memory id -> the live facts it states, as (source_key, relationship, target_key)."""
        if not memory_ids:
            return {}
        rows = self.db.query(
            f"SELECT s.memory_id, t.source_key, t.relationship, t.target_key FROM personal_triple_sources s "
            f"JOIN personal_triples t ON t.id = s.triple_id WHERE t.user_id = ? AND t.valid_to IS NULL "
            f"AND s.memory_id IN ({','.join('?' * len(memory_ids))}) ORDER BY t.id", (user_id, *memory_ids))
        facts: dict[int, list[tuple[str, str, str]]] = {}
        for memory_id, *fact in rows:
            facts.setdefault(memory_id, []).append(tuple(fact))
        return facts

    def graph_edges(self, user_id: str, keys: list[tuple[str, str, str]] | None = None,
                    conn: Connection | None = None) -> list[GraphEdge]:
        """The user's facts, open and closed (those with these (source_key, relationship,
        target_key) keys; None: all) as the graph mirror holds them, in stored order; read through
        `conn` inside a write."""
        read = (lambda sql, params: conn.execute(sql, params).fetchall()) if conn else self.db.query_tuples
        rows = []
        for part in [None] if keys is None else [keys[i:i + 100] for i in range(0, len(keys), 100)]:
            which = "" if part is None else " AND (" + " OR ".join(
                ["(t.source_key = ? AND t.relationship = ? AND t.target_key = ?)"] * len(part)) + ")"
            rows += read("SELECT t.id, t.source, t.relationship, t.target, t.source_key, t.target_key, "
                         "COALESCE(t.valid_from, t.created_at), t.valid_to, s.memory_id FROM personal_triples t JOIN personal_triple_sources s ON s.triple_id = t.id "
                         f"WHERE t.user_id = ?{which}", [user_id, *(value for key in part or [] for value in key)])
        facts: dict[int, tuple[Any, ...]] = {}
        sources: dict[int, list[int]] = {}
        for *fact, memory_id in rows:
            facts[fact[0]] = tuple(fact)
            sources.setdefault(fact[0], []).append(memory_id)
        return [GraphEdge(*facts[i][:6], tuple(sorted(sources[i])), iso(facts[i][6]),
                          None if facts[i][7] is None else iso(facts[i][7])) for i in sorted(facts)]

    def graph_users(self) -> list[str]:
        """The users who hold facts (the graph mirror's doctor looks at each)."""
        return [r[0] for r in self.db.query_tuples("SELECT DISTINCT user_id FROM personal_triples")]

    def triples(self, user_id: str) -> list[tuple[str, str, str]]:
        """The user's facts that hold now (superseded ones are closed: see fact_history)."""
        rows = self.db.query("SELECT source, relationship, target FROM personal_triples WHERE user_id = ? "
                             "AND valid_to IS NULL ORDER BY id", (user_id,))
        return [tuple(r) for r in rows]

    def fact_history(self, user_id: str) -> list[FactSpan]:
        """Every fact of the user with its validity, closed ones too: what was true, and when."""
        rows = self.db.query("SELECT source, relationship, target, COALESCE(valid_from, created_at), valid_to "
                             "FROM personal_triples WHERE user_id = ? ORDER BY id", (user_id,))
        return [FactSpan(*r) for r in rows]

    # --- the durable write queue ------------------------------------------------------------
    def enqueue(self, user_id: str, text: str, scope: dict[str, str | None], metadata: dict[str, Any],
                observed_at: float, now: float, vector: np.ndarray | None = None, embedder: str | None = None) -> int:
        """Queue input for the worker, with the vector process_memory made of it (and the
        embedder that made it), if any."""
        blob = None if vector is None else _blob(vector)
        with self.db.transaction() as conn:
            return conn.execute(
                "INSERT INTO personal_write_queue (user_id, agent_id, run_id, input, metadata, observed_at, "
                "next_try_at, embedding, embedder) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (user_id, scope.get("agent_id"), scope.get("run_id"), text, json.dumps(metadata, ensure_ascii=False),
                 observed_at, now, blob, embedder if blob is not None else None)).fetchone()[0]

    def said_before(self, conn: Connection, user_id: str, scope: dict[str, str | None], at: float,
                    within: float, before_item: int | None = None) -> SaidBefore | None:
        """The memory kept of what the user (in this scope) said last, at most `within` seconds
        before `at` (and queued before item `before_item`): None when that input was not kept
        (the privacy filter discarded it) or is not written yet. Only kept text becomes context."""
        row = conn.execute(
            f"SELECT decision FROM personal_write_queue WHERE user_id = ? AND agent_id {self.db.null_safe} ? "
            f"AND run_id {self.db.null_safe} ? "
            "AND observed_at <= ? AND observed_at >= ? AND id < ? ORDER BY observed_at DESC, id DESC LIMIT 1",
            (user_id, scope.get("agent_id"), scope.get("run_id"), at, at - within,
             before_item if before_item is not None else 2**63 - 1)).fetchone()
        memory_id = json.loads(row[0]).get("memory_id") if row and row[0] else None
        said = conn.execute("SELECT id, memory FROM personal_memories WHERE id = ? AND user_id = ? "
                            "AND deleted_at IS NULL", (memory_id, user_id)).fetchone() if memory_id else None
        return SaidBefore(said[0], said[1]) if said else None

    def outstanding(self, now: float) -> bool:
        """Whether any pending input is due now, claimed or not."""
        return self.db.query_one("SELECT 1 FROM personal_write_queue WHERE status = 'pending' AND next_try_at <= ? "
                                 "LIMIT 1", (now,)) is not None

    def claim(self, now: float, limit: int, claim: str, lease_seconds: float) -> list[QueuedInput]:
        """Take up to `limit` due items under a lease, atomically (UPDATE ... RETURNING): another
        worker, in this process or another, cannot take them until the lease runs out. A user whose
        input another claim holds is skipped, so one user's input is written in the order it came
        (a later "I moved to Berlin" must find the memory it supersedes); and a claim takes the
        input of a few users at most (those waiting longest), so that the other workers find users
        to write for. Claims take turns under a lock, so that two cannot take one user at once."""
        due = "status = 'pending' AND next_try_at <= ? AND (lease_until IS NULL OR lease_until < ?)"
        with self.db.transaction(lock="personal-claims") as conn:
            rows = conn.execute(
                f"UPDATE personal_write_queue SET claim = ?, lease_until = ? WHERE id IN (SELECT id FROM "
                f"personal_write_queue WHERE {due} AND user_id IN (SELECT user_id FROM personal_write_queue "
                f"WHERE {due} AND user_id NOT IN (SELECT user_id FROM personal_write_queue WHERE status = "
                f"'pending' AND lease_until >= ?) GROUP BY user_id ORDER BY min(id) LIMIT ?) "
                f"ORDER BY id LIMIT ? {self.db.skip_locked}) RETURNING *",
                (claim, now + lease_seconds, now, now, now, now, now, max(1, limit // ITEMS_PER_CLAIMED_USER),
                 limit)).fetchall()
        return sorted((_queued(r) for r in rows), key=lambda q: q.id)

    def release_orphans(self, host: str, alive: Callable[[int], bool]) -> int:
        """Free the leases of claims made on this host by processes that are gone (a crash or a
        kill): their input is written by the next worker at once, not when the lease runs out.
        Claims are "host:pid:nonce"."""
        claims = [r[0] for r in self.db.query("SELECT DISTINCT claim FROM personal_write_queue WHERE status = "
                                              "'pending' AND lease_until IS NOT NULL")]
        dead = [c for c in claims if c and c.count(":") >= 2 and c.rsplit(":", 2)[0] == host
                and c.rsplit(":", 2)[1].isdigit() and not alive(int(c.rsplit(":", 2)[1]))]
        if dead:  # only then a write: idle workers call this every second
            with self.db.transaction() as conn:
                conn.executemany("UPDATE personal_write_queue SET lease_until = NULL WHERE status = 'pending' "
                                 "AND claim = ?", [(claim,) for claim in dead])
        return len(dead)

    def holds(self, conn: Connection, item: QueuedInput, now: float) -> bool:
        """Whether the item's claim is still ours and alive (checked inside the writing transaction)."""
        return conn.execute("SELECT 1 FROM personal_write_queue WHERE id = ? AND status = 'pending' AND claim = ? "
                            "AND lease_until >= ?", (item.id, item.claim, now)).fetchone() is not None

    def finish(self, conn: Connection, item: QueuedInput, decision: dict[str, Any]) -> bool:
        """Mark the claimed item done, keeping its decision and none of its input (what was kept
        lives on in the memory; what the privacy filter discarded is gone); False (and nothing
        changed) if the claim was lost."""
        done = conn.execute("UPDATE personal_write_queue SET status = 'done', attempts = attempts + 1, decision = ?, "
                            "lease_until = NULL, input = '', metadata = '{}', embedding = NULL, context = NULL "
                            "WHERE id = ? AND status = 'pending' AND claim = ?",
                            (json.dumps(decision, ensure_ascii=False), item.id, item.claim)).rowcount == 1
        if done and decision.get("action") == "discarded":
            mark_erased(conn, WAL)  # the WAL still holds the queued input's page
        return done

    def retry_later(self, item: QueuedInput, error: str, next_try_at: float, give_up: bool) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE personal_write_queue SET attempts = attempts + 1, last_error = ?, next_try_at = ?, "
                         "status = ?, lease_until = NULL WHERE id = ? AND status = 'pending' AND claim = ?",
                         (error, next_try_at, "failed" if give_up else "pending", item.id, item.claim))

    def queue_totals(self) -> dict[str, int]:
        """Items by status over every user, for the worker's health."""
        rows = self.db.query("SELECT status, count(*) FROM personal_write_queue GROUP BY status")
        return {"pending": 0, "done": 0, "failed": 0, **{r[0]: r[1] for r in rows}}

    def queue_health(self) -> dict[str, Any]:
        """What `forest doctor` shows of the write queue from any process: items by status, those
        waiting for a retry, and the newest error an item met."""
        retrying = self.db.query_one("SELECT count(*) FROM personal_write_queue "
                                     "WHERE status = 'pending' AND attempts > 0")[0]
        newest = self.db.query_one("SELECT last_error FROM personal_write_queue WHERE last_error IS NOT NULL "
                                   "ORDER BY id DESC LIMIT 1")
        return {**self.queue_totals(), "retrying": retrying, "last_error": newest[0] if newest else None}

    def has_pending(self) -> bool:
        return self.db.query_one("SELECT 1 FROM personal_write_queue WHERE status = 'pending' LIMIT 1") is not None

    def queue_state(self, user_id: str) -> dict[str, int]:
        rows = self.db.query("SELECT status, count(*) FROM personal_write_queue WHERE user_id = ? GROUP BY status",
                             (user_id,))
        return {"pending": 0, "done": 0, "failed": 0, **{r[0]: r[1] for r in rows}}

    def queue_item(self, user_id: str, item_id: int, now: float) -> QueuedWrite | None:
        """One queued input of the user: its status, whether a worker holds it now, its decision."""
        row = self.db.query_one("SELECT id, status, attempts, decision, last_error, lease_until, observed_at "
                                "FROM personal_write_queue WHERE user_id = ? AND id = ?", (user_id, item_id))
        if row is None:
            return None
        return QueuedWrite(row["id"], row["status"], row["attempts"],
                           row["lease_until"] is not None and row["lease_until"] >= now,
                           json.loads(row["decision"]) if row["decision"] else None, row["last_error"],
                           row["observed_at"])

    def entities(self, user_id: str | None = None) -> list[EntityCount]:
        """Live memories counted by (user, agent, run), with the first and last write times."""
        sql = ("SELECT user_id, agent_id, run_id, count(*), min(created_at), max(updated_at) FROM personal_memories "
               "WHERE deleted_at IS NULL")
        rows = self.db.query(sql + (" AND user_id = ?" if user_id else "") +
                             " GROUP BY user_id, agent_id, run_id ORDER BY user_id", (user_id,) if user_id else ())
        return [EntityCount(*r) for r in rows]

    def decisions(self, user_id: str, limit: int = 20) -> list[QueuedDecision]:
        """The latest queue items with their decisions; a written item's input is the memory it
        became while that lives (a discarded or deleted one's is gone: "")."""
        rows = self.db.query("SELECT id, input, status, attempts, decision, last_error FROM personal_write_queue "
                             "WHERE user_id = ? ORDER BY id DESC LIMIT ?", (user_id, limit))
        decisions = {r["id"]: json.loads(r["decision"]) if r["decision"] else None for r in rows}
        written = {d["memory_id"] for d in decisions.values() if d and isinstance(d.get("memory_id"), int)}
        memories = self.memories_by_id(user_id, sorted(written))
        said = {i: memories[d["memory_id"]].memory if d and d.get("memory_id") in memories else ""
                for i, d in decisions.items()}
        return [QueuedDecision(r["id"], r["input"] or said[r["id"]], r["status"], r["attempts"], decisions[r["id"]],
                               r["last_error"]) for r in rows]

    # --- tags -------------------------------------------------------------------------------
    def tags(self, user_id: str) -> list[dict[str, Any]]:
        rows = self.db.query("SELECT tag, kind, weight FROM personal_tags WHERE user_id = ? ORDER BY weight DESC, tag",
                             (user_id,))
        return [{"tag": r["tag"], "kind": r["kind"], "weight": r["weight"]} for r in rows]

    def upsert_tags(self, user_id: str, tags: list[dict[str, Any]], at: float) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "INSERT INTO personal_tags (user_id, tag, kind, weight, updated_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (user_id, tag) DO UPDATE SET kind = excluded.kind, weight = excluded.weight, "
                "updated_at = excluded.updated_at", [(user_id, t["tag"], t["kind"], t["weight"], at) for t in tags])


    # --- helpers ----------------------------------------------------------------------------
    def _filtered(self, user_id: str, scope: dict[str, str | None] | None,
                  metadata: dict[str, Any] | None) -> tuple[str, list[Any]]:
        sql = f"{_MEMORIES}user_id = ? AND deleted_at IS NULL"
        params: list[Any] = [user_id]
        for key in SCOPE_KEYS:
            if scope and scope.get(key) is not None:
                sql, params = f"{sql} AND {key} = ?", params + [scope[key]]
        for key, value in (metadata or {}).items():
            condition, values = self.db.json_equals("metadata", key, value)
            sql, params = f"{sql} AND {condition}", params + values
        return sql, params

    def _index(self, conn: Connection, user_id: str, memory_id: int, memory: str, context: str | None = None) -> None:
        self._index_many(conn, [(memory_id, user_id, memory, context)])

    def _index_many(self, conn: Connection, memories: list[tuple[int, str, str, str | None]]) -> None:
        """BM25 rows of (memory id, user_id, memory, context): the memory's tokens, and those of
        what was said before it. In one call: PostgreSQL keeps each user's statistics per call."""
        self._fulltext.write_memory_text(getattr(conn, "raw", conn), [memory_text_row(*m) for m in memories])

    def _unindex(self, conn: Connection, memory_id: int) -> None:
        self._fulltext.delete_memory_text(getattr(conn, "raw", conn), [memory_id])


_COLUMNS = "id, user_id, agent_id, run_id, memory, metadata, created_at, updated_at"
_MEMORIES = "FROM personal_memories WHERE "


def _record(row: Any) -> PersonalMemoryRecord:
    return PersonalMemoryRecord(row["id"], row["user_id"], row["agent_id"], row["run_id"], row["memory"],
                                json.loads(row["metadata"]), row["created_at"], row["updated_at"])


def _queued(row: Any) -> QueuedInput:
    vector = None if row["embedding"] is None else np.frombuffer(row["embedding"], dtype=np.float32)
    return QueuedInput(row["id"], row["user_id"], row["agent_id"], row["run_id"], row["input"],
                       json.loads(row["metadata"]), row["observed_at"], row["attempts"], row["claim"] or "",
                       vector, row["embedder"])


def _context_columns(context: SaidBefore | None) -> tuple[str | None, int | None]:
    return (context.text, context.memory_id) if context else (None, None)


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()
