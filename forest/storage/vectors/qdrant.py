"""Qdrant, the spec's vector store: one collection per embedder, a point per memory node.

A point's id is the node id and its payload is the node's vector metadata (model_id, archive_id,
node_type, depth). Every model_id shares the embedder's collection, so every call is filtered by
model_id (a keyword payload index marked as the tenant key): one model_id never reads, changes or
deletes another's points, even when handed their ids.

`qdrant_url` is a server when it is an http(s) URL; anything else is a directory for qdrant-client's
local mode, which one process at a time may open (for tests and trials; the server path makes the
same client calls). Qdrant stores cosine vectors normalised; the embedders' vectors already are.
"""
from __future__ import annotations

import re
import threading
import uuid
import warnings
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from forest.config import without_password
from forest.errors import ConfigError, ForestError, one_line
from forest.storage.private_files import make_private_dir, tighten
from forest.storage.vectors.base import VectorStore, VectorStoreError

PREFIX = "memory_forest_"
TIMEOUT_SECONDS = 5  # per request: an unreachable server fails construction within this
WRITE_BATCH = 256    # points per upsert request (a few MB of JSON at 1024 dimensions)
ID_BATCH = 1000      # ids per retrieve, delete or payload request
PAGE = 5000          # points per page when listing ids


def collection_name(embedder_name: str) -> str:
    """The embedder's collection. Two names may sanitise alike; the collection's metadata names its
    embedder, so such a clash is refused rather than mixed."""
    return PREFIX + re.sub(r"[^A-Za-z0-9_-]+", "_", embedder_name)[:100]


