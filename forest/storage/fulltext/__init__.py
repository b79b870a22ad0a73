"""BM25 full-text search: SQLite FTS5, and PostgreSQL over FTS5's own lexemes, ranking as FTS5 ranks."""
from __future__ import annotations

from types import ModuleType

from forest.storage.sql.database import Database
from forest.text import tokenize


def fulltext_for(db: Database) -> ModuleType:
    """The full-text module of the database's kind: both have top_hits for node text, and
    memory_hits, write_memory_text, delete_memory_text and MEMORY_TEXT_ID for personal memories."""
    if db.dialect == "postgres":
        from forest.storage.fulltext import postgres

        return postgres
    from forest.storage.fulltext import fts5

    return fts5


def memory_text_row(memory_id: int, user_id: str, memory: str, context: str | None) -> tuple[int, str, str, str]:
    """A memory's BM25 row (write_memory_text): its tokens, and those of what was said before it."""
    return memory_id, user_id, " ".join(tokenize(memory)), " ".join(tokenize(context or ""))

