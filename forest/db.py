"""SQLite access: one connection per live thread (a finished thread's goes back to a small pool), WAL,
foreign keys, busy timeout, short transactions."""
from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forest.errors import ForestError
from forest.lexical import index_text
from forest.migrations import LATEST_VERSION, MIGRATIONS

BUSY_TIMEOUT_MS = 15_000
# Idle connections kept for new threads; beyond this a finished thread's connection is closed.
POOL_SIZE = 4


class Database:
    """The source of truth. Safe for many reader threads and one writer at a time."""

    def __init__(self, path: Path | str, *, upto_version: int | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._owned: dict[threading.Thread, sqlite3.Connection] = {}
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.migrate(LATEST_VERSION if upto_version is None else upto_version)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection. Streamlit runs every rerun on a new thread: when a thread asks for
        its first connection, those of finished threads are reclaimed (pooled or closed), so the open
        connections stay at the live threads plus POOL_SIZE, not one per thread ever seen."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            with self._lock:
                self._reclaim()
                conn = self._idle.pop() if self._idle else None
            conn = conn or self._open()
            with self._lock:
                self._owned[threading.current_thread()] = conn
            self._local.conn = conn
        return conn

    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: autocommit; writes go through transaction() explicitly.
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                               isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.create_function("forest_index_text", 3, index_text, deterministic=True)
        return conn

    def _reclaim(self) -> None:
        """Connections of finished threads go back to the pool (called with the lock held)."""
        for thread in [t for t in self._owned if not t.is_alive()]:
            conn = self._owned.pop(thread)
            if conn.in_transaction:  # a thread killed mid-transaction: nothing of it may commit later
                conn.rollback()
            if len(self._idle) < POOL_SIZE:
                self._idle.append(conn)
            else:
                conn.close()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return len(self._owned) + len(self._idle)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE takes the write lock up front, so a transaction never fails midway on it."""
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def query(self, sql: str, params: tuple | list = ()) -> list[sqlite3.Row]:
        return self.connection().execute(sql, params).fetchall()

    def query_one(self, sql: str, params: tuple | list = ()) -> sqlite3.Row | None:
        return self.connection().execute(sql, params).fetchone()

    @property
    def schema_version(self) -> int:
        return self.connection().execute("PRAGMA user_version").fetchone()[0]

    def migrate(self, target: int) -> None:
        with self.transaction() as conn:
            current = conn.execute("PRAGMA user_version").fetchone()[0]
            if current > LATEST_VERSION:
                raise ForestError(
                    f"{self.path} was written by a newer version of forest (schema {current}, "
                    f"this one knows {LATEST_VERSION}); upgrade forest to open it")
            for version, script in MIGRATIONS:
                if current < version <= target:
                    for statement in _statements(script):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {version}")

    def close(self) -> None:
        with self._lock:
            for conn in [*self._owned.values(), *self._idle]:
                conn.close()
            self._owned.clear()
            self._idle.clear()
        self._local = threading.local()


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit our transaction)."""
    statements, buffer = [], ""
    for line in script.splitlines():
        buffer += line + "\n"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    return [s for s in statements if s.strip(" ;\n")]
