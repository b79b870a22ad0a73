"""SQL over archives and memory_nodes. Every read that takes a model_id filters by it and sees
only archives whose build completed (status 'ready')."""
from __future__ import annotations

import json
import math
import os
import socket
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any

from forest.storage.db import Database, mark_erased
from forest.errors import ForestError, NotFound
from forest.storage.fulltext import phrase_match
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


def _insert_merges(conn, archive_id: int, merges: Sequence[dict[str, Any]], base: int) -> None:
    """Merge history rows; 'node_offset' names the summary node a merge made (None if condensed)."""
    conn.executemany(
        "INSERT INTO archive_merges (archive_id, merge_order, first_leaf, split_leaf, last_leaf, similarity, node_id) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        ((archive_id, m["merge_order"], m["first_leaf"], m["split_leaf"], m["last_leaf"], m["similarity"],
          None if m["node_offset"] is None else base + m["node_offset"]) for m in merges))


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
        """The archive, its nodes and their text, gone from the file (Database.finish_erasures)."""
        with self.db.transaction() as conn:
            # Children first is not needed: ON DELETE CASCADE from archives removes every node.
            conn.execute("DELETE FROM archives WHERE id = ?", (archive_id,))
            mark_erased(conn, "node_text")
        self.db.finish_erasures()

    def archive(self, model_id: str, archive_id: int) -> Archive:
        row = self.db.query_one(_ONE_ARCHIVE, (archive_id, archive_id, model_id)) if in_id_range(archive_id) else None
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

    def kept_files(self) -> set[str]:
        """The kept source files (forest.storage.source_files) that archives of any model_id and status name.
        Entries that are not objects (an archive imported before imports were checked) name none."""
        return {r[0] for r in self.db.query(
            "SELECT DISTINCT json_extract(d.value, '$.file') FROM archives, json_each(archives.settings, '$.documents') d "
            "WHERE json_valid(archives.settings) AND json_type(archives.settings, '$.documents') = 'array' "
            "AND d.type = 'object' AND json_extract(d.value, '$.file') IS NOT NULL")}

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
            base = _reserve(conn, len(rows))
            _insert_rows(conn, archive_id, rows, base)
            _insert_merges(conn, archive_id, merges, base)
            return base

    def reserve_ids(self, count: int) -> int:
        """Reserve `count` node ids (base .. base+count-1) that no other writer will get, so vectors
        can be stored under them before their rows exist (invisible until then)."""
        with self.db.transaction() as conn:
            return _reserve(conn, count)

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
            _insert_rows(conn, archive_id, rows, base)
            _insert_merges(conn, archive_id, merges, base)
            for root_id, parent_id, parent_path in adoptions:
                root_path = f"{root_id}/"
                conn.execute(
                    "UPDATE memory_nodes SET path = ? || path, depth = depth + ? "
                    "WHERE archive_id = ? AND substr(path, 1, ?) = ?",
                    (parent_path, parent_path.count("/"), archive_id, len(root_path), root_path))
                conn.execute("UPDATE memory_nodes SET parent_id = ? WHERE id = ?", (parent_id, root_id))
            conn.execute("UPDATE archives SET updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), "
                         "settings = coalesce(?, settings), name = coalesce(?, name) WHERE id = ?",
                         (None if settings is None else json.dumps(settings), name, archive_id))

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
            _insert_rows(conn, archive_id, rows, base)
            _insert_merges(conn, archive_id, merges, base)
            path_of = {r["offset"]: "".join(f"{base + o}/" for o in r["path_offsets"]) for r in rows}
            conn.executemany(
                "UPDATE memory_nodes SET parent_id = ?, path = ?, depth = ? WHERE id = ?",
                ((None if parent is None else base + parent,
                  (path_of[parent] if parent is not None else "") + f"{leaf_id}/",
                  0 if parent is None else path_of[parent].count("/"), leaf_id)
                 for leaf_id, parent in leaf_parents))
            conn.execute("UPDATE archives SET updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = ?",
                         (archive_id,))
            return old

    def last_merge_order(self, archive_id: int) -> int:
        row = self.db.query_one("SELECT MAX(merge_order) FROM archive_merges WHERE archive_id = ?", (archive_id,))
        return int(row[0] or 0)

    def node(self, model_id: str, node_id: int) -> MemoryNode:
        row = self.db.query_one(f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.id = ?",
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
                f"SELECT {_NODE_SELECT} FROM memory_nodes n CROSS {_VISIBLE} "
                f"WHERE n.id IN ({','.join('?' * len(chunk))})", (model_id, *chunk))
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

    def text_search(self, model_id: str, phrases: Sequence[str], limit: int,
                    archive_ids: Collection[int] | None = None) -> list[tuple[MemoryNode, float]]:
        """The model_id's `limit` best FTS5 hits for `phrases` (forest.storage.fulltext.query_phrases, OR-ed)
        with their BM25 score (-bm25(node_text), higher better), best first, ties by node id;
        only the hits in `archive_ids`, if given.

        The same hits as ranking every match with FTS5 (ORDER BY bm25), without scoring every row
        that holds a common word when the rare words decide the answer (see _rank_text).
        """
        if isinstance(phrases, str):
            raise TypeError("text_search takes phrases (forest.storage.fulltext.query_phrases), not a MATCH string")
        phrases = list(dict.fromkeys(phrases))
        if not phrases or limit < 1:
            return []
        conn = self.db.connection()
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")  # one snapshot for the statements below
        try:
            if archive_ids is None:
                ranked = _rank_text(conn, model_id, phrases, limit)
            else:
                ranked = _rank_in_archives(conn, model_id, phrases, limit, archive_ids)
            nodes = self.nodes(model_id, (node_id for node_id, _ in ranked))
        finally:
            if own:
                conn.execute("COMMIT")
        return [(nodes[node_id], score) for node_id, score in ranked if node_id in nodes]

    def leaves_between(self, model_id: str, archive_id: int, first_leaf: int, last_leaf: int) -> list[MemoryNode]:
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.archive_id = ? "
            "AND n.node_type = 'LEAF_CHUNK' AND n.leaf_index BETWEEN ? AND ? ORDER BY n.leaf_index",
            (model_id, archive_id, first_leaf, last_leaf))
        return [MemoryNode.from_row(r) for r in rows]

    def with_text(self, model_id: str, node: MemoryNode) -> MemoryNode:
        """A summary node with its content read in: its leaves' text joined (seed 000 §2.1),
        derived here rather than stored again in every ancestor."""
        if node.is_leaf:
            return node
        leaves = self.leaves_between(model_id, node.archive_id, node.first_leaf, node.last_leaf)
        return replace(node, content=SEPARATOR.join(leaf.content for leaf in leaves))

    def archive_nodes(self, model_id: str, archive_id: int) -> list[MemoryNode]:
        self.archive(model_id, archive_id)  # NotFound for other model_ids and unfinished builds
        rows = self.db.query(
            f"SELECT {_NODE_SELECT} FROM memory_nodes n {_VISIBLE} WHERE n.archive_id = ? "
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


# --- BM25 top hits ---------------------------------------------------------------------------
# FTS5's bm25() (fts5_aux.c) sums over the query's phrases
#     idf * f * (k1 + 1) / (f + k1 * (1 - b + b * D / avgdl)),   k1 = 1.2, b = 0.75,
# f the phrase's count in the row, D the row's length, idf = log((N - n + 0.5) / (n + 0.5)) over
# the N rows of node_text of which n hold the phrase, or 1e-6 when that is not positive (n >= N/2).
# So a phrase adds less than idf * (k1 + 1) to any row, and almost nothing if it is common.
BM25_K1 = 1.2
# The pruned ranking scores the rows of the rarest phrases, at most RARE_ROWS of them (in the
# whole store): it costs about three times as much a row as ranking everything (it reads every
# rare row's score), so it pays only when the common phrases match many more rows.
RARE_ROWS = 2_000
# Id ranges of a model_id's archives closer than this are ranked in one statement (each statement
# pays FTS5's idf count over the whole table); at most MAX_SPANS statements.
SPAN_GAP = 5_000
MAX_SPANS = 8
# Ranking every match reads this many times the hits wanted before it checks which are visible.
LIMIT_DEPTH = 4
_VISIBLE_TEXT = f"FROM node_text JOIN memory_nodes n ON n.id = node_text.rowid {_VISIBLE} WHERE node_text MATCH ?"


def _rank_text(conn, model_id: str, phrases: list[str], limit: int) -> list[tuple[int, float]]:
    """(node id, -bm25) of the model_id's `limit` best visible matches of the OR of `phrases`.

    Ranking every match is O(matches): slow for words in every row of a large forest. When
    the rarest phrases (together in at most RARE_ROWS rows) give `limit` visible rows scoring at
    least the most the other, common phrases can add up to, no row holding only common phrases
    can enter the answer (MaxScore, Turtle & Flood 1995). The rare rows' exact scores come from
    FTS5 itself: "(common) AND (rare)" for the rows holding both (the same phrases, so the same
    idf, and the same sum), "rare" alone for the others (an absent phrase adds 0). Otherwise
    every match is ranked, within the id ranges of the model_id's archives when it holds under
    half the index, so another model_id's rows cost only FTS5's per-phrase counts.
    """
    rows = _fts_row_count(conn)
    if rows == 0:
        return []
    half = (rows + 1) // 2  # a phrase in at least half the rows gets the idf floor
    cap = min(RARE_ROWS + 1, half)
    hits = {p: _count(conn, p, cap) for p in phrases}  # exact below cap; at cap, a lower bound
    if sum(hits.values()) <= RARE_ROWS:
        return _rank_all(conn, model_id, phrases, limit, None)
    rare: set[str] = set()
    for phrase in sorted(phrases, key=lambda p: hits[p]):
        if sum(hits[p] for p in rare) + hits[phrase] > RARE_ROWS:
            break
        rare.add(phrase)
    if any(hits[p] for p in rare):
        common = [p for p in phrases if p not in rare]
        ranked = _rank_rare(conn, model_id, [p for p in phrases if p in rare], common)
        if len(ranked) >= limit and _common_below(conn, rows, half, cap, common, hits, ranked[limit - 1][1]):
            return ranked[:limit]
    return _rank_all(conn, model_id, phrases, limit, _id_spans(conn, model_id, half))


def _rank_in_archives(conn, model_id: str, phrases: list[str], limit: int,
                      archive_ids: Collection[int]) -> list[tuple[int, float]]:
    """(node id, -bm25) of the best visible matches within the archives: every match of theirs
    ranked (a question over a few papers), the idf still that of the whole index, as elsewhere."""
    archive_ids = sorted({int(a) for a in archive_ids})
    if not archive_ids:
        return []
    marks = ",".join("?" * len(archive_ids))
    return conn.execute(f"SELECT node_text.rowid, -bm25(node_text) {_VISIBLE_TEXT} AND n.archive_id IN ({marks}) "
                        "ORDER BY bm25(node_text), node_text.rowid LIMIT ?",
                        (model_id, phrase_match(phrases), *archive_ids, limit)).fetchall()


def _count(conn, phrase: str, cap: int) -> int:
    """Rows holding the phrase, counted up to `cap`."""
    return conn.execute("SELECT count(*) FROM (SELECT 1 FROM node_text WHERE node_text MATCH ? LIMIT ?)",
                        (phrase_match([phrase]), cap)).fetchone()[0]


def _fts_row_count(conn) -> int:
    """N of bm25(): the first varint of FTS5's averages record (node_text_data, id 1)."""
    row = conn.execute("SELECT block FROM node_text_data WHERE id = 1").fetchone()
    block = bytes(row[0]) if row and row[0] else b""
    value = 0
    for i, byte in enumerate(block[:9]):  # SQLite varint: 7 bits a byte, big-endian; a 9th byte gives 8
        if i == 8:
            return (value << 8) | byte
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value
    return value


def _max_contribution(rows: int, hits: int, half: int) -> float:
    """More than a phrase in `hits` rows (or more, if hits >= half) adds to any row's bm25."""
    idf = 1e-6 if hits >= half else math.log((rows - hits + 0.5) / (hits + 0.5))
    return (idf if idf > 0 else 1e-6) * (BM25_K1 + 1)


def _common_below(conn, rows: int, half: int, cap: int, common: list[str], hits: dict[str, int],
                  floor: float) -> bool:
    """Whether a row holding only common phrases scores less than `floor`. A count that reached
    `cap` is a lower bound; such a phrase is counted on just far enough for its idf to fit an
    equal share of the floor, and up to half the rows if that falls short."""
    floor /= 1 + 1e-9

    def bound() -> float:
        return sum(_max_contribution(rows, hits[p], half) for p in common)

    open_ = [p for p in common if cap <= hits[p] < half]
    if bound() < floor or not open_:
        return bound() < floor
    settled = sum(_max_contribution(rows, hits[p], half) for p in common if p not in open_)
    need = _rows_for(rows, half, (floor - settled) / len(open_))
    for phrase in open_:
        hits[phrase] = _count(conn, phrase, need)
    if bound() >= floor:
        for phrase in open_:
            if need <= hits[phrase] < half:
                hits[phrase] = _count(conn, phrase, half)
    return bound() < floor


def _rows_for(rows: int, half: int, share: float) -> int:
    """The fewest rows a phrase must be in for its _max_contribution to be below `share`
    (half if even the idf floor is not)."""
    if share <= 0:
        return half
    e = math.exp(share / (BM25_K1 + 1))
    need = max(1, min(half, math.ceil((rows + 0.5 - 0.5 * e) / (1 + e))))
    while need < half and _max_contribution(rows, need, half) >= share:
        need += 1
    return need


def _rank_rare(conn, model_id: str, rare: list[str], common: list[str]) -> list[tuple[int, float]]:
    """Every visible row holding a rare phrase with its exact score for rare + common, best first."""
    scores = dict(conn.execute(f"SELECT node_text.rowid, -bm25(node_text) {_VISIBLE_TEXT}",
                               (model_id, phrase_match(rare))).fetchall())
    both = f"({phrase_match(common)}) AND ({phrase_match(rare)})"
    for node_id, score in conn.execute("SELECT rowid, -bm25(node_text) FROM node_text WHERE node_text MATCH ?",
                                       (both,)):
        if node_id in scores:
            scores[node_id] = score
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


def _rank_all(conn, model_id: str, phrases: list[str], limit: int,
              spans: list[tuple[int, int]] | None) -> list[tuple[int, float]]:
    """FTS5's own ranking of every match (within the id spans if given), best first, ties by id.

    The ranking reads node_text alone (joining each match to its node and archive costs as much
    again), LIMIT_DEPTH x limit deep; the model_id's visible rows among those are its best if
    there are `limit` of them (or the ranking ran out). Otherwise the ranking joins.
    """
    if spans == []:  # the model_id has no visible archive
        return []
    match = phrase_match(phrases)
    between = "" if spans is None else "AND rowid BETWEEN ? AND ?"
    depth = limit * LIMIT_DEPTH
    ranked, complete = [], True
    for span in spans or [()]:
        rows = conn.execute(f"SELECT rowid, -bm25(node_text) FROM node_text WHERE node_text MATCH ? {between} "
                            "ORDER BY bm25(node_text), rowid LIMIT ?", (match, *span, depth)).fetchall()
        ranked += rows
        complete = complete and len(rows) < depth
    ranked.sort(key=lambda pair: (-pair[1], pair[0]))
    ranked = ranked[:depth]
    visible = _visible(conn, model_id, [node_id for node_id, _ in ranked])
    found = [(node_id, score) for node_id, score in ranked if node_id in visible]
    if len(found) >= limit or complete:
        return found[:limit]
    sql = (f"SELECT node_text.rowid, -bm25(node_text) {_VISIBLE_TEXT} {between.replace('rowid', 'node_text.rowid')} "
           "ORDER BY bm25(node_text), node_text.rowid LIMIT ?")
    ranked = [row for span in spans or [()] for row in conn.execute(sql, (model_id, match, *span, limit))]
    return sorted(ranked, key=lambda pair: (-pair[1], pair[0]))[:limit]


def _visible(conn, model_id: str, node_ids: list[int]) -> set[int]:
    found: set[int] = set()
    for start in range(0, len(node_ids), 500):
        chunk = node_ids[start : start + 500]
        found.update(r[0] for r in conn.execute(
            f"SELECT n.id FROM memory_nodes n CROSS {_VISIBLE} WHERE n.id IN ({','.join('?' * len(chunk))})",
            (model_id, *chunk)))
    return found


def _id_spans(conn, model_id: str, half: int) -> list[tuple[int, int]] | None:
    """Node id ranges covering the model_id's visible archives (merged across small gaps); None
    when the model_id holds at least `half` the index's rows (ranking all of it costs at most 2x)."""
    visible = "SELECT id FROM archives WHERE model_id = ? AND status = 'ready'"
    if conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM memory_nodes WHERE archive_id IN ({visible}) LIMIT ?)",
                    (model_id, half)).fetchone()[0] >= half:
        return None
    ranges = conn.execute(f"SELECT MIN(id), MAX(id) FROM memory_nodes WHERE archive_id IN ({visible}) "
                          "GROUP BY archive_id ORDER BY 1", (model_id,)).fetchall()
    spans: list[list[int]] = []
    for low, high in ranges:
        if spans and low <= spans[-1][1] + SPAN_GAP:
            spans[-1][1] = max(spans[-1][1], high)
        else:
            spans.append([low, high])
    while len(spans) > MAX_SPANS:  # merge across the smallest gap
        i = min(range(len(spans) - 1), key=lambda k: spans[k + 1][0] - spans[k][1])
        spans[i : i + 2] = [[spans[i][0], spans[i + 1][1]]]
    return [(low, high) for low, high in spans]
