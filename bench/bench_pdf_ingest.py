"""How long a real paper takes from PDF to ready tree, by stage, with the offline models.

Target (issue 3 §7): a 15-page paper in under 30 s on a 2-core machine. The default paper is
../shared/eval/pdfs/1705.07830.pdf (15 pages, one column). Models are loaded before the clock
starts (a long-running workbench or server loads them once).

With `--against REF` (default ef1c2a5, the last commit before outline-aware trees) the same
measurement also runs on that version of the engine, in the same run, and the build times are
compared paper by paper (issue 12: no more than 10% slower).

Run: `python bench/bench_pdf_ingest.py [PDF ...] [--repeat 2] [--against REF | --against none]`
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from forest.build import Progress
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


def measure(pdfs: list[Path], repeat: int, say) -> list[dict]:
    """Median ingest of each PDF over `repeat` runs, by stage; models loaded before the clock."""
    rows = []
    with tempfile.TemporaryDirectory() as data_dir:
        forest = MemoryForest(data_dir=data_dir)
        started = time.perf_counter()
        forest.embedder.embed_query("warm up")
        forest.vectors  # noqa: B018 - opens the store before timing
        say(f"models loaded in {time.perf_counter() - started:.1f} s (not counted below)")
        for pdf in pdfs:
            runs = []
            for attempt in range(repeat):
                clock = StageClock()
                start = clock.last
                archive = forest.ingest_file(pdf, f"bench-{attempt}", progress=clock)
                runs.append((time.perf_counter() - start, dict(clock.seconds), archive))
            total, seconds, archive = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
            rows.append({"paper": pdf.stem, "pages": archive.settings["documents"][0]["pages"],
                         "leaves": archive.leaves, "nodes": archive.nodes, "seconds": seconds, "total": total,
                         "runs": [r[0] for r in runs]})
        forest.close()
    return rows


def table(version: str, rows: list[dict]) -> str:
    header = f"{'paper':<22}{'pages':>6}{'leaves':>8}{'nodes':>7}" + "".join(f"{s:>11}" for s in STAGES) + f"{'total':>9}"
    lines = [f"[{version}]", header, "-" * len(header)]
    for r in rows:
        lines.append(f"{r['paper']:<22}{r['pages']:>6}{r['leaves']:>8}{r['nodes']:>7}"
                     + "".join(f"{r['seconds'].get(s, 0.0):>10.2f}s" for s in STAGES) + f"{r['total']:>8.1f}s")
        if len(r["runs"]) > 1:
            lines.append(f"{'':<22}runs: " + ", ".join(f"{t:.1f} s" for t in r["runs"])
                         + f" (median {statistics.median(r['runs']):.1f} s)")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path, default=[DEFAULT_PDF])
    parser.add_argument("--repeat", type=int, default=2, help="ingest each PDF this many times (report the median)")
    parser.add_argument("--against", default=DEFAULT_BASELINE, help="git ref to time too ('none' to skip)")
    parser.add_argument("--json-out", help="'-': print the figures as JSON only")
    args = parser.parse_args()
    pdfs = [p.resolve() for p in args.pdfs]
    if args.json_out == "-":
        json.dump(measure(pdfs, args.repeat, lambda line: print(line, file=sys.stderr)), sys.stdout)
        return
    rows = measure(pdfs, args.repeat, print)
    print(table("this version", rows))
    if args.against != "none":
        from baseline import measure_against

        before = measure_against(args.against, Path(__file__), [*map(str, pdfs), "--repeat", str(args.repeat)])
        print(table(args.against, before))
        print(f"\n{'paper':<22}{'this version':>14}{args.against:>14}{'ratio':>8}")
        for now, then in zip(rows, before):
            print(f"{now['paper']:<22}{now['total']:>13.1f}s{then['total']:>13.1f}s{now['total'] / then['total']:>8.2f}")


if __name__ == "__main__":
    main()
