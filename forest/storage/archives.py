"""SQL over archives and memory_nodes. Every read that takes a model_id filters by it and sees
only archives whose build completed (status 'ready')."""
from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any

from forest.storage.sql.database import Connection, Database, mark_erased
from forest.errors import ForestError, NotFound
from forest.storage.fulltext import fulltext_for
from forest.storage.fulltext.fts5 import VISIBLE_ARCHIVE, VISIBLE_NODES, indexed_text
from forest.records import Archive, MemoryNode, MergeStep
from forest.records import SEPARATOR
from forest.validation import in_id_range

NODE_COLUMNS = ("id, archive_id, parent_id, path, depth, node_type, content, summary, summary_source, "
                "leaf_index, char_start, first_leaf, last_leaf, merge_order, merge_similarity, "
                "section, page_start, page_end, chunk_kind, title, heading_path")
# Written by allocate_and_insert besides id, archive_id, parent_id, path and depth.
_ROW_FIELDS = ("node_type", "content", "summary", "summary_source", "leaf_index", "char_start", "first_leaf",
               "last_leaf", "merge_order", "merge_similarity", "section", "page_start", "page_end", "chunk_kind",
               "title", "heading_path")
# Every node query joins its archive (VISIBLE_NODES): the work its passages are cited from comes with it.
_NODE_SELECT = ", ".join(f"n.{c.strip()}" for c in NODE_COLUMNS.split(",")) + ", a.cite_as AS work"
def _stats(archive_filter: str) -> str:
    """Archives with their node statistics; the per-node scan only covers the archives asked for."""
    return f"""
    SELECT a.*, s.leaves, s.nodes, s.roots, s.depth, s.chars FROM archives a
    LEFT JOIN (SELECT archive_id,
                      SUM(CASE WHEN node_type = 'LEAF_CHUNK' THEN 1 ELSE 0 END) AS leaves, COUNT(*) AS nodes,
                      SUM(CASE WHEN parent_id IS NULL THEN 1 ELSE 0 END) AS roots, MAX(depth) AS depth,
                      SUM(CASE WHEN node_type = 'LEAF_CHUNK' THEN length(content) END) AS chars
               FROM memory_nodes WHERE archive_id IN ({archive_filter}) GROUP BY archive_id) s
        ON s.archive_id = a.id
"""


_ONE_ARCHIVE = _stats("?") + " WHERE a.id = ? AND a.model_id = ? AND a.status = 'ready'"
_MODEL_ARCHIVES = _stats("SELECT id FROM archives WHERE model_id = ?") + \
    " WHERE a.model_id = ? AND a.status = 'ready' ORDER BY a.id"


def building(archive_id: int) -> str:
    """What a process building an archive holds (Database.hold) while it builds."""
    return f"build:{archive_id}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _insert_merges(conn, archive_id: int, merges: Sequence[dict[str, Any]], base: int) -> None:
    """Merge history rows; 'node_offset' names the summary node a merge made (None if condensed)."""
    conn.executemany(
        "INSERT INTO archive_merges (archive_id, merge_order, first_leaf, split_leaf, last_leaf, similarity, node_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        ((archive_id, m["merge_order"], m["first_leaf"], m["split_leaf"], m["last_leaf"], m["similarity"],
          None if m["node_offset"] is None else base + m["node_offset"]) for m in merges))


def _documents(settings: str | None) -> list:
    """The document entries an archive's settings record ([] when they are not a list: an archive
    imported before imports were checked)."""
    try:
        documents = json.loads(settings or "{}").get("documents")
    except (ValueError, AttributeError):
        return []
    return documents if isinstance(documents, list) else []


