"""The database the settings name: database_url, else the SQLite file in the data directory."""
from __future__ import annotations

from typing import TYPE_CHECKING

from forest.config import without_password
from forest.errors import ConfigError
from forest.storage.sql.database import Database

if TYPE_CHECKING:
    from forest.config import Settings


def open_database(settings: Settings) -> Database:
    url = settings.database_url
    if not url:
        from forest.storage.sql.sqlite import SQLiteDatabase

        return SQLiteDatabase(settings.sqlite_path)
    if url.startswith("sqlite:///"):
        from forest.storage.sql.sqlite import SQLiteDatabase

        return SQLiteDatabase(url[len("sqlite:///"):])  # sqlite:///relative/path, sqlite:////absolute/path
    if url.startswith(("postgresql://", "postgres://")):
        from forest.storage.sql.postgres import PostgresDatabase

        return PostgresDatabase(url)
    raise ConfigError(f"database_url {without_password(url)!r} is neither postgresql://user:password@host/db "
                      "nor sqlite:///path/to/file.sqlite3")
