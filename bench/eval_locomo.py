"""LoCoMo (../shared/eval/locomo, CC BY-NC 4.0): evidence recall@5 of the personal memory
service's retrieval, per question category, plus write throughput and retrieval latency.

Each conversation is one user_id. Every turn goes through process_memory as "<speaker>: <text>"
(privacy filter off for this run, as the issue asks; the session's date is the turn's time), the
write queue is drained, and each question is searched with the memory tool (top 5). A question's
recall is the share of its evidence turns among the 5 memories returned.
Run: `python bench/eval_locomo.py` (add `--conversations N` for the first N only).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from forest import MemoryForest, load_settings

DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TOP_K = 5


def session_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> Unix seconds (UTC)."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).timestamp()


def turns(conversation: dict) -> list[tuple[str, str, float]]:
    """(dia_id, "<speaker>: <text>", time) in order."""
    out = []
    sessions = sorted((int(k.split("_")[1]), k) for k in conversation if k.startswith("session_") and
                      not k.endswith("date_time"))
    for number, key in sessions:
        at = session_time(conversation[f"session_{number}_date_time"])
        for position, turn in enumerate(conversation[key]):
            out.append((turn["dia_id"], f"{turn['speaker']}: {turn['text']}", at + position))
    return out


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10)
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))[: args.conversations]
    recall: dict[int, list[float]] = defaultdict(list)
    write_seconds, written, superseded, latencies = 0.0, 0, 0, []
    with tempfile.TemporaryDirectory() as tmp:
        forest = MemoryForest(load_settings({"data_dir": tmp, "memory_privacy_filter": False}, environ={}))
        personal = forest.personal
        for sample in data:
            user = sample["sample_id"]
            conversation = turns(sample["conversation"])
            began = time.perf_counter()
            for dia_id, text, at in conversation:
                personal.process_memory(user, text[:4000], metadata={"dia_id": dia_id}, observed_at=at)
            if not personal.drain(timeout=3600):
                raise SystemExit("the write queue did not drain")
            write_seconds += time.perf_counter() - began
            written += len(conversation)
            superseded += len(conversation) - len(personal.store.memories(user))
            for qa in sample["qa"]:
                evidence = {e.strip() for e in qa.get("evidence", []) if e.strip()}
                if not evidence:
                    continue
                began = time.perf_counter()
                reply = personal.memory_tool("search", user, query=qa["question"], top_k=TOP_K)
                latencies.append((time.perf_counter() - began) * 1000)
                found = {r["metadata"].get("dia_id") for r in reply["payload"]["results"]}
                recall[qa["category"]].append(len(evidence & found) / len(evidence))
            print(f"{user}: {len(conversation)} turns, {sum(len(v) for v in recall.values())} questions so far",
                  file=sys.stderr)
        personal.stop()
        forest.close()
    print(f"LoCoMo, {len(data)} conversations, {written} turns: evidence recall@{TOP_K} by category")
    print(f"{'category':<14}{'questions':>10}{'recall@5':>10}")
    for category in sorted(recall):
        print(f"{CATEGORIES.get(category, category):<14}{len(recall[category]):>10}"
              f"{statistics.mean(recall[category]):>10.3f}")
    every = [r for values in recall.values() for r in values]
    print(f"{'all':<14}{len(every):>10}{statistics.mean(every):>10.3f}")
    print(f"{superseded} turns superseded an earlier memory (a contradiction about the same subject)")
    print(f"writes: {written / write_seconds:.1f} turns/s through process_memory and the queue "
          f"(embedding, graph extraction, contradiction check)")
    print(f"retrieval (memory search, top {TOP_K}): p50 {statistics.median(latencies):.1f} ms, "
          f"p95 {percentile(latencies, 0.95):.1f} ms")


if __name__ == "__main__":
    main()
