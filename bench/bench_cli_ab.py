"""CLI start-up, this checkout against another version (A/B in one run): `forest --help` and
`forest context` as fresh processes, the two versions' runs interleaved so both share whatever else
the machine is doing. Each version gets its own one-paper store (made by that version), so neither
migrates the other's.

Run: `python -m bench.bench_cli_ab --against REF [--runs 12]`. Prints the median and the
interquartile range of wall time per command and version, and how often this checkout was faster
(a sign test: the exact two-sided p of as many or more wins either way).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "data" / "samples"
QUESTION = "What does the paper propose?"


def run(tree: Path, data_dir: Path, *args: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "forest.cli", "--data-dir", str(data_dir), *args], cwd=tree, check=True,
                   env={**os.environ, "PYTHONPATH": str(tree)}, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def sign_test(wins: int, losses: int) -> float:
    n, k = wins + losses, min(wins, losses)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="git ref of the other version")
    parser.add_argument("--runs", type=int, default=12)
    args = parser.parse_args()
    paper = next(p for p in sorted(PAPER.iterdir()) if p.suffix in (".md", ".txt", ".pdf"))
    with tempfile.TemporaryDirectory(prefix="forest-cli-ab-") as tmp:
        other = Path(tmp) / "other"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(other), args.against],
                       check=True)
        try:
            versions = {"this checkout": ROOT, args.against: other}
            stores = {name: Path(tmp) / f"store-{i}" for i, name in enumerate(versions)}
            for name, tree in versions.items():
                run(tree, stores[name], "ingest", str(paper), "--model-id", "ab")
            commands = {"forest --help": ["--help"],
                        "forest context": ["context", QUESTION, "--model-id", "ab", "--json"]}
            times = {(c, v): [] for c in commands for v in versions}
            for turn in range(args.runs):
                order = list(versions) if turn % 2 == 0 else list(reversed(versions))
                for command, argv in commands.items():
                    for name in order:
                        times[command, name].append(run(versions[name], stores[name], *argv))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], check=False)
    print(f"{args.runs} runs each, interleaved; wall seconds: median (IQR)")
    for command in commands:
        mine, theirs = times[command, "this checkout"], times[command, args.against]
        for name in versions:
            q = statistics.quantiles(times[command, name], n=4)
            print(f"  {command:16s} {name:14s} {statistics.median(times[command, name]):.3f} "
                  f"({q[0]:.3f}-{q[2]:.3f})")
        wins = sum(a < b for a, b in zip(mine, theirs))
        losses = sum(a > b for a, b in zip(mine, theirs))
        print(f"  {command:16s} this checkout faster in {wins} of {len(mine)} pairs, sign test p = "
              f"{sign_test(wins, losses):.3f}")


if __name__ == "__main__":
    main()
