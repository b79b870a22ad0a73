"""Turns one document's chunks into one archive: summarize -> embed -> merge -> store.

`ArchiveBuilder.grow` is the shared core: it plans a tree (forest.tree.planner.plan_tree: the
seed's merging inside the outline, then condensed) over a row of units that may mix stored nodes
(an append or a rebuild, forest.tree.grow) and new leaves (every build), and summarizes and embeds the
summary nodes it keeps. A summary node stores no text of its own: its content is its leaves'.

Nothing is visible until the end: the archive row says 'building' while work goes on, the nodes
land in one transaction, the vectors follow, and only then does the archive become 'ready'.
Any failure (or Ctrl-C) removes what was written; a killed process leaves a 'building' row that
`forest doctor --repair` cleans up.
"""
from __future__ import annotations

import json
import logging
import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from forest.tree.chunking import Chunk
from forest.models.embedders import Embedder
from forest.storage.paths import positions_from_parents
from forest.records import LEAF, SUMMARY, Progress, ProgressFn, vector_metadata
from forest.storage.archives import ForestStore
from forest.models.extractive import TermStats, group_labels
from forest.tree.leaves import embed_text, embedding_text
from forest.tree.outline import HEADING_JOIN, DocumentOutline, document_lead
from forest.models.summarizers import NodeBrief, Summarizer, Summary
from forest.text import counted
from forest.tree.planner import Segment, TreePlan, outline_segment, placed_headings, plan_tree
from forest.storage.vectors.base import VectorStore

log = logging.getLogger("forest.tree.build")




@dataclass(frozen=True)
class BuildParams:
    merge_threshold: float
    max_node_chars: int
    embed_batch_size: int
    max_children: int = 10     # a summary node's children: more units than this get a level between


@dataclass
class Root:
    """A unit of merging: a new leaf, or a node already stored in the archive (a root on append;
    every leaf on rebuild)."""

    vector_sum: np.ndarray        # sum of the unit leaf vectors under it (average linkage)
    leaves: int
    content: str                  # a leaf's text; a stored summary node's title and summary
    summary: Summary
    first_leaf: int
    last_leaf: int
    place: dict                   # section, page_start, page_end (and chunk_kind for leaves)
    node_id: int | None = None    # set for a stored node
    char_start: int | None = None
    headings: tuple[str, ...] = ()


@dataclass
class Growth:
    """A tree planned over a row of units, with each kept node's summary, title and vector."""

    roots: list[Root]
    plan: TreePlan
    node_summaries: dict[int, Summary]   # kept item -> its summary and title
    node_vectors: np.ndarray             # kept items in plan.kept() order
    leaf_vectors: np.ndarray             # own vectors of the new leaves, in order
    first_merge_order: int = 1           # an append continues the archive's merge numbering

    def rows(self) -> tuple[list[dict], list[tuple[int, int]], list[dict]]:
        """Rows for every new node (offset order: new leaves, then kept nodes, children before
        parents), the adoptions (stored node id, offset of its new parent) and the merge history."""
        plan, units = self.plan, self.roots
        kept = plan.kept()
        parent_of = {child: parent for parent, children in plan.children.items() for child in children}
        offsets = {item: k for k, item in enumerate(
            [i for i, unit in enumerate(units) if unit.node_id is None] + kept)}
        merge_index = {m.parent: k for k, m in enumerate(plan.merges)}

        def leaf_range(item: int) -> tuple[int, int]:
            return units[plan.first_unit[item]].first_leaf, units[plan.last_unit[item]].last_leaf

        places: dict[int, dict] = {i: unit.place for i, unit in enumerate(units)}
        stored = {i: unit.node_id is not None for i, unit in enumerate(units)}
        fresh = {i: unit.node_id is None for i, unit in enumerate(units)}
        rows: list[dict] = []
        for item in sorted(offsets, key=offsets.get):
            parent = parent_of.get(item)
            first, last = leaf_range(item)
            common = {"offset": offsets[item], "parent_offset": None if parent is None else offsets[parent],
                      "first_leaf": first, "last_leaf": last}
            if item < len(units):
                unit = units[item]
                rows.append({**common, "node_type": LEAF, "content": unit.content, "summary": unit.summary.text,
                             "summary_source": unit.summary.source, "leaf_index": unit.first_leaf,
                             "char_start": unit.char_start, "heading_path": json.dumps(list(unit.headings)),
                             **unit.place})
                continue
            children = plan.children[item]
            stored[item] = any(stored[c] for c in children)
            fresh[item] = any(fresh[c] for c in children)
            title = plan.titles.get(item)
            places[item] = ({"page_start": None, "page_end": None, "section": None}
                            if stored[item] and fresh[item] else
                            span_place([places[c] for c in children],
                                       title[-1] if isinstance(title, tuple) else None))
            summary = self.node_summaries[item]
            merge = plan.merges[merge_index[item]]
            rows.append({**common, "node_type": SUMMARY, "content": "", "summary": summary.text,
                         "summary_source": summary.source, "title": summary.title,
                         "merge_similarity": round(merge.similarity, 6),
                         "merge_order": self.first_merge_order + merge_index[item], **places[item]})
        adoptions = [(unit.node_id, offsets[parent_of[i]]) for i, unit in enumerate(units)
                     if unit.node_id is not None and i in parent_of]
        merges = [{"merge_order": self.first_merge_order + k, "first_leaf": leaf_range(m.left)[0],
                   "split_leaf": leaf_range(m.right)[0], "last_leaf": leaf_range(m.right)[1],
                   "similarity": round(m.similarity, 6) if math.isfinite(m.similarity) else None,
                   "node_offset": offsets.get(m.parent)} for k, m in enumerate(plan.merges)]
        return rows, adoptions, merges

    @property
    def new_vectors(self) -> np.ndarray:
        """Vectors in row order: new leaves, then kept nodes."""
        parts = [v for v in (self.leaf_vectors, self.node_vectors) if len(v)]
        return np.vstack(parts) if parts else np.zeros((0, 0), dtype=np.float32)


