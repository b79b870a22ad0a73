"""Vector store: one vector per memory node, keyed by the node id.

One Chroma collection per model_id, so a model_id's global search never pays for a metadata
filter (measured: 68-238 ms filtered vs 4-7 ms unfiltered at 100k vectors) and one tenant's
vectors are never in another's index.
"""
from __future__ import annotations

import hashlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from forest.errors import ConfigError, ForestError


class VectorStoreError(ForestError):
    """The vector store failed (not "it holds nothing"): callers must not read this as empty."""


class VectorStore(ABC):
    @abstractmethod
    def upsert(self, model_id: str, ids: Sequence[int], vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any]]) -> None: ...

    @abstractmethod
    def query(self, model_id: str, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        """(node id, cosine similarity), most similar first."""

    @abstractmethod
    def get_vectors(self, model_id: str, ids: Sequence[int]) -> dict[int, np.ndarray]: ...

    @abstractmethod
    def update_metadata(self, model_id: str, ids: Sequence[int], metadatas: Sequence[dict[str, Any]]) -> None:
        """Replace the metadata of existing vectors (when nodes move: appends, archive merges)."""

    @abstractmethod
    def delete(self, model_id: str, ids: Sequence[int]) -> None: ...

    @abstractmethod
    def ids(self, model_id: str) -> list[int]: ...

    @abstractmethod
    def model_ids(self) -> list[str]: ...

    def close(self) -> None:
        """Release what the store holds (a client, a claim on a directory); nothing by default."""


def collection_name(model_id: str) -> str:
    """Chroma names allow [a-zA-Z0-9._-]{3,63}; model_ids are free text, so hash them."""
    return "forest_" + hashlib.sha256(model_id.encode("utf-8")).hexdigest()[:32]


class ChromaVectorStore(VectorStore):
    def __init__(self, *, path: Path | None = None, host: str | None = None, port: int = 8000,
                 embedder_name: str, dim: int, on_close: Callable[[], None] | None = None) -> None:
        """`on_close` runs once after the client closes (forest.store_owner releases its claim)."""
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
        if host:
            try:
                self._client = chromadb.HttpClient(host=host, port=port, settings=chroma_settings)
                self._client.heartbeat()
            except Exception as exc:  # the client raises several unrelated types for "no server"
                raise ForestError(f"cannot reach the Chroma server at {host}:{port}: {exc}") from None
            self.location = f"http://{host}:{port}"
        else:
            assert path is not None
            Path(path).mkdir(parents=True, exist_ok=True)
            self._client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
            self.location = str(path)
        self.embedder_name = embedder_name
        self.dim = dim
        self._collections: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.max_batch = int(self._client.get_max_batch_size())
        self._on_close = on_close
        self._closed = False

    def close(self) -> None:
        with self._lock:
            if self._closed:  # Chroma counts clients per path: a second close would stop another's
                return
            self._closed = True
            self._collections.clear()
        self._client.close()
        if self._on_close:
            self._on_close()

    def _collection(self, model_id: str, create: bool):
        from chromadb.errors import NotFoundError

        name = collection_name(model_id)
        with self._lock:
            coll = self._collections.get(name)
            if coll is None:
                if create:
                    coll = self._client.get_or_create_collection(
                        name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
                        metadata={"model_id": model_id, "embedder": self.embedder_name, "dim": self.dim})
                else:
                    try:
                        coll = self._client.get_collection(name, embedding_function=None)
                    except NotFoundError:  # only this means "nothing stored yet"
                        return None
                    except Exception as exc:  # anything else is a failure, never an empty store
                        raise VectorStoreError(f"the vector store at {self.location} failed: {exc}") from exc
                meta = coll.metadata or {}
                if meta.get("embedder") not in (None, self.embedder_name):
                    raise ConfigError(
                        f"the vectors of model_id {model_id!r} were made by {meta['embedder']}, but the "
                        f"configured embedder is {self.embedder_name}; configure the same embedder "
                        "or re-ingest into a new data directory")
                self._collections[name] = coll
        return coll

    def upsert(self, model_id, ids, vectors, metadatas):
        if len(ids) == 0:
            return
        coll = self._collection(model_id, create=True)
        for start in range(0, len(ids), self.max_batch):
            stop = start + self.max_batch
            coll.upsert(ids=[str(i) for i in ids[start:stop]],
                        embeddings=np.asarray(vectors[start:stop], dtype=np.float32),
                        metadatas=list(metadatas[start:stop]))

    def query(self, model_id, vector, top_k):
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
        coll = self._collection(model_id, create=False)
        if coll is None or not ids:
            return
        ids = list(ids)
        for start in range(0, len(ids), self.max_batch):
            coll.delete(ids=[str(i) for i in ids[start : start + self.max_batch]])

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
        for coll in self._client.list_collections():
            meta = getattr(coll, "metadata", None) or {}
            if "model_id" in meta and coll.name == collection_name(meta["model_id"]):
                names.append(meta["model_id"])
        return sorted(names)
