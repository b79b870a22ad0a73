"""A whole store copied into another, both ways between the embedded default and the server stack
(SQLite + Chroma <-> PostgreSQL + pgvector or Qdrant): every row with its id, every vector as it
was made (nothing is embedded again), the full-text indexes rebuilt in the target's own form.
The target must be empty; compare_stores checks the copy afterwards."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from forest.errors import ForestError
from forest.records import Progress, ProgressFn, vector_metadata
from forest.storage.fulltext import fulltext_for, memory_text_row
from forest.storage.fulltext.fts5 import indexed_text
from forest.storage.private_files import tighten
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
                if table == "personal_memories":
                    _index_memories(target, conn, columns, rows)
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


def _index_memories(target: Database, conn: Any, columns: list[str], rows: list[tuple]) -> None:
    """The full-text rows of copied live memories (the tokenizer is Python: no trigger makes them)."""
    at = {name: i for i, name in enumerate(columns)}
    fulltext_for(target).write_memory_text(getattr(conn, "raw", conn), [
        memory_text_row(r[at["id"]], r[at["user_id"]], r[at["memory"]], r[at["context"]])
        for r in rows if r[at["deleted_at"]] is None])


def copy_store(source: Database, source_vectors: VectorStore, source_files: Path, target: Database,
               target_vectors: VectorStore, target_files: Path, target_data_dir: Path,
               progress: ProgressFn) -> dict[str, Any]:
    """Every row, every vector and the kept PDFs; the caller holds the source's writer lock."""
    rows = copy_rows(source, target, progress)
    vectors = copy_vectors(source, source_vectors, target_vectors, progress)
    if Path(target_files).resolve() != Path(source_files).resolve() and Path(source_files).is_dir():
        shutil.copytree(source_files, target_files, dirs_exist_ok=True)
        tighten(target_data_dir)
    return {"rows": rows, "vectors": vectors}


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
    return np.stack(rows).astype(np.float32)


def compare_stores(source: Database, source_vectors: VectorStore, target: Database, target_vectors: VectorStore,
                   model_ids: list[str]) -> dict[str, Any]:
    """What a copy is checked for (a ForestError when it differs): the same rows per table, the same
    vectors per model_id (a sample compared value for value), and the copy's search finding
    sampled nodes by their own vectors."""
    problems = []
    if row_counts(source) != row_counts(target):
        problems.append(f"rows per table differ: {row_counts(source)} vs {row_counts(target)}")
    searched = found = 0
    for model_id in model_ids:
        ids = sorted(source_vectors.ids(model_id))
        if ids != sorted(target_vectors.ids(model_id)):
            problems.append(f"the vectors of model_id {model_id!r} differ in number or ids")
            continue
        sample = ids[:: max(1, len(ids) // 20)]
        mine, theirs = source_vectors.get_vectors(model_id, sample), target_vectors.get_vectors(model_id, sample)
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
            top = [i for i, _ in target_vectors.query(model_id, mine[node_id], 1)]
            found += top == [node_id] or bool(top) and np.allclose(
                target_vectors.get_vectors(model_id, top)[top[0]], mine[node_id], rtol=0, atol=1e-6)
    if found < searched:
        problems.append(f"the copy's search misses {searched - found} of {searched} sampled nodes by their own vectors")
    if problems:
        raise ForestError("the copy differs from its source: " + "; ".join(problems))
    return {"rows_equal": True, "vectors_equal": True, "nodes_searched": searched, "found_by_own_vector": found}

