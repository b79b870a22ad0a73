"""CPU and wall seconds of each test, summed per tier, to keep the @pytest.mark.slow marks measured.

Runs pytest in this process; testkit/cpu_times.py (loaded by tests/conftest.py) times each test
(setup, call and teardown; CPU of the test's process and of the child processes it reaped, under
pytest-xdist too). Prints the sums for the fast tier (`make test-fast`) and the rest, and the tests
on the wrong side of the slow threshold. CPU time is the figure to judge by on a busy machine: wall
time grows with the load, CPU time barely.

Run: `python -m bench.bench_test_tiers` (the whole suite, as `make test`),
or `python -m bench.bench_test_tiers -- -m "not slow and not browser and not faults"` (the fast tier).
"""
from __future__ import annotations

import argparse
import sys
import time

import pytest

from testkit.cpu_times import PLUGIN_NAME, CpuTimes, cpu_seconds


class KeepTimes:
    """Keeps the run's CpuTimes plugin when pytest unconfigures."""
    times: CpuTimes | None = None

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.times = config.pluginmanager.get_plugin(PLUGIN_NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slow-cpu", type=float, default=1.0, help="the slow threshold, CPU seconds")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    keep = KeepTimes()
    started_wall, started_cpu = time.perf_counter(), cpu_seconds()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "-o", f"slow_cpu_seconds={args.slow_cpu}", *args.pytest_args],
                       plugins=[keep])
    total_wall, total_cpu = time.perf_counter() - started_wall, cpu_seconds() - started_cpu
    assert keep.times, "tests/conftest.py loads testkit.cpu_times"
    measured = keep.times.times
    fast = [t for t in measured if not t.tiers]
    marked = [t for t in measured if t.tiers]
    print(f"\nwhole run: {total_wall:.0f} s wall, {total_cpu:.0f} s CPU (collection included), pytest exit {code}")
    for label, rows in (("fast tier (unmarked)", fast), ("slow/browser/faults", marked)):
        print(f"{label}: {len(rows)} tests, {sum(t.wall for t in rows):.0f} s wall, {sum(t.cpu for t in rows):.0f} s CPU")
    for t in keep.times.unmarked_slow():
        print(f"unmarked but slow: {t.nodeid} {t.cpu:.1f} s CPU, {t.wall:.1f} s wall")
    for t in marked:
        if t.tiers == {"slow"} and t.cpu < args.slow_cpu / 2:
            print(f"marked slow, measured fast: {t.nodeid} {t.cpu:.1f} s CPU, {t.wall:.1f} s wall")
    sys.exit(code)


if __name__ == "__main__":
    main()
