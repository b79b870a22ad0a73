"""Writers of one data directory take turns, across threads and processes.

SQLite is multi-process safe on its own (WAL). What it cannot see is the gap in appends and joins
between writing vectors under reserved ids and committing their rows; `WriterLock` makes writers
and `forest doctor` of one directory take turns across processes, so doctor never takes another
process's in-progress vectors for orphans.
"""
from __future__ import annotations

import fcntl
import logging
import os
import sys
import threading
import time
from pathlib import Path

from forest.errors import ForestError

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
    kernel if the holder dies). Vector snapshots are taken under it (forest.storage.vector_snapshots)."""

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
                raise self._busy("another thread of this process", limit)
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
                        raise self._busy(os.pread(fd, 200, 0).decode("utf-8", "replace") or "another process",
                                         limit) from None
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

    def _busy(self, holder: str, waited: float) -> ForestError:
        return ForestError(f"another writer ({holder}) has held the store at {self._path.parent} for over "
                           f"{waited:.0f} s; nothing was changed: try again once it is done")

    def release(self) -> None:
        fd, self._fd = self._fd, None
        os.close(fd)  # closing the only descriptor drops the flock
        self._thread_lock.release()

    def __enter__(self) -> WriterLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
