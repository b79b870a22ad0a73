"""The Chroma vector store, embedded in the data directory or on a Chroma server.

One Chroma collection per model_id, so a model_id's global search never pays for a metadata
filter (docs/benchmarks.md) and one tenant's vectors are never in another's index.
"""
from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from forest.errors import ConfigError, ForestError
from forest.storage.locks import WriterLock
from forest.storage.private_files import make_private_dir, tighten
from forest.storage.vectors.base import VectorStore, VectorStoreError
from forest.storage.vectors.snapshots import Snapshot, SnapshotFiles

log = logging.getLogger("forest")
# Chroma shares one system per path within a process: two clients made (or closed) at once, the
# owner's own store and the one serving another process, tear it down under each other.
_CLIENTS = threading.Lock()


def collection_name(model_id: str) -> str:
    """Chroma names allow [a-zA-Z0-9._-]{3,63}; model_ids are free text, so hash them."""
    return "forest_" + hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:32]


class ChromaVectorStore(VectorStore):
    def __init__(self, *, path: Path | None = None, host: str | None = None, port: int = 8000,
                 embedder_name: str, dim: int, on_close: Callable[[], None] | None = None,
                 use_snapshots: bool = False) -> None:
        """`on_close` runs once after the client closes (forest.storage.ownership releases its claim).

        An embedded store (`path`) is opened by the process that owns it; with `use_snapshots` it
        answers reads of a collection from its snapshot while that is current, takes the missing
        ones when it closes (forest.storage.vectors.snapshots), and imports chromadb only when something else
        is first needed. Its writes discard snapshots either way. Otherwise Chroma opens at once."""
        self.embedder_name = embedder_name
        self.dim = dim
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._open_lock = threading.Lock()
        self._client: Any = None
        self._on_close = on_close
        self._closed = False
        self._server = (host, port) if host else None
        self._snapshots: SnapshotFiles | None = None  # embedded stores only
        self._use_snapshots = False
        self._used: set[str] = set()  # model_ids whose collections this store opened
        if host:
            self.location = f"http://{host}:{port}"
        else:
            assert path is not None
            self.location = str(path)
            self._snapshots = SnapshotFiles(path)
            self._use_snapshots = use_snapshots
        if not self._use_snapshots:
            self._open()  # an unreachable server or a broken directory is an error now

    def _open(self) -> Any:
        """The Chroma client, made on first use."""
        with self._open_lock:
            if self._client is None:
                if self._closed:
                    raise VectorStoreError(f"the vector store at {self.location} is closed")
                import chromadb
                from chromadb.config import Settings as ChromaSettings

                settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
                if self._server:
                    host, port = self._server
                    try:
                        client = chromadb.HttpClient(host=host, port=port, settings=settings)
                        client.heartbeat()
                    except Exception as exc:  # the client raises several unrelated types for "no server"
                        raise ForestError(f"cannot reach the Chroma server at {host}:{port}: {exc}") from None
                else:
                    make_private_dir(self.location)
                    with _CLIENTS:
                        client = chromadb.PersistentClient(path=self.location, settings=settings)
                    tighten(self.location)
                self.max_batch = int(client.get_max_batch_size())
                self._client = client
            return self._client

    def close(self) -> None:
        with self._lock:
            if self._closed:  # Chroma counts clients per path: a second close would stop another's
                return
            self._closed = True
        with self._open_lock:
            client = self._client
        if client is not None:
            if self._use_snapshots:
                self._take_snapshots()
            with self._lock:
                self._collections.clear()
            with _CLIENTS:
                client.close()
            self._tighten()
        if self._on_close:
            self._on_close()

    def _tighten(self) -> None:
        """Chroma makes its files with the process's usual mode: an embedded store's are made
        private after every write (they are in the private data directory from the start)."""
        if self._server is None:
            tighten(self.location)

    def _snapshot(self, model_id: str) -> Snapshot | None:
        if not self._use_snapshots:
            return None
        assert self._snapshots is not None
        return self._snapshots.load(collection_name(model_id), self.embedder_name, self.dim)

    def _discard_snapshot(self, model_id: str) -> None:
        """Before a write: the collection is read from Chroma until its next snapshot."""
        if self._snapshots is not None:
            self._snapshots.discard(collection_name(model_id))

    def _take_snapshots(self) -> None:
        """Snapshots of the collections this store used that have none, unless a writer is at work
        (this does not wait for it: the next owner to close takes them)."""
        assert self._snapshots is not None
        wanted = [m for m in sorted(self._used) if not self._snapshots.exists(collection_name(m))]
        writers = WriterLock(Path(self.location).parent)  # the data directory's
        if not wanted or not writers.acquire(wait=False):
            return
        try:
            for model_id in wanted:
                try:
                    ids, vectors = self._everything(model_id)
                    self._snapshots.save(collection_name(model_id), self.embedder_name, ids, vectors)
                except Exception as exc:  # a snapshot only saves later commands time: never fail a close
                    log.warning("no vector snapshot of model_id %r: %s", model_id, exc)
        finally:
            writers.release()

    def _everything(self, model_id: str) -> tuple[np.ndarray, np.ndarray]:
        """Every id and vector of the model_id's collection."""
        coll = self._collection(model_id, create=False)
        ids: list[int] = []
        rows = [np.zeros((0, self.dim), dtype=np.float32)]
        offset, page = 0, 5000
        while coll is not None:
            got = coll.get(include=["embeddings"], limit=page, offset=offset)
            ids.extend(int(i) for i in got["ids"])
            rows.append(np.asarray(got["embeddings"], dtype=np.float32).reshape(-1, self.dim))
            if len(got["ids"]) < page:
                break
            offset += page
        return np.asarray(ids, dtype=np.int64), np.concatenate(rows)

    def _collection(self, model_id: str, create: bool):
        client = self._open()
        from chromadb.errors import NotFoundError

        name = collection_name(model_id)
        with self._lock:
            coll = self._collections.get(name)
            if coll is None:
                if create:
                    coll = client.get_or_create_collection(
                        name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
                        metadata={"model_id": model_id, "embedder": self.embedder_name, "dim": self.dim})
                else:
                    try:
                        coll = client.get_collection(name, embedding_function=None)
                    except NotFoundError:  # only this means "nothing stored yet"
                        return None
                    except Exception as exc:  # anything else is a failure, never an empty store
                        raise VectorStoreError(f"the vector store at {self.location} failed: {exc}") from exc
                meta = coll.metadata or {}
                if meta.get("embedder") not in (None, self.embedder_name):
                    raise ConfigError(
                        f"the vectors of model_id {model_id!r} were made by {meta['embedder']}, but the "
                        f"configured embedder is {self.embedder_name}; configure that embedder again, "
                        f"or re-embed the model_id with this one: forest reembed --model-id {model_id}")
                self._collections[name] = coll
                self._used.add(model_id)
        return coll

    def drop_other_embedders(self, model_id: str) -> int:
        """A model_id's collection is made by one embedder: dropped whole when it is another's."""
        from chromadb.errors import NotFoundError

        client = self._open()
        name = collection_name(model_id)
        with self._lock:
            try:
                coll = client.get_collection(name, embedding_function=None)
            except NotFoundError:
                return 0
            if (coll.metadata or {}).get("embedder") in (None, self.embedder_name):
                return 0
            count = coll.count()
            client.delete_collection(name)
            self._collections.pop(name, None)
        self._discard_snapshot(model_id)
        return count

    def upsert(self, model_id, ids, vectors, metadatas):
        if len(ids) == 0:
            return
        self._discard_snapshot(model_id)
        coll = self._collection(model_id, create=True)
        for start in range(0, len(ids), self.max_batch):
            stop = start + self.max_batch
            coll.upsert(ids=[str(i) for i in ids[start:stop]],
                        embeddings=np.asarray(vectors[start:stop], dtype=np.float32),
                        metadatas=list(metadatas[start:stop]))
        self._tighten()

    def query(self, model_id, vector, top_k):
        snapshot = self._snapshot(model_id)
        if snapshot is not None:
            return snapshot.query(vector, top_k)
        coll = self._collection(model_id, create=False)
        if coll is None or top_k <= 0:
            return []
        count = coll.count()
        if count == 0:
            return []
        result = coll.query(query_embeddings=[np.asarray(vector, dtype=np.float32)],
                            n_results=min(top_k, count), include=["distances"])
        return [(int(i), 1.0 - float(d)) for i, d in zip(result["ids"][0], result["distances"][0])]

    def get_vectors(self, model_id, ids):
        snapshot = self._snapshot(model_id)
        if snapshot is not None:
            return snapshot.get(ids)
        coll = self._collection(model_id, create=False)
        if coll is None or not ids:
            return {}
        found: dict[int, np.ndarray] = {}
        ids = list(ids)
        for start in range(0, len(ids), self.max_batch):
            got = coll.get(ids=[str(i) for i in ids[start : start + self.max_batch]], include=["embeddings"])
            for i, emb in zip(got["ids"], got["embeddings"]):
                found[int(i)] = np.asarray(emb, dtype=np.float32)
        return found

    def update_metadata(self, model_id, ids, metadatas):
        coll = self._collection(model_id, create=False)
        if coll is None or len(ids) == 0:
            return
        for start in range(0, len(ids), self.max_batch):
            stop = start + self.max_batch
            coll.update(ids=[str(i) for i in ids[start:stop]], metadatas=list(metadatas[start:stop]))

    def delete(self, model_id, ids):
        if not ids:
            return
        self._discard_snapshot(model_id)
        coll = self._collection(model_id, create=False)
        if coll is None:
            return
        ids = list(ids)
        for start in range(0, len(ids), self.max_batch):
            coll.delete(ids=[str(i) for i in ids[start : start + self.max_batch]])
        self._tighten()

    def ids(self, model_id):
        coll = self._collection(model_id, create=False)
        if coll is None:
            return []
        out, offset, page = [], 0, 5000
        while True:
            got = coll.get(include=[], limit=page, offset=offset)
            out.extend(int(i) for i in got["ids"])
            if len(got["ids"]) < page:
                return out
            offset += page

    def model_ids(self):
        names = []
        for coll in self._open().list_collections():
            meta = getattr(coll, "metadata", None) or {}
            if "model_id" in meta and coll.name == collection_name(meta["model_id"]):
                names.append(meta["model_id"])
        return sorted(names)
