"""CPU seconds of each test, so a slow test left unmarked does not go unnoticed (a pytest plugin,
loaded by tests/conftest.py).

A test is slow at 1 s of CPU or more (the `slow_cpu_seconds` ini option): its process's CPU and
that of the child processes it reaped, setup and teardown included. CPU rather than wall time, so a
busy machine does not move a test between tiers; on a loaded machine 1 s of CPU took 2-20 s of wall
time. Each test's worker measures it and sends the figure in its teardown report's user_properties,
so a run under pytest-xdist is measured too. At the end of a run one line names the unmarked tests
over the threshold ("mark these slow: ..."), in a run of every tier only; the run never fails for
it, as CPU time varies a little from machine to machine. bench/bench_test_tiers.py reads the same measurements.

PYTEST_DONT_REWRITE: no assertions here, and the bench imports it before pytest starts.
"""
from __future__ import annotations

import resource
from collections import defaultdict
from dataclasses import dataclass

import pytest

PLUGIN_NAME = "cpu_times"
CPU_PROPERTY = "cpu_seconds"
TIERS = ("slow", "browser", "faults")


def cpu_seconds() -> float:
    """CPU seconds of this process and of the child processes it has reaped."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime


@dataclass(frozen=True)
class Measured:
    nodeid: str
    tiers: frozenset[str]   # which of TIERS the test is marked with
    wall: float             # seconds, setup + call + teardown
    cpu: float


class CpuTimes:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.threshold = float(config.getini("slow_cpu_seconds"))
        self.times: list[Measured] = []
        self._started = 0.0
        self._wall: dict[str, float] = defaultdict(float)

    def pytest_runtest_logstart(self) -> None:
        self._started = cpu_seconds()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        if call.when == "teardown":  # the last report of a test carries its CPU time to the controller
            item.user_properties.append((CPU_PROPERTY, cpu_seconds() - self._started))
        yield

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._wall[report.nodeid] += report.duration
        cpu = dict(report.user_properties).get(CPU_PROPERTY) if report.when == "teardown" else None
        if cpu is not None:
            tiers = frozenset(tier for tier in TIERS if tier in report.keywords)
            self.times.append(Measured(report.nodeid, tiers, self._wall.pop(report.nodeid), cpu))

    def unmarked_slow(self) -> list[Measured]:
        return sorted((t for t in self.times if not t.tiers and t.cpu >= self.threshold), key=lambda t: -t.cpu)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if hasattr(self.config, "workerinput"):  # an xdist worker: the controller says it
            return
        if self.config.option.markexpr:
            # a run of some tiers only: a fixture the slow tests built first (a paper, a server) is
            # paid by the first unmarked test that uses it, so its CPU is not its own
            return
        if slow := self.unmarked_slow():
            terminalreporter.write_line(f"mark these slow (@pytest.mark.slow: {self.threshold:g} s of CPU or more): "
                                        + ", ".join(f"{t.nodeid} ({t.cpu:.1f} s)" for t in slow))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("slow_cpu_seconds", "CPU seconds from which a test belongs in the slow tier", default="1.0")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(CpuTimes(config), PLUGIN_NAME)
