"""Snapshots of an embedded Chroma store's vectors, one file per collection (its ids and vectors),
so that a short command owning the store (`forest context`...) answers vector reads without
importing chromadb, which takes more than all the rest of such a command.

A snapshot that exists is current:
- every write to a collection deletes the collection's snapshot before it reaches Chroma
  (ChromaVectorStore.upsert and delete, in whatever process owns the store);
- a snapshot is taken only by the process that owns the store (the one process that writes to
  Chroma, see forest.storage.ownership) while it holds the data directory's writer lock, which every
  writer (builds, appends, joins, deletes, imports, doctor) holds for the whole of its write.
A command's store takes them when it closes, of the collections it used that have none, if no
writer is at work then; so the first read after a write opens Chroma, and the next ones do not.

From a snapshot come `query`, by exact cosine over the whole collection (what Chroma's HNSW index
approximates: the same contexts for 600 questions on a 178-node paper; on a 12-paper forest of
642 nodes, 1 in 300 contexts differs at 500 tokens and 8 in 300 at 2,000), and `get_vectors`;
everything else, and every write, goes to Chroma. Long-running owners (`forest serve`, the
workbench) neither read nor take snapshots: they search Chroma's index.
"""
from __future__ import annotations

import os
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from forest.storage.private_files import make_private_dir, open_private


@dataclass(frozen=True)
class Snapshot:
    ids: np.ndarray      # int64, one per row of `vectors`
    vectors: np.ndarray  # float32, as stored in Chroma
    norms: np.ndarray    # of each row: Chroma's cosine divides by them
    rows: dict[int, int]  # id -> row

    @classmethod
    def of(cls, ids: np.ndarray, vectors: np.ndarray) -> Snapshot:
        norms = np.linalg.norm(vectors, axis=1) if len(vectors) else np.zeros(0, dtype=np.float32)
        return cls(ids, vectors, np.where(norms == 0, 1.0, norms).astype(np.float32),
                   {int(node_id): row for row, node_id in enumerate(ids)})

    def query(self, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        """(id, cosine similarity), most similar first, as ChromaVectorStore.query returns them."""
        k = min(top_k, len(self.ids))
        if k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        cosines = (self.vectors @ query) / (self.norms * max(float(np.linalg.norm(query)), 1e-12))
        best = np.argpartition(-cosines, k - 1)[:k]
        best = best[np.argsort(-cosines[best], kind="stable")]
        return [(int(self.ids[i]), float(cosines[i])) for i in best]

    def get(self, ids: Sequence[int]) -> dict[int, np.ndarray]:
        return {int(i): self.vectors[self.rows[int(i)]].copy() for i in ids if int(i) in self.rows}


class SnapshotFiles:
    """`<data_dir>/chroma.snapshots/<collection>.npz`, each loaded once per version of the file."""

    def __init__(self, chroma_path: Path) -> None:
        chroma_path = Path(chroma_path)
        self.directory = chroma_path.with_name(chroma_path.name + ".snapshots")
        # collection -> (identity of the file it was read from, snapshot): files are replaced or
        # deleted, never changed in place, so an unchanged identity means an unchanged snapshot.
        self._loaded: dict[str, tuple[tuple[int, int, int], Snapshot]] = {}

    def _path(self, collection: str) -> Path:
        return self.directory / f"{collection}.npz"

    def exists(self, collection: str) -> bool:
        return self._path(collection).exists()

    def load(self, collection: str, embedder_name: str, dim: int) -> Snapshot | None:
        """The collection's snapshot; None without one, or if another embedder made it (Chroma then
        says so)."""
        path = self._path(collection)
        try:
            stat = path.stat()
            identity = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
            cached = self._loaded.get(collection)
            if cached is not None and cached[0] == identity:
                return cached[1]
            with np.load(path, allow_pickle=False) as saved:
                made_by, vectors, ids = str(saved["embedder"]), saved["vectors"], saved["ids"]
        except FileNotFoundError:
            return None
        except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile):  # torn by a crash: read Chroma
            return None
        if made_by != embedder_name or vectors.shape[1:] != (dim,):
            return None
        snapshot = Snapshot.of(ids, vectors)
        self._loaded[collection] = (identity, snapshot)
        return snapshot

    def save(self, collection: str, embedder_name: str, ids: np.ndarray, vectors: np.ndarray) -> None:
        """Written whole, then renamed into place: a reader sees the old file, the new one or none."""
        make_private_dir(self.directory)
        partial = self.directory / f"{collection}.npz.partial"
        with open_private(partial) as file:
            np.savez(file, embedder=np.array(embedder_name), ids=np.asarray(ids, dtype=np.int64),
                     vectors=np.asarray(vectors, dtype=np.float32))
        os.replace(partial, self._path(collection))

    def discard(self, collection: str) -> None:
        self._path(collection).unlink(missing_ok=True)
