"""Growing and reshaping stored trees: append a document to an archive, join archives.

Append: the new chunks become leaves after the archive's last leaf, and merging resumes over the
row [stored roots..., new leaves...] with the same rule as a build (average linkage of the leaf
vectors, stored in Chroma, so nothing old is embedded again). A stored root can only gain a new
parent, so every existing node keeps its id and its place; only its path gets the new
ancestors in front and its depth grows.

Join (the archive merging the spec leaves for later): archives of one model_id whose roots are
similar hang under a new super-root in one archive.

Rebuild: an archive's tree re-planned over its stored leaves and vectors (stores made before
trees followed the outline, or after a change of the planning rule).

Write order, for both: the new nodes' vectors go in first under reserved ids (invisible without
rows; `forest doctor` removes them if the process dies here), then one SQLite transaction adds
the rows, re-parents the old roots and records the archive's documents (and a join's name), then
the moved nodes' vector metadata is refreshed.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

import numpy as np

from forest.tree.build import ArchiveBuilder, BuildParams, DocumentUnits, Root
from forest.tree.chunking import Chunk
from forest.tree.leaves import embedding_text
from forest.models.embedders import Embedder
from forest.errors import InvalidInput
from forest.models.extractive import TermStats
from forest.tree.outline import DocumentOutline
from forest.storage.paths import path_ids, positions_from_parents
from forest.records import SUMMARY, MemoryNode, Progress, ProgressFn, entry_title, vector_metadata
from forest.storage.archives import ForestStore
from forest.models.summarizers import NodeBrief, Summarizer, Summary
from forest.text import counted
from forest.tree.planner import average_linkage
from forest.storage.vectors.base import VectorStore


def append_to_archive(builder: ArchiveBuilder, model_id: str, archive_id: int, chunks: list[Chunk],
                      outline: DocumentOutline, document_entry: dict[str, Any], params: BuildParams,
                      progress: ProgressFn) -> None:
    """`document_entry` describes the new document; its leaf range is filled in here. The new
    document merges inside its own outline first; its roots then merge with the stored roots."""
    store, vectors = builder.store, builder.vectors
    archive = store.archive(model_id, archive_id)
    nodes = store.archive_nodes(model_id, archive_id)
    roots = _stored_roots(nodes, vectors, model_id)
    first_leaf = max(n.last_leaf for n in nodes) + 1
    document_entry = {**document_entry, "first_leaf": first_leaf, "last_leaf": first_leaf + len(chunks) - 1}
    expect = {archive_id: (sum(n.is_leaf for n in nodes), frozenset(r.node_id for r in roots))}
    leaves, leaf_vectors = builder.new_leaves(chunks, outline, first_leaf, params, progress)
    units = roots + leaves
    growth = builder.grow(units, [DocumentUnits(outline, list(range(len(roots), len(units))))], leaf_vectors,
                          params, progress)
    growth.first_merge_order = store.last_merge_order(archive_id) + 1
    rows, adoptions, merges = growth.rows()
    progress(Progress("store", 0, len(rows), "writing nodes"))
    _write_growth(store, vectors, model_id, archive_id, rows, growth.new_vectors, adoptions, expect=expect,
                  merges=merges, settings={**archive.settings, "documents": [*archive.documents, document_entry]})
    progress(Progress("store", len(rows), len(rows), "ready"))


@dataclass(frozen=True)
class ArchivePair:
    left: int
    right: int
    left_name: str
    right_name: str
    similarity: float   # average linkage of their leaves, on the 0-1 calibrated scale

    def to_dict(self) -> dict[str, Any]:
        return {"archive_ids": [self.left, self.right], "names": [self.left_name, self.right_name],
                "similarity": self.similarity}


def similar_archives(store: ForestStore, vectors: VectorStore, embedder: Embedder, model_id: str,
                     threshold: float) -> list[ArchivePair]:
    """Pairs of archives whose trees are about the same thing, most similar first.

    Similarity is the tree builder's own: mean cosine between the leaves of one archive and the
    leaves of the other, so "similar enough to merge" means the same inside and across trees.
    """
    archives = store.archives(model_id)
    sums: dict[int, tuple[np.ndarray, int]] = {}
    for archive in archives:
        leaves = [n.id for n in store.archive_nodes(model_id, archive.id) if n.is_leaf]
        stored = vectors.get_vectors(model_id, leaves)
        if stored:
            sums[archive.id] = (np.sum(list(stored.values()), axis=0), len(stored))
    names = {a.id: a.name for a in archives}
    pairs = []
    for a, b in combinations(sorted(sums), 2):
        similarity = float(embedder.calibrate(average_linkage(sums[a][0], sums[a][1], sums[b][0], sums[b][1])))
        if similarity >= threshold:
            pairs.append(ArchivePair(a, b, names[a], names[b], round(similarity, 4)))
    return sorted(pairs, key=lambda p: -p.similarity)


def join_archives(store: ForestStore, vectors: VectorStore, embedder: Embedder, summarizer: Summarizer,
                  model_id: str, archive_ids: list[int], name: str | None = None) -> int:
    """Hang the trees of `archive_ids` under one new super-root, in the first archive; the others
    are absorbed (their nodes keep their ids). Returns the id of the joined archive."""
    try:
        archive_ids = list(dict.fromkeys(int(a) for a in archive_ids))
    except (TypeError, ValueError):
        raise InvalidInput("archive ids must be integers") from None
    if len(archive_ids) < 2:
        raise InvalidInput("name at least two different archives to join")
    archives = [store.archive(model_id, a) for a in archive_ids]  # NotFound across model_ids
    target = archives[0]
    roots: list[MemoryNode] = []
    renumber: list[tuple[int, int, int]] = []
    documents: list[dict[str, Any]] = []
    expect: dict[int, tuple[int, frozenset[int]]] = {}
    shift = merges = 0
    for archive in archives:
        if archive.id != target.id:
            renumber.append((archive.id, shift, merges))
        nodes = store.archive_nodes(model_id, archive.id)
        archive_roots = sorted((n for n in nodes if n.parent_id is None), key=lambda n: n.first_leaf)
        expect[archive.id] = (sum(n.is_leaf for n in nodes), frozenset(n.id for n in archive_roots))
        roots += [(root, shift) for root in archive_roots]
        merges += store.last_merge_order(archive.id)
        for entry in archive.documents or [{"name": archive.name, "first_leaf": 0,
                                                             "last_leaf": archive.leaves - 1}]:
            documents.append({**entry, "first_leaf": entry["first_leaf"] + shift,
                              "last_leaf": entry["last_leaf"] + shift})
        shift += archive.leaves

    parts = [_unit_text(root) for root, _ in roots]
    title = name.strip() if name and name.strip() else " + ".join(a.name for a in archives)
    summary = summarizer.summarize_node(NodeBrief(
        title, parts,
        [root.leaf_count for root, _ in roots], TermStats.from_texts(parts)))
    sections = {root.section for root, _ in roots}
    row = {"offset": 0, "parent_offset": None, "node_type": SUMMARY, "content": "", "title": summary.title,
           "summary": summary.text, "summary_source": summary.source, "first_leaf": 0, "last_leaf": shift - 1,
           "merge_order": merges + len(roots) - 1,
           # pages of different documents do not make one range
           "section": sections.pop() if len(sections) == 1 else None}
    # The history: the roots joined left to right, the last step making the super-root.
    history = [{"merge_order": merges + k, "first_leaf": 0, "split_leaf": root.first_leaf + offset,
                "last_leaf": root.last_leaf + offset, "similarity": None,
                "node_offset": 0 if k == len(roots) - 1 else None}
               for k, (root, offset) in enumerate(roots) if k > 0]
    vector = embedder.embed_passages([embedding_text(SUMMARY, "", summary.text, summary.title)])
    _write_growth(store, vectors, model_id, target.id, [row], vector, [(root.id, 0) for root, _ in roots],
                  renumber, expect, history, {**target.settings, "documents": documents,
                                              "joined": [a.name for a in archives]}, (name or "").strip() or None)
    return target.id


def refresh_vector_metadata(store: ForestStore, vectors: VectorStore, model_id: str, archive_id: int) -> None:
    nodes = store.archive_nodes(model_id, archive_id)
    vectors.update_metadata(model_id, [n.id for n in nodes],
                            [vector_metadata(model_id, archive_id, n.node_type, n.depth) for n in nodes])


def rebuild_archive(builder: ArchiveBuilder, model_id: str, archive_id: int, params: BuildParams,
                    progress: ProgressFn) -> None:
    """Re-plan the archive's tree over its stored leaves and their stored vectors (nothing is
    embedded again but the new summary nodes): each document inside its outline, as a build
    would. Leaf ids, text and vectors are unchanged; the old summary nodes are replaced."""
    store, vectors = builder.store, builder.vectors
    archive = store.archive(model_id, archive_id)
    nodes = store.archive_nodes(model_id, archive_id)
    leaves = sorted((n for n in nodes if n.is_leaf), key=lambda n: n.leaf_index)
    stored = _leaf_vectors(vectors, model_id, leaves)
    units = [Root(stored[leaf.id], 1, leaf.content, Summary(leaf.summary, leaf.summary_source), leaf.leaf_index,
                  leaf.leaf_index, {"section": leaf.section, "page_start": leaf.page_start,
                                    "page_end": leaf.page_end, "chunk_kind": leaf.chunk_kind},
                  node_id=leaf.id, char_start=leaf.char_start, headings=tuple(leaf.headings)) for leaf in leaves]
    entries = archive.documents or [{"first_leaf": 0, "last_leaf": len(leaves) - 1}]
    documents = []
    for entry in entries:
        held = [i for i, unit in enumerate(units) if entry["first_leaf"] <= unit.first_leaf <= entry["last_leaf"]]
        if held:
            title = entry_title(entry) or archive.name
            documents.append(DocumentUnits(DocumentOutline(title, [units[i].headings for i in held]), held))
    growth = builder.grow(units, documents, np.zeros((0, 0), dtype=np.float32), params, progress)
    rows, adoptions, merges = growth.rows()
    parent_of = dict(adoptions)
    paths, depths = positions_from_parents([r["parent_offset"] for r in rows])
    rows = [{**r, "path_offsets": p, "depth": d} for r, p, d in zip(rows, paths, depths)]
    progress(Progress("store", 0, len(rows), "writing summary nodes"))
    base = store.reserve_ids(len(rows))
    ids = [base + r["offset"] for r in rows]
    try:
        vectors.upsert(model_id, ids, growth.new_vectors,
                       [vector_metadata(model_id, archive_id, r["node_type"], r["depth"]) for r in rows])
        old = store.replace_tree(archive_id, rows, base, [(leaf.id, parent_of.get(leaf.id)) for leaf in leaves],
                                 merges, frozenset(n.id for n in nodes))
    except BaseException:
        vectors.delete(model_id, ids)
        raise
    vectors.delete(model_id, old)
    refresh_vector_metadata(store, vectors, model_id, archive_id)
    progress(Progress("store", len(rows), len(rows), "ready"))


def _leaf_vectors(vectors: VectorStore, model_id: str, leaves: list[MemoryNode]) -> dict[int, np.ndarray]:
    stored = vectors.get_vectors(model_id, [n.id for n in leaves])
    missing = [n.id for n in leaves if n.id not in stored]
    if missing:
        raise InvalidInput(f"this archive has {counted(len(missing), 'leaf', 'leaves')} without a vector; "
                           "run `forest doctor --repair` first")
    return stored


def _unit_text(node: MemoryNode) -> str:
    """What a stored node contributes to a new parent's summary: a leaf's text; a summary node's
    title and summary (its own text is its leaves')."""
    return node.content if node.is_leaf else ". ".join(p for p in (node.title, node.summary) if p)


def _stored_roots(nodes: list[MemoryNode], vectors: VectorStore, model_id: str) -> list[Root]:
    """The archive's roots in document order, each with the sum of its leaves' stored vectors."""
    leaves = [n for n in nodes if n.is_leaf]
    stored = _leaf_vectors(vectors, model_id, leaves)
    sums: dict[int, np.ndarray] = {}
    for leaf in leaves:
        root_id = path_ids(leaf.path)[0]
        sums[root_id] = sums.get(root_id, 0) + stored[leaf.id]
    roots = sorted((n for n in nodes if n.parent_id is None), key=lambda n: n.first_leaf)
    return [Root(sums[r.id], r.leaf_count, _unit_text(r), Summary(r.summary, r.summary_source, r.title),
                 r.first_leaf, r.last_leaf, {"section": r.section, "page_start": r.page_start,
                                             "page_end": r.page_end}, node_id=r.id,
                 headings=tuple(r.headings) if r.is_leaf else ()) for r in roots]


def _write_growth(store: ForestStore, vectors: VectorStore, model_id: str, archive_id: int,
                  rows: list[dict], new_vectors: np.ndarray, adoptions: list[tuple[int, int]],
                  renumber: list[tuple[int, int, int]] = (),
                  expect: dict[int, tuple[int, frozenset[int]]] | None = None, merges: list[dict] = (),
                  settings: dict[str, Any] | None = None, name: str | None = None) -> None:
    """New rows (ids reserved, vectors first), stored roots re-parented, the archive's settings
    (and name) replaced in the same transaction: see the module docstring."""
    paths, depths = positions_from_parents([r["parent_offset"] for r in rows])
    rows = [{**r, "path_offsets": p, "depth": d} for r, p, d in zip(rows, paths, depths)]
    base = store.reserve_ids(len(rows))
    ids = [base + r["offset"] for r in rows]
    path_of = {r["offset"]: "".join(f"{base + o}/" for o in r["path_offsets"]) for r in rows}
    try:
        vectors.upsert(model_id, ids, new_vectors,
                       [vector_metadata(model_id, archive_id, r["node_type"], r["depth"]) for r in rows])
        store.graft(archive_id, rows, base, [(root, base + parent, path_of[parent]) for root, parent in adoptions],
                    renumber, expect, merges, settings, name)
    except BaseException:
        vectors.delete(model_id, ids)  # the rows never landed: their vectors must not linger
        raise
    if adoptions:
        refresh_vector_metadata(store, vectors, model_id, archive_id)
