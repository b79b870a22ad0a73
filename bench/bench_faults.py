"""Fault injection at scale: writer processes SIGKILLed in the middle of ingest, append, join,
personal writes (process_memory and its queue), research compaction and erasure (a memory deleted,
a user cleared, an archive deleted: afterwards, delete-then-grep finds no byte of what is no longer
visible in any file of the data directory), each kill on a fresh copy
of a base store; a fresh process then checks the store and runs `forest doctor` (tests/helpers/
faults.py says what is checked). Random kills land uniformly over the operation's measured
duration (seeded); the sweep also kills right after each durable write in turn (SQLite commit or
Chroma write), once each. Prints one row per operation; exits 1 on any invariant violation.

Then concurrent writers: rounds of `forest ingest` processes started together on a fresh store
(tests/helpers/writers.py); a round is whole when every command succeeded, every archive is
listed, `forest doctor` finds nothing to repair and each document's question finds its passage.

Run: `python bench/bench_faults.py` (200 random kills, 10 rounds of 3 writers; --kills N,
--seed S, --operations ..., --writer-rounds R, --writers W; --kills 0 for the writers alone).
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from helpers import faults, writers  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200, help="random kills in total, shared over the operations")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--operations", nargs="+", choices=list(faults.OPERATIONS), default=list(faults.OPERATIONS))
    parser.add_argument("--no-sweep", action="store_true", help="random kills only")
    parser.add_argument("--writer-rounds", type=int, default=10, help="rounds of writers started together")
    parser.add_argument("--writers", type=int, default=3, choices=range(2, len(writers.DOCUMENTS) + 1))
    args = parser.parse_args()
    violations = kill_writers(args) if args.kills else []
    violations += write_together(args.writer_rounds, args.writers)
    for violation in violations:
        print("VIOLATION", violation)
    return 1 if violations else 0


def kill_writers(args: argparse.Namespace) -> list[str]:
    """Writers killed in the middle of each operation; the violations found."""
    ctx, rng = faults.context(), random.Random(args.seed)
    per_operation = math.ceil(args.kills / len(args.operations))
    print(f"{'operation':<11} {'duration':>8} {'writes':>6} {'random':>6} {'at write':>8} {'after':>5} "
          f"{'repaired':>8} {'resumed':>7} {'violations':>10} {'time':>7}")
    violations: list[str] = []
    kills, began = 0, time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.operations:
            started = time.perf_counter()
            line = faults.baseline(ctx, name, Path(tmp))
            random_kills = faults.kill_at_random(ctx, line, Path(tmp), per_operation, rng)
            # personal writes interleave with the worker thread's: no fixed order of writes to sweep
            sweep = faults.Attack(name) if name == "personal" or args.no_sweep else \
                faults.kill_at_each_write(ctx, line, Path(tmp))
            both = (random_kills, sweep)
            found = [v for a in both for v in a.violations]
            violations += [f"{name}: {v}" for v in found]
            kills += random_kills.kills + sweep.kills
            print(f"{name:<11} {line.duration:>7.2f}s {line.writes:>6} {random_kills.kills:>6} {sweep.kills:>8} "
                  f"{sum(a.completed for a in both):>5} {sum(a.repaired for a in both):>8} "
                  f"{sum(a.resumed for a in both):>7} {len(found):>10} {time.perf_counter() - started:>6.0f}s",
                  flush=True)
    print(f"{kills} kills, seed {args.seed}, {time.perf_counter() - began:.0f} s in all")
    return violations


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
