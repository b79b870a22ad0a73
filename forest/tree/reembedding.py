"""Stored nodes' vectors made again exactly as the build made them: leaves from their content in
their document's context, summary nodes from title and summary. Doctor's repair of missing
vectors and `forest reembed` (a change of embedder: reembed_nodes) both use it."""
from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from forest.models.embedders import Embedder
from forest.records import Progress, ProgressFn, vector_metadata
from forest.storage.archives import ForestStore
from forest.storage.sql.database import Lock
from forest.storage.vectors.base import VectorStore
from forest.tree.leaves import embedding_text, stored_leaf_context

BATCH = 256   # nodes read and embedded at a time: bounded memory whatever the archive's size


def node_vectors(store: ForestStore, embedder: Embedder, model_id: str, ids: list[int],
                 progress: Callable[[int, int], None] | None = None) -> Iterator[tuple[list[int], np.ndarray, list[dict]]]:
    """(node ids, their vectors, their vector metadata), BATCH nodes at a time."""
    documents: dict[int, list] = {}
    for start in range(0, len(ids), BATCH):
        rows = store.embedding_rows(ids[start : start + BATCH])
        for archive_id in {r["archive_id"] for r in rows} - documents.keys():
            documents[archive_id] = store.archive_documents(archive_id)
        texts = [embedding_text(r["node_type"], r["content"], r["summary"], r["title"],
                                stored_leaf_context(documents[r["archive_id"]], r["leaf_index"], r["heading_path"]))
                 for r in rows]
        yield ([r["id"] for r in rows], embedder.embed_passages(texts),
               [vector_metadata(model_id, r["archive_id"], r["node_type"], r["depth"]) for r in rows])
        if progress:
            progress(min(start + BATCH, len(ids)), len(ids))


def reembed_nodes(store: ForestStore, vectors: VectorStore, embedder: Embedder, writer_lock: Lock, model_id: str,
                  progress: ProgressFn) -> tuple[int, int]:
    """Every node of the model_id embedded with `embedder`: computed first, then the other
    embedders' vectors replaced in one step under the writer lock, so an interruption before it
    changes nothing (and one during it is finished by running again). (nodes, vectors dropped)."""
    ids = store.node_ids_of(model_id)
    parts = list(node_vectors(store, embedder, model_id, ids,
                              lambda done, total: progress(Progress("embed", done, total, "nodes"))))
    with writer_lock:
        dropped = vectors.drop_other_embedders(model_id)
        for part_ids, part_vectors, metadatas in parts:
            vectors.upsert(model_id, part_ids, part_vectors, metadatas)
    return len(ids), dropped

