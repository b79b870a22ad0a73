"""LoCoMo (../shared/eval/locomo, CC BY-NC 4.0): does the personal memory service find the turns
that answer a question, against flat BM25 and flat dense search over the same turns, in one run.

Each conversation is one user_id. Every turn goes through process_memory as
"[session date] speaker: text" (privacy filter off; the session's date is the turn's time), the
write queue is drained, and each question with evidence is searched with the memory tool (top 5).
The flat rows (of this checkout's run) index the very same texts: BM25 is SQLite FTS5 with the
service's tokenizer (a fresh in-memory index per conversation), dense is exact cosine with the
same embedder (vectors reused from the service's run).

Two engines in one run: today's code (`--against`, default main, checked out into a temporary git
worktree by bench/baseline.py and run in a process of its own) and this checkout, over the same
conversations and questions. Three rules per question: "any" (an evidence turn among the 5),
"all" (every evidence turn among them) and "fraction" (their share). McNemar's exact test per
category compares the two engines on "any" and "all" (the discordant questions: found by one only).
Each engine also says how many memories its writes superseded or deleted, and how many evidence
turns were no longer live memories when the questions were asked (LoCoMo holds a few real updates).

Settings are chosen on conversations 1-5 (dev); 6-10 (held out, never tuned on) are reported apart,
and all ten. Run: `python -m bench.eval_locomo` (`--conversations 1-5` for the dev part only,
`--against none` for this checkout alone). Each conversation's result is appended to `--results`
(JSON lines) under the engine it measured (a hash of forest/), and reused while that engine is
unchanged: an interrupted run resumes, and today's code is measured once.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
import statistics
import subprocess
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

ROOT = Path(__file__).resolve().parents[1]
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


def conversations(spec: str, total: int) -> list[int]:
    """Indexes of conversations "1-5" or "1,3,6-8" (numbered from 1)."""
    chosen: list[int] = []
    for part in spec.split(","):
        start, _, end = part.partition("-")
        chosen += [i for i in range(int(start) - 1, min(total, int(end or start))) if i not in chosen]
    return chosen


def scored(questions: list[dict], system: str, rule: str) -> dict[int, list[float]]:
    """Category -> one value per question: "any" 1 when an evidence turn is among those returned,
    "all" 1 when every one is, "fraction" the share returned."""
    out: dict[int, list[float]] = defaultdict(list)
    for q in questions:
        evidence, found = set(q["evidence"]), set(q[system])
        value = {"any": float(bool(evidence & found)), "all": float(evidence <= found),
                 "fraction": len(evidence & found) / len(evidence)}[rule]
        out[q["category"]].append(value)
    return out


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


def engine_key(ref: str | None) -> str:
    """What a cached result was measured with: the git tree of forest/ at `ref`, or (None) a hash
    of this checkout's forest/ files as they are now, committed or not."""
    if ref is not None:
        tree = subprocess.run(["git", "-C", str(ROOT), "rev-parse", f"{ref}:forest"], check=True,
                              capture_output=True, text=True).stdout.strip()
        return f"tree {tree}"
    digest = hashlib.sha256()
    for path in sorted((ROOT / "forest").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return f"files {digest.hexdigest()[:16]}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", default="1-10", help="a range of conversation numbers, e.g. 1-5")
    parser.add_argument("--against", default="main",
                        help="git ref of today's code, run from a temporary worktree in the same run; 'none': "
                             "this checkout only")
    parser.add_argument("--results", type=Path, default=Path(tempfile.gettempdir()) / "eval_locomo.jsonl",
                        help="per-conversation results (JSON lines) of each engine version, appended and reused")
    parser.add_argument("--json-out", help="'-': measure this checkout and print its results as JSON (the base run)")
    args = parser.parse_args()
    data = json.loads(DATA.read_text(encoding="utf-8"))
    chosen = conversations(args.conversations, len(data))
    if args.json_out == "-":
        json.dump({"results": run(data, chosen)}, sys.stdout)
        return
    done = [json.loads(line) for line in args.results.read_text().splitlines()] if args.results.exists() else []
    versions = {"new": engine_key(None)}
    same = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", args.against, "--", "forest"]).returncode == 0 \
        if args.against != "none" else True
    if same and args.against != "none":
        print(f"forest/ is as at {args.against}: one engine measured", file=sys.stderr)
    if not same:
        versions = {f"today ({args.against})": engine_key(args.against), **versions}
    for label, key in versions.items():
        todo = [i for i in chosen if (key, i) not in {(d["engine"], d["index"]) for d in done}]
        if not todo:
            continue
        print(f"{label}: measuring conversations {', '.join(str(i + 1) for i in todo)}", file=sys.stderr)
        if key.startswith("tree"):
            from bench.baseline import measure_against

            measured = measure_against(args.against, Path(__file__).resolve(),
                                       ["--conversations", ",".join(str(i + 1) for i in todo)])["results"]
        else:
            measured = run(data, todo)
        with args.results.open("a", encoding="utf-8") as out:
            for result in measured:
                out.write(json.dumps({**result, "engine": key}) + "\n")
        done += [{**result, "engine": key} for result in measured]
    report({label: {d["index"]: d for d in done if d["engine"] == key and d["index"] in chosen}
            for label, key in versions.items()})


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
    reply = personal.memory_tool("search", user, query=question, top_k=TOP_K)
    # a record since personal memory's replies are typed; an engine measured against from before, a dict
    return (reply.to_dict() if hasattr(reply, "to_dict") else reply)["payload"]["results"]


