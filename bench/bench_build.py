"""Build time for 1k, 10k and 100k leaves, synthetic vectors, no model calls.

Prints (1) merge planning alone, heap vs the seed's rescanning loop, and (2) the whole build
(chunk, plan, layout, SQLite transaction, Chroma upserts). Run: `python -m bench.bench_build`
(add --quick for 1k and 10k only).
"""
from __future__ import annotations

import math
import sys
import tempfile
import time

import numpy as np

from bench.synthetic import HeadSummarizer, SyntheticEmbedder, drifting_vectors, synthetic_text

from forest import MemoryForest, load_settings
from forest.tree.planner import average_linkage, plan_merges


def seed_loop(vectors: np.ndarray, sizes: list[int]) -> int:
    """The seed's algorithm: rescan every adjacent pair after each merge (vectorized per scan)."""
    sums = [v.astype(np.float64) for v in vectors]
    counts, merges = [1] * len(sums), 0
    while len(sums) > 1:
        sims = [average_linkage(sums[k], counts[k], sums[k + 1], counts[k + 1]) for k in range(len(sums) - 1)]
        k = int(np.argmax(sims))
        sums[k : k + 2] = [sums[k] + sums[k + 1]]
        counts[k : k + 2] = [counts[k] + counts[k + 1]]
        merges += 1
    return merges


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    sizes_n = [1_000, 10_000] if "--quick" in sys.argv else [1_000, 10_000, 100_000]
    print("merge planning with the heap (threshold -1: every leaf merges; n-1 merges)")
    print(f"{'leaves':>8} {'seconds':>9} {'s/(n log2 n) x1e6':>18}")
    for n in sizes_n:
        vectors = drifting_vectors(n)
        seconds, merges = timed(lambda: plan_merges(vectors, [90] * n, -1.0, 10**12))
        assert len(merges) == n - 1
        print(f"{n:>8} {seconds:9.3f} {seconds / (n * math.log2(n)) * 1e6:18.3f}")

    print("\nthe seed's rescanning loop, same input (O(n^2): doubling n quadruples the time)")
    print(f"{'leaves':>8} {'heap s':>9} {'seed loop s':>12}")
    for n in (500, 1_000, 2_000):
        vectors = drifting_vectors(n)
        heap_s = timed(lambda: plan_merges(vectors, [90] * n, -1.0, 10**12))[0]
        print(f"{n:>8} {heap_s:9.3f} {timed(lambda: seed_loop(vectors, [90] * n))[0]:12.2f}")

    print("\nwhole build into SQLite + embedded Chroma (synthetic embedder and summarizer)")
    print(f"{'leaves':>8} {'nodes':>8} {'depth':>6} {'total s':>9} {'s/(n log2 n) x1e6':>18}")
    for n in sizes_n:
        with tempfile.TemporaryDirectory() as tmp:
            forest = MemoryForest(load_settings({"data_dir": tmp, "chunk_size": 100, "chunk_overlap": 0,
                                                 "merge_threshold": 0.0, "max_node_chars": 10**12,
                                                 "max_document_chars": 10**9}, environ={}),
                                  embedder=SyntheticEmbedder(drifting_vectors(n)), summarizer=HeadSummarizer())
            text = synthetic_text(n)
            seconds, archive = timed(lambda: forest.ingest_text("bench", "synthetic", text))
            assert archive.leaves == n, archive.leaves
            print(f"{n:>8} {archive.nodes:>8} {archive.depth:>6} {seconds:9.2f} "
                  f"{seconds / (n * math.log2(n)) * 1e6:18.3f}")
            forest.close()


if __name__ == "__main__":
    main()
