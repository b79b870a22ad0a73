"""Run a bench against another version of the engine, in the same run on the same machine.

A version is this checkout or a git ref checked out into a temporary worktree; the bench's own
module (`python -m bench.x` of this checkout) runs with that version's `forest` package ahead of
this checkout's, so the same measuring code drives either engine. `measure_against` runs a script
once and reads its JSON (`--json-out -`);
`EngineProcess` keeps a script's `--serve` loop running (JSON lines in and out), so the
measurements of two versions can be interleaved and share whatever else the machine is doing.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def bench_command(script: Path, tree: Path) -> tuple[list[str], Path, dict[str, str]]:
    """The command, directory and environment that run this checkout's bench `script` as a module on
    the engine of `tree`: a directory holding only `tree`'s `forest` comes first on the path, then
    this checkout, so the bench package and its helpers are this checkout's even when `tree` holds a
    `bench` package of its own."""
    engine = tree
    if tree != ROOT:
        engine = tree.parent / "engine"
        engine.mkdir(exist_ok=True)
        (engine / "forest").symlink_to(tree / "forest", target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(engine), str(ROOT)))}
    return [sys.executable, "-m", f"bench.{script.stem}"], engine, env


class EngineProcess:
    def __init__(self, script: Path, ref: str | None = None) -> None:
        self.ref = ref
        self._checkout = tempfile.TemporaryDirectory(prefix="forest-baseline-") if ref else None
        tree = ROOT
        if self._checkout:
            tree = Path(self._checkout.name) / "tree"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), ref],
                           check=True)
        self.tree = tree
        command, engine, env = bench_command(script, tree)
        self.process = subprocess.Popen([*command, "--serve"], cwd=engine, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the engine process for {self.ref or 'this checkout'} ended early")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        if self._checkout:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(self.tree)], check=False)
            self._checkout.cleanup()

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def measure_against(ref: str, script: Path, args: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="forest-baseline-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), ref],
                       check=True)
        try:
            command, engine, env = bench_command(script, tree)
            done = subprocess.run([*command, *args, "--json-out", "-"], env=env, cwd=engine,
                                  check=True, stdout=subprocess.PIPE, text=True)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
        return json.loads(done.stdout)
