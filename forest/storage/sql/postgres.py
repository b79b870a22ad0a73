"""PostgreSQL, the server stack's truth: a pool of psycopg 3 connections that any number of processes
and hosts share (no process owns the store). The stores' SQL comes as written for both databases,
with sqlite3's `?` parameters; this module passes it to psycopg and gives rows readable by
position or column name, as sqlite3.Row is.

Transactions run at READ COMMITTED; where a store needs no two writers to interleave (one user's
personal writes, one model_id's notes) it names a lock and the transaction takes it
(pg_advisory_xact_lock), which SQLite's one-writer-at-a-time gives for free. A lost connection
(the server restarted) fails the call in hand with one line; the pool checks each connection it
hands out (without a round trip: check_closed), so the next call connects again.
"""
from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from forest.config import without_password
from forest.errors import DatabaseUnavailable, ForestError, one_line
from forest.storage.locks import AdvisoryLock, process_command
from forest.storage.sql.database import Database
from forest.storage.sql.migrations import LATEST_VERSION

log = logging.getLogger("forest.storage.sql.postgres")

# Connections one process may hold at once: one per concurrent request, query or write.
POOL_SIZE = 10
CONNECT_TIMEOUT_SECONDS = 10
# How long a call waits for a free connection before it is refused.
POOL_WAIT_SECONDS = 30.0
# What finish_erasures rewrites for each kind of deleted text: PostgreSQL keeps a deleted row's
# bytes in its page (and plain VACUUM only marks the space free), in TOAST and in index pages.
_ERASURE_TABLES = {
    "node_text": ("node_text", "node_text_overflow", "node_text_lexemes", "memory_nodes", "archive_merges",
                  "archives"),
    "personal_memory_text": ("personal_memory_text", "personal_memory_text_overflow",
                             "personal_memory_text_lexemes", "personal_memories", "personal_memory_history",
                             "personal_triples", "personal_triple_sources"),
    "WAL": ("personal_write_queue",),
}
_ERASURE_TABLES["VACUUM"] = tuple(t for tables in _ERASURE_TABLES.values() for t in tables)
# How long an erasure's table rewrite waits for readers and writers of the table to let go: while it
# waits, later queries of the table queue behind it. Past it, the mark stays for the next erasure
# or the next open of the store.
ERASURE_LOCK_TIMEOUT_MS = 2000


@functools.cache
def _warn_once(message: str) -> None:
    """Said once per process: a deployer's setting, not each call's news."""
    log.warning(message)


def check_closed(conn: Any) -> None:
    """The pools' check of a connection before handing it out: raises if the server closed it (a
    restart, pg_terminate_backend) while it sat in the pool. It reads what the server sent
    meanwhile, without blocking, and sends nothing: a query per checkout (psycopg_pool's
    check_connection) doubled the round trips of a tool call (a retrieve makes about four
    checkouts) and, under load, each one waits for the GIL again. A server that vanished without
    closing (a network cut) shows only on the next query, as it would to a checkout's query."""
    import psycopg
    from psycopg.pq import ConnStatus

    # libpq's socket is non-blocking: each call takes only what has arrived. Twice: a server ending
    # a connection sends a FATAL message, then closes; one read takes the message, the next meets
    # the end of the stream (and raises).
    conn.pgconn.consume_input()
    conn.pgconn.consume_input()
    if conn.pgconn.status != ConnStatus.OK:
        raise psycopg.OperationalError("the server closed the connection")


def lock_key(name: str) -> int:
    """A name as the 64-bit key of a PostgreSQL advisory lock."""
    return int.from_bytes(hashlib.blake2b(f"memory-forest:{name}".encode("utf-8"), digest_size=8).digest(),
                          "big", signed=True)


@functools.lru_cache(maxsize=2048)
def pyformat(sql: str) -> str:
    """sqlite3's `?` parameters as psycopg's `%s` (and a literal % as %%); a `?` inside a quoted
    literal or identifier stays."""
    out, quote = [], None
    for char in sql:
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "?":
            out.append("%s")
            continue
        out.append("%%" if char == "%" else char)
    return "".join(out)


def check_connection(pool: Any, conn: Any) -> None:
    """A pool's check of each connection it hands out. One that fails means the server went away
    (a restart closes every connection), so every idle one is checked at once and the dead ones
    replaced: else the caller would try them one by one, psycopg_pool sleeping 1, 2, 4, 8 s...
    between tries, and a pool of six idle connections made the first call after a restart wait
    30 s (POOL_WAIT_SECONDS) with the server back in one."""
    try:
        check_closed(conn)
    except Exception:
        pool.check()
        raise


