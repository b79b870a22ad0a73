"""Where the forest lives: the databases (sql/), BM25 (fulltext/), vector stores (vectors/), kept files, the owner."""
