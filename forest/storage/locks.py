"""Writers of one store take turns, across threads and processes (and hosts, on PostgreSQL).

The database is multi-process safe on its own. What it cannot see is the gap in builds, appends
and joins between writing vectors under reserved ids and committing their rows; the writer lock
makes writers and `forest doctor` of one store take turns, so doctor never takes another
process's in-progress vectors for orphans, and no two builds interleave. An embedded store's is
`WriterLock` (a file lock in the data directory); a PostgreSQL store's is `AdvisoryLock`.
"""
from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from forest.errors import DatabaseUnavailable, ForestError, one_line

log = logging.getLogger("forest")

# A writer holds the writer lock for its writes: seconds for a build or an import (their summaries
# and vectors are made before), longer for an append or a rebuild that summarizes with Claude.
WRITER_WAIT_SECONDS = 600.0


def process_command() -> str:
    """This process as a person would name it: "forest ingest paper.pdf"."""
    return (" ".join([Path(sys.argv[0]).name, *sys.argv[1:3]]) if sys.argv and sys.argv[0] else "python")[:120]


class WriterLock:
    """Writers (builds, appends, joins, deletes, imports) and `forest doctor` of one data directory
    take turns: across threads (a threading lock) and across processes (an flock, dropped by the
    kernel if the holder dies). Vector snapshots are taken under it (forest.storage.vectors.snapshots)."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / "writer.lock"
        self._thread_lock = threading.Lock()
        self._fd: int | None = None

    def acquire(self, wait: bool = True) -> bool:
        """Take the lock, waiting for the writer that holds it (a ForestError naming that writer
        after WRITER_WAIT_SECONDS); without `wait`, False if one does."""
        limit = WRITER_WAIT_SECONDS
        if not (self._thread_lock.acquire(timeout=limit) if wait else self._thread_lock.acquire(blocking=False)):
            if wait:
                raise _busy("another thread of this process", str(self._path.parent), limit)
            return False
        fd = None
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            deadline, warned = time.monotonic() + limit, False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait:
                        os.close(fd)
                        self._thread_lock.release()
                        return False
                    if time.monotonic() > deadline:
                        raise _busy(os.pread(fd, 200, 0).decode("utf-8", "replace") or "another process",
                                    str(self._path.parent), limit) from None
                    if not warned:
                        log.warning("waiting for another process writing to %s to finish", self._path.parent)
                        warned = True
                    time.sleep(0.05)
            os.ftruncate(fd, 0)  # who holds it, for the message of a writer that gives up waiting
            os.pwrite(fd, f"pid {os.getpid()}: {process_command()}".encode("utf-8"), 0)
        except BaseException:
            if fd is not None:
                os.close(fd)
            self._thread_lock.release()
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        os.close(fd)  # closing the only descriptor drops the flock
        self._thread_lock.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class AdvisoryLock:
    """The writer lock of a PostgreSQL store: a session advisory lock, held for the write on a
    connection of its own; PostgreSQL drops it when that connection ends (its process died), on
    whatever host. Same interface as WriterLock."""

    def __init__(self, pool: Any, key: int, location: str) -> None:
        self._pool, self._key, self._location = pool, key, location
        self._thread_lock = threading.Lock()
        self._conn: Any = None

    def acquire(self, wait: bool = True) -> bool:
        limit = WRITER_WAIT_SECONDS
        if not (self._thread_lock.acquire(timeout=limit) if wait else self._thread_lock.acquire(blocking=False)):
            if wait:
                raise _busy("another thread of this process", self._location, limit)
            return False
        conn = None
        try:
            conn = self._pool.getconn()
            deadline, warned = time.monotonic() + limit, False
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (self._key,)).fetchone()[0]:
                if not wait:
                    self._pool.putconn(conn)
                    self._thread_lock.release()
                    return False
                if time.monotonic() > deadline:
                    raise _busy(self._holder(conn), self._location, limit)
                if not warned:
                    log.warning("waiting for another process writing to %s to finish", self._location)
                    warned = True
                time.sleep(0.05)
        except BaseException as exc:
            if conn is not None:
                self._pool.putconn(conn)
            self._thread_lock.release()
            if lost := _connection_lost(exc):
                raise DatabaseUnavailable(f"the connection to PostgreSQL at {self._location} failed while taking "
                                          f"a lock: {lost}") from None
            raise
        self._conn = conn
        return True

    def taken(self) -> AdvisoryLock:
        """This lock, taken now (for a name no one else takes, so it never waits long)."""
        self.acquire()
        return self

    def _holder(self, conn: Any) -> str:
        """The holder's application name ("forest pid 12: forest ingest paper.pdf")."""
        row = conn.execute(
            "SELECT a.application_name, a.client_addr FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s",
            ((self._key >> 32) & 0xFFFFFFFF, self._key & 0xFFFFFFFF)).fetchone()
        if row is None:
            return "another process"
        return f"{row[0] or 'a client'}{f' at {row[1]}' if row[1] else ''}"

    def release(self) -> None:
        conn, self._conn = self._conn, None
        try:
            conn.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        except Exception as exc:  # a lost connection took the lock with it
            log.warning("the writer lock of %s was lost with its connection: %s", self._location, exc)
        finally:
            self._pool.putconn(conn)
            self._thread_lock.release()

    def __enter__(self) -> AdvisoryLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _connection_lost(exc: BaseException) -> str | None:
    """Why the server could not be reached (the pool gave up waiting, a connection died), in one
    line; None for any other error."""
    import psycopg
    from psycopg_pool import PoolTimeout

    return one_line(exc) if isinstance(exc, (PoolTimeout, psycopg.OperationalError)) else None


def _busy(holder: str, location: str, waited: float) -> ForestError:
    return ForestError(f"another writer ({holder}) has held the store at {location} for over "
                       f"{waited:.0f} s; nothing was changed: try again once it is done")
