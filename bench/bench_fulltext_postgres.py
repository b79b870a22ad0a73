"""BM25 top hits, p50 and p95: SQLite FTS5 (forest.storage.fulltext.fts5.top_hits) against PostgreSQL
(forest.storage.fulltext.postgres.top_hits) on the same node rows, one model_id, top 8.

The rows are real paper text: the QASPER papers of ../shared/eval cut into leaves at several chunk
sizes (600, 450, 750, ... characters) until there are --rows of them, one archive per paper and
size. Queries (the same for both, --queries of each kind): "rare" (1-3 words each in at most
0.1% of the rows), "common" (1-3 words each in at least 5%), "mixed" (one rare, two common) and
QASPER's own questions. Every PostgreSQL answer is checked against SQLite's: the same ids, the
scores within 1e-9 (relative).

    python -m bench.bench_fulltext_postgres [--rows 100000] [--queries 200]
"""
from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psycopg

from forest.config import Settings
from forest.ingest import load_document
from forest.records import LEAF
from forest.storage.fulltext import fts5 as fulltext, postgres as fulltext_postgres
from forest.storage.sql.database import Database
from forest.storage.sql.local_postgres import LocalPostgres
from forest.storage.sql.migrations import FULLTEXT_POSTGRES_V10
from forest.text import STOPWORDS, tokenize
from forest.tree.leaves import leaf_chunks

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
SIZES = (600, 450, 750, 300, 900, 525, 675, 375, 825, 1050)
TOP_K = 8
BASE_SCHEMA = """
CREATE TABLE archives (id BIGINT PRIMARY KEY, model_id TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE memory_nodes (id BIGINT PRIMARY KEY,
                           archive_id BIGINT NOT NULL REFERENCES archives (id) ON DELETE CASCADE);
CREATE TABLE personal_memories (id BIGINT PRIMARY KEY, user_id TEXT NOT NULL);
"""


def corpus(rows: int) -> list[tuple[int, list[str]]]:
    """(archive id, its leaves) until `rows` leaves."""
    documents = [load_document(p) for p in sorted((EVAL / "qasper-dev" / "papers").glob("*.txt"))]
    archives, total = [], 0
    for size in SIZES:
        for document in documents:
            leaves = [c.text for c in leaf_chunks(document, Settings().chunker, size)][: rows - total]
            if leaves:
                archives.append((len(archives) + 1, leaves))
                total += len(leaves)
    if total < rows:
        sys.exit(f"only {total} leaves from the papers at sizes {SIZES}")
    return archives


def queries(archives: list[tuple[int, list[str]]], count: int, rows: int) -> dict[str, list[str]]:
    df = Counter(w for _, leaves in archives for leaf in leaves for w in set(tokenize(leaf)))
    words = sorted(w for w in df if w not in STOPWORDS and w.isalpha())
    rare = [w for w in words if df[w] <= rows // 1000]
    common = [w for w in words if df[w] >= rows // 20]
    rng = random.Random(11)
    questions = qasper_questions()
    return {
        "rare": [" ".join(rng.sample(rare, rng.randint(1, 3))) for _ in range(count)],
        "common": [" ".join(rng.sample(common, rng.randint(1, 3))) for _ in range(count)],
        "mixed": [" ".join([rng.choice(rare)] + rng.sample(common, 2)) for _ in range(count)],
        "questions": rng.sample(questions, min(count, len(questions))),
    }


def qasper_questions() -> list[str]:
    path = EVAL / "qasper-dev" / "questions.json"
    return [q["question"] for q in json.loads(path.read_text(encoding="utf-8"))]


def build_sqlite(path: Path, archives) -> Database:
    db = Database(path)
    node = 0
    with db.transaction() as conn:
        for archive_id, leaves in archives:
            conn.execute("INSERT INTO archives (id, model_id, name, status) VALUES (?, 'm', ?, 'ready')",
                         (archive_id, f"a{archive_id}"))
            conn.executemany("INSERT INTO memory_nodes (id, archive_id, path, depth, node_type, content, summary) "
                             "VALUES (?, ?, ?, 0, ?, ?, '')",
                             [(node + k, archive_id, f"{node + k}/", LEAF, leaf) for k, leaf in enumerate(leaves, 1)])
            node += len(leaves)
    return db


def build_postgres(url: str, archives) -> None:
    """One transaction an archive, as a build writes one."""
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.transaction():
            conn.execute(BASE_SCHEMA)
            conn.execute(FULLTEXT_POSTGRES_V10)
        node = 0
        for archive_id, leaves in archives:
            ids = range(node + 1, node + len(leaves) + 1)
            with conn.transaction():
                conn.execute("INSERT INTO archives VALUES (%s, 'm', 'ready')", (archive_id,))
                with conn.cursor().copy("COPY memory_nodes (id, archive_id) FROM STDIN") as copy:
                    for node_id in ids:
                        copy.write_row((node_id, archive_id))
                fulltext_postgres.write_node_text(
                    conn, [(node_id, "m", fulltext.index_text(LEAF, "", leaf)) for node_id, leaf in zip(ids, leaves)])
            node += len(leaves)
        conn.execute("VACUUM ANALYZE")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    archives = corpus(args.rows)
    asked = queries(archives, args.queries, args.rows)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        db = build_sqlite(Path(tmp) / "store" / "forest.db", archives)
        sqlite_build = time.perf_counter() - start
        server = LocalPostgres(Path(tmp) / "pgdata")
        try:
            url = server.start()
            start = time.perf_counter()
            build_postgres(url, archives)
            pg_build = time.perf_counter() - start
            with psycopg.connect(url, autocommit=True) as conn:
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                size = conn.execute("SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) FROM pg_class c "
                                    "WHERE c.relname LIKE 'node_text%%' AND c.relkind = 'r'").fetchone()[0]
                print(f"{args.rows} rows in {len(archives)} archives; index built in {sqlite_build:.0f} s (SQLite, "
                      f"with the tokenizer trigger), {pg_build:.0f} s (PostgreSQL, {size})")
                print(f"{'queries':<10} {'SQLite p50':>11} {'p95':>7} {'PostgreSQL p50':>15} {'p95':>7}"
                      f"   (ms, top {TOP_K}; {args.queries} queries each)")
                for kind, texts in asked.items():
                    lite, post, differ = [], [], 0
                    for text in texts:
                        phrases = fulltext.query_phrases(text)
                        if not phrases:
                            continue
                        start = time.perf_counter()
                        with db.transaction() as sqlite_conn:
                            want = fulltext.top_hits(sqlite_conn, "m", phrases, TOP_K)
                        lite.append((time.perf_counter() - start) * 1000)
                        start = time.perf_counter()
                        with conn.transaction():
                            got = fulltext_postgres.top_hits(conn, "m", phrases, TOP_K)
                        post.append((time.perf_counter() - start) * 1000)
                        differ += [r[0] for r in want] != [r[0] for r in got] or not all(
                            math.isclose(a[1], b[1], rel_tol=1e-9) for a, b in zip(want, got))
                    print(f"{kind:<10} {statistics.median(lite):11.1f} {percentile(lite, 0.95):7.1f} "
                          f"{statistics.median(post):15.1f} {percentile(post, 0.95):7.1f}"
                          + (f"   {differ} answers differ" if differ else ""))
        finally:
            server.stop()


if __name__ == "__main__":
    main()
