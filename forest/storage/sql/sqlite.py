"""SQLite, the embedded default: one connection per live thread (a finished thread's goes back to a
small pool), WAL, foreign keys, busy timeout, short transactions; a private file whose deleted
text is overwritten."""
from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from forest.storage.fulltext.fts5 import index_text
from forest.storage.locks import WriterLock
from forest.storage.private_files import claim_store_dir, create_private_file, make_private_dir
from forest.storage.sql.database import ERASABLE_INDEXES, ERASURES_VERSION, Database
from forest.storage.sql.migrations import LATEST_VERSION

log = logging.getLogger("forest")

BUSY_TIMEOUT_MS = 15_000
# Idle connections kept for new threads; beyond this a finished thread's connection is closed.
POOL_SIZE = 4


class SQLiteDatabase(Database):
    """One file; many reader threads and one writer at a time (BEGIN IMMEDIATE), across processes."""

    dialect = "sqlite"
    null_safe = "IS"
    cross_join = "CROSS JOIN"
    skip_locked = ""   # one writer at a time: nothing to skip

    def __init__(self, path: Path | str, *, upto_version: int | None = None) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        make_private_dir(self.path.parent)
        if not self.path.exists():
            claim_store_dir(self.path.parent)
        create_private_file(self.path)  # SQLite gives its WAL and shared-memory files this mode
        self._local = threading.local()
        self._owned: dict[threading.Thread, sqlite3.Connection] = {}
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self.migrate(LATEST_VERSION if upto_version is None else upto_version)
        if self.schema_version >= ERASURES_VERSION:
            self.finish_erasures()  # what a process that stopped after deleting left undone

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
        # Deleted rows and freed pages are overwritten with zeros: deleted text stays in no page.
        conn.execute("PRAGMA secure_delete = ON")
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
    def transaction(self, lock: str | None = None) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE takes the write lock up front, so a transaction never fails midway on it
        (and no two writers interleave: `lock` needs nothing more)."""
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        conn = self.connection()
        if conn.in_transaction:  # already inside one: it is the snapshot
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        return self.connection().execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        return self.connection().execute(sql, params).fetchone()

    def query_tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        cursor = self.connection().cursor()
        cursor.row_factory = None  # plain tuples: sqlite3.Row objects slow a read of many rows
        return cursor.execute(sql, params).fetchall()

    def reserve_ids(self, conn: sqlite3.Connection, table: str, count: int) -> int:
        """From sqlite_sequence (AUTOINCREMENT's counter), which the write lock keeps to one writer."""
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        top = conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}").fetchone()[0]
        base = max(seq[0] if seq else 0, top) + 1
        if seq is None:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (table, base + count - 1))
        else:
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (base + count - 1, table))
        return base

    def json_equals(self, column: str, key: str, value: Any) -> tuple[str, list[Any]]:
        # json_extract compares JSON scalars; the key is a bound path, never SQL.
        return f"json_extract({column}, ?) = ?", [f'$."{key}"', value]

    def writer_lock(self) -> WriterLock:
        return WriterLock(self.path.parent)

    @property
    def schema_version(self) -> int:
        return self.connection().execute("PRAGMA user_version").fetchone()[0]

    def migrate(self, target: int) -> None:
        with self.transaction() as conn:
            current = conn.execute("PRAGMA user_version").fetchone()[0]
            self._check_version(current)
            for version, scripts in self._pending_migrations(current, target):
                for script in scripts:
                    for statement in _statements(script):
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {version}")

    def finish_erasures(self) -> bool:
        """Make deleted text leave the files: the FTS5 indexes marked by mark_erased are merged
        into one segment (an FTS5 delete only adds a tombstone; the old segments keep the terms),
        the file is rewritten if marked (VACUUM), and the WAL, which still holds old page images,
        is checkpointed and truncated; only then are the marks removed. True when nothing is left
        to do; False when another connection kept the WAL busy (the next erasure or the next open
        of the store finishes it)."""
        marks = self.query("SELECT id, target FROM pending_erasures")
        if not marks:
            return True
        # Only the marks seen now are removed at the end: a delete committed meanwhile (by another
        # thread or process) leaves a newer mark, which its own finish_erasures handles.
        targets, last = {m["target"] for m in marks}, max(m["id"] for m in marks)
        for target in [t for t in targets if t in ERASABLE_INDEXES]:
            with self.transaction() as conn:
                conn.execute(f"INSERT INTO {target} ({target}) VALUES ('optimize')")
        conn = self.connection()
        try:
            if "VACUUM" in targets:
                conn.execute("VACUUM")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError as exc:  # another connection is writing: try again later
            log.warning("deleted text may stay in %s until its next erasure: %s", self.path, exc)
            return False
        if busy:
            log.warning("deleted text may stay in %s-wal until its next erasure: a reader held it", self.path)
            return False
        with self.transaction() as conn:
            conn.execute("DELETE FROM pending_erasures WHERE id <= ?", (last,))
        return True

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
