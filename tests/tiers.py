"""The test tiers. `make test` runs everything; `make test-fast` runs
`-m "not slow and not browser and not faults"`.
- slow: marked in the test files (`@pytest.mark.slow`, or `pytestmark = pytest.mark.slow` for a
  module slow whole, or `pytest.param(..., marks=pytest.mark.slow)` for one case): 1 s or more of
  CPU time, the test's process and the processes it starts, setup and teardown included. Every run
  measures it (testkit/cpu_times.py) and names the unmarked tests over 1 s on one line at the end;
  `python -m bench.bench_test_tiers` sums the tiers and names marks that no longer hold.
tests/conftest.py marks the two tiers that follow from what a module does:
- browser: its module drives headless Chromium (it imports tests/test_browser.py's driver or skip);
- faults: its module kills real writer processes (test_faults.py, test_faults_server.py).
"""
from __future__ import annotations

import sys

import pytest

FAULT_MODULES = frozenset({"test_faults.py", "test_faults_server.py"})


def mark_tiers(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        if _drives_chromium(getattr(item, "module", None)):
            item.add_marker(pytest.mark.browser)
        if module in FAULT_MODULES:
            item.add_marker(pytest.mark.faults)


def _drives_chromium(module: object) -> bool:
    browser = sys.modules.get("test_browser")
    return browser is not None and module is not None and (
        module is browser or any(getattr(module, name, None) is getattr(browser, name) for name in ("MISSING", "chromium")))
