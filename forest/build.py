"""Turns one document into one archive: chunk -> summarize -> embed -> merge -> store.

Nothing is visible until the end: the archive row says 'building' while work goes on, the nodes
land in one transaction, the vectors follow, and only then does the archive become 'ready'.
Any failure (or Ctrl-C) removes what was written; a killed process leaves a 'building' row that
`forest doctor --repair` cleans up.
"""
from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from forest.chunking import Chunk
from forest.embedders import Embedder
from forest.paths import positions_from_parents
from forest.records import LEAF, SUMMARY
from forest.store import ForestStore
from forest.summarizers import Summarizer
from forest.tree_builder import SEPARATOR, Merge, layout, plan_merges
from forest.vectors import VectorStore

log = logging.getLogger("forest.build")


@dataclass(frozen=True)
class Progress:
    stage: str   # chunk | summarize | embed | merge | store
    done: int
    total: int
    detail: str = ""


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class BuildParams:
    merge_threshold: float
    max_node_chars: int
    embed_batch_size: int


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
            self._build(archive_id, model_id, chunks, params, progress, written_ids)

    def _build(self, archive_id, model_id, chunks, params, progress, written_ids) -> None:
        n = len(chunks)
        leaf_summaries = []
        for i, chunk in enumerate(chunks):
            leaf_summaries.append(self.summarizer.summarize_leaf(chunk.text))
            progress(Progress("summarize", i + 1, n, "leaf summaries"))

        # Leaves are embedded from their full text (passages), not their 200-character summary:
        # the summary is lossy and the leaf is what a question's evidence lives in.
        leaf_vectors = self.embedder.embed_passages(
            [c.text for c in chunks], params.embed_batch_size,
            lambda done, total: progress(Progress("embed", done, total, "leaves")))

        progress(Progress("merge", 0, max(n - 1, 1), "planning merges"))
        merges = plan_merges(leaf_vectors, [len(c.text) for c in chunks], params.merge_threshold,
                             params.max_node_chars, self.embedder.calibrate)
        progress(Progress("merge", len(merges), max(n - 1, 1), f"{len(merges)} merges"))

        texts = [c.text for c in chunks] + [""] * len(merges)
        summaries = leaf_summaries + [None] * len(merges)
        for k, merge in enumerate(merges):
            texts[merge.parent] = texts[merge.left] + SEPARATOR + texts[merge.right]
            summaries[merge.parent] = self.summarizer.summarize_parent(
                [summaries[merge.left].text, summaries[merge.right].text])
            progress(Progress("summarize", k + 1, len(merges), "parent summaries"))
        parent_vectors = self.embedder.embed_passages(
            [summaries[m.parent].text or texts[m.parent][:1000] for m in merges], params.embed_batch_size,
            lambda done, total: progress(Progress("embed", done, total, "summary nodes")))

        rows = _node_rows(chunks, merges, texts, summaries)
        progress(Progress("store", 0, len(rows), "writing nodes"))
        vectors = np.vstack([leaf_vectors, parent_vectors]) if merges else leaf_vectors
        write_archive(self.store, self.vectors, archive_id, model_id, rows, vectors, written_ids)
        progress(Progress("store", len(rows), len(rows), "ready"))


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
    metadatas = [{"model_id": model_id, "archive_id": archive_id, "node_type": r["node_type"],
                  "depth": r["depth"]} for r in rows]
    vectors.upsert(model_id, ids, node_vectors, metadatas)
    store.set_status(archive_id, "ready")


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


def _node_rows(chunks: list[Chunk], merges: list[Merge], texts: list[str], summaries: list) -> list[dict]:
    n = len(chunks)
    shape = layout(n, merges)
    rows = []
    for i in range(len(texts)):
        merge = merges[i - n] if i >= n else None
        rows.append({
            "offset": i, "parent_offset": shape.parent[i], "node_type": LEAF if merge is None else SUMMARY,
            "content": texts[i], "summary": summaries[i].text, "summary_source": summaries[i].source,
            "leaf_index": i if merge is None else None,
            "char_start": chunks[i].char_start if merge is None else None,
            "first_leaf": shape.first_leaf[i], "last_leaf": shape.last_leaf[i],
            "merge_order": None if merge is None else i - n + 1,
            "merge_similarity": None if merge is None else round(merge.similarity, 6),
        })
    return rows
