"""The test tiers. `make test` runs everything; `make test-fast` runs
`-m "not slow and not browser and not faults"`. tests/conftest.py marks each collected test here:
- browser: its module drives headless Chromium (it imports tests/test_browser.py's driver or skip);
- faults: its module kills real writer processes (test_faults.py, test_faults_server.py);
- slow: measured at 1 s or more of CPU time (the test's process and the processes it starts,
  setup and teardown included). CPU rather than wall time, so a busy machine does not move a test
  between tiers; on the loaded machine it was measured on, 1 s of CPU took 2-20 s of wall time.
  Re-measure with `python bench/bench_test_tiers.py` and update the lists below; a module listed
  whole has only slow tests (or, for the workbench's AppTest modules, only slow tests measured).
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
