"""Process time of `forest context` on a small store, as an agent calling the CLI pays it.

Builds a one-paper store (a QASPER paper, or --file), then runs `forest context` as a fresh
process N times and prints the p50/min of wall time, and the import time of `forest.cli` and of
the modules a `context` call loads (python -X importtime, cumulative microseconds of the top
level imports). Three ways: alone, the command owning the embedded store and reading the vector
snapshot the ingest left (forest/storage/vectors/snapshots.py); alone without a snapshot, as the first
command after a server's writes, which opens Chroma (and leaves a snapshot, removed before each
run); beside a running `forest serve`, the command forwarding its vector calls to that owner
(forest/storage/ownership.py). The first and the last never import chromadb.

Run: `python -m bench.bench_cli_latency` (5 runs) or `--runs 10 --data-dir /tmp/clistore --reuse`.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_FILE = ROOT.parent / "shared" / "eval" / "qasper-dev" / "papers" / "1503.00841.txt"
QUESTION = "Which dataset do they evaluate on?"


def forest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "forest.cli", *args]


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=ROOT)


def top_level_import_ms(stderr: str) -> dict[str, float]:
    """Cumulative import time (ms) of each top-level module in `python -X importtime` output."""
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
        if match:
            out[match.group(2)] = int(match.group(1)) / 1000
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data-dir", type=Path, help="store location (default: a temporary dir)")
    parser.add_argument("--reuse", action="store_true", help="skip ingest if the store already holds the file")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="cli-latency-"))
    common = ["--data-dir", str(data_dir), "--model-id", "bench"]
    try:
        if not (args.reuse and run(forest_cmd("archives", *common), env).stdout.strip()):
            run(forest_cmd("ingest", str(args.file), *common, "--no-progress"), env)
        context = forest_cmd("context", QUESTION, *common, "--budget", "500")
        run(context, env)  # warm the disk cache
        bare = []
        for _ in range(args.runs):
            start = time.perf_counter()
            run([sys.executable, "-c", "pass"], env)
            bare.append(time.perf_counter() - start)
        print(f"python startup alone p50 {statistics.median(bare):.2f} s")
        cli_imports = top_level_import_ms(run([sys.executable, "-X", "importtime", "-c", "import forest.cli"], env).stderr)
        print(f"import forest.cli: {cli_imports.get('forest.cli', float('nan')):.0f} ms")
        report("alone, from the vector snapshot", context, env, args.runs)
        report("alone, no snapshot (opens Chroma)", context, env, args.runs,
               before_each=lambda: shutil.rmtree(data_dir / "chroma.snapshots", ignore_errors=True))
        with serving(data_dir, env):
            report("beside `forest serve` (forwards to it)", context, env, args.runs)
    finally:
        if args.data_dir is None:
            shutil.rmtree(data_dir, ignore_errors=True)


def report(label: str, context: list[str], env: dict[str, str], runs: int,
           before_each: Callable[[], None] = lambda: None) -> None:
    wall, cpu = [], []
    for _ in range(runs):
        before_each()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run(context, env)
        wall.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU time is what the process costs on an idle machine; wall time includes waiting
        # for cores other processes hold.
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    before_each()
    imports = top_level_import_ms(run([sys.executable, "-X", "importtime", *context[1:]], env).stderr)
    heavy = sorted(imports.items(), key=lambda kv: -kv[1])[:6]
    print(f"`forest context` {label}, {runs} runs: wall p50 {statistics.median(wall):.2f} s "
          f"(min {min(wall):.2f}, max {max(wall):.2f}); CPU p50 {statistics.median(cpu):.2f} s (min {min(cpu):.2f}); "
          "top-level imports (cumulative ms): " + ", ".join(f"{name} {ms:.0f}" for name, ms in heavy))


@contextlib.contextmanager
def serving(data_dir: Path, env: dict[str, str]):
    """`forest serve --transport http` owning the store for the duration."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(forest_cmd("serve", "--transport", "http", "--port", str(port), "--data-dir",
                                         str(data_dir)), env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("forest serve did not start") from None
                time.sleep(0.2)
        yield
    finally:
        server.terminate()
        server.wait(timeout=30)

if __name__ == "__main__":
    main()