@dataclass
class DocumentUnits:
    """One document of a growth: its outline and which units (indices into the row) it holds."""

    outline: DocumentOutline
    units: list[int]


class ArchiveBuilder:
    def __init__(self, store: ForestStore, vectors: VectorStore, embedder: Embedder,
                 summarizer: Summarizer) -> None:
        self.store = store
        self.vectors = vectors
        self.embedder = embedder
        self.summarizer = summarizer

    def plan_document(self, chunks: list[Chunk], outline: DocumentOutline, params: BuildParams,
                      progress: ProgressFn) -> Growth:
        """A new document's tree: its leaves summarized and embedded, merged, its summary nodes
        summarized and embedded. Nothing is stored, so no writer waits meanwhile."""
        leaves, leaf_vectors = self.new_leaves(chunks, outline, 0, params, progress)
        return self.grow(leaves, [DocumentUnits(outline, list(range(len(leaves))))], leaf_vectors, params, progress)

    def write(self, archive_id: int, model_id: str, growth: Growth, written_ids: list[int],
              progress: ProgressFn) -> None:
        """Store a planned document in the 'building' archive `archive_id` (hold the writer lock,
        inside all_or_nothing)."""
        rows, _, merges = growth.rows()
        progress(Progress("store", 0, len(rows), "writing nodes"))
        write_archive(self.store, self.vectors, archive_id, model_id, rows, growth.new_vectors, written_ids, merges)
        progress(Progress("store", len(rows), len(rows), "ready"))

    def new_leaves(self, chunks: list[Chunk], outline: DocumentOutline, first_leaf: int, params: BuildParams,
                   progress: ProgressFn) -> tuple[list[Root], np.ndarray]:
        """Summarize and embed new chunks: the leaves of a growth, with their own vectors."""
        summaries = []
        for i, chunk in enumerate(chunks):
            summaries.append(self.summarizer.summarize_leaf(chunk.text))
            progress(Progress("summarize", i + 1, len(chunks), "leaf summaries"))
        # Leaves are embedded from their full text (passages), not their 200-character summary:
        # the summary is lossy and the leaf is what a question's evidence lives in. The document
        # title and heading path go first, so a passage that never names its subject is found.
        vectors = self.embedder.embed_passages(
            [embed_text(c.text, outline.title, path) for c, path in zip(chunks, outline.heading_paths)],
            params.embed_batch_size,
            lambda done, total: progress(Progress("embed", done, total, "leaves")))
        leaves = [Root(vector, 1, chunk.text, summary, first_leaf + i, first_leaf + i, leaf_place(chunk),
                       char_start=chunk.char_start, headings=path)
                  for i, (chunk, summary, vector, path)
                  in enumerate(zip(chunks, summaries, vectors, outline.heading_paths))]
        return leaves, vectors

    def grow(self, units: list[Root], documents: list[DocumentUnits], leaf_vectors: np.ndarray,
             params: BuildParams, progress: ProgressFn) -> Growth:
        """Plan the tree over `units` (document order): each document merges inside its outline,
        then the documents' roots and the units no document holds (stored roots) merge freely."""
        in_documents = {u for document in documents for u in document.units}
        top = Segment(None, [i for i in range(len(units)) if i not in in_documents], False)
        leads: dict[int, str] = {}
        paths = [unit.headings for unit in units]
        for document in documents:
            segment = outline_segment(paths, document.units, document.outline.title,
                                      single_root=document.outline.has_headings)
            leads[id(segment)] = document_lead([units[i].content for i in document.units],
                                               [paths[i] for i in document.units])
            top.children.append(segment)
        top.children.sort(key=lambda c: units[_first_unit(c)].first_leaf)

        progress(Progress("merge", 0, max(len(units) - 1, 1), "planning merges"))
        plan = plan_tree(np.array([u.vector_sum for u in units]), [len(u.content) for u in units],
                         [u.leaves for u in units], top, params.merge_threshold, params.max_node_chars,
                         self.embedder.calibrate, params.max_children)
        kept = plan.kept()
        progress(Progress("merge", len(plan.merges), max(len(units) - 1, 1),
                          f"{counted(len(plan.merges), 'merge')}, {counted(len(kept), 'summary node')}"))

        stats = TermStats.from_texts([u.content for u in units])
        placed = placed_headings(top)
        headings: dict[int, str | None] = {}
        for item in kept:
            title = plan.titles.get(item)
            headings[item] = HEADING_JOIN.join(title) if isinstance(title, tuple) else title or \
                _span_title([self._heading_of(c, units, plan, placed) for c in plan.children[item]])
        labels = _name_groups(plan, units, [item for item in kept if headings[item] is None], stats,
                              lambda item: self._heading_of(item, units, plan, placed))
        summaries: dict[int, Summary] = {}
        for k, item in enumerate(kept):
            segment = plan.segments.get(item)
            lead = leads.get(id(segment)) if segment is not None else None
            children = plan.children[item]
            parts = ["\n\n".join(u.content for u in units[plan.first_unit[c]: plan.last_unit[c] + 1])
                     for c in children]
            weights = [units[plan.last_unit[c]].last_leaf - units[plan.first_unit[c]].first_leaf + 1 for c in children]
            summaries[item] = self.summarizer.summarize_node(
                NodeBrief(headings[item], parts, weights, stats, lead, labels.get(item)))
            progress(Progress("summarize", k + 1, len(kept), "summary nodes"))
        node_vectors = self.embedder.embed_passages(
            [embedding_text(SUMMARY, "", summaries[item].text, summaries[item].title) for item in kept],
            params.embed_batch_size,
            lambda done, total: progress(Progress("embed", done, total, "summary nodes")))
        return Growth(units, plan, summaries, node_vectors, leaf_vectors)

    @staticmethod
    def _heading_of(item: int, units: list[Root], plan: TreePlan, placed: Mapping[int, tuple[str, ...]]
                    ) -> tuple[str, ...]:
        if item < len(units):
            return placed.get(item, units[item].headings)
        title = plan.titles.get(item)
        return title if isinstance(title, tuple) else (title,) if title else ()   # a document: its title


