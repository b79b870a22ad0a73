"""The vector store over a loopback socket: how a process reaches the embedded Chroma store that
another process owns (see forest.storage.ownership).

Wire: `POST /<method>` for the seven VectorStore methods, a JSON body
{"embedder", "dim", "args"}, `Authorization: Bearer <token>`; arrays travel as base64 float32.
The reply is {"result": ...} or {"error": message, "kind": error class}: never a traceback.
Every method is idempotent (upserts, deletes and metadata updates can be repeated), so large
writes are sent in batches, and a call the owner did not answer can be repeated elsewhere:
FollowedStore, what a process that does not own the store uses, takes the store over (or
follows the new owner) when the owner exits. Imports no Chroma: a forwarding process skips its
slow import.
"""
from __future__ import annotations

import base64
import http.client
import json
import logging
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from forest.errors import ConfigError, ForestError, InvalidInput, NotFound
from forest.validation import parse_json
from forest.storage.vectors.base import VectorStore, VectorStoreError

log = logging.getLogger("forest.storage.vectors.rpc")

PROTOCOL = 1
MAX_BODY_BYTES = 64_000_000
BATCH = 2048           # vectors or ids per request: ~4 MB of 384-d vectors
TIMEOUT_SECONDS = 300  # one batch; an owner that hangs longer is reported, not waited for
SHUTDOWN_POLL_SECONDS = 0.02
TAKEOVER_WAIT_SECONDS = 30.0  # an owner whose endpoint stopped answering unlocks once Chroma is closed
METHODS = ("upsert", "query", "get_vectors", "update_metadata", "delete", "ids", "model_ids", "drop_other_embedders")
class OwnerGone(VectorStoreError):
    """The owner's endpoint did not answer (refused, reset, timed out), or answered that it is giving
    the store up: it may have exited, and the call is repeated with whoever owns the store next."""


_ERRORS: dict[str, type[ForestError]] = {cls.__name__: cls for cls in
                                         (ForestError, InvalidInput, NotFound, ConfigError, VectorStoreError, OwnerGone)}


def encode_array(array: np.ndarray) -> dict[str, Any]:
    array = np.ascontiguousarray(array, dtype=np.float32)
    return {"shape": list(array.shape), "b64": base64.b64encode(array.tobytes()).decode("ascii")}


def decode_array(value: dict[str, Any]) -> np.ndarray:
    return np.frombuffer(base64.b64decode(value["b64"]), dtype=np.float32).reshape(value["shape"]).copy()


def _ids(value: Any) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise InvalidInput("ids must be a list of integers")
    return value


def _dispatch(store: VectorStore, method: str, args: dict[str, Any]) -> Any:
    """One call on the owner's store, its arguments checked as strictly as the local store's types."""
    if method == "model_ids":
        return store.model_ids()
    model_id = args.get("model_id")
    if not isinstance(model_id, str) or not model_id:
        raise InvalidInput("model_id must be a non-empty string")
    if method == "ids":
        return store.ids(model_id)
    if method == "drop_other_embedders":
        return store.drop_other_embedders(model_id)
    if method == "query":
        top_k = args.get("top_k")
        if not isinstance(top_k, int):
            raise InvalidInput("top_k must be an integer")
        return store.query(model_id, decode_array(args["vector"]), top_k)
    ids = _ids(args.get("ids"))
    if method == "get_vectors":
        found = store.get_vectors(model_id, ids)
        rows = np.stack(list(found.values())) if found else np.zeros((0, 0), dtype=np.float32)
        return {"ids": list(found), "vectors": encode_array(rows)}
    if method == "delete":
        return store.delete(model_id, ids)
    metadatas = args.get("metadatas")
    if not isinstance(metadatas, list) or len(metadatas) != len(ids) or not all(isinstance(m, dict) for m in metadatas):
        raise InvalidInput("metadatas must be one object per id")
    if method == "update_metadata":
        return store.update_metadata(model_id, ids, metadatas)
    vectors = decode_array(args["vectors"])
    if vectors.ndim != 2 or len(vectors) != len(ids):
        raise InvalidInput("vectors must be one row per id")
    return store.upsert(model_id, ids, vectors, metadatas)


