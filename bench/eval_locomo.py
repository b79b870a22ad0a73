"""LoCoMo (../shared/eval/locomo, CC BY-NC 4.0): does the personal memory service find the turns
that answer a question, against flat BM25 and flat dense search over the same turns, in one run.

Each conversation is one user_id. Every turn goes through process_memory as
"[session date] speaker: text" (privacy filter off; the session's date is the turn's time), the
write queue is drained, and each question with evidence is searched with the memory tool (top 5).
Two rules per question: "any" counts it when any of its evidence turns is among the 5 (the target's
table); "fraction" is the share of its evidence turns among them. The flat rows index the very same
texts: BM25 is SQLite FTS5 with the service's tokenizer (a fresh in-memory index per conversation),
dense is exact cosine with the same embedder (vectors reused from the service's run).

Settings are chosen on conversations 1-5 (dev); 6-10 (test) are reported apart, and all ten.
McNemar's exact test compares the service with the better flat row on the "any" rule.
Run: `python bench/eval_locomo.py` (`--conversations 1-5` for the dev part only). Each finished
conversation is appended to `--results` (JSON lines); a rerun skips the conversations already
there and the tables cover every conversation in the file, so a long run can be resumed.
"""
from __future__ import annotations

import argparse
import json
import math
import sqlite3
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from forest import MemoryForest, load_settings
from forest.models.registry import make_embedder
from forest.models.embedders import Embedder
from forest.storage.fulltext.fts5 import phrase_match, query_phrases
from forest.text import tokenize

DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TOP_K = 5
SYSTEMS = ("personal memory service", "flat BM25 over the same turns", "flat dense over the same turns")


class CachedEmbedder(Embedder):
    """The configured embedder, remembering every vector of this run: the dense baseline reuses
    the service's passage vectors instead of embedding 5,882 turns twice."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.similarity_floor = inner.similarity_floor
        self.cache: dict[tuple[str, bool], np.ndarray] = {}

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        missing = [t for t in texts if (t, is_query) not in self.cache]
        if missing:
            for text, row in zip(missing, self.inner._embed(missing, is_query)):
                self.cache[(text, is_query)] = np.asarray(row, dtype=np.float32)
        return np.stack([self.cache[(t, is_query)] for t in texts])


def session_time(text: str) -> float:
    """'1:56 pm on 8 May, 2023' -> Unix seconds (UTC)."""
    return datetime.strptime(text, "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc).timestamp()


def turns(conversation: dict) -> list[tuple[str, str, float]]:
    """(dia_id, "[session date] speaker: text", time) in order."""
    out = []
    sessions = sorted((int(k.split("_")[1]), k) for k in conversation if k.startswith("session_") and
                      not k.endswith("date_time"))
    for number, key in sessions:
        date = conversation[f"session_{number}_date_time"]
        at = session_time(date)
        for position, turn in enumerate(conversation[key]):
            out.append((turn["dia_id"], f"[{date}] {turn['speaker']}: {turn['text']}"[:4000], at + position))
    return out


def flat_bm25(texts: list[str]) -> sqlite3.Connection:
    """The same FTS5 configuration as the service's personal_memory_text, over these texts only."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize = 'porter unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t (rowid, body) VALUES (?, ?)",
                     [(i, " ".join(tokenize(text))) for i, text in enumerate(texts)])
    return conn