def run(data: list[dict], chosen: list[int]) -> list[dict]:
    """Write, search and score the chosen conversations with this checkout's engine: per
    conversation, its turns, write time, search latencies and, per question, the evidence and the
    dia_ids each system returned."""
    settings_dir = tempfile.TemporaryDirectory()
    settings = load_settings({"data_dir": settings_dir.name, "memory_privacy_filter": False}, environ={})
    embedder = CachedEmbedder(make_embedder(settings))
    forest = MemoryForest(settings, embedder=embedder)
    personal = forest.personal
    results = []
    try:
        for index in chosen:
            latencies: list[float] = []
            questions: list[dict] = []
            sample = data[index]
            user = sample["sample_id"]
            conversation = turns(sample["conversation"])
            written, write_seconds = write_conversation(personal, sample)
            live = {m.metadata.get("dia_id") for m in personal.store.memories(user)}
            asked_about = set().union(*(e for _, e in evidence_questions(sample)))
            changed = sum(e.event in ("UPDATE", "DELETE") for e in personal.store.history(user))
            texts = [text for _, text, _ in conversation]
            dia_ids = [dia_id for dia_id, _, _ in conversation]
            bm25 = flat_bm25(texts)
            matrix = embedder.embed_passages(texts)
            for qa, evidence in evidence_questions(sample):
                began = time.perf_counter()
                returned = service_search(personal, user, qa["question"])
                latencies.append((time.perf_counter() - began) * 1000)
                dense = np.argsort(-(matrix @ embedder.embed_query(qa["question"])), kind="stable")[:TOP_K]
                questions.append({"category": qa["category"], "evidence": sorted(evidence),
                                  SYSTEMS[0]: [r["metadata"].get("dia_id") for r in returned],
                                  SYSTEMS[1]: [dia_ids[i] for i in bm25_top(bm25, qa["question"], TOP_K)],
                                  SYSTEMS[2]: [dia_ids[i] for i in dense]})
            results.append({"index": index, "turns": written, "write_seconds": write_seconds,
                            "latencies_ms": latencies, "questions": questions, "superseded": changed,
                            "evidence_turns": len(asked_about), "evidence_gone": len(asked_about - live)})
            print(f"{user}: {written} turns written and searched", file=sys.stderr)
    finally:
        personal.stop()
        forest.close()
        settings_dir.cleanup()
    return results


def report(versions: dict[str, dict[int, dict]]) -> None:
    """Per version (today's code, the new), the service's tables by rule on dev, test and all, the
    flat rows of the newest, McNemar per category between the versions, write throughput and
    search latency."""
    labels = list(versions)
    newest = versions[labels[-1]]
    chosen = sorted(set.intersection(*(set(v) for v in versions.values())))
    print(f"LoCoMo, conversations {', '.join(str(i + 1) for i in chosen)}, "
          f"{sum(newest[i]['turns'] for i in chosen)} turns, top {TOP_K}")
    parts = [("conversations 1-5 (dev: settings chosen here)", [i for i in chosen if i < 5]),
             ("conversations 6-10 (held out)", [i for i in chosen if i >= 5]), ("all conversations run", chosen)]
    rules = (("any", "a question counts when any evidence turn is returned"),
             ("all", "a question counts when all its evidence turns are returned"),
             ("fraction", "share of a question's evidence turns returned"))
    for rule, label in rules:
        for title, part in parts:
            if not part:
                continue
            rows = {f"service, {name}": scored([q for i in part for q in version[i]["questions"]], SYSTEMS[0], rule)
                    for name, version in versions.items()}
            for system in SYSTEMS[1:]:
                rows[system] = scored([q for i in part for q in newest[i]["questions"]], system, rule)
            table(f"{title}; rule: {label}", rows)
    if len(labels) == 2:
        mcnemar_table(versions, labels, chosen, parts)
    for name, version in versions.items():
        if all("superseded" in version[i] for i in chosen):
            print(f"{name}: {sum(version[i]['superseded'] for i in chosen)} memories superseded or deleted while the "
                  f"turns were written; {sum(version[i]['evidence_gone'] for i in chosen)} of "
                  f"{sum(version[i]['evidence_turns'] for i in chosen)} evidence turns no longer live when asked")
        written = sum(version[i]["turns"] for i in chosen)
        seconds = sum(version[i]["write_seconds"] for i in chosen)
        latencies = [ms for i in chosen for ms in version[i]["latencies_ms"]]
        print(f"{name}: writes {written / seconds:.1f} turns/s through process_memory and the durable queue; "
              f"search p50 {statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms "
              f"over {len(latencies)} questions")


def mcnemar_table(versions: dict[str, dict[int, dict]], labels: list[str], chosen: list[int],
                  parts: list[tuple[str, list[int]]]) -> None:
    """McNemar's exact test per category and rule: questions only the new code finds against only
    today's (the same questions, in the same order, in both versions)."""
    from bench.flat_baselines import mcnemar_exact   # here: the engine measured against runs this script too

    old, new = (versions[label] for label in labels)
    for title, part in parts:
        if not part:
            continue
        print(f"\nMcNemar, {title}: new alone / today alone, exact two-sided p")
        print("| rule | " + " | ".join(CATEGORIES.values()) + " | all |")
        print("|---|" + "---|" * (len(CATEGORIES) + 1))
        for rule in ("any", "all"):
            before = scored([q for i in part for q in old[i]["questions"]], SYSTEMS[0], rule)
            after = scored([q for i in part for q in new[i]["questions"]], SYSTEMS[0], rule)
            cells = []
            for category in [*CATEGORIES, None]:
                a = after.get(category, []) if category else [v for c in CATEGORIES for v in after.get(c, [])]
                b = before.get(category, []) if category else [v for c in CATEGORIES for v in before.get(c, [])]
                only_new, only_old, p = mcnemar_exact(list(map(bool, a)), list(map(bool, b)))
                cells.append(f"{only_new} / {only_old}, p {p:.2g}")
            print(f"| {rule} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
