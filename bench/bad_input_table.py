"""Print the bad-input table of docs/security.md: runs tests/test_bad_input_faces.py (every face x every class of
bad input, "nothing written" checked in each cell) and renders the error each cell showed; then the
adversarial-regex rows of tests/test_regex_time.py (input that made a backtracking regex stall the
service: each face must answer it as fast as an ordinary message of the same length); then the
Markdown export's rows of tests/test_export_confined.py (the CLI); then the library rows of
tests/test_library_hostile.py (`forest library import` of hostile libraries).

    python -m bench.bad_input_table            # runs the tests (~5-10 min), then prints the table
    python -m bench.bad_input_table --from observed.json   # renders an earlier run's observations
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_CELL = 72


# (test file and selection, the variable it writes its observations to)
SOURCES = ((["tests/test_bad_input_faces.py"], "FOREST_BAD_INPUT_TABLE"),
           (["tests/test_regex_time.py", "-k", "ordinary_message"], "FOREST_ADVERSARIAL_TABLE"),
           (["tests/test_export_confined.py"], "FOREST_EXPORT_TABLE"),
           # libraries naming FIFOs, devices, files outside Zotero's storage; .bib fields of megabytes
           (["tests/test_library_hostile.py"], "FOREST_LIBRARY_TABLE"))


def observe() -> dict:
    observed: dict = {"faces": None, "rows": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (tests, variable) in enumerate(SOURCES):
            target = Path(tmp) / f"observed{n}.json"
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=ROOT,
                                 stdout=sys.stderr, env={**os.environ, variable: str(target)})
            if run.returncode != 0:
                sys.exit(f"{tests[0]} failed: no table")
            seen = json.loads(target.read_text(encoding="utf-8"))
            observed["faces"] = observed["faces"] or seen["faces"]
            observed["rows"].update(seen["rows"])
    return observed


def cell(seen: dict[str, str] | None) -> str:
    if seen is None:
        return "—"
    text = f"{seen['how']}: {seen['message']}"
    if len(text) > MAX_CELL:
        text = text[:MAX_CELL - 1].rstrip() + "…"
    return text.replace("|", "\\|")


def table(observed: dict) -> str:
    faces = observed["faces"]
    lines = ["| input | " + " | ".join(faces) + " |", "| --- |" + " --- |" * len(faces)]
    for row, seen in observed["rows"].items():
        lines.append(f"| {row} | " + " | ".join(cell(seen.get(face)) for face in faces) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="observations written by an earlier run")
    args = parser.parse_args()
    observed = json.loads(args.source.read_text(encoding="utf-8")) if args.source else observe()
    print(table(observed))


if __name__ == "__main__":
    main()
