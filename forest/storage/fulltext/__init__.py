"""BM25 full-text search: SQLite FTS5, and PostgreSQL over FTS5's own lexemes, ranking as FTS5 ranks."""
