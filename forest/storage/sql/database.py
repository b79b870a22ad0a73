"""The database that holds the truth, behind one interface: SQLite (a file in the data directory,
the embedded default, forest.storage.sql.sqlite) or PostgreSQL (a server that any number of processes
and hosts share, forest.storage.sql.postgres); forest.storage.sql.opening opens the one the settings name.

The stores write their SQL once, in what both databases speak, with sqlite3's `?` parameters;
what differs is asked of the database: a fragment (`db.null_safe`, `db.cross_join`,
`db.skip_locked`, `db.json_equals`), a step (`reserve_ids`, `finish_erasures`, the writer lock)
or a module per dialect (full-text search). Why not SQLAlchemy Core: the SQL here is hand-planned
for each engine (FTS5's planner, covering indexes, CROSS JOIN hints), and what the two dialects
share is most of it; a thin layer keeps that SQL as written and readable.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from forest.errors import ForestError
from forest.storage.sql.migrations import LATEST_VERSION, MIGRATIONS

log = logging.getLogger("forest")

# The full-text indexes whose old segments keep deleted terms until merged.
ERASABLE_INDEXES = ("personal_memory_text", "node_text")
# A mark for text deleted outside any index: only the WAL's old page images still hold it.
WAL = "WAL"
ERASURES_VERSION = 11   # the migration that made pending_erasures


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """What a store's SQL runs on inside a transaction: sqlite3's, or forest.storage.sql.postgres's
    adapter that takes the same `?` parameters."""

    def execute(self, sql: str, params: Sequence[Any] = ...) -> Cursor: ...
    def executemany(self, sql: str, seq: Any) -> Cursor: ...


class Lock(Protocol):
    """Writers of one store take turns (forest.storage.locks)."""

    def acquire(self, wait: bool = True) -> bool: ...
    def release(self) -> None: ...
    def __enter__(self) -> Any: ...
    def __exit__(self, *exc: object) -> None: ...


class Database(ABC):
    """The source of truth. Safe for many reader threads; writes go through short transactions."""

    dialect: ClassVar[str]
    # `a IS b` that is true when both are NULL.
    null_safe: ClassVar[str]
    # A join the planner must not reorder (SQLite keeps the left table outside on CROSS JOIN).
    cross_join: ClassVar[str]
    # Rows a worker claims that other workers skip instead of waiting for.
    skip_locked: ClassVar[str]
    location: str   # for messages: a path, or a URL without its password

    @abstractmethod
    def transaction(self, lock: str | None = None) -> AbstractContextManager[Connection]:
        """A write transaction; `lock` names what it must not interleave with (a user, a model_id):
        SQLite runs one writer at a time anyway, PostgreSQL takes that lock for the transaction."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[Connection]:
        """A read-only transaction: its statements (and this thread's query calls) read one snapshot."""

    @abstractmethod
    def query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """Rows read by position or by column name."""

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> Any | None:
        rows = self.query(sql, params)
        return rows[0] if rows else None

    @abstractmethod
    def query_tuples(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        """Plain tuples: a read of many rows without the cost of named rows."""

    @abstractmethod
    def reserve_ids(self, conn: Connection, table: str, count: int) -> int:
        """Inside a transaction: the first of `count` consecutive ids of `table` that no other writer
        will get (rows may then be written under them in any order)."""

    @abstractmethod
    def json_equals(self, column: str, key: str, value: Any) -> tuple[str, list[Any]]:
        """A condition (SQL, params): the JSON object in `column` has `key` equal to `value`."""

    def hold(self, name: str) -> Any:
        """Mark something this process is doing (an archive's build) so that another process, on any
        host, can tell whether it is still at it (`held`); `.release()` ends it. PostgreSQL only:
        on SQLite, one host's process ids tell (forest.doctor)."""
        return _NOTHING_HELD

    def held(self, name: str) -> bool | None:
        """Whether a live process holds `name`; None when the database cannot tell."""
        return None

    @abstractmethod
    def writer_lock(self) -> Lock:
        """The lock writers of this store (builds, appends, joins, deletes, imports, doctor) take turns with."""

    @property
    @abstractmethod
    def schema_version(self) -> int: ...

    @abstractmethod
    def migrate(self, target: int) -> None: ...

    @abstractmethod
    def finish_erasures(self) -> bool:
        """Make deleted text leave what the database keeps of it (see each dialect); True when
        nothing is left to do."""

    @abstractmethod
    def close(self) -> None: ...

    def _check_version(self, current: int) -> None:
        if current > LATEST_VERSION:
            raise ForestError(
                f"{self.location} was written by a newer version of forest (schema {current}, "
                f"this one knows {LATEST_VERSION}); upgrade forest to open it")

    def _pending_migrations(self, current: int, target: int) -> list[tuple[int, list[str]]]:
        """(version, scripts) of the migrations from `current` up to `target`, in this dialect."""
        return [(m.version, m.scripts(self.dialect)) for m in MIGRATIONS if current < m.version <= target]


class _NothingHeld:
    def release(self) -> None:
        pass


_NOTHING_HELD = _NothingHeld()


def mark_erased(conn: Connection, index: str) -> None:
    """Inside the deleting transaction: `index` (one of ERASABLE_INDEXES, or WAL) holds deleted
    text until Database.finish_erasures runs; a process that dies first leaves the mark for the
    next open."""
    conn.execute("INSERT INTO pending_erasures (target) VALUES (?)", (index,))
