"""How long a real paper takes from PDF to ready tree, by stage, with the offline models.

Target (issue 3 §7): a 15-page paper in under 30 s on a 2-core machine. The default paper is
../shared/eval/pdfs/1705.07830.pdf (15 pages, one column). Models are loaded before the clock
starts (a long-running workbench or server loads them once).

Run: `python bench/bench_pdf_ingest.py [PDF ...] [--repeat 2]`
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from forest.build import Progress
from forest.service import MemoryForest

DEFAULT_PDF = Path(__file__).resolve().parents[2] / "shared" / "eval" / "pdfs" / "1705.07830.pdf"
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pdfs", nargs="*", type=Path, default=[DEFAULT_PDF])
    parser.add_argument("--repeat", type=int, default=2, help="ingest each PDF this many times (report the median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        forest = MemoryForest(data_dir=data_dir)
        started = time.perf_counter()
        forest.embedder.embed_query("warm up")
        forest.vectors  # noqa: B018 - opens the store before timing
        print(f"models loaded in {time.perf_counter() - started:.1f} s (not counted below)")
        header = f"{'paper':<22}{'pages':>6}{'leaves':>8}{'nodes':>7}" + "".join(f"{s:>11}" for s in STAGES) + f"{'total':>9}"
        print(header)
        print("-" * len(header))
        for pdf in args.pdfs:
            runs = []
            for attempt in range(args.repeat):
                clock = StageClock()
                start = clock.last
                archive = forest.ingest_file(pdf, f"bench-{attempt}", progress=clock)
                runs.append((time.perf_counter() - start, clock.seconds, archive))
            total, seconds, archive = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
            pages = archive.settings["documents"][0]["pages"]
            print(f"{pdf.stem:<22}{pages:>6}{archive.leaves:>8}{archive.nodes:>7}"
                  + "".join(f"{seconds.get(s, 0.0):>10.2f}s" for s in STAGES) + f"{total:>8.1f}s")
            if len(runs) > 1:
                print(f"{'':<22}runs: " + ", ".join(f"{r[0]:.1f} s" for r in runs)
                      + f" (median {statistics.median(r[0] for r in runs):.1f} s)")
        forest.close()


if __name__ == "__main__":
    main()