class QdrantVectorStore(VectorStore):
    def __init__(self, url: str, *, api_key: str | None = None, embedder_name: str, dim: int) -> None:
        """Connect and make the embedder's collection if missing. A bad URL, an unreachable server or
        a local directory another process holds is a ForestError now; a collection of another
        dimension or embedder is a ConfigError."""
        from qdrant_client import QdrantClient

        self.embedder_name = embedder_name
        self.dim = dim
        self.collection = collection_name(embedder_name)
        self._checked: set[str] = set()  # model_ids found in no other embedder's collection
        server = _server_url(url)
        # Local mode is not thread-safe (its SQLite and in-memory index); the server client is.
        self._guard: Any = nullcontext() if server else threading.RLock()
        if server:
            self.location = without_password(server)
            client = QdrantClient(url=server, api_key=api_key, timeout=TIMEOUT_SECONDS,
                                  check_compatibility=False)  # its probe only warns, after its own timeout
        else:
            path = Path(url).expanduser()
            self.location = str(path)
            try:
                make_private_dir(path)
                client = QdrantClient(path=str(path), force_disable_check_same_thread=True)
            except Exception as exc:  # another process holds the directory, or it is not one
                raise ForestError(f"cannot open the Qdrant local store at {path}: {_line(exc)} "
                                  "(local mode is one process at a time)") from None
        self._client: Any = client
        try:
            self._ensure_collection()
        except ForestError:
            self.close()
            raise
        except Exception as exc:  # the client raises several unrelated types for "no server"
            self.close()
            raise ForestError(f"cannot use the Qdrant store at {self.location}: {_line(exc)}") from None
        if not server:
            tighten(path)

    def _ensure_collection(self) -> None:
        from qdrant_client import models

        client = self._client
        if not client.collection_exists(self.collection):
            try:
                client.create_collection(
                    self.collection, metadata={"embedder": self.embedder_name, "dim": self.dim},
                    vectors_config=models.VectorParams(size=self.dim, distance=models.Distance.COSINE))
            except Exception:
                if not client.collection_exists(self.collection):
                    raise
                # else another process made it at the same time: check it like any existing one
            else:
                with warnings.catch_warnings():  # local mode warns that it has no payload indexes
                    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
                    tenant = models.KeywordIndexParams(type=models.KeywordIndexType.KEYWORD, is_tenant=True)
                    client.create_payload_index(self.collection, "model_id", field_schema=tenant)
        config = client.get_collection(self.collection).config
        vectors, embedder = config.params.vectors, (config.metadata or {}).get("embedder")
        if not isinstance(vectors, models.VectorParams) or vectors.distance != models.Distance.COSINE:
            raise ConfigError(f"the Qdrant collection {self.collection} at {self.location} is not one "
                              "Memory Forest made (one unnamed cosine vector)")
        if vectors.size != self.dim:
            raise ConfigError(f"the Qdrant collection {self.collection} at {self.location} holds vectors "
                              f"of {vectors.size} dimensions, but the embedder {self.embedder_name} makes "
                              f"{self.dim}")
        if embedder != self.embedder_name:
            raise ConfigError(f"the Qdrant collection {self.collection} at {self.location} belongs to the "
                              f"embedder {embedder}, not {self.embedder_name}")

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """One client call; any failure is a VectorStoreError, never an empty answer."""
        with self._guard:
            if self._client is None:
                raise VectorStoreError(f"the Qdrant store at {self.location} is closed")
            try:
                return getattr(self._client, method)(*args, **kwargs)
            except Exception as exc:
                raise VectorStoreError(f"the Qdrant store at {self.location} failed: {_line(exc)}") from exc

    def _check(self, model_id: str) -> None:
        """Refuse a model_id whose vectors another embedder made (they are in its collection): the
        engine would compare vectors of two models. Once per model_id per process."""
        if model_id in self._checked:
            return
        for name in (c.name for c in self._call("get_collections").collections):
            if not name.startswith(PREFIX) or name == self.collection:
                continue
            if self._owned_points(name, model_id, 1)[0]:
                other = (self._call("get_collection", name).config.metadata or {}).get("embedder", name)
                raise ConfigError(
                    f"the vectors of model_id {model_id!r} were made by {other}, but the configured embedder "
                    f"is {self.embedder_name}; configure that embedder again, "
                    f"or re-embed the model_id with this one: forest reembed --model-id {model_id}")
        self._checked.add(model_id)

    def _owned_points(self, collection: str, model_id: str, limit: int, ids: Sequence[int] | None = None,
                      offset: Any = None, with_vectors: bool = False) -> tuple[list[Any], Any]:
        """One page of the model_id's points (among `ids` if given) and the next page's offset."""
        return self._call("scroll", collection, scroll_filter=_owned(model_id, ids), limit=limit,
                          offset=offset, with_payload=False, with_vectors=with_vectors)

    def upsert(self, model_id: str, ids: Sequence[int], vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any]]) -> None:
        from qdrant_client import models

        if len(ids) == 0:
            return
        self._check(model_id)
        ids = [int(i) for i in ids]
        for meta in metadatas:
            if meta.get("model_id") != model_id:
                raise VectorStoreError(f"a vector's metadata names model_id {meta.get('model_id')!r}, "
                                       f"not {model_id!r}; nothing was written")
        taken = []  # checked before anything is written
        for start in range(0, len(ids), ID_BATCH):
            found = self._call("retrieve", self.collection, ids=ids[start:start + ID_BATCH],
                               with_payload=["model_id"], with_vectors=False)
            taken += [p.id for p in found if (p.payload or {}).get("model_id") != model_id]
        if taken:
            raise VectorStoreError(f"node ids {sorted(taken)[:5]} hold another model_id's vectors; "
                                   "nothing was written")
        rows = np.asarray(vectors, dtype=np.float32)
        for start in range(0, len(ids), WRITE_BATCH):
            stop = start + WRITE_BATCH
            batch = models.Batch(ids=ids[start:stop], vectors=rows[start:stop].tolist(),
                                 payloads=[dict(m) for m in metadatas[start:stop]])
            # The filter keeps a point another model_id wrote since the check as it is.
            self._call("upsert", self.collection, points=batch, update_filter=_owned(model_id), wait=True)

    def query(self, model_id: str, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        self._check(model_id)
        if top_k <= 0:
            return []
        # With cosine distance Qdrant's score is the cosine similarity itself, most similar first.
        query = np.asarray(vector, dtype=np.float32).tolist()
        found = self._call("query_points", self.collection, query=query, query_filter=_owned(model_id),
                           limit=top_k, with_payload=False).points
        return [(int(p.id), float(p.score)) for p in found]

    def get_vectors(self, model_id: str, ids: Sequence[int]) -> dict[int, np.ndarray]:
        self._check(model_id)
        ids = [int(i) for i in ids]
        found: dict[int, np.ndarray] = {}
        for start in range(0, len(ids), ID_BATCH):
            batch = ids[start:start + ID_BATCH]
            points, _ = self._owned_points(self.collection, model_id, len(batch), batch, with_vectors=True)
            found.update((int(p.id), np.asarray(p.vector, dtype=np.float32)) for p in points)
        return found

    def update_metadata(self, model_id: str, ids: Sequence[int], metadatas: Sequence[dict[str, Any]]) -> None:
        from qdrant_client import models

        if len(ids) == 0:
            return
        self._check(model_id)
        # Nodes that move share a few payloads (archive, type, depth): one request per payload.
        by_payload: dict[tuple, list[int]] = {}
        for i, meta in zip(ids, metadatas):
            if meta.get("model_id") != model_id:
                raise VectorStoreError(f"a vector's metadata names model_id {meta.get('model_id')!r}, "
                                       f"not {model_id!r}; nothing was changed")
            by_payload.setdefault(tuple(sorted(meta.items())), []).append(int(i))
        operations = [
            models.OverwritePayloadOperation(overwrite_payload=models.SetPayload(
                payload=dict(payload), filter=_owned(model_id, group[start:start + ID_BATCH])))
            for payload, group in by_payload.items() for start in range(0, len(group), ID_BATCH)]
        for start in range(0, len(operations), 100):
            self._call("batch_update_points", self.collection,
                       update_operations=operations[start:start + 100], wait=True)

    def delete(self, model_id: str, ids: Sequence[int]) -> None:
        from qdrant_client import models

        if len(ids) == 0:
            return
        self._check(model_id)
        ids = [int(i) for i in ids]
        for start in range(0, len(ids), ID_BATCH):
            selector = models.FilterSelector(filter=_owned(model_id, ids[start:start + ID_BATCH]))
            self._call("delete", self.collection, points_selector=selector, wait=True)

    def drop_other_embedders(self, model_id: str) -> int:
        from qdrant_client import models

        dropped = 0
        for name in (c.name for c in self._call("get_collections").collections):
            if name.startswith(PREFIX) and name != self.collection:
                dropped += self._call("count", name, count_filter=_owned(model_id), exact=True).count
                self._call("delete", name, points_selector=models.FilterSelector(filter=_owned(model_id)), wait=True)
        self._checked.discard(model_id)
        return dropped

    def ids(self, model_id: str) -> list[int]:
        self._check(model_id)
        out: list[int] = []
        offset = None
        while True:
            points, offset = self._owned_points(self.collection, model_id, PAGE, offset=offset)
            out.extend(int(p.id) for p in points)
            if offset is None:
                return out

    def model_ids(self) -> list[str]:
        """The model_ids holding points in this embedder's collection, from the payload index."""
        limit = 1000
        while True:
            hits = self._call("facet", self.collection, "model_id", limit=limit, exact=True).hits
            if len(hits) < limit:
                break
            limit *= 10
        values = [str(h.value) for h in hits]
        # Local mode's facet rewrites values that parse as UUIDs (hyphens, lower case), so such a
        # model_id would come back under another name: read those from the payloads themselves.
        if any(_is_uuid(v) for v in values):
            return self._model_ids_from_payloads()
        return sorted(values)

    def _model_ids_from_payloads(self) -> list[str]:
        names: set[str] = set()
        offset = None
        while True:
            points, offset = self._call("scroll", self.collection, limit=PAGE, offset=offset,
                                        with_payload=["model_id"], with_vectors=False)
            names.update(str(p.payload["model_id"]) for p in points if p.payload and "model_id" in p.payload)
            if offset is None:
                return sorted(names)

    def close(self) -> None:
        with self._guard:
            client, self._client = self._client, None
        if client is not None:
            client.close()  # local mode: releases the directory's lock


def _server_url(url: str) -> str | None:
    """The URL when `url` names a server; None when it is a directory. A URL of another scheme, or
    a bare host:port, is refused rather than taken for a directory of that name."""
    try:
        parts = urlsplit(url)
        parts.port  # reading it checks it: a port that is not a number raises
    except ValueError:  # that, or a bracket left open
        parts = None
    if parts is not None and parts.scheme in ("http", "https") and parts.hostname:
        return url
    host, colon, port = url.rpartition(":")
    if "://" in url or (colon and port.isdigit() and host and "/" not in host):
        raise ConfigError(f"qdrant_url must be an http(s) URL of a Qdrant server or a directory, got "
                          f"{without_password(url)!r}")
    return None


def _owned(model_id: str, ids: Sequence[int] | None = None) -> Any:
    """The filter every call goes through: the model_id's points (among `ids` if given)."""
    from qdrant_client import models

    must: list[Any] = [models.FieldCondition(key="model_id", match=models.MatchValue(value=model_id))]
    if ids is not None:
        must.append(models.HasIdCondition(has_id=list(ids)))
    return models.Filter(must=must)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _line(exc: Exception) -> str:
    """A server's error carries its raw response: one short line of it."""
    return one_line(exc, limit=300)
