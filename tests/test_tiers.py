"""The tiers `make test-fast` chooses from: browser and fault tests are marked without a mark in
their files, slow ones with @pytest.mark.slow, and a run names the unmarked tests that took 1 s of
CPU or more (testkit/cpu_times.py) without failing for it."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

FAST = "not slow and not browser and not faults"


def collected(*args: str) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]  # 5: nothing selected
    return [line for line in done.stdout.splitlines() if "::" in line]


@pytest.mark.slow
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


BURNERS = """
import time

import pytest


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_quick():
    pass


def test_unmarked_burner():
    burn(0.15)


@pytest.mark.slow
def test_marked_burner():
    burn(0.15)
"""


@pytest.mark.slow  # a pytest process of its own: 1.5 s of CPU
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_names_the_unmarked_tests_over_the_cpu_threshold_and_still_passes(tmp_path: Path, workers: list[str]):
    (tmp_path / "test_burners.py").write_text(BURNERS)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "testkit.cpu_times",
                           "-o", "slow_cpu_seconds=0.1", "--basetemp", str(tmp_path / "basetemp"), *workers,
                           str(tmp_path)],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    [named] = [line for line in done.stdout.splitlines() if line.startswith("mark these slow")]
    assert "test_burners.py::test_unmarked_burner (0." in named, named
    assert "test_marked_burner" not in named and "test_quick" not in named, named