def write_archive(store: ForestStore, vectors: VectorStore, archive_id: int, model_id: str,
                  rows: list[dict], node_vectors: np.ndarray, written_ids: list[int],
                  merges: list[dict] = ()) -> None:
    """Nodes in one transaction, then their vectors (row order), then the archive becomes 'ready'.

    Row i has offset i and names its parent by offset; paths and depths are derived here.
    """
    paths, depths = positions_from_parents([r["parent_offset"] for r in rows])
    rows = [{**r, "path_offsets": path, "depth": depth} for r, path, depth in zip(rows, paths, depths)]
    base = store.allocate_and_insert(archive_id, rows, merges)
    ids = [base + r["offset"] for r in rows]
    written_ids.extend(ids)
    vectors.upsert(model_id, ids, node_vectors,
                   [vector_metadata(model_id, archive_id, r["node_type"], r["depth"]) for r in rows])
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


def leaf_place(chunk: Chunk) -> dict:
    return {"section": chunk.section, "page_start": chunk.page_start, "page_end": chunk.page_end,
            "chunk_kind": chunk.kind}


def span_place(children: list[dict], heading: str | None = None) -> dict:
    """A summary node's place: the pages its children span; its own heading, else the section
    its children share."""
    starts = [c["page_start"] for c in children if c.get("page_start") is not None]
    ends = [c["page_end"] for c in children if c.get("page_end") is not None]
    sections = {c.get("section") for c in children}
    return {"page_start": min(starts) if starts else None, "page_end": max(ends) if ends else None,
            "section": heading or (sections.pop() if len(sections) == 1 else None)}


def _span_title(headings: list[tuple[str, ...]]) -> str | None:
    """'2 Related Work – 4 Experiments' for a node over several whole sections; None (label it by
    its content) when a child has no heading or all share one."""
    if not headings or not all(headings) or headings[0] == headings[-1]:
        return None
    return f"{headings[0][-1]} – {headings[-1][-1]}"


def _name_groups(plan: TreePlan, units: list[Root], unnamed: list[int], stats: TermStats,
                 heading_of: Callable[[int], tuple[str, ...]]) -> dict[int, str]:
    """Offline names for the kept nodes without a heading, siblings named together so no two share
    a key phrase (forest.models.extractive.group_labels); a node with no phrase to name it by (a stretch
    of a reference list) is called by its place: "References, part 2 of 3"."""
    parent_of = {child: parent for parent, children in plan.children.items() for child in children}
    siblings: dict[int | None, list[int]] = defaultdict(list)
    for item in unnamed:
        siblings[parent_of.get(item)].append(item)
    names: dict[int, str] = {}
    for parent, items in siblings.items():
        texts = ["\n\n".join(u.content for u in units[plan.first_unit[i]: plan.last_unit[i] + 1]) for i in items]
        row = plan.children[parent] if parent is not None else plan.roots
        for item, label in zip(items, group_labels(texts, stats)):
            section = heading_of(plan.children[item][0])
            place = f"part {row.index(item) + 1} of {len(row)}"
            names[item] = label or (f"{section[-1]}, {place}" if section else place.capitalize())
    return names


def _first_unit(child: int | Segment) -> int:
    while isinstance(child, Segment):
        child = child.children[0]
    return child
