"""`forest ingest` processes started together on one store, as a person starts them from two
terminals, and what they leave behind. Shared by tests/test_store_owner.py and bench/bench_faults.py."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from testkit.processes import forest_env
from testkit.topics import topic_text

FOREST = str(Path(sys.executable).parent / "forest")
# One document per writer, and a question whose best passage only that document holds.
DOCUMENTS = {"jazz": ("Who played bebop in New York?", "Parker"),
             "volcanoes": ("Where do volcanoes form?", "magma"),
             "photosynthesis": ("What does RuBisCO fix?", "RuBisCO")}


@dataclass
class Round:
    errors: list[str]      # stderr of each writer that failed
    archives: list[str]    # the names `forest archives` lists afterwards
    wanted: list[str]      # the names the writers were given
    healthy: bool          # `forest doctor` found nothing to repair
    found: int             # questions answered from their document's passage
    seconds: float

    @property
    def whole(self) -> bool:
        return not self.errors and sorted(self.archives) == sorted(self.wanted) and self.healthy \
            and self.found == len(self.wanted)


def run(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([FOREST, *args], env=forest_env(data_dir), capture_output=True, text=True, timeout=600)


def ingest_together(folder: Path, writers: int = 3) -> Round:
    """`writers` ingests of different documents started at once on a fresh store in `folder`."""
    names = list(DOCUMENTS)[:writers]
    for name in names:
        (folder / f"{name}.md").write_text(f"## {name}\n\n{topic_text(name)}", encoding="utf-8")
    data_dir = folder / "store"
    started = time.perf_counter()
    processes = [subprocess.Popen([FOREST, "ingest", str(folder / f"{name}.md"), "--model-id", "m", "--json"],
                                  env=forest_env(data_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for name in names]
    errors = []
    for process in processes:
        _, err = process.communicate(timeout=600)
        if process.returncode != 0:
            errors.append(err.strip())
    seconds = time.perf_counter() - started
    listed = run(data_dir, "archives", "--model-id", "m", "--json")
    doctor = run(data_dir, "doctor", "--json")
    found = 0
    for name in names:
        question, word = DOCUMENTS[name]
        context = run(data_dir, "context", question, "--model-id", "m", "--json")
        leaves = json.loads(context.stdout)["leaves"] if context.returncode == 0 else []
        found += bool(leaves) and word in leaves[0]["content"]
    return Round(errors, [a["name"] for a in json.loads(listed.stdout or "[]")], names,
                 doctor.returncode == 0 and json.loads(doctor.stdout)["healthy"], found, seconds)
