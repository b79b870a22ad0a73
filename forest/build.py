"""Turns one document's chunks into one archive: summarize -> embed -> merge -> store.

`ArchiveBuilder.grow` is the shared core: it merges over a row of roots that may mix stored roots
(an append, forest.grow) and new leaves (every build).

Nothing is visible until the end: the archive row says 'building' while work goes on, the nodes
land in one transaction, the vectors follow, and only then does the archive become 'ready'.
Any failure (or Ctrl-C) removes what was written; a killed process leaves a 'building' row that
`forest doctor --repair` cleans up.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from forest.chunking import Chunk
from forest.embedders import Embedder
from forest.paths import positions_from_parents
from forest.records import LEAF, SUMMARY
from forest.store import ForestStore
from forest.summarizers import Summarizer, Summary
from forest.tree_builder import SEPARATOR, Merge, layout, plan_merges
from forest.vectors import VectorStore

log = logging.getLogger("forest.build")


@dataclass(frozen=True)
class Progress:
    stage: str   # parse | chunk | summarize | embed | merge | store
    done: int
    total: int
    detail: str = ""


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class BuildParams:
    merge_threshold: float
    max_node_chars: int
    embed_batch_size: int


@dataclass
class Root:
    """A subtree that can still be merged: a new leaf, or a root already stored in the archive."""

    vector_sum: np.ndarray        # sum of the unit leaf vectors under it (average linkage)
    leaves: int
    content: str
    summary: Summary
    first_leaf: int
    last_leaf: int
    place: dict                   # section, page_start, page_end (and chunk_kind for leaves)
    node_id: int | None = None    # set for a stored root
    char_start: int | None = None


@dataclass
class Growth:
    """Merges planned over a row of roots, with each new parent's content, summary and vector."""

    roots: list[Root]
    merges: list[Merge]
    parent_content: list[str]
    parent_summaries: list[Summary]
    parent_vectors: np.ndarray
    leaf_vectors: np.ndarray      # own vectors of the new leaves, in order
    first_merge_order: int = 1    # an append continues the archive's merge numbering

    def rows(self) -> tuple[list[dict], list[tuple[int, int]]]:
        """Rows for every new node (offset order: new leaves, then parents) and the adoptions
        (stored root id, offset of its new parent) that hang stored roots under new parents."""
        n = len(self.roots)
        shape = layout(n, self.merges, [(r.first_leaf, r.last_leaf) for r in self.roots])
        # Which items hold stored text, which new text: a parent over both has no page range.
        stored = [r.node_id is not None for r in self.roots]
        fresh = [r.node_id is None for r in self.roots]
        for m in self.merges:
            stored.append(stored[m.left] or stored[m.right])
            fresh.append(fresh[m.left] or fresh[m.right])
        offsets: dict[int, int] = {}
        for item in range(n + len(self.merges)):
            if item >= n or self.roots[item].node_id is None:
                offsets[item] = len(offsets)
        rows: dict[int, dict] = {}
        for item, offset in offsets.items():
            parent = shape.parent[item]
            common = {"offset": offset, "parent_offset": None if parent is None else offsets[parent],
                      "first_leaf": shape.first_leaf[item], "last_leaf": shape.last_leaf[item]}
            if item < n:
                root = self.roots[item]
                rows[item] = {**common, "node_type": LEAF, "content": root.content, "summary": root.summary.text,
                              "summary_source": root.summary.source, "leaf_index": root.first_leaf,
                              "char_start": root.char_start, **root.place}
            else:
                k = item - n
                merge = self.merges[k]
                rows[item] = {**common, "node_type": SUMMARY, "content": self.parent_content[k],
                              "summary": self.parent_summaries[k].text,
                              "summary_source": self.parent_summaries[k].source,
                              "merge_similarity": round(merge.similarity, 6),
                              "merge_order": self.first_merge_order + k,
                              **({"page_start": None, "page_end": None, "section": None}
                                 if stored[item] and fresh[item] else
                                 span_place(self._place(merge.left, rows), self._place(merge.right, rows)))}
        adoptions = [(self.roots[i].node_id, offsets[shape.parent[i]]) for i in range(n)
                     if self.roots[i].node_id is not None and shape.parent[i] is not None]
        return [rows[item] for item in sorted(offsets, key=offsets.get)], adoptions

    def _place(self, item: int, rows: dict[int, dict]) -> dict:
        return rows[item] if item in rows else self.roots[item].place

    @property
    def new_vectors(self) -> np.ndarray:
        """Vectors in row order: new leaves, then new parents."""
        parts = [v for v in (self.leaf_vectors, self.parent_vectors) if len(v)]
        return np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)


