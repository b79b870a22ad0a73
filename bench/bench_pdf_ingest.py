"""How long a real paper takes from PDF to ready tree, by stage, with the offline models.

Target: a 15-page paper in under 30 s on a 2-core machine. The default paper is
../shared/eval/pdfs/1705.07830.pdf (15 pages, one column). Models are loaded before the clock
starts (a long-running workbench or server loads them once).

With `--against REF` (default ef1c2a5, the last commit before outline-aware trees) the same
measurement also runs on that version of the engine, in a second process, the runs of the two
interleaved, and the build times are compared paper by paper (no more than 10% slower).

Run: `python -m bench.bench_pdf_ingest [PDF ...] [--repeat 3] [--against REF | --against none]`
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.baseline import EngineProcess
from forest.records import Progress
from forest.service import MemoryForest

DEFAULT_PDF = Path(__file__).resolve().parents[2] / "shared" / "eval" / "pdfs" / "1705.07830.pdf"
DEFAULT_BASELINE = "ef1c2a5"
STAGES = ("parse", "chunk", "summarize", "embed", "merge", "store")


class StageClock:
    """Charges the time between progress reports to the stage being reported."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.last = time.perf_counter()

    def __call__(self, event: Progress) -> None:
        now = time.perf_counter()
        self.seconds[event.stage] += now - self.last
        self.last = now


def serve() -> None:
    """JSON lines: {"pdf": path, "model_id": m} in, that ingest's figures out (models loaded first)."""
    with tempfile.TemporaryDirectory() as data_dir:
        forest = MemoryForest(data_dir=data_dir)
        forest.embedder.embed_query("warm up")
        forest.vectors  # noqa: B018 - opens the store before timing
        for line in sys.stdin:
            request = json.loads(line)
            clock = StageClock()
            start = clock.last
            archive = forest.ingest_file(request["pdf"], request["model_id"], progress=clock)
            print(json.dumps({"paper": Path(request["pdf"]).stem, "pages": archive.settings["documents"][0]["pages"],
                              "leaves": archive.leaves, "nodes": archive.nodes, "seconds": dict(clock.seconds),
                              "total": time.perf_counter() - start}), flush=True)
        forest.close()


def table(version: str, rows: list[dict]) -> str:
    header = f"{'paper':<22}{'pages':>6}{'leaves':>8}{'nodes':>7}" + "".join(f"{s:>11}" for s in STAGES) + f"{'total':>9}"
    lines = [f"[{version}] median of the runs", header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['paper']:<22}{r['pages']:>6}{r['leaves']:>8}{r['nodes']:>7}"
                     + "".join(f"{r['seconds'].get(s, 0.0):>10.2f}s" for s in STAGES) + f"{r['total']:>8.1f}s")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path, default=[DEFAULT_PDF])
    parser.add_argument("--repeat", type=int, default=3, help="ingest each PDF this many times per version (median)")
    parser.add_argument("--against", default=DEFAULT_BASELINE, help="git ref to time too ('none' to skip)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve()
    versions = {"this version": None} | ({} if args.against == "none" else {args.against: args.against})
    engines = {name: EngineProcess(Path(__file__), ref) for name, ref in versions.items()}
    runs: dict[str, list[list[dict]]] = {name: [] for name in engines}
    try:
        for n, pdf in enumerate(args.pdfs):
            per_version: dict[str, list[dict]] = {name: [] for name in engines}
            for attempt in range(args.repeat):
                # interleaved, alternating who goes first: both versions share the machine's mood
                order = list(engines) if attempt % 2 == 0 else list(reversed(engines))
                for name in order:
                    per_version[name].append(engines[name].ask({"pdf": str(pdf.resolve()),
                                                                "model_id": f"bench-{n}-{attempt}"}))
            for name, results in per_version.items():
                runs[name].append(results)
    finally:
        for engine in engines.values():
            engine.close()
    medians = {name: [sorted(results, key=lambda r: r["total"])[len(results) // 2] for results in per_pdf]
               for name, per_pdf in runs.items()}
    for name, rows in medians.items():
        print(table(name, rows) + "\n")
    if len(medians) == 2:
        (now_name, now), (then_name, then) = medians.items()
        print(f"{'paper':<22}{now_name:>14}{then_name:>14}{'ratio':>8}")
        for a, b in zip(now, then):
            print(f"{a['paper']:<22}{a['total']:>13.1f}s{b['total']:>13.1f}s{a['total'] / b['total']:>8.2f}")
        total_now, total_then = sum(r["total"] for r in now), sum(r["total"] for r in then)
        print(f"{'all':<22}{total_now:>13.1f}s{total_then:>13.1f}s{total_now / total_then:>8.2f}")


if __name__ == "__main__":
    main()
