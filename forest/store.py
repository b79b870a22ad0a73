"""SQL over archives and memory_nodes. Every read that takes a model_id filters by it and sees
only archives whose build completed (status 'ready')."""
from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterable, Sequence
from typing import Any

from forest.db import Database
from forest.errors import ForestError, NotFound
from forest.records import Archive, MemoryNode

NODE_COLUMNS = ("id, archive_id, parent_id, path, depth, node_type, content, summary, summary_source, "
                "leaf_index, char_start, first_leaf, last_leaf, merge_order, merge_similarity, "
                "section, page_start, page_end, chunk_kind")
# Written by allocate_and_insert besides id, archive_id, parent_id, path and depth.
_ROW_FIELDS = ("node_type", "content", "summary", "summary_source", "leaf_index", "char_start", "first_leaf",
               "last_leaf", "merge_order", "merge_similarity", "section", "page_start", "page_end", "chunk_kind")
_NODE_SELECT = ", ".join(f"n.{c.strip()}" for c in NODE_COLUMNS.split(","))
_VISIBLE = "JOIN archives a ON a.id = n.archive_id AND a.model_id = ? AND a.status = 'ready'"
def _stats(archive_filter: str) -> str:
    """Archives with their node statistics; the per-node scan only covers the archives asked for."""
    return f"""
    SELECT a.*, s.leaves, s.nodes, s.roots, s.depth, s.chars FROM archives a
    LEFT JOIN (SELECT archive_id,
                      SUM(node_type = 'LEAF_CHUNK') AS leaves, COUNT(*) AS nodes,
                      SUM(parent_id IS NULL) AS roots, MAX(depth) AS depth,
                      SUM(CASE WHEN node_type = 'LEAF_CHUNK' THEN length(content) END) AS chars
               FROM memory_nodes WHERE archive_id IN ({archive_filter}) GROUP BY archive_id) s
        ON s.archive_id = a.id
"""


_ONE_ARCHIVE = _stats("?") + " WHERE a.id = ? AND a.model_id = ? AND a.status = 'ready'"
_MODEL_ARCHIVES = _stats("SELECT id FROM archives WHERE model_id = ?") + \
    " WHERE a.model_id = ? AND a.status = 'ready' ORDER BY a.id"


def _reserve(conn, count: int) -> int:
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'memory_nodes'").fetchone()
    top = conn.execute("SELECT COALESCE(MAX(id), 0) FROM memory_nodes").fetchone()[0]
    base = max(seq[0] if seq else 0, top) + 1
    if seq is None:
        conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('memory_nodes', ?)", (base + count - 1,))
    else:
        conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'memory_nodes'", (base + count - 1,))
    return base


def _insert_rows(conn, archive_id: int, rows: Sequence[dict[str, Any]], base: int) -> None:
    conn.executemany(
        f"INSERT INTO memory_nodes (id, archive_id, parent_id, path, depth, {', '.join(_ROW_FIELDS)}) "
        f"VALUES (?, ?, ?, ?, ?, {', '.join('?' * len(_ROW_FIELDS))})",
        ((base + r["offset"], archive_id,
          None if r["parent_offset"] is None else base + r["parent_offset"],
          "".join(f"{base + o}/" for o in r["path_offsets"]), r["depth"],
          *(r.get(name) for name in _ROW_FIELDS))
         # parents before children: a parent's offset is always higher than its children's
         for r in sorted(rows, key=lambda r: -r["offset"])))


class ForestStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # --- archives -------------------------------------------------------------------------
    def create_archive(self, model_id: str, name: str, source: str | None, settings: dict[str, Any]) -> int:
        with self.db.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO archives (model_id, name, source, status, builder_pid, builder_host, settings) "
                "VALUES (?, ?, ?, 'building', ?, ?, ?)",
                (model_id, name, source, os.getpid(), socket.gethostname(), json.dumps(settings)))
            return int(cursor.lastrowid)

    def set_status(self, archive_id: int, status: str, error: str | None = None) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE archives SET status = ?, error = ?, updated_at = "
                         "strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?", (status, error, archive_id))

    def delete_archive_rows(self, archive_id: int) -> None:
        with self.db.transaction() as conn:
            # Children first is not needed: ON DELETE CASCADE from archives removes every node.
            conn.execute("DELETE FROM archives WHERE id = ?", (archive_id,))

    def archive(self, model_id: str, archive_id: int) -> Archive:
        row = self.db.query_one(_ONE_ARCHIVE, (archive_id, archive_id, model_id))
        if row is None:
            raise NotFound(f"archive {archive_id} not found for model_id {model_id!r}")
        return Archive.from_row(row)

    def archives(self, model_id: str) -> list[Archive]:
        rows = self.db.query(_MODEL_ARCHIVES, (model_id, model_id))
        return [Archive.from_row(r) for r in rows]

    def all_archives(self) -> list[dict[str, Any]]:
        """Every archive of every model_id and status (for doctor)."""
        return [dict(r) for r in self.db.query(
            "SELECT id, model_id, name, status, builder_pid, builder_host, updated_at FROM archives ORDER BY id")]

    def model_ids(self) -> list[str]:
        return [r[0] for r in self.db.query(
            "SELECT DISTINCT model_id FROM archives WHERE status = 'ready' ORDER BY model_id")]

    def has_unfinished(self, model_id: str) -> bool:
        return self.db.query_one("SELECT 1 FROM archives WHERE model_id = ? AND status != 'ready' LIMIT 1",
                                 (model_id,)) is not None

    # --- nodes ----------------------------------------------------------------------------
    def allocate_and_insert(self, archive_id: int, rows: Sequence[dict[str, Any]]) -> int:
        """Insert nodes whose ids are offsets (0..len-1) from a base allocated here; returns the base.

        Rows may refer to each other through 'parent_offset'; paths are built from offsets too, so
        the whole tree lands in one transaction with its final ids.
        """
        with self.db.transaction() as conn:
            base = _reserve(conn, len(rows))
            _insert_rows(conn, archive_id, rows, base)
            return base

    def reserve_ids(self, count: int) -> int:
        """Reserve `count` node ids (base .. base+count-1) that no other writer will get, so vectors
        can be stored under them before their rows exist (invisible until then)."""
        with self.db.transaction() as conn:
            return _reserve(conn, count)

    def graft(self, archive_id: int, rows: Sequence[dict[str, Any]], base: int,
              adoptions: Sequence[tuple[int, int, str]], renumber: Sequence[tuple[int, int, int]] = (),
              expect: dict[int, tuple[int, frozenset[int]]] | None = None) -> None:
        """In one transaction: insert `rows` (ids reserved from `base`), then hang each existing
        root under a new parent: (root id, new parent id, new parent path). The root's whole
        subtree gets the parent's path in front of its paths and its depths shifted.

        `renumber` (archive id, leaf shift, merge shift) moves another archive's nodes into this one
        first, after this archive's leaves and merges (archive joining).

        `expect` {archive id: (leaf count, root ids)} is what the caller planned on; if another
        process changed an archive since (an append of its own), nothing is written.
        """
        with self.db.transaction() as conn:
            for changed_id, (leaves, roots) in (expect or {}).items():
                now_leaves = conn.execute("SELECT COUNT(*) FROM memory_nodes WHERE archive_id = ? AND "
                                          "node_type = 'LEAF_CHUNK'", (changed_id,)).fetchone()[0]
                now_roots = {r[0] for r in conn.execute(
                    "SELECT id FROM memory_nodes WHERE archive_id = ? AND parent_id IS NULL", (changed_id,))}
                if now_leaves != leaves or now_roots != set(roots):
                    raise ForestError(f"archive {changed_id} changed while this change was being prepared "
                                      "(another process writing to it?); nothing was changed, try again")
            for other, shift, merge_shift in renumber:
                conn.execute("UPDATE memory_nodes SET archive_id = ?, leaf_index = leaf_index + ?, "
                             "first_leaf = first_leaf + ?, last_leaf = last_leaf + ?, "
                             "merge_order = merge_order + ? WHERE archive_id = ?",
                             (archive_id, shift, shift, shift, merge_shift, other))
                conn.execute("DELETE FROM archives WHERE id = ?", (other,))
            _insert_rows(conn, archive_id, rows, base)
            for root_id, parent_id, parent_path in adoptions:
                root_path = f"{root_id}/"
                conn.execute(
                    "UPDATE memory_nodes SET path = ? || path, depth = depth + ? "
                    "WHERE archive_id = ? AND substr(path, 1, ?) = ?",
                    (parent_path, parent_path.count("/"), archive_id, len(root_path), root_path))
                conn.execute("UPDATE memory_nodes SET parent_id = ? WHERE id = ?", (parent_id, root_id))
            conn.execute("UPDATE archives SET updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                         (archive_id,))

    def rename_archive(self, archive_id: int, name: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE archives SET name = ? WHERE id = ?", (name, archive_id))

    def update_settings(self, archive_id: int, settings: dict[str, Any]) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE archives SET settings = ? WHERE id = ?", (json.dumps(settings), archive_id))

    def node(self, model_id: str, node_id: int) -> MemoryNode:
        row = self.db.query_one(f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.id = ?",
                                (model_id, node_id))
        if row is None:
            raise NotFound(f"node {node_id} not found for model_id {model_id!r}")
        return MemoryNode.from_row(row)

    def nodes(self, model_id: str, node_ids: Iterable[int]) -> dict[int, MemoryNode]:
        ids = list(dict.fromkeys(int(i) for i in node_ids))
        found: dict[int, MemoryNode] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            rows = self.db.query(
                f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.id IN ({','.join('?' * len(chunk))})",
                (model_id, *chunk))
            found.update((r["id"], MemoryNode.from_row(r)) for r in rows)
        return found

    def children(self, model_id: str, node_id: int) -> list[MemoryNode]:
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.parent_id = ? ORDER BY n.first_leaf, n.id",
            (model_id, node_id))
        return [MemoryNode.from_row(r) for r in rows]

    def node_by_path(self, model_id: str, archive_id: int, path: str) -> MemoryNode | None:
        row = self.db.query_one(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.archive_id = ? AND n.path = ?",
            (model_id, archive_id, path))
        return MemoryNode.from_row(row) if row else None

    def text_search(self, model_id: str, match: str, limit: int) -> list[tuple[MemoryNode, float]]:
        """FTS5 hits (a MATCH expression from forest.lexical) with their BM25 score, higher better."""
        rows = self.db.query(
            f"SELECT {_NODE_SELECT}, -bm25(node_text) AS score FROM node_text "
            f"JOIN memory_nodes n ON n.id = node_text.rowid {_VISIBLE} "
            "WHERE node_text MATCH ? ORDER BY bm25(node_text) LIMIT ?", (model_id, match, limit))
        return [(MemoryNode.from_row(r), float(r["score"])) for r in rows]

    def leaves_between(self, model_id: str, archive_id: int, first_leaf: int, last_leaf: int) -> list[MemoryNode]:
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.archive_id = ? "
            "AND n.node_type = 'LEAF_CHUNK' AND n.leaf_index BETWEEN ? AND ? ORDER BY n.leaf_index",
            (model_id, archive_id, first_leaf, last_leaf))
        return [MemoryNode.from_row(r) for r in rows]

    def archive_nodes(self, model_id: str, archive_id: int) -> list[MemoryNode]:
        self.archive(model_id, archive_id)  # NotFound for other model_ids and unfinished builds
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.archive_id = ? "
            "ORDER BY n.depth, n.first_leaf, n.id", (model_id, archive_id))
        return [MemoryNode.from_row(r) for r in rows]

    def archive_node_ids(self, archive_id: int) -> list[int]:
        return [r[0] for r in self.db.query("SELECT id FROM memory_nodes WHERE archive_id = ?", (archive_id,))]


