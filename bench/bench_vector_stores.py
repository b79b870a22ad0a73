"""Wall time of the vector stores one can run here: embedded Chroma and Qdrant's local mode.

Writes --points random unit vectors spread over five model_ids (one upsert each), then times a
top-10 query of one model_id (median of 50), listing its ids, reading its vectors and model_ids().
Qdrant's server is not measured: no server binary installs here.

Run: `python -m bench.bench_vector_stores [--points 5000] [--dim 384]`.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from forest.storage.vectors.chroma import ChromaVectorStore
from forest.storage.vectors.qdrant import QdrantVectorStore

MODEL_IDS = 5


def measure(store, vectors: np.ndarray) -> str:
    n = len(vectors)
    start = time.perf_counter()
    for k in range(MODEL_IDS):
        rows = list(range(k, n, MODEL_IDS))
        store.upsert(f"m{k}", [i + 1 for i in rows], vectors[rows],
                     [{"model_id": f"m{k}", "archive_id": 1, "node_type": "LEAF_CHUNK", "depth": 1}] * len(rows))
    write = time.perf_counter() - start
    queries = np.random.default_rng(1).normal(size=(50, vectors.shape[1])).astype(np.float32)
    latencies = []
    for query in queries:
        start = time.perf_counter()
        store.query("m1", query, 10)
        latencies.append(time.perf_counter() - start)
    start = time.perf_counter()
    ids = store.ids("m1")
    listing = time.perf_counter() - start
    start = time.perf_counter()
    store.get_vectors("m1", ids)
    reading = time.perf_counter() - start
    start = time.perf_counter()
    store.model_ids()
    tenants = time.perf_counter() - start
    return (f"write {n}: {write:.1f} s; top-10 query of one model_id's {len(ids)}: median "
            f"{statistics.median(latencies) * 1000:.1f} ms; ids {listing * 1000:.0f} ms; "
            f"get_vectors {reading * 1000:.0f} ms; model_ids {tenants * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=5000)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    vectors = np.random.default_rng(0).normal(size=(args.points, args.dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in (("embedded chroma", lambda: ChromaVectorStore(path=Path(tmp) / "chroma",
                                                                         embedder_name="bench", dim=args.dim)),
                           ("qdrant local mode", lambda: QdrantVectorStore(str(Path(tmp) / "qdrant"),
                                                                           embedder_name="bench", dim=args.dim))):
            store = make()
            try:
                print(f"{name}: {measure(store, vectors)}", flush=True)
            finally:
                store.close()


if __name__ == "__main__":
    main()
