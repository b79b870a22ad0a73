"""Processes sharing one data directory: one owns its embedded Chroma store, the others reach it
through that owner, and writers take turns.

Chroma's embedded PersistentClient is not safe across processes. The first process to open a
data directory's embedded store takes an exclusive flock on `<data_dir>/chroma.owner` and writes
into it (mode 0600) its pid, its command and the loopback port and random token of its vector
endpoint (forest.storage.vectors.rpc). Every other process that needs vectors finds the lock held and
forwards its calls to the owner (rpc.FollowedStore), the way a docker CLI talks to its
daemon: Chroma is never opened twice. A server (`forest serve`, the workbench) must own the store
and is refused when another process does. The kernel drops an flock when its process dies, however
it dies, so an owner that exits leaves nothing stale: the next process finds the lock free, takes
over and rewrites the file, and a process that was forwarding to it does the same and goes on
(two commands started together both finish, whichever exits first).
Writers of one data directory take turns through forest.storage.locks.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from forest.config import Settings
from forest.errors import ForestError
from forest.storage.locks import process_command
from forest.storage.private_files import make_private_dir

# forest.storage.vectors.rpc (http.server, http.client) loads when vectors are first needed, so
# commands that read only SQLite do not pay for it.
if TYPE_CHECKING:
    from forest.storage.vectors.base import VectorStore
    from forest.storage.vectors.chroma import ChromaVectorStore

log = logging.getLogger("forest")

PUBLISH_WAIT_SECONDS = 10.0  # an owner publishes its endpoint right after taking the lock


@dataclass(frozen=True)
class OwnerInfo:
    """What the owning process published in the lock file."""

    pid: int
    command: str
    port: int
    token: str

    def describe(self) -> str:
        return f"pid {self.pid}: {self.command}"


class Ownership:
    """This process owns an embedded Chroma directory: the lock, and the endpoint that serves it
    to the other processes. Shared by every user in the process; gone with the last release."""

    def __init__(self, chroma_path: Path, fd: int, use_snapshots: bool) -> None:
        from forest.storage.vectors.rpc import PROTOCOL, VectorRPCServer

        self.chroma_path = chroma_path
        self.use_snapshots = use_snapshots  # a command's store: other processes' reads too
        self._fd = fd
        self._refs = 1
        self._stores: dict[tuple[str, int], ChromaVectorStore] = {}
        self._stores_lock = threading.Lock()
        self._released = False
        self._server = VectorRPCServer(self._store, str(chroma_path)).start()
        record = {"protocol": PROTOCOL, "pid": os.getpid(), "command": process_command(), "port": self._server.port,
                  "token": self._server.token}
        os.fchmod(fd, 0o600)  # the token is a credential
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode("utf-8"), 0)

    def _store(self, embedder_name: str, dim: int) -> ChromaVectorStore:
        """The store another process's calls go to, one per embedder (collections check theirs)."""
        from forest.storage.vectors.base import VectorStoreError
        from forest.storage.vectors.chroma import ChromaVectorStore

        with self._stores_lock:
            if self._released:  # a call that raced the release must not reopen Chroma unlocked
                raise VectorStoreError(f"the process that owned {self.chroma_path} is giving it up; "
                                       "run the command again")
            key = (embedder_name, dim)
            if key not in self._stores:
                self._stores[key] = ChromaVectorStore(path=self.chroma_path, embedder_name=embedder_name, dim=dim,
                                                      use_snapshots=self.use_snapshots)
            return self._stores[key]

    def release(self) -> None:
        """One user is done; the last one stops the endpoint, closes Chroma, then unlocks."""
        with _registry_lock:
            self._refs -= 1
            if self._refs > 0:
                return
            del _owned[self.chroma_path]
            self._server.stop()
            with self._stores_lock:
                self._released = True
            for store in self._stores.values():
                store.close()
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)


_owned: dict[Path, Ownership] = {}
_registry_lock = threading.Lock()


def _forget_in_child() -> None:
    """A forked child must not keep the lock alive after its parent (flock belongs to the open file,
    which fork shares): it closes its copies and owns nothing."""
    for ownership in _owned.values():
        os.close(ownership._fd)
    _owned.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def owner_file(chroma_path: Path) -> Path:
    return Path(chroma_path).with_name(Path(chroma_path).name + ".owner")