class VectorRPCServer:
    """Serves `stores(embedder, dim)` on 127.0.0.1 (an ephemeral port) to holders of the token.

    The caller names its embedder on every call, so vectors are checked against the embedder
    that made a collection exactly as in the caller's own process."""

    def __init__(self, stores: Callable[[str, int], VectorStore], location: str) -> None:
        self.token = secrets.token_urlsafe(32)
        self._stores = stores
        self._location = location
        self._stopping = False   # set before Chroma is closed under the calls still in flight
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        # stop() waits for the loop to see the request (up to one poll), and a command stops its
        # endpoint on the way out: a long poll delays every command's exit.
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": SHUTDOWN_POLL_SECONDS},
                                        name="forest-vector-owner", daemon=True)

    def start(self) -> VectorRPCServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping = True
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        rpc = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                status, reply = rpc._answer(self)
                data = json.dumps(reply).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # the owner's output is its own
                pass

        return Handler

    def _answer(self, request: BaseHTTPRequestHandler) -> tuple[int, dict[str, Any]]:
        headers = request.headers
        # Only this machine's forest processes: the Host must be the loopback address (no DNS
        # rebinding), a browser (Origin, Sec-Fetch-Site) is never served, and the token must match.
        if (headers.get("Host") != f"127.0.0.1:{self.port}" or "Origin" in headers or "Sec-Fetch-Site" in headers
                or not secrets.compare_digest(headers.get("Authorization", ""), f"Bearer {self.token}")):
            return 403, {"error": "forbidden", "kind": "ForestError"}
        method = request.path.strip("/")
        try:
            length = int(headers.get("Content-Length", "-1"))
        except ValueError:
            length = -1
        if method not in METHODS or not 0 <= length <= MAX_BODY_BYTES:
            return 400, {"error": f"bad vector request {method!r} of {length} bytes", "kind": "InvalidInput"}
        try:
            body = parse_json(request.rfile.read(length), "the vector request")
            store = self._stores(str(body["embedder"]), int(body["dim"]))
            return 200, {"result": _dispatch(store, method, body.get("args") or {})}
        except Exception as exc:
            if not self._stopping:
                return self._failed(method, exc)
            # the owner is giving the store up (Chroma closed under this call): the caller repeats
            # the call with whoever owns it next, as when the endpoint stops answering
            return 503, {"error": f"the process that owned {self._location} is giving it up", "kind": "OwnerGone"}

    def _failed(self, method: str, exc: Exception) -> tuple[int, dict[str, Any]]:
        """A failed call's reply: the ForestError class the local store would raise, or one line."""
        if isinstance(exc, ForestError):
            kind = type(exc).__name__
            return 400, {"error": str(exc), "kind": kind if kind in _ERRORS else "ForestError"}
        if isinstance(exc, (KeyError, TypeError, ValueError)):
            return 400, {"error": f"bad vector request {method!r}: {exc}", "kind": "InvalidInput"}
        # Chroma's own failures: the owner logs them, the caller gets one line
        log.error("vector %s for another process failed", method, exc_info=exc)
        return 500, {"error": f"the vector store at {self._location} failed: {type(exc).__name__}: {exc}",
                     "kind": "VectorStoreError"}


