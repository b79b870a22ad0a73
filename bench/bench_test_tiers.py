"""CPU and wall seconds of each test, summed per tier, to keep tests/tiers.py's slow list measured.

Runs pytest in this process with a plugin that times each test (setup, call and teardown; CPU of
this process and of the child processes it reaped), then prints the sums for the fast tier
(`make test-fast`) and the rest, and the tests on the wrong side of the slow threshold.
CPU time is the figure to judge by on a busy machine: wall time grows with the load, CPU time barely.

Run: `python bench/bench_test_tiers.py` (the whole suite, as `make test`),
or `python bench/bench_test_tiers.py -- -m "not slow and not browser and not faults"` (the fast tier).
"""
from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TIERS = ("slow", "browser", "faults")


def cpu_seconds() -> float:
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


class TestTimes:
    def __init__(self) -> None:
        self.rows: list[tuple[str, set[str], float, float]] = []  # nodeid, tier marks, wall s, CPU s

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        wall, cpu = time.perf_counter(), cpu_seconds()
        yield
        marks = {mark for mark in TIERS if item.get_closest_marker(mark)}
        self.rows.append((item.nodeid, marks, time.perf_counter() - wall, cpu_seconds() - cpu))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow-cpu", type=float, default=1.0, help="the slow threshold, CPU seconds")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    times = TestTimes()
    started_wall, started_cpu = time.perf_counter(), cpu_seconds()
    code = pytest.main(["-q", "-p", "no:cacheprovider", *args.pytest_args], plugins=[times])
    total_wall, total_cpu = time.perf_counter() - started_wall, cpu_seconds() - started_cpu
    fast = [r for r in times.rows if not r[1]]
    marked = [r for r in times.rows if r[1]]
    print(f"\nwhole run: {total_wall:.0f} s wall, {total_cpu:.0f} s CPU (collection included), pytest exit {code}")
    for label, rows in (("fast tier (unmarked)", fast), ("slow/browser/faults", marked)):
        print(f"{label}: {len(rows)} tests, {sum(r[2] for r in rows):.0f} s wall, {sum(r[3] for r in rows):.0f} s CPU")
    for nodeid, marks, wall, cpu in sorted(fast, key=lambda r: -r[3]):
        if cpu >= args.slow_cpu:
            print(f"unmarked but slow: {nodeid} {cpu:.1f} s CPU, {wall:.1f} s wall")
    for nodeid, marks, wall, cpu in marked:
        if marks == {"slow"} and cpu < args.slow_cpu / 2:
            print(f"marked slow, measured fast: {nodeid} {cpu:.1f} s CPU, {wall:.1f} s wall")
    sys.exit(code)


if __name__ == "__main__":
    main()
