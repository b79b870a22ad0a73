"""SQL for the personal memory tables (migration 6). Every statement is scoped by user_id: one
user never reads or changes another's memories, history, graph or queue."""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

import numpy as np

from forest.db import Database
from forest.research.memory_store import iso

SCOPE_KEYS = ("agent_id", "run_id")


@dataclass
class PersonalMemoryRecord:
    id: int
    user_id: str
    agent_id: str | None
    run_id: str | None
    memory: str
    metadata: dict[str, Any]
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "memory": self.memory, "user_id": self.user_id, "agent_id": self.agent_id,
                "run_id": self.run_id, "metadata": self.metadata, "created_at": iso(self.created_at),
                "updated_at": iso(self.updated_at)}


@dataclass
class HistoryEntry:
    memory_id: int
    event: str
    old_value: str | None
    new_value: str | None
    actor: str
    reason: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "event": self.event, "old_value": self.old_value,
                "new_value": self.new_value, "actor": self.actor, "reason": self.reason,
                "created_at": iso(self.created_at)}


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


class PersonalStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- memories ---------------------------------------------------------------------------
    def add(self, conn: sqlite3.Connection, user_id: str, memory: str, embedding: np.ndarray,
            scope: dict[str, str | None], metadata: dict[str, Any], at: float, actor: str, reason: str = "") -> int:
        memory_id = conn.execute(
            "INSERT INTO personal_memories (user_id, agent_id, run_id, memory, metadata, embedding, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (user_id, scope.get("agent_id"), scope.get("run_id"), memory, json.dumps(metadata, ensure_ascii=False),
             _blob(embedding), at, at)).lastrowid
        self._history(conn, user_id, memory_id, "ADD", None, memory, actor, reason, at)
        return memory_id

    def update(self, conn: sqlite3.Connection, user_id: str, memory_id: int, memory: str, embedding: np.ndarray,
               at: float, actor: str, reason: str = "", metadata: dict[str, Any] | None = None) -> bool:
        """New text (and, given metadata, those keys set over the old ones); the change goes to the history."""
        old = conn.execute("SELECT memory, metadata FROM personal_memories WHERE user_id = ? AND id = ? "
                           "AND deleted_at IS NULL", (user_id, memory_id)).fetchone()
        if old is None:
            return False
        merged = {**json.loads(old[1]), **(metadata or {})}
        conn.execute("UPDATE personal_memories SET memory = ?, embedding = ?, metadata = ?, updated_at = ? "
                     "WHERE id = ?", (memory, _blob(embedding), json.dumps(merged, ensure_ascii=False), at, memory_id))
        self._history(conn, user_id, memory_id, "UPDATE", old[0], memory, actor, reason, at)
        return True

    def delete(self, conn: sqlite3.Connection, user_id: str, memory_id: int, at: float, actor: str,
               reason: str = "") -> bool:
        old = conn.execute("SELECT memory FROM personal_memories WHERE user_id = ? AND id = ? AND deleted_at IS NULL",
                           (user_id, memory_id)).fetchone()
        if old is None:
            return False
        conn.execute("UPDATE personal_memories SET deleted_at = ?, updated_at = ? WHERE id = ?", (at, at, memory_id))
        conn.execute("DELETE FROM personal_triples WHERE user_id = ? AND memory_id = ?", (user_id, memory_id))
        self._history(conn, user_id, memory_id, "DELETE", old[0], None, actor, reason, at)
        return True

    def memory(self, user_id: str, memory_id: int) -> PersonalMemoryRecord | None:
        row = self.db.query_one(f"SELECT {_COLUMNS} FROM personal_memories WHERE user_id = ? AND id = ? "
                                "AND deleted_at IS NULL", (user_id, memory_id))
        return _record(row) if row else None

    def memories(self, user_id: str, scope: dict[str, str | None] | None = None,
                 metadata: dict[str, Any] | None = None) -> list[PersonalMemoryRecord]:
        """The user's live memories matching the scope (agent_id, run_id) and metadata filters."""
        sql, params = _filtered(user_id, scope, metadata)
        return [_record(r) for r in self.db.query(f"SELECT {_COLUMNS} {sql} ORDER BY created_at, id", params)]

    def memories_by_id(self, user_id: str, ids: list[int]) -> dict[int, PersonalMemoryRecord]:
        if not ids:
            return {}
        rows = self.db.query(f"SELECT {_COLUMNS} FROM personal_memories WHERE user_id = ? AND deleted_at IS NULL "
                             f"AND id IN ({','.join('?' * len(ids))})", (user_id, *ids))
        return {r["id"]: _record(r) for r in rows}

    def vectors(self, user_id: str, scope: dict[str, str | None] | None = None,
                metadata: dict[str, Any] | None = None) -> tuple[list[int], np.ndarray]:
        sql, params = _filtered(user_id, scope, metadata)
        rows = self.db.query(f"SELECT id, embedding {sql} ORDER BY id", params)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return [r[0] for r in rows], matrix.reshape(len(rows), -1) if rows else matrix.reshape(0, 0)

    def history(self, user_id: str, memory_id: int | None = None) -> list[HistoryEntry]:
        sql = "SELECT * FROM personal_memory_history WHERE user_id = ?"
        params: list[Any] = [user_id]
        if memory_id is not None:
            sql, params = sql + " AND memory_id = ?", params + [memory_id]
        rows = self.db.query(sql + " ORDER BY created_at, id", params)
        return [HistoryEntry(r["memory_id"], r["event"], r["old_value"], r["new_value"], r["actor"], r["reason"],
                             r["created_at"]) for r in rows]

    def clear(self, conn: sqlite3.Connection, user_id: str) -> int:
        """Everything of the user: memories, history, graph, tags and queued input."""
        count = conn.execute("SELECT count(*) FROM personal_memories WHERE user_id = ? AND deleted_at IS NULL",
                             (user_id,)).fetchone()[0]
        for table in ("personal_triples", "personal_memory_history", "personal_tags", "personal_write_queue",
                      "personal_memories"):
            conn.execute(f"DELETE FROM {table} WHERE user_id = ?", (user_id,))
        return count

    def _history(self, conn: sqlite3.Connection, user_id: str, memory_id: int, event: str, old: str | None,
                 new: str | None, actor: str, reason: str, at: float) -> None:
        conn.execute("INSERT INTO personal_memory_history (memory_id, user_id, event, old_value, new_value, actor, "
                     "reason, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     (memory_id, user_id, event, old, new, actor, reason, at))

    # --- knowledge graph --------------------------------------------------------------------
    def add_triples(self, conn: sqlite3.Connection, user_id: str, memory_id: int,
                    triples: list[tuple[str, str, str, str, str]], at: float) -> None:
        """(source, relationship, target, source_key, target_key); a known triple is kept once."""
        conn.executemany(
            "INSERT OR IGNORE INTO personal_triples (user_id, memory_id, source, relationship, target, source_key, "
            "target_key, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(user_id, memory_id, *t, at) for t in triples])

    def triples(self, user_id: str) -> list[tuple[str, str, str]]:
        rows = self.db.query("SELECT source, relationship, target FROM personal_triples WHERE user_id = ? "
                             "ORDER BY id", (user_id,))
        return [tuple(r) for r in rows]

    # --- the durable write queue ------------------------------------------------------------
    def enqueue(self, user_id: str, text: str, scope: dict[str, str | None], metadata: dict[str, Any],
                observed_at: float, now: float) -> int:
        with self.db.transaction() as conn:
            return conn.execute(
                "INSERT INTO personal_write_queue (user_id, agent_id, run_id, input, metadata, observed_at, "
                "next_try_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (user_id, scope.get("agent_id"), scope.get("run_id"), text, json.dumps(metadata, ensure_ascii=False),
                 observed_at, now)).lastrowid

    def due(self, now: float, limit: int) -> list[QueuedInput]:
        rows = self.db.query("SELECT * FROM personal_write_queue WHERE status = 'pending' AND next_try_at <= ? "
                             "ORDER BY id LIMIT ?", (now, limit))
        return [QueuedInput(r["id"], r["user_id"], r["agent_id"], r["run_id"], r["input"], json.loads(r["metadata"]),
                            r["observed_at"], r["attempts"]) for r in rows]

    def finish(self, conn: sqlite3.Connection, item_id: int, decision: dict[str, Any]) -> None:
        conn.execute("UPDATE personal_write_queue SET status = 'done', attempts = attempts + 1, decision = ? "
                     "WHERE id = ?", (json.dumps(decision, ensure_ascii=False), item_id))

    def retry_later(self, item_id: int, error: str, next_try_at: float, give_up: bool) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE personal_write_queue SET attempts = attempts + 1, last_error = ?, next_try_at = ?, "
                         "status = ? WHERE id = ?", (error, next_try_at, "failed" if give_up else "pending", item_id))

    def has_pending(self) -> bool:
        return self.db.query_one("SELECT 1 FROM personal_write_queue WHERE status = 'pending' LIMIT 1") is not None

    def queue_state(self, user_id: str) -> dict[str, int]:
        rows = self.db.query("SELECT status, count(*) FROM personal_write_queue WHERE user_id = ? GROUP BY status",
                             (user_id,))
        return {"pending": 0, "done": 0, "failed": 0, **{r[0]: r[1] for r in rows}}

    def decisions(self, user_id: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = self.db.query("SELECT id, input, status, attempts, decision, last_error FROM personal_write_queue "
                             "WHERE user_id = ? ORDER BY id DESC LIMIT ?", (user_id, limit))
        return [{"id": r["id"], "input": r["input"], "status": r["status"], "attempts": r["attempts"],
                 "decision": json.loads(r["decision"]) if r["decision"] else None, "error": r["last_error"]}
                for r in rows]

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


_COLUMNS = "id, user_id, agent_id, run_id, memory, metadata, created_at, updated_at"


def _filtered(user_id: str, scope: dict[str, str | None] | None,
              metadata: dict[str, Any] | None) -> tuple[str, list[Any]]:
    sql = "FROM personal_memories WHERE user_id = ? AND deleted_at IS NULL"
    params: list[Any] = [user_id]
    for key in SCOPE_KEYS:
        if scope and scope.get(key) is not None:
            sql, params = f"{sql} AND {key} = ?", params + [scope[key]]
    for key, value in (metadata or {}).items():
        # json_extract compares JSON scalars; the key is a bound path, never SQL.
        sql, params = f"{sql} AND json_extract(metadata, ?) = ?", params + [f'$."{key}"', value]
    return sql, params


def _record(row: sqlite3.Row) -> PersonalMemoryRecord:
    return PersonalMemoryRecord(row["id"], row["user_id"], row["agent_id"], row["run_id"], row["memory"],
                                json.loads(row["metadata"]), row["created_at"], row["updated_at"])


def _blob(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float32).tobytes()