class OwnerVectorStore(VectorStore):
    """The vector store of the process that owns an embedded Chroma directory, reached over its
    loopback endpoint; errors come back as the same ForestError classes the local store raises."""

    def __init__(self, port: int, token: str, embedder_name: str, dim: int, owner: str) -> None:
        self.port, self._token = port, token
        self.embedder_name, self.dim = embedder_name, dim
        self.owner = owner
        self.location = f"{owner}, 127.0.0.1:{port}"

    def _call(self, method: str, **args: Any) -> Any:
        body = json.dumps({"embedder": self.embedder_name, "dim": self.dim, "args": args}).encode("utf-8")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT_SECONDS)
        try:
            conn.request("POST", f"/{method}", body, {"Authorization": f"Bearer {self._token}",
                                                      "Content-Type": "application/json"})
            response = conn.getresponse()
            status, data = response.status, response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise OwnerGone(
                f"the process that owns the vector store ({self.owner}) stopped answering: "
                f"{type(exc).__name__}: {exc}; if it is hung, stop it and run the command again "
                "(`forest doctor` reports anything left half-written)") from None
        finally:
            conn.close()
        try:
            reply = json.loads(data)
        except ValueError:
            raise VectorStoreError(f"the owner of the vector store ({self.owner}) sent an unreadable "
                                   f"reply (HTTP {status})") from None
        if status != 200:
            raise _ERRORS.get(reply.get("kind"), ForestError)(reply.get("error") or f"HTTP {status}")
        return reply["result"]

    def upsert(self, model_id: str, ids: Sequence[int], vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any]]) -> None:
        for start in range(0, len(ids), BATCH):
            stop = start + BATCH
            self._call("upsert", model_id=model_id, ids=[int(i) for i in ids[start:stop]],
                       vectors=encode_array(np.asarray(vectors[start:stop])), metadatas=list(metadatas[start:stop]))

    def query(self, model_id: str, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        found = self._call("query", model_id=model_id, vector=encode_array(np.asarray(vector)), top_k=int(top_k))
        return [(int(i), float(score)) for i, score in found]

    def get_vectors(self, model_id: str, ids: Sequence[int]) -> dict[int, np.ndarray]:
        found: dict[int, np.ndarray] = {}
        ids = [int(i) for i in ids]
        for start in range(0, len(ids), BATCH):
            got = self._call("get_vectors", model_id=model_id, ids=ids[start : start + BATCH])
            found.update(zip(got["ids"], decode_array(got["vectors"])))
        return found

    def update_metadata(self, model_id: str, ids: Sequence[int], metadatas: Sequence[dict[str, Any]]) -> None:
        for start in range(0, len(ids), BATCH):
            stop = start + BATCH
            self._call("update_metadata", model_id=model_id, ids=[int(i) for i in ids[start:stop]],
                       metadatas=list(metadatas[start:stop]))

    def delete(self, model_id: str, ids: Sequence[int]) -> None:
        ids = [int(i) for i in ids]
        for start in range(0, len(ids), BATCH):
            self._call("delete", model_id=model_id, ids=ids[start : start + BATCH])

    def ids(self, model_id: str) -> list[int]:
        return [int(i) for i in self._call("ids", model_id=model_id)]

    def model_ids(self) -> list[str]:
        return list(self._call("model_ids"))

    def drop_other_embedders(self, model_id: str) -> int:
        return int(self._call("drop_other_embedders", model_id=model_id))


class Owner(Protocol):
    """The process that owns a store, as its lock file names it (forest.storage.ownership.OwnerInfo)."""

    port: int
    token: str

    def describe(self) -> str: ...


class FollowedStore(VectorStore):
    """The embedded store while another process owns it: every call goes to the owner's endpoint.
    When the owner exits (a command that was writing beside this one finished first), its
    endpoint stops answering: this process takes the store over, or follows the process that did,
    and repeats the call (every call is idempotent). An owner still holding the lock after
    TAKEOVER_WAIT_SECONDS is hung, not gone: its error is raised.

    `reopen` tries the lock again (forest.storage.ownership, which hands it in, so this transport
    does not import the module that decides ownership): the store this process now owns, or the
    owner that holds the lock."""

    def __init__(self, chroma_path: Path, embedder_name: str, dim: int, owner: Owner,
                 reopen: Callable[[], VectorStore | Owner]) -> None:
        self._chroma_path = Path(chroma_path)
        self.embedder_name, self.dim = embedder_name, dim
        self._owner, self._reopen = owner, reopen
        self._backend = self._through(owner)
        self._switch_lock = threading.Lock()

    @property
    def location(self) -> str:
        return self._backend.location

    def _through(self, owner: Owner) -> VectorStore:
        return OwnerVectorStore(owner.port, owner.token, self.embedder_name, self.dim, owner.describe())

    def _run(self, method: str, *args: Any) -> Any:
        while True:
            backend = self._backend
            try:
                return getattr(backend, method)(*args)
            except OwnerGone as gone:
                with self._switch_lock:
                    if self._backend is backend:  # another thread may have switched already
                        self._backend = self._successor(gone)

    def _successor(self, gone: Exception) -> VectorStore:
        """The store this process now owns, or the endpoint of the process that took it over."""
        deadline = time.monotonic() + TAKEOVER_WAIT_SECONDS
        while True:
            held = self._reopen()
            if isinstance(held, VectorStore):
                log.info("the process that owned %s exited; this one took the store over", self._chroma_path)
                return held
            if held != self._owner:
                self._owner = held
                return self._through(held)
            if time.monotonic() > deadline:
                raise gone
            time.sleep(0.05)  # the owner is closing Chroma before it unlocks

    def upsert(self, model_id: str, ids: Sequence[int], vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any]]) -> None:
        self._run("upsert", model_id, ids, vectors, metadatas)

    def query(self, model_id: str, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        return self._run("query", model_id, vector, top_k)

    def get_vectors(self, model_id: str, ids: Sequence[int]) -> dict[int, np.ndarray]:
        return self._run("get_vectors", model_id, ids)

    def update_metadata(self, model_id: str, ids: Sequence[int], metadatas: Sequence[dict[str, Any]]) -> None:
        self._run("update_metadata", model_id, ids, metadatas)

    def delete(self, model_id: str, ids: Sequence[int]) -> None:
        self._run("delete", model_id, ids)

    def ids(self, model_id: str) -> list[int]:
        return self._run("ids", model_id)

    def model_ids(self) -> list[str]:
        return self._run("model_ids")

    def drop_other_embedders(self, model_id: str) -> int:
        return self._run("drop_other_embedders", model_id)

    def close(self) -> None:
        self._backend.close()  # a store taken over releases this process's ownership
