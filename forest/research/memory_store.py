"""SQL for the research memory tables (migration 5). Every query is scoped by model_id, and the
session-scoped ones by session_id too: one model_id never reads another's notes."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from forest.storage.sql.database import Connection, Database
from forest.errors import ConfigError
from forest.records import iso

WORKSPACE_KINDS = ("focus", "constraint", "finding")


@dataclass
class WorkspaceItem:
    id: int
    kind: str
    text: str
    source: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "text": self.text, "source": self.source,
                "created_at": iso(self.created_at)}


@dataclass
class EpisodicEvent:
    id: int
    session_id: str
    kind: str
    content: str
    data: dict[str, Any]
    created_at: float
    last_recalled_at: float | None
    recall_count: int
    stability_days: float

    @property
    def reinforced_at(self) -> float:
        """When the memory was last laid down or recalled: the decay clock starts there."""
        return self.last_recalled_at or self.created_at

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "session_id": self.session_id, "kind": self.kind, "content": self.content,
                "data": self.data, "created_at": iso(self.created_at),
                "last_recalled_at": iso(self.last_recalled_at), "recall_count": self.recall_count,
                "stability_days": round(self.stability_days, 3)}


@dataclass
class KnowledgeVersion:
    id: int
    topic: str
    conclusion: str
    version: int
    created_at: float
    superseded_at: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "conclusion": self.conclusion, "version": self.version,
                "created_at": iso(self.created_at), "superseded_at": iso(self.superseded_at)}


@dataclass
class Message:
    id: int
    role: str
    content: str
    tokens: int
    event_id: int | None
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "role": self.role, "content": self.content, "tokens": self.tokens,
                "event_id": self.event_id, "created_at": iso(self.created_at)}


@dataclass(frozen=True)
class NewEvent:
    """An episodic event to record, embedding already computed."""
    kind: str
    content: str
    embedding: np.ndarray
    data: dict[str, Any] = field(default_factory=dict)


class ResearchStore:
    def __init__(self, db: Database, initial_stability_days: float = 7.0, embedder_name: str = "") -> None:
        self.db = db
        self.embedder_name = embedder_name  # tags every event vector; vectors of another embedder are refused
        self.initial_stability_days = initial_stability_days  # S of a new event

    # --- workspace --------------------------------------------------------------------------
    def workspace(self, model_id: str, session_id: str) -> list[WorkspaceItem]:
        rows = self.db.query(
            "SELECT id, kind, text, source, created_at FROM workspace_items WHERE model_id = ? "
            "AND session_id = ? AND removed_at IS NULL ORDER BY created_at, id", (model_id, session_id))
        return [WorkspaceItem(r["id"], r["kind"], r["text"], r["source"], r["created_at"]) for r in rows]

    def add_workspace_item(self, conn: Connection, model_id: str, session_id: str, kind: str,
                           text: str, source: str, at: float) -> int:
        return conn.execute(
            "INSERT INTO workspace_items (model_id, session_id, kind, text, source, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?) RETURNING id", (model_id, session_id, kind, text, source, at)).fetchone()[0]

    def remove_workspace_items(self, conn: Connection, model_id: str, session_id: str,
                               at: float, *, item_id: int | None = None, kind: str | None = None) -> int:
        """Soft removal (the item stays in episodic memory); by id, or every item of a kind."""
        sql = ("UPDATE workspace_items SET removed_at = ? WHERE model_id = ? AND session_id = ? "
               "AND removed_at IS NULL")
        params: list[Any] = [at, model_id, session_id]
        if item_id is not None:
            sql, params = sql + " AND id = ?", params + [item_id]
        if kind is not None:
            sql, params = sql + " AND kind = ?", params + [kind]
        return conn.execute(sql, params).rowcount

    def sessions(self, model_id: str) -> list[str]:
        rows = self.db.query(
            "SELECT session_id, MAX(at) AS last FROM ("
            " SELECT session_id, created_at AS at FROM episodic_events WHERE model_id = ?"
            " UNION ALL SELECT session_id, created_at FROM workspace_items WHERE model_id = ?) touched"
            " GROUP BY session_id ORDER BY last DESC", (model_id, model_id))
        return [r["session_id"] for r in rows]

    # --- episodic events --------------------------------------------------------------------
    def add_events(self, conn: Connection, model_id: str, session_id: str, events: list[NewEvent],
                   at: float) -> list[int]:
        ids = []
        for event in events:
            ids.append(conn.execute(
                "INSERT INTO episodic_events (model_id, session_id, kind, content, data, created_at, "
                "stability_days, embedding, embedder) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (model_id, session_id, event.kind, event.content, json.dumps(event.data, ensure_ascii=False),
                 at, self.initial_stability_days, np.asarray(event.embedding, dtype=np.float32).tobytes(),
                 self.embedder_name)).fetchone()[0])
        return ids

    def events(self, model_id: str, *, since: float | None = None, until: float | None = None,
               session_id: str | None = None, kinds: tuple[str, ...] = ()) -> list[EpisodicEvent]:
        sql, params = _event_filter(model_id, since, until, session_id, kinds)
        return [_event(r) for r in self.db.query(f"SELECT {_EVENT_COLUMNS} {sql} ORDER BY created_at, id", params)]

    def event_clocks(self, model_id: str, *, since: float | None = None, until: float | None = None,
                     session_id: str | None = None, kinds: tuple[str, ...] = ()) -> np.ndarray:
        """(id, reinforced_at, stability_days) of the events in range, one row each: what the
        retention needs, without reading any text."""
        sql, params = _event_filter(model_id, since, until, session_id, kinds)
        rows = self.db.query_tuples(f"SELECT id, COALESCE(last_recalled_at, created_at), stability_days {sql}", params)
        return np.array(rows, dtype=np.float64).reshape(-1, 3)

    def event_vectors(self, model_id: str, after_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(ids, unit vectors) of the model_id's events with id > after_id, in id order. Vectors another
        embedder made are refused: two 384-d spaces would mix silently."""
        other = self.db.query_one("SELECT embedder FROM episodic_events WHERE model_id = ? AND id > ? "
                                  "AND embedder IS NOT NULL AND embedder != ? LIMIT 1",
                                  (model_id, after_id, self.embedder_name))
        if other is not None:
            raise ConfigError(
                f"the episodic events of model_id {model_id!r} were embedded by {other[0]}, but the configured "
                f"embedder is {self.embedder_name}; run `forest reembed --model-id {model_id}` to re-embed them")
        rows = self.db.query("SELECT id, embedding FROM episodic_events WHERE model_id = ? AND id > ? ORDER BY id",
                             (model_id, after_id))
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32)
        return ids, matrix.reshape(len(rows), -1) if rows else matrix.reshape(0, 0)

    def events_to_reembed(self, model_id: str) -> list[tuple[int, str]]:
        """(id, content) of the model_id's events not tagged with the configured embedder."""
        rows = self.db.query("SELECT id, content FROM episodic_events WHERE model_id = ? "
                             "AND (embedder IS NULL OR embedder != ?) ORDER BY id", (model_id, self.embedder_name))
        return [(r[0], r[1]) for r in rows]

    def set_event_vectors(self, conn: Connection, ids: list[int], vectors: np.ndarray) -> None:
        conn.executemany("UPDATE episodic_events SET embedding = ?, embedder = ? WHERE id = ?",
                         [(np.asarray(v, dtype=np.float32).tobytes(), self.embedder_name, i)
                          for i, v in zip(ids, vectors)])

    def events_by_id(self, model_id: str, ids: list[int]) -> dict[int, EpisodicEvent]:
        if not ids:
            return {}
        rows = self.db.query(f"SELECT {_EVENT_COLUMNS} FROM episodic_events WHERE model_id = ? "
                             f"AND id IN ({','.join('?' * len(ids))})", (model_id, *ids))
        return {r["id"]: _event(r) for r in rows}

    def recent_events(self, model_id: str, session_id: str, limit: int) -> list[EpisodicEvent]:
        rows = self.db.query(f"SELECT {_EVENT_COLUMNS} FROM episodic_events WHERE model_id = ? AND session_id = ? "
                             "ORDER BY created_at DESC, id DESC LIMIT ?", (model_id, session_id, limit))
        return [_event(r) for r in rows]

    def mark_recalled(self, model_id: str, event_ids: list[int], at: float, growth: float) -> None:
        with self.db.transaction() as conn:
            conn.executemany(
                "UPDATE episodic_events SET last_recalled_at = ?, recall_count = recall_count + 1, "
                "stability_days = stability_days * ? WHERE model_id = ? AND id = ?",
                [(at, growth, model_id, i) for i in event_ids])

    # --- semantic knowledge -----------------------------------------------------------------
    def knowledge(self, model_id: str, topic_key: str | None = None, *,
                  with_history: bool = False) -> list[KnowledgeVersion]:
        sql = "SELECT * FROM semantic_knowledge WHERE model_id = ?"
        params: list[Any] = [model_id]
        if topic_key is not None:
            sql, params = sql + " AND topic_key = ?", params + [topic_key]
        if not with_history:
            sql += " AND superseded_at IS NULL"
        rows = self.db.query(sql + " ORDER BY topic_key, version DESC", params)
        return [KnowledgeVersion(r["id"], r["topic"], r["conclusion"], r["version"], r["created_at"],
                                 r["superseded_at"]) for r in rows]

    def add_knowledge(self, conn: Connection, model_id: str, topic: str, topic_key: str,
                      conclusion: str, at: float) -> int:
        """A new version in force; the previous one (if any) is kept as history, superseded."""
        conn.execute("UPDATE semantic_knowledge SET superseded_at = ? WHERE model_id = ? AND topic_key = ? "
                     "AND superseded_at IS NULL", (at, model_id, topic_key))
        version = conn.execute("SELECT COALESCE(MAX(version), 0) + 1 FROM semantic_knowledge "
                               "WHERE model_id = ? AND topic_key = ?", (model_id, topic_key)).fetchone()[0]
        conn.execute("INSERT INTO semantic_knowledge (model_id, topic, topic_key, conclusion, version, created_at) "
                     "VALUES (?, ?, ?, ?, ?, ?)", (model_id, topic, topic_key, conclusion, version, at))
        return version

    # --- session messages -------------------------------------------------------------------
    def messages(self, model_id: str, session_id: str, *, include_compacted: bool = False) -> list[Message]:
        sql = "SELECT * FROM session_messages WHERE model_id = ? AND session_id = ?"
        if not include_compacted:
            sql += " AND compacted_at IS NULL"
        rows = self.db.query(sql + " ORDER BY created_at, id", (model_id, session_id))
        return [Message(r["id"], r["role"], r["content"], r["tokens"], r["event_id"], r["created_at"]) for r in rows]

    def add_message(self, conn: Connection, model_id: str, session_id: str, role: str, content: str,
                    tokens: int, event_id: int | None, at: float) -> int:
        return conn.execute(
            "INSERT INTO session_messages (model_id, session_id, role, content, tokens, event_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id", (model_id, session_id, role, content, tokens, event_id, at)
        ).fetchone()[0]

    def mark_compacted(self, conn: Connection, model_id: str, message_ids: list[int], at: float) -> int:
        """Returns how many of the messages were still live (and are compacted now)."""
        return conn.executemany("UPDATE session_messages SET compacted_at = ? WHERE model_id = ? AND id = ? "
                                "AND compacted_at IS NULL", [(at, model_id, i) for i in message_ids]).rowcount


_EVENT_COLUMNS = ("id, session_id, kind, content, data, created_at, last_recalled_at, recall_count, "
                  "stability_days")


def _event_filter(model_id: str, since: float | None, until: float | None, session_id: str | None,
                  kinds: tuple[str, ...]) -> tuple[str, list[Any]]:
    """FROM ... WHERE for the model_id's events in a time range, session and kinds."""
    sql = "FROM episodic_events WHERE model_id = ?"
    params: list[Any] = [model_id]
    for clause, value in (("created_at >= ?", since), ("created_at <= ?", until), ("session_id = ?", session_id)):
        if value is not None:
            sql, params = f"{sql} AND {clause}", params + [value]
    if kinds:
        sql += f" AND kind IN ({','.join('?' * len(kinds))})"
        params += list(kinds)
    return sql, params


def _event(row: Any) -> EpisodicEvent:
    return EpisodicEvent(row["id"], row["session_id"], row["kind"], row["content"], json.loads(row["data"]),
                         row["created_at"], row["last_recalled_at"], row["recall_count"], row["stability_days"])
