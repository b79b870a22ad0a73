"""Where the forest lives: SQLite/FTS5 truth, the vector store, kept files, the store's owner."""
