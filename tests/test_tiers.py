"""The tiers `make test-fast` chooses from: browser and fault tests are marked without a mark in
their files, and every test the slow list names still exists (a renamed test would quietly move
back into the fast tier)."""
import re
import subprocess
import sys

from conftest import ROOT
from tiers import SLOW_MODULES, SLOW_TESTS

FAST = "not slow and not browser and not faults"


def collected(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]  # 5: nothing selected
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_the_fast_tier_leaves_out_browser_fault_and_slow_tests_and_keeps_the_rest():
    files = ["tests/test_cross_site.py", "tests/test_browser_reconcile.py", "tests/test_faults.py",
             "tests/test_reconcile_page.py", "tests/test_paths.py"]
    everything = collected(*files)
    fast = collected(*files, "-m", FAST)
    assert {t.split("::")[0] for t in everything} == set(files)
    assert fast and all(t.startswith("tests/test_paths.py::") for t in fast)
    assert set(fast) == {t for t in everything if t.startswith("tests/test_paths.py::")}
    assert collected("tests/test_cross_site.py", "tests/test_browser_reconcile.py", "-m", "browser") == [
        t for t in everything if "cross_site" in t or "browser_reconcile" in t]


def test_every_slow_test_named_exists():
    for module in SLOW_MODULES:
        assert (ROOT / "tests" / module).is_file(), module
    for entry in SLOW_TESTS:
        module, name = entry.split("::")
        function = name.split("[")[0]
        source = (ROOT / "tests" / module).read_text(encoding="utf-8")
        assert re.search(rf"^(async )?def {re.escape(function)}\(", source, re.M), entry
