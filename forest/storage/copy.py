"""A whole store copied into another, both ways between the embedded default and the server stack
(SQLite + Chroma <-> PostgreSQL + pgvector or Qdrant): every row with its id, every vector as it
was made (nothing is embedded again), the full-text indexes rebuilt in the target's own form.
The target must be empty; forest.service.MemoryForest.copy_store checks the copy afterwards."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from forest.errors import ForestError
from forest.records import Progress, ProgressFn, vector_metadata
from forest.storage.fulltext.fts5 import indexed_text
from forest.storage.sql.database import Database
from forest.storage.vectors.base import VectorStore

# Every table of the truth, parents before the rows that refer to them, with the order that keeps
# a child after its parent (nodes: a parent is never deeper than its children).
TABLES: list[tuple[str, str]] = [
    ("archives", "id"),
    ("memory_nodes", "depth, id"),
    ("archive_merges", "archive_id, merge_order"),
    ("workspace_items", "id"),
    ("episodic_events", "id"),
    ("semantic_knowledge", "id"),
    ("session_messages", "id"),
    ("personal_memories", "id"),
    ("personal_memory_history", "id"),
    ("personal_write_queue", "id"),
    ("personal_triples", "id"),
    ("personal_triple_sources", "triple_id, memory_id"),
    ("personal_tags", "user_id, tag"),
]
# Tables whose ids come from a sequence the target must continue after the copied ids.
IDENTITY_TABLES = [table for table, order in TABLES if order == "id"] + ["memory_nodes"]
BATCH = 1000


def row_counts(db: Database) -> dict[str, int]:
    return {table: int(db.query_one(f"SELECT count(*) FROM {table}")[0]) for table, _ in TABLES}


def copy_rows(source: Database, target: Database, progress: ProgressFn) -> dict[str, int]:
    """Every row of every table, ids kept; returns the rows copied per table."""
    if any(row_counts(target).values()):
        raise ForestError(f"the target store {target.location} is not empty: copy into a new database")
    copied = {}
    for table, order in TABLES:
        total = int(source.query_one(f"SELECT count(*) FROM {table}")[0])
        done = 0
        for columns, rows in _pages(source, table, order):
            marks = ", ".join("?" * len(columns))
            with target.transaction() as conn:
                conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
                if table == "memory_nodes" and target.dialect == "postgres":
                    _index_nodes(conn, columns, rows)
            done += len(rows)
            progress(Progress(f"copy {table}", done, total, "rows"))
        copied[table] = done
    _continue_sequences(target)
    return copied


def _pages(db: Database, table: str, order: str) -> Iterator[tuple[list[str], list[tuple]]]:
    """The table's rows in `order`, BATCH at a time, with their column names (keyset paging would
    need a unique order on every table; OFFSET over a few hundred thousand rows is fine)."""
    offset = 0
    while True:
        rows = db.query(f"SELECT * FROM {table} ORDER BY {order} LIMIT ? OFFSET ?", (BATCH, offset))
        if not rows:
            return
        yield list(rows[0].keys()), [tuple(r) for r in rows]
        offset += len(rows)


def _index_nodes(conn: Any, columns: list[str], rows: list[tuple]) -> None:
    """PostgreSQL's full-text rows of copied nodes (SQLite's trigger makes its own on insert)."""
    from forest.storage.fulltext import postgres as fulltext_postgres

    at = {name: i for i, name in enumerate(columns)}
    archives = {r[at["archive_id"]] for r in rows}
    model_of = {a: conn.execute("SELECT model_id FROM archives WHERE id = ?", (a,)).fetchone()[0] for a in archives}
    fulltext_postgres.write_node_text(conn.raw, [
        (r[at["id"]], model_of[r[at["archive_id"]]],
         indexed_text(r[at["node_type"]], r[at["title"]], r[at["summary"]], r[at["content"]])) for r in rows])


def _continue_sequences(target: Database) -> None:
    """New ids after the copied ones: SQLite's AUTOINCREMENT follows explicit ids by itself;
    PostgreSQL's identity sequences must be moved on."""
    if target.dialect != "postgres":
        return
    with target.transaction() as conn:
        for table in IDENTITY_TABLES:
            top = conn.execute(f"SELECT max(id) FROM {table}").fetchone()[0]
            if top is not None:
                conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), ?)", (top,))


def copy_vectors(source: Database, vectors: VectorStore, target: VectorStore, progress: ProgressFn) -> dict[str, int]:
    """Every node's vector, read from one store and written to the other with its metadata;
    returns the vectors copied per model_id. A node without a vector is an error (run doctor)."""
    nodes: dict[str, list[tuple[int, int, str, int]]] = {}
    for node_id, archive_id, node_type, depth, model_id in source.query_tuples(
            "SELECT n.id, n.archive_id, n.node_type, n.depth, a.model_id FROM memory_nodes n "
            "JOIN archives a ON a.id = n.archive_id ORDER BY n.id"):
        nodes.setdefault(model_id, []).append((node_id, archive_id, node_type, depth))
    total, done, copied = sum(map(len, nodes.values())), 0, {}
    for model_id, rows in sorted(nodes.items()):
        for start in range(0, len(rows), BATCH):
            batch = rows[start:start + BATCH]
            found = vectors.get_vectors(model_id, [r[0] for r in batch])
            missing = [r[0] for r in batch if r[0] not in found]
            if missing:
                raise ForestError(f"{len(missing)} nodes of model_id {model_id!r} have no vector (e.g. node "
                                  f"{missing[0]}): run `forest doctor --repair` on the source first")
            target.upsert(model_id, [r[0] for r in batch], _stack([found[r[0]] for r in batch]),
                          [vector_metadata(model_id, r[1], r[2], r[3]) for r in batch])
            done += len(batch)
            progress(Progress("copy vectors", done, total, model_id))
        copied[model_id] = len(rows)
    return copied


def _stack(rows: list[Any]) -> Any:
    import numpy as np

    return np.stack(rows).astype(np.float32)