def bm25_top(conn: sqlite3.Connection, query: str, k: int) -> list[int]:
    match = phrase_match(query_phrases(query))
    if match is None:
        return []
    return [r[0] for r in conn.execute("SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, k))]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def mcnemar(a: list[int], b: list[int]) -> tuple[int, int, float]:
    """Discordant counts (a only, b only) and the exact two-sided binomial p-value."""
    only_a = sum(1 for x, y in zip(a, b) if x and not y)
    only_b = sum(1 for x, y in zip(a, b) if y and not x)
    n = only_a + only_b
    if n == 0:
        return 0, 0, 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2 ** n
    return only_a, only_b, min(1.0, 2 * tail)


def conversations(spec: str, total: int) -> list[int]:
    start, _, end = spec.partition("-")
    return list(range(int(start) - 1, min(total, int(end or start))))


def table(title: str, rows: dict[str, dict[int, list[float]]]) -> None:
    print(f"\n{title}")
    print("| system | " + " | ".join(CATEGORIES.values()) + " | all |")
    print("|---|" + "---|" * (len(CATEGORIES) + 1))
    for system, by_category in rows.items():
        cells = [f"{statistics.mean(by_category[c]):.3f}" if by_category.get(c) else "-" for c in CATEGORIES]
        every = [v for c in CATEGORIES for v in by_category.get(c, [])]
        print(f"| {system} | " + " | ".join(cells) + f" | {statistics.mean(every):.3f} |")
    counts = {c: len(next(iter(rows.values())).get(c, [])) for c in CATEGORIES}
    print("| questions | " + " | ".join(str(counts[c]) for c in CATEGORIES) + f" | {sum(counts.values())} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", default="1-10", help="a range of conversation numbers, e.g. 1-5")
    parser.add_argument("--results", type=Path, default=Path(tempfile.gettempdir()) / "eval_locomo.jsonl",
                        help="per-conversation results (JSON lines), appended and resumed from")
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    done = [json.loads(line) for line in args.results.read_text().splitlines()] if args.results.exists() else []
    todo = [i for i in conversations(args.conversations, len(data)) if i not in {d["index"] for d in done}]
    if todo:
        run(data, todo, args.results)
    report([json.loads(line) for line in args.results.read_text().splitlines()])


def write_conversation(personal, sample: dict) -> tuple[int, float]:
    """Every turn of the sample through process_memory under its user_id (the sample id), the
    write queue drained: (turns written, seconds taken)."""
    conversation = turns(sample["conversation"])
    began = time.perf_counter()
    for dia_id, text, at in conversation:
        personal.process_memory(sample["sample_id"], text, metadata={"dia_id": dia_id}, observed_at=at)
    if not personal.drain(timeout=3600):
        raise SystemExit("the write queue did not drain")
    return len(conversation), time.perf_counter() - began


def evidence_questions(sample: dict) -> list[tuple[dict, set[str]]]:
    """(question, its evidence dia_ids) of every question with evidence."""
    out = []
    for qa in sample["qa"]:
        evidence = {e.strip() for e in qa.get("evidence", []) if e.strip()}
        if evidence:
            out.append((qa, evidence))
    return out


def service_search(personal, user: str, question: str) -> list[dict]:
    """The memory tool's top TOP_K memories for the question (each a dict with id and metadata)."""
    return personal.memory_tool("search", user, query=question, top_k=TOP_K)["payload"]["results"]


def run(data: list[dict], chosen: list[int], results: Path) -> None:
    """Write, search and score the chosen conversations, appending one JSON line per conversation."""
    settings_dir = tempfile.TemporaryDirectory()
    settings = load_settings({"data_dir": settings_dir.name, "memory_privacy_filter": False}, environ={})
    embedder = CachedEmbedder(make_embedder(settings))
    forest = MemoryForest(settings, embedder=embedder)
    personal = forest.personal
    try:
        for index in chosen:
            hits: dict[str, dict[str, dict[int, list[float]]]] = {
                rule: {s: defaultdict(list) for s in SYSTEMS} for rule in ("any", "fraction")}
            latencies: list[float] = []
            sample = data[index]
            user = sample["sample_id"]
            conversation = turns(sample["conversation"])
            written, write_seconds = write_conversation(personal, sample)
            texts = [text for _, text, _ in conversation]
            dia_ids = [dia_id for dia_id, _, _ in conversation]
            bm25 = flat_bm25(texts)
            matrix = embedder.embed_passages(texts)
            for qa, evidence in evidence_questions(sample):
                began = time.perf_counter()
                returned = service_search(personal, user, qa["question"])
                latencies.append((time.perf_counter() - began) * 1000)
                dense = np.argsort(-(matrix @ embedder.embed_query(qa["question"])), kind="stable")[:TOP_K]
                found = {SYSTEMS[0]: {r["metadata"].get("dia_id") for r in returned},
                         SYSTEMS[1]: {dia_ids[i] for i in bm25_top(bm25, qa["question"], TOP_K)},
                         SYSTEMS[2]: {dia_ids[i] for i in dense}}
                for system, ids in found.items():
                    hits["any"][system][qa["category"]].append(float(bool(evidence & ids)))
                    hits["fraction"][system][qa["category"]].append(len(evidence & ids) / len(evidence))
            with results.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"index": index, "turns": written, "write_seconds": write_seconds,
                                      "latencies_ms": latencies, "hits": hits}) + "\n")
            print(f"{user}: {written} turns written and searched", file=sys.stderr)
    finally:
        personal.stop()
        forest.close()
        settings_dir.cleanup()


def report(done: list[dict]) -> None:
    """The tables, McNemar, write throughput and search latency over the conversations in `done`."""
    by_index = {d["index"]: d for d in done}
    chosen = sorted(by_index)
    # hits[rule][system][conversation index][category] -> per-question values
    hits = {rule: {system: {i: {int(c): v for c, v in by_index[i]["hits"][rule][system].items()} for i in chosen}
                   for system in SYSTEMS} for rule in ("any", "fraction")}
    written = sum(by_index[i]["turns"] for i in chosen)
    write_seconds = sum(by_index[i]["write_seconds"] for i in chosen)
    latencies = [ms for i in chosen for ms in by_index[i]["latencies_ms"]]
    parts = [("conversations 1-5 (dev: settings chosen here)", [i for i in chosen if i < 5]),
             ("conversations 6-10 (test)", [i for i in chosen if i >= 5]), ("all conversations run", chosen)]
    print(f"LoCoMo, conversations {', '.join(str(i + 1) for i in chosen)}, {written} turns, top {TOP_K}")
    for rule, label in (("any", "a question counts when any evidence turn is returned"),
                        ("fraction", "share of a question's evidence turns returned")):
        for title, part in parts:
            if not part:
                continue
            rows = {system: {c: [v for i in part for v in hits[rule][system][i].get(c, [])] for c in CATEGORIES}
                    for system in SYSTEMS}
            table(f"{title}; rule: {label}", rows)
    flat = {system: [v for i in chosen for c in CATEGORIES for v in hits["any"][system][i].get(c, [])]
            for system in SYSTEMS}
    better = max(SYSTEMS[1:], key=lambda s: statistics.mean(flat[s]))
    only_service, only_flat, p = mcnemar(flat[SYSTEMS[0]], flat[better])
    print(f"\nMcNemar (any rule, all chosen): service alone {only_service}, {better} alone {only_flat}, "
          f"exact p = {p:.2g}")
    print(f"writes: {written / write_seconds:.1f} turns/s through process_memory and the durable queue "
          f"(redaction, batch embedding, triple extraction, contradiction check, BM25 index)")
    print(f"search (memory tool, top {TOP_K}, hybrid): p50 {statistics.median(latencies):.1f} ms, "
          f"p95 {percentile(latencies, 0.95):.1f} ms over {len(latencies)} questions")


if __name__ == "__main__":
    main()