class Row(tuple):
    """A result row read by position or by column name, like sqlite3.Row."""

    _names: dict[str, int] = {}

    def __getitem__(self, key: Any) -> Any:
        return tuple.__getitem__(self, self._names[key] if isinstance(key, str) else key)

    def keys(self) -> list[str]:
        return list(self._names)


def row_factory(cursor: Any) -> Any:
    if cursor.description is None:
        return tuple
    names = {column.name: i for i, column in enumerate(cursor.description)}
    return type("Row", (Row,), {"_names": names, "__slots__": ()})


class PgConnection:
    """A psycopg connection that takes the stores' SQL (`?` parameters); `raw` is psycopg's."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.raw.execute(pyformat(sql), tuple(params))

    def executemany(self, sql: str, seq: Any) -> Any:
        cursor = self.raw.cursor()
        cursor.executemany(pyformat(sql), [tuple(p) for p in seq])
        return cursor

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE


class PostgresDatabase(Database):
    dialect = "postgres"
    null_safe = "IS NOT DISTINCT FROM"
    cross_join = "JOIN"          # PostgreSQL plans the join order itself
    skip_locked = "FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str, *, upto_version: int | None = None, pool_size: int = POOL_SIZE) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self.location = without_password(url)
        connect = {"autocommit": True, "row_factory": row_factory, "connect_timeout": CONNECT_TIMEOUT_SECONDS,
                   "application_name": f"forest pid {os.getpid()}: {process_command()}"[:63]}
        try:  # one direct connection first: its error says why (refused, no such database, password)
            psycopg.connect(url, **connect).close()
        except psycopg.Error as exc:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL at {self.location}: "
                                      f"{one_line(exc)}") from None
        self._pool = ConnectionPool(url, kwargs=connect, min_size=1, max_size=pool_size, open=True,
                                    timeout=POOL_WAIT_SECONDS, check=lambda conn: check_connection(self._pool, conn),
                                    name="forest")
        self._local = threading.local()
        self.migrate(LATEST_VERSION if upto_version is None else upto_version)
        self.finish_erasures()

    # --- connections ----------------------------------------------------------------------
    @contextmanager
    def _borrowed(self) -> Iterator[PgConnection]:
        """This thread's connection inside a transaction, else one from the pool for the call."""
        import psycopg
        from psycopg_pool import PoolTimeout

        current = getattr(self._local, "conn", None)
        if current is not None:
            yield current
            return
        try:
            with self._pool.connection() as raw:
                yield PgConnection(raw)
        except PoolTimeout:
            raise DatabaseUnavailable(f"no connection to PostgreSQL at {self.location} came free within "
                                      f"{POOL_WAIT_SECONDS:.0f} s (every one of the {self._pool.max_size} is busy, "
                                      "or the server is down)") from None
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailable(f"the connection to PostgreSQL at {self.location} failed: "
                                      f"{one_line(exc)}") from None

    @contextmanager
    def transaction(self, lock: str | None = None) -> Iterator[PgConnection]:
        if getattr(self._local, "conn", None) is not None:
            raise ForestError("a transaction is already open in this thread")
        with self._borrowed() as conn:
            with conn.raw.transaction():
                if lock is not None:
                    conn.execute("SELECT pg_advisory_xact_lock(?)", (lock_key(lock),))
                self._local.conn = conn
                try:
                    yield conn
                finally:
                    self._local.conn = None

    @contextmanager
    def snapshot(self) -> Iterator[PgConnection]:
        current = getattr(self._local, "conn", None)
        if current is not None:  # already inside a transaction: it is the snapshot
            yield current
            return
        with self._borrowed() as conn:
            conn.raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            self._local.conn = conn
            try:
                yield conn
            finally:
                self._local.conn = None
                conn.raw.execute("ROLLBACK")

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._read(lambda conn: conn.execute(sql, params).fetchall())

    def query_tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        from psycopg.rows import tuple_row

        def read(conn: PgConnection) -> list[tuple]:
            with conn.raw.cursor(row_factory=tuple_row) as cursor:
                return cursor.execute(pyformat(sql), tuple(params)).fetchall()

        return self._read(read)

    def _read(self, read: Any) -> Any:
        """A read outside a transaction is tried again once on a new connection if the one it had
        was lost (a restarted server closes every connection the pool holds)."""
        inside = getattr(self._local, "conn", None) is not None
        try:
            with self._borrowed() as conn:
                return read(conn)
        except DatabaseUnavailable:
            if inside:
                raise
            with self._borrowed() as conn:
                return read(conn)

    # --- what differs from SQLite ---------------------------------------------------------
    def reserve_ids(self, conn: PgConnection, table: str, count: int) -> int:
        """A block of the table's identity sequence, taken under a transaction lock so that no
        other reservation interleaves (nextval alone gives no consecutive block)."""
        conn.execute("SELECT pg_advisory_xact_lock(?)", (lock_key(f"ids:{table}"),))
        sequence = conn.execute("SELECT pg_get_serial_sequence(?, 'id')", (table,)).fetchone()[0]
        base = conn.execute("SELECT nextval(?)", (sequence,)).fetchone()[0]
        if count > 1:
            conn.execute("SELECT setval(?, ?)", (sequence, base + count - 1))
        return int(base)

    def json_equals(self, column: str, key: str, value: Any) -> tuple[str, list[Any]]:
        import json

        return f"({column}::jsonb -> ?) = ?::jsonb", [key, json.dumps(value)]

    def hold(self, name: str) -> Any:
        """A session advisory lock on a connection of its own, for as long as the work lasts:
        PostgreSQL drops it when the process dies, whatever host it ran on."""
        return AdvisoryLock(self._pool, lock_key(name), self.location).taken()

    def held(self, name: str) -> bool:
        key = lock_key(name)
        return bool(self.query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = ? "
            "AND objid = ? AND objsubid = 1)", ((key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF))[0])

    def writer_lock(self) -> AdvisoryLock:
        return AdvisoryLock(self._pool, lock_key("writer"), self.location)

    # --- schema and erasure ---------------------------------------------------------------
    @property
    def schema_version(self) -> int:
        row = self.query_one("SELECT version FROM forest_schema")
        return int(row[0]) if row else 0

    def migrate(self, target: int) -> None:
        """Under a lock, so that processes starting together migrate once; DDL is transactional here,
        so a failed migration leaves the schema as it was."""
        with self.transaction(lock="migrations") as conn:
            conn.raw.execute("CREATE TABLE IF NOT EXISTS forest_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT version FROM forest_schema").fetchone()
            if row is None:
                conn.execute("INSERT INTO forest_schema (version) VALUES (0)")
            current = row[0] if row else 0
            self._check_version(current)
            for version, scripts in self._pending_migrations(current, target):
                for script in scripts:
                    conn.raw.execute(script)  # several statements: the simple query protocol, no parameters
                conn.execute("UPDATE forest_schema SET version = ?", (version,))

    def finish_erasures(self) -> bool:
        """Deleted text leaves the server's files: the tables that held the marked text are
        rewritten (VACUUM FULL: a new heap, TOAST and indexes without the dead rows; the old files
        are removed), then the WAL that recorded the text is ended and, at the next checkpoint,
        removed (with wal_recycle = off; docs/server-stack.md). False, the marks kept for the next
        erasure or open, when a table stayed busy past ERASURE_LOCK_TIMEOUT_MS. Replicas and
        backups are the deployer's to expire."""
        import psycopg

        marks = self.query("SELECT id, target FROM pending_erasures")
        if not marks:
            return True
        last = max(m["id"] for m in marks)
        tables = sorted({t for m in marks for t in _ERASURE_TABLES.get(m["target"], ())})
        with self._borrowed() as conn:
            try:
                conn.raw.execute(f"SET lock_timeout = {ERASURE_LOCK_TIMEOUT_MS}")
                for table in tables:
                    conn.raw.execute(f"VACUUM (FULL) {table}")  # autocommit: VACUUM runs outside a transaction
            except psycopg.errors.LockNotAvailable:
                log.warning("deleted text stays in PostgreSQL's files until the next erasure: a table was busy")
                return False
            finally:
                conn.raw.execute("RESET lock_timeout")
        with self.transaction() as conn:
            conn.execute("DELETE FROM pending_erasures WHERE id <= ?", (last,))
        self._end_wal()
        return True

    def _end_wal(self) -> None:
        """A checkpoint writes the rewritten tables out; pg_switch_wal ends the WAL segment that
        recorded the deleted text; the second checkpoint makes that segment unneeded, and the
        server removes it (or, with wal_recycle on, renames it for reuse with the text inside)."""
        import psycopg

        with self._borrowed() as conn:
            try:
                for statement in ("CHECKPOINT", "SELECT pg_switch_wal()", "CHECKPOINT"):
                    conn.raw.execute(statement)
                recycled = conn.raw.execute("SHOW wal_recycle").fetchone()[0] == "on"
            except psycopg.errors.InsufficientPrivilege as exc:
                _warn_once("deleted text stays in PostgreSQL's WAL until the server recycles it: the database "
                           f"role may not end the WAL ({one_line(exc)}); grant it pg_checkpoint and EXECUTE "
                           "on pg_switch_wal (docs/server-stack.md)")
                return
        if recycled:
            _warn_once("deleted text stays in PostgreSQL's WAL segments kept for reuse: set wal_recycle = off "
                       "on the server (docs/server-stack.md)")

    def close(self) -> None:
        self._pool.close()
