"""Run a bench script against another version of the engine, in the same run on the same machine.

`measure_against(ref, script, args)` checks `ref` out into a temporary git worktree and runs this
checkout's `script` with that worktree first on PYTHONPATH, so the same measuring code times the
other version's `forest` (for example the commit before a change, to print before and after side
by side). The script must print one JSON document on stdout when given `--json-out -`.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure_against(ref: str, script: Path, args: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="forest-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), ref],
                       check=True)
        try:
            env = {**os.environ, "PYTHONPATH": str(tree)}
            done = subprocess.run([sys.executable, str(script), *args, "--json-out", "-"], env=env, cwd=str(tree),
                                  check=True, stdout=subprocess.PIPE, text=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        return json.loads(done.stdout)