class ArchiveBuilder:
    def __init__(self, store: ForestStore, vectors: VectorStore, embedder: Embedder,
                 summarizer: Summarizer) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.summarizer = summarizer

    def build(self, archive_id: int, model_id: str, chunks: list[Chunk], params: BuildParams,
              progress: ProgressFn) -> None:
        """Fill the 'building' archive `archive_id`; on any failure remove everything written."""
        with all_or_nothing(self.store, self.vectors, archive_id, model_id) as written_ids:
            growth = self.grow([], chunks, 0, params, progress)
            rows, _ = growth.rows()
            progress(Progress("store", 0, len(rows), "writing nodes"))
            write_archive(self.store, self.vectors, archive_id, model_id, rows, growth.new_vectors, written_ids)
            progress(Progress("store", len(rows), len(rows), "ready"))

    def grow(self, stored_roots: list[Root], chunks: list[Chunk], first_leaf: int, params: BuildParams,
             progress: ProgressFn) -> Growth:
        """Summarize and embed the new chunks, then merge over [stored roots..., new leaves...]."""
        summaries = []
        for i, chunk in enumerate(chunks):
            summaries.append(self.summarizer.summarize_leaf(chunk.text))
            progress(Progress("summarize", i + 1, len(chunks), "leaf summaries"))
        # Leaves are embedded from their full text (passages), not their 200-character summary:
        # the summary is lossy and the leaf is what a question's evidence lives in.
        leaf_vectors = self.embedder.embed_passages(
            [c.text for c in chunks], params.embed_batch_size,
            lambda done, total: progress(Progress("embed", done, total, "leaves")))
        roots = stored_roots + [
            Root(vector, 1, chunk.text, summary, first_leaf + i, first_leaf + i, leaf_place(chunk),
                 char_start=chunk.char_start)
            for i, (chunk, summary, vector) in enumerate(zip(chunks, summaries, leaf_vectors))]

        n = len(roots)
        progress(Progress("merge", 0, max(n - 1, 1), "planning merges"))
        merges = plan_merges(np.array([r.vector_sum for r in roots]), [len(r.content) for r in roots],
                             params.merge_threshold, params.max_node_chars, self.embedder.calibrate,
                             [r.leaves for r in roots])
        progress(Progress("merge", len(merges), max(n - 1, 1), f"{len(merges)} merges"))

        contents = [r.content for r in roots] + [""] * len(merges)
        all_summaries = [r.summary for r in roots] + [None] * len(merges)
        for k, merge in enumerate(merges):
            contents[merge.parent] = contents[merge.left] + SEPARATOR + contents[merge.right]
            all_summaries[merge.parent] = self.summarizer.summarize_parent(
                [all_summaries[merge.left].text, all_summaries[merge.right].text])
            progress(Progress("summarize", k + 1, len(merges), "parent summaries"))
        parent_vectors = self.embedder.embed_passages(
            [embedding_text(SUMMARY, contents[m.parent], all_summaries[m.parent].text) for m in merges],
            params.embed_batch_size,
            lambda done, total: progress(Progress("embed", done, total, "summary nodes")))
        return Growth(roots, merges, contents[n:], all_summaries[n:], parent_vectors, leaf_vectors)


def write_archive(store: ForestStore, vectors: VectorStore, archive_id: int, model_id: str,
                  rows: list[dict], node_vectors: np.ndarray, written_ids: list[int]) -> None:
    """Nodes in one transaction, then their vectors (row order), then the archive becomes 'ready'.

    Row i has offset i and names its parent by offset; paths and depths are derived here.
    """
    paths, depths = positions_from_parents([r["parent_offset"] for r in rows])
    rows = [{**r, "path_offsets": path, "depth": depth} for r, path, depth in zip(rows, paths, depths)]
    base = store.allocate_and_insert(archive_id, rows)
    ids = [base + r["offset"] for r in rows]
    written_ids.extend(ids)
    vectors.upsert(model_id, ids, node_vectors,
                   [vector_metadata(model_id, archive_id, r["node_type"], r["depth"]) for r in rows])
    store.set_status(archive_id, "ready")


def embedding_text(node_type: str, content: str, summary: str) -> str:
    """What a node's vector is made from: a leaf's own text; a summary node's summary (its start,
    should the summary be empty)."""
    return content if node_type == LEAF else (summary or content[:1000])


def vector_metadata(model_id: str, archive_id: int, node_type: str, depth: int) -> dict:
    return {"model_id": model_id, "archive_id": archive_id, "node_type": node_type, "depth": depth}


@contextmanager
def all_or_nothing(store: ForestStore, vectors: VectorStore, archive_id: int, model_id: str) -> Iterator[list[int]]:
    """Yields the list of node ids written so far; on any failure removes them and the archive."""
    written_ids: list[int] = []
    try:
        yield written_ids
    except BaseException as cause:
        try:
            vectors.delete(model_id, written_ids or store.archive_node_ids(archive_id))
            store.delete_archive_rows(archive_id)
        except Exception as exc:  # leave a 'failed' row for `forest doctor --repair`
            log.error("could not remove the failed build of archive %s: %s", archive_id, exc)
            try:
                store.set_status(archive_id, "failed", f"{type(cause).__name__}: {cause}")
            except Exception:
                pass
        raise


def leaf_place(chunk: Chunk) -> dict:
    return {"section": chunk.section, "page_start": chunk.page_start, "page_end": chunk.page_end,
            "chunk_kind": chunk.kind}


def span_place(left: dict, right: dict) -> dict:
    """A summary node's place: the pages its leaves span, their section if they share one."""
    starts = [p for p in (left.get("page_start"), right.get("page_start")) if p is not None]
    ends = [p for p in (left.get("page_end"), right.get("page_end")) if p is not None]
    return {"page_start": min(starts) if starts else None, "page_end": max(ends) if ends else None,
            "section": left.get("section") if left.get("section") == right.get("section") else None}