class ForestStore:
    def __init__(self, db: Database) -> None:
        self.db = db
        # Nodes looked up by id, the archive joined after (see nodes()).
        self._visible_by_id = f"{db.cross_join} {VISIBLE_ARCHIVE}"
        self._fulltext = fulltext_for(db)
        self._building: dict[int, Any] = {}   # archive id -> what tells other processes its build is alive

    def _insert_rows(self, conn: Connection, archive_id: int, rows: Sequence[dict[str, Any]], base: int) -> None:
        ordered = sorted(rows, key=lambda r: -r["offset"])  # parents first: a parent's offset is higher
        conn.executemany(
            f"INSERT INTO memory_nodes (id, archive_id, parent_id, path, depth, {', '.join(_ROW_FIELDS)}) "
            f"VALUES (?, ?, ?, ?, ?, {', '.join('?' * len(_ROW_FIELDS))})",
            [(base + r["offset"], archive_id,
              None if r["parent_offset"] is None else base + r["parent_offset"],
              "".join(f"{base + o}/" for o in r["path_offsets"]), r["depth"],
              *(r.get(name) for name in _ROW_FIELDS)) for r in ordered])
        if self.db.dialect == "postgres":  # SQLite's trigger indexes the text (migrations 4, 7)
            model_id = conn.execute("SELECT model_id FROM archives WHERE id = ?", (archive_id,)).fetchone()[0]
            self._fulltext.write_node_text(conn.raw, [
                (base + r["offset"], model_id, indexed_text(r["node_type"], r.get("title"), r["summary"], r["content"]))
                for r in ordered])

    # --- archives -------------------------------------------------------------------------
    def create_archive(self, model_id: str, name: str, source: str | None, settings: dict[str, Any],
                       library: dict[str, Any] | None = None, cite_as: str | None = None) -> int:
        held = None
        try:
            with self.db.transaction() as conn:
                archive_id = int(conn.execute(
                    "INSERT INTO archives (model_id, name, source, status, builder_pid, builder_host, settings, "
                    "library, cite_as, created_at, updated_at) VALUES (?, ?, ?, 'building', ?, ?, ?, ?, ?, ?, ?) "
                    "RETURNING id",
                    (model_id, name, source, os.getpid(), socket.gethostname(), json.dumps(settings),
                     json.dumps(library, ensure_ascii=False) if library else None, cite_as, _now(), _now())
                ).fetchone()[0])
                # Marked alive before the row commits: `forest doctor` run in between (from any
                # process) took the build for a dead one and deleted it under the builder.
                held = self.db.hold(building(archive_id))
        except BaseException:
            if held is not None:
                held.release()
            raise
        self._building[archive_id] = held
        return archive_id

    def _built(self, archive_id: int) -> None:
        held = self._building.pop(archive_id, None)
        if held is not None:
            held.release()

    def set_status(self, archive_id: int, status: str, error: str | None = None) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE archives SET status = ?, error = ?, updated_at = ? WHERE id = ?",
                         (status, error, _now(), archive_id))
        if status != "building":
            self._built(archive_id)

    def delete_archive_rows(self, archive_id: int) -> None:
        """The archive, its nodes and their text, gone from the file (Database.finish_erasures)."""
        with self.db.transaction() as conn:
            # Children first is not needed: ON DELETE CASCADE from archives removes every node.
            conn.execute("DELETE FROM archives WHERE id = ?", (archive_id,))
            mark_erased(conn, "node_text")
        self._built(archive_id)
        self.db.finish_erasures()

    def archive(self, model_id: str, archive_id: int) -> Archive:
        row = self.db.query_one(_ONE_ARCHIVE, (archive_id, archive_id, model_id)) if in_id_range(archive_id) else None
        if row is None:
            raise NotFound(f"archive {archive_id} not found for model_id {model_id!r}")
        return Archive.from_row(row)

    def set_library(self, model_id: str, archive_id: int, library: dict[str, Any], cite_as: str | None) -> None:
        """Replace what the library knows of an archive's paper (a second import found it changed)."""
        with self.db.transaction() as conn:
            conn.execute("UPDATE archives SET library = ?, cite_as = ?, updated_at = ? WHERE id = ? AND model_id = ?",
                         (json.dumps(library, ensure_ascii=False), cite_as, _now(), archive_id, model_id))

    def archive_ids(self, model_id: str) -> list[int]:
        """The model_id's ready archives by id alone: no node statistics (a page polling for news)."""
        return [r[0] for r in self.db.query("SELECT id FROM archives WHERE model_id = ? AND status = 'ready' "
                                            "ORDER BY id", (model_id,))]

    def archives(self, model_id: str) -> list[Archive]:
        rows = self.db.query(_MODEL_ARCHIVES, (model_id, model_id))
        return [Archive.from_row(r) for r in rows]

    def all_archives(self) -> list[dict[str, Any]]:
        """Every archive of every model_id and status (for doctor)."""
        return [dict(r) for r in self.db.query(
            "SELECT id, model_id, name, status, builder_pid, builder_host, updated_at FROM archives ORDER BY id")]

    def kept_files(self) -> set[str]:
        """The kept source files (forest.storage.source_files) that archives of any model_id and status name.
        Entries that are not objects (an archive imported before imports were checked) name none."""
        kept = set()
        for (settings,) in self.db.query_tuples("SELECT settings FROM archives"):
            kept |= {d["file"] for d in _documents(settings) if isinstance(d, dict) and isinstance(d.get("file"), str)}
        return kept

    def model_ids(self) -> list[str]:
        return [r[0] for r in self.db.query(
            "SELECT DISTINCT model_id FROM archives WHERE status = 'ready' ORDER BY model_id")]

    def has_unfinished(self, model_id: str) -> bool:
        return self.db.query_one("SELECT 1 FROM archives WHERE model_id = ? AND status != 'ready' LIMIT 1",
                                 (model_id,)) is not None

    # --- nodes ----------------------------------------------------------------------------
    def allocate_and_insert(self, archive_id: int, rows: Sequence[dict[str, Any]],
                            merges: Sequence[dict[str, Any]] = ()) -> int:
        """Insert nodes whose ids are offsets (0..len-1) from a base allocated here; returns the base.

        Rows may refer to each other through 'parent_offset'; paths are built from offsets too, so
        the whole tree lands in one transaction with its final ids.
        """
        with self.db.transaction() as conn:
            base = self.db.reserve_ids(conn, "memory_nodes", len(rows))
            self._insert_rows(conn, archive_id, rows, base)
            _insert_merges(conn, archive_id, merges, base)
            return base

    def reserve_ids(self, count: int) -> int:
        """Reserve `count` node ids (base .. base+count-1) that no other writer will get, so vectors
        can be stored under them before their rows exist (invisible until then)."""
        with self.db.transaction() as conn:
            return self.db.reserve_ids(conn, "memory_nodes", count)

    def graft(self, archive_id: int, rows: Sequence[dict[str, Any]], base: int,
              adoptions: Sequence[tuple[int, int, str]], renumber: Sequence[tuple[int, int, int]] = (),
              expect: dict[int, tuple[int, frozenset[int]]] | None = None,
              merges: Sequence[dict[str, Any]] = (), settings: dict[str, Any] | None = None,
              name: str | None = None) -> None:
        """In one transaction: insert `rows` (ids reserved from `base`), then hang each existing
        root under a new parent: (root id, new parent id, new parent path). The root's whole
        subtree gets the parent's path in front of its paths and its depths shifted.

        `renumber` (archive id, leaf shift, merge shift) moves another archive's nodes into this one
        first, after this archive's leaves and merges (archive joining).

        `expect` {archive id: (leaf count, root ids)} is what the caller planned on; if another
        process changed an archive since (an append of its own), nothing is written.

        `settings` and `name`, given, replace the archive's in the same transaction: the documents
        it records always match its leaves, even if the process dies right after.
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
                conn.execute("UPDATE archive_merges SET archive_id = ?, first_leaf = first_leaf + ?, "
                             "split_leaf = split_leaf + ?, last_leaf = last_leaf + ?, "
                             "merge_order = merge_order + ? WHERE archive_id = ?",
                             (archive_id, shift, shift, shift, merge_shift, other))
                conn.execute("DELETE FROM archives WHERE id = ?", (other,))
            self._insert_rows(conn, archive_id, rows, base)
            _insert_merges(conn, archive_id, merges, base)
            for root_id, parent_id, parent_path in adoptions:
                root_path = f"{root_id}/"
                conn.execute(
                    "UPDATE memory_nodes SET path = ? || path, depth = depth + ? "
                    "WHERE archive_id = ? AND substr(path, 1, ?) = ?",
                    (parent_path, parent_path.count("/"), archive_id, len(root_path), root_path))
                conn.execute("UPDATE memory_nodes SET parent_id = ? WHERE id = ?", (parent_id, root_id))
            conn.execute("UPDATE archives SET updated_at = ?, settings = coalesce(?, settings), "
                         "name = coalesce(?, name) WHERE id = ?",
                         (_now(), None if settings is None else json.dumps(settings), name, archive_id))

    def replace_tree(self, archive_id: int, rows: Sequence[dict[str, Any]], base: int,
                     leaf_parents: Sequence[tuple[int, int | None]], merges: Sequence[dict[str, Any]],
                     expect_nodes: frozenset[int]) -> list[int]:
        """In one transaction: drop the archive's summary nodes and merge history, insert `rows`
        (new summary nodes, ids reserved from `base`) and hang each leaf under its new parent:
        (leaf id, parent offset or None). Leaves keep their ids, text and vectors. If the archive's
        nodes are no longer `expect_nodes` (another process changed it), nothing is written.
        Returns the ids of the summary nodes removed (their vectors are the caller's to delete)."""
        with self.db.transaction() as conn:
            now = frozenset(r[0] for r in conn.execute("SELECT id FROM memory_nodes WHERE archive_id = ?",
                                                       (archive_id,)))
            if now != expect_nodes:
                raise ForestError(f"archive {archive_id} changed while its tree was being re-planned "
                                  "(another process writing to it?); nothing was changed, try again")
            old = [r[0] for r in conn.execute(
                "SELECT id FROM memory_nodes WHERE archive_id = ? AND node_type = 'SUMMARY_NODE'", (archive_id,))]
            conn.execute("UPDATE memory_nodes SET parent_id = NULL WHERE archive_id = ?", (archive_id,))
            conn.execute("DELETE FROM memory_nodes WHERE archive_id = ? AND node_type = 'SUMMARY_NODE'", (archive_id,))
            conn.execute("DELETE FROM archive_merges WHERE archive_id = ?", (archive_id,))
            self._insert_rows(conn, archive_id, rows, base)
            _insert_merges(conn, archive_id, merges, base)
            path_of = {r["offset"]: "".join(f"{base + o}/" for o in r["path_offsets"]) for r in rows}
            conn.executemany(
                "UPDATE memory_nodes SET parent_id = ?, path = ?, depth = ? WHERE id = ?",
                ((None if parent is None else base + parent,
                  (path_of[parent] if parent is not None else "") + f"{leaf_id}/",
                  0 if parent is None else path_of[parent].count("/"), leaf_id)
                 for leaf_id, parent in leaf_parents))
            conn.execute("UPDATE archives SET updated_at = ? WHERE id = ?", (_now(), archive_id))
            return old

    def last_merge_order(self, archive_id: int) -> int:
        row = self.db.query_one("SELECT MAX(merge_order) FROM archive_merges WHERE archive_id = ?", (archive_id,))
        return int(row[0] or 0)

    def node(self, model_id: str, node_id: int) -> MemoryNode:
        row = self.db.query_one(f"SELECT {_NODE_SELECT} FROM memory_nodes n {VISIBLE_NODES} WHERE n.id = ?",
                                (model_id, node_id)) if in_id_range(node_id) else None
        if row is None:
            raise NotFound(f"node {node_id} not found for model_id {model_id!r}")
        return MemoryNode.from_row(row)

    def nodes(self, model_id: str, node_ids: Iterable[int]) -> dict[int, MemoryNode]:
        ids = [i for i in dict.fromkeys(int(i) for i in node_ids) if in_id_range(i)]
        found: dict[int, MemoryNode] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            # CROSS JOIN keeps memory_nodes outside: looked up by id, not scanned through the
            # model_id's archives (the planner's choice otherwise, far slower at 100k nodes).
            rows = self.db.query(
                f"SELECT {_NODE_SELECT} FROM memory_nodes n {self._visible_by_id} "
                f"WHERE n.id IN ({','.join('?' * len(chunk))})", (model_id, *chunk))
            found.update((r["id"], MemoryNode.from_row(r)) for r in rows)
        return found

    def children(self, model_id: str, node_id: int) -> list[MemoryNode]:
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {VISIBLE_NODES} WHERE n.parent_id = ? "
            "ORDER BY n.first_leaf, n.id",
            (model_id, node_id))
        return [MemoryNode.from_row(r) for r in rows]

    def node_by_path(self, model_id: str, archive_id: int, path: str) -> MemoryNode | None:
        row = self.db.query_one(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {VISIBLE_NODES} WHERE n.archive_id = ? AND n.path = ?",
            (model_id, archive_id, path))
        return MemoryNode.from_row(row) if row else None

    def text_search(self, model_id: str, phrases: Sequence[str], limit: int,
                    archive_ids: Collection[int] | None = None) -> list[tuple[MemoryNode, float]]:
        """The model_id's `limit` best FTS5 hits for `phrases` (forest.storage.fulltext.fts5.query_phrases,
        OR-ed) with their BM25 score (-bm25(node_text), higher better), best first, ties by node id;
        only the hits in `archive_ids`, if given.

        The same hits as ranking every match with FTS5 (ORDER BY bm25), without scoring every row
        that holds a common word when the rare words decide the answer (see fulltext.fts5.top_hits).
        """
        if isinstance(phrases, str):
            raise TypeError("text_search takes phrases (forest.storage.fulltext.fts5.query_phrases), "
                            "not a MATCH string")
        phrases = list(dict.fromkeys(phrases))
        if not phrases or limit < 1:
            return []
        with self.db.snapshot() as conn:  # one snapshot for the statements below
            ranked = self._fulltext.top_hits(getattr(conn, "raw", conn), model_id, phrases, limit, archive_ids)
            nodes = self.nodes(model_id, (node_id for node_id, _ in ranked))
        return [(nodes[node_id], score) for node_id, score in ranked if node_id in nodes]

    def leaves_between(self, model_id: str, archive_id: int, first_leaf: int, last_leaf: int) -> list[MemoryNode]:
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {VISIBLE_NODES} WHERE n.archive_id = ? "
            "AND n.node_type = 'LEAF_CHUNK' AND n.leaf_index BETWEEN ? AND ? ORDER BY n.leaf_index",
            (model_id, archive_id, first_leaf, last_leaf))
        return [MemoryNode.from_row(r) for r in rows]

    def with_text(self, model_id: str, node: MemoryNode) -> MemoryNode:
        """A summary node with its content read in: its leaves' text joined (the spec's summary-node
        content), derived here rather than stored again in every ancestor."""
        if node.is_leaf:
            return node
        leaves = self.leaves_between(model_id, node.archive_id, node.first_leaf, node.last_leaf)
        return replace(node, content=SEPARATOR.join(leaf.content for leaf in leaves))

    def archive_nodes(self, model_id: str, archive_id: int) -> list[MemoryNode]:
        self.archive(model_id, archive_id)  # NotFound for other model_ids and unfinished builds
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {VISIBLE_NODES} WHERE n.archive_id = ? "
            "ORDER BY n.depth, n.first_leaf, n.id", (model_id, archive_id))
        return [MemoryNode.from_row(r) for r in rows]

    def merge_history(self, model_id: str, archive_id: int) -> list[MergeStep]:
        """Every binary merge that built the archive, in merge order (the Forest page's replay)."""
        self.archive(model_id, archive_id)
        return [MergeStep(*r) for r in self.db.query(
            "SELECT merge_order, first_leaf, split_leaf, last_leaf, similarity, node_id FROM archive_merges "
            "WHERE archive_id = ? ORDER BY merge_order", (archive_id,))]

    def archive_node_ids(self, archive_id: int) -> list[int]:
        return [r[0] for r in self.db.query("SELECT id FROM memory_nodes WHERE archive_id = ?", (archive_id,))]

    # --- upkeep: what doctor and reembed read and mend ------------------------------------
    def archive_model_id(self, archive_id: int) -> str | None:
        """The model_id of an archive of any status, or None."""
        row = self.db.query_one("SELECT model_id FROM archives WHERE id = ?", (archive_id,))
        return row["model_id"] if row else None

    def node_owners(self) -> list[tuple[int, str, str]]:
        """(node id, model_id, archive status) of every node of every archive."""
        return [(r[0], r[1], r[2]) for r in self.db.query_tuples(
            "SELECT n.id, a.model_id, a.status FROM memory_nodes n JOIN archives a ON a.id = n.archive_id")]

    def node_links(self) -> dict[int, dict[str, Any]]:
        """Every node's archive_id, parent_id, path and depth, by id."""
        return {r["id"]: dict(r) for r in self.db.query(
            "SELECT id, archive_id, parent_id, path, depth FROM memory_nodes")}

    def relink(self, plan: Callable[[dict[int, dict[str, Any]]], list[tuple[int | None, str, int, int]]]) -> None:
        """Rewrite parents, paths and depths in one transaction: `plan` reads every node's
        archive_id and parent_id and returns (parent_id, path, depth, node id) rows."""
        with self.db.transaction() as conn:
            nodes = {r["id"]: dict(r) for r in conn.execute("SELECT id, archive_id, parent_id FROM memory_nodes")}
            conn.executemany("UPDATE memory_nodes SET parent_id = ?, path = ?, depth = ? WHERE id = ?", plan(nodes))

    def ready_settings(self) -> list[tuple[int, str | None, int]]:
        """(archive id, its settings as stored, its number of leaves) of every ready archive."""
        return [(r[0], r[1], r[2]) for r in self.db.query_tuples(
            "SELECT a.id, a.settings, (SELECT COUNT(*) FROM memory_nodes n WHERE n.archive_id = a.id "
            "AND n.node_type = 'LEAF_CHUNK') FROM archives a WHERE a.status = 'ready'")]

    def set_settings(self, settings: dict[int, dict[str, Any]]) -> None:
        """Replace archives' settings (archive id -> settings), in one transaction."""
        with self.db.transaction() as conn:
            conn.executemany("UPDATE archives SET settings = ? WHERE id = ?",
                             [(json.dumps(value), archive_id) for archive_id, value in settings.items()])

    def archive_documents(self, archive_id: int) -> list:
        """The document entries an archive records (leaves.stored_leaf_context reads them)."""
        row = self.db.query_one("SELECT settings FROM archives WHERE id = ?", (archive_id,))
        return _documents(row["settings"]) if row else []

    def node_ids_of(self, model_id: str) -> list[int]:
        """Every node of the model_id's archives, of any status, in id order."""
        return [r[0] for r in self.db.query_tuples(
            "SELECT n.id FROM memory_nodes n JOIN archives a ON a.id = n.archive_id WHERE a.model_id = ? "
            "ORDER BY n.id", (model_id,))]

    def embedding_rows(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """What a node's vector is made from (forest.tree.leaves.embedding_text), for the ids given."""
        return [dict(r) for r in self.db.query(
            "SELECT id, archive_id, node_type, depth, content, summary, title, leaf_index, heading_path "
            f"FROM memory_nodes WHERE id IN ({','.join('?' * len(ids))})", list(ids))] if ids else []