def acquire(chroma_path: Path, use_snapshots: bool = False) -> Ownership | OwnerInfo:
    """Own the embedded store at `chroma_path` (shared if this process already does), or learn
    which process owns it. `use_snapshots`: see open_embedded."""
    chroma_path = Path(chroma_path).resolve()
    path = owner_file(chroma_path)
    deadline = time.monotonic() + PUBLISH_WAIT_SECONDS
    while True:
        with _registry_lock:
            mine = _owned.get(chroma_path)
            if mine is not None:
                mine._refs += 1
                return mine
            make_private_dir(path.parent)  # the data directory, when this is its first use
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
            else:
                try:
                    _owned[chroma_path] = Ownership(chroma_path, fd, use_snapshots)
                except BaseException:
                    os.close(fd)
                    raise
                return _owned[chroma_path]
        info = _read_owner(path)
        if info is not None:
            return info
        if time.monotonic() > deadline:
            raise ForestError(f"another process holds {path} but has not published its endpoint for "
                              f"{PUBLISH_WAIT_SECONDS:.0f} s; is an older version of forest running on this store?")
        time.sleep(0.05)  # the owner is between taking the lock and writing the file


def _read_owner(path: Path) -> OwnerInfo | None:
    from forest.storage.vectors.rpc import PROTOCOL

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # not written yet
    if record.get("protocol") != PROTOCOL:
        raise ForestError(f"the process that owns this store (pid {record.get('pid')}) speaks vector protocol "
                          f"{record.get('protocol')}, this forest speaks {PROTOCOL}: restart it with this version")
    return OwnerInfo(int(record["pid"]), str(record["command"]), int(record["port"]), str(record["token"]))


def open_embedded(chroma_path: Path, embedder_name: str, dim: int, use_snapshots: bool = False) -> VectorStore:
    """The embedded store when this process owns it (taking ownership if the directory is free),
    else the owner's store over its endpoint (FollowedStore); Chroma is imported only in the
    first case.

    `use_snapshots` is for short commands: the store they own answers reads (theirs and other
    processes') from current vector snapshots and opens Chroma only for what those do not hold
    (forest.storage.vectors.snapshots); a long-running owner searches Chroma's index."""
    held = acquire(chroma_path, use_snapshots)
    if isinstance(held, OwnerInfo):
        from forest.storage.vectors.rpc import FollowedStore

        def reopen() -> VectorStore | OwnerInfo:
            again = acquire(chroma_path, use_snapshots)
            return again if isinstance(again, OwnerInfo) else owned_store(again, embedder_name, dim)

        return FollowedStore(chroma_path, embedder_name, dim, held, reopen)
    return owned_store(held, embedder_name, dim)


def owned_store(held: Ownership, embedder_name: str, dim: int) -> ChromaVectorStore:
    from forest.storage.vectors.chroma import ChromaVectorStore

    try:
        return ChromaVectorStore(path=held.chroma_path, embedder_name=embedder_name, dim=dim, on_close=held.release,
                                 use_snapshots=held.use_snapshots)
    except BaseException:
        held.release()
        raise


def uses_embedded_chroma(settings: Settings) -> bool:
    return settings.vector_store in ("auto", "chroma") and not settings.chroma_host


def claim_for_server(settings: Settings) -> Ownership | None:
    """A server must own its embedded store: refused, naming the way to share one, when another
    process does. None when the vectors are not in an embedded Chroma (a Chroma server, pgvector
    and Qdrant serve any number of processes)."""
    if not uses_embedded_chroma(settings):
        return None
    held = acquire(settings.chroma_path)
    if isinstance(held, Ownership):
        return held
    raise ForestError(
        f"the embedded vector store of {Path(settings.data_dir).resolve()} is in use by another process "
        f"({held.describe()}), and an embedded Chroma store serves one process only. Stop that process first, "
        "or run Chroma as a server that every process shares: "
        f"`chroma run --path {Path(settings.chroma_path).resolve()} --port 8000`, then set chroma_host and "
        "chroma_port (FOREST_CHROMA_HOST=127.0.0.1 FOREST_CHROMA_PORT=8000) for each process. "
        "forest commands (ingest, context, doctor...) work beside the running process as they are.")
