"""Evidence recall on QASPER (real papers, real questions): the forest's budgeted context vs flat
dense retrieval and BM25 over the same leaf chunks and the same token budget.

Each of the first N QASPER dev papers (sorted ids, papers with at least one question whose
evidence is a paragraph) is ingested as its own archive under model_id "qasper". For every such
question, four methods fill a token budget from the leaves of the whole forest (all archives):
  forest      MemoryForest.context(question, budget_tokens=B) (vector hits, LCA, drill-down)
  flat dense  every leaf ranked by cosine with the query (the leaves' stored vectors)
  flat fused  every leaf ranked like the forest ranks its pool (cosine and word coverage,
              reciprocal rank fusion): what the tree adds over the ranking alone
  BM25        every leaf ranked by Okapi BM25 (k1 1.2, b 0.75, forest.text.tokenize)
The baselines are packed greedily with the forest's rule: walk the ranking, take a chunk if its
estimate_tokens fits in what is left, skip it otherwise.

A gold paragraph ("FLOAT SELECTED" captions left out) is found when more than half of its
distinct content terms are in ONE returned chunk. Recall of a question = max over annotators of
found/total for that annotator's paragraphs; a method's figure is the mean over questions. The
ceiling is the same figure when every chunk of the question's paper is returned (chunking can
split a paragraph so that no chunk holds most of it).

Run: `python bench/eval_qasper.py` (40 papers, budgets 500 and 2000, temporary store), or
`python bench/eval_qasper.py --papers 3 --data-dir /tmp/qeval3 --reuse` to keep the store and
re-measure retrieval changes without re-ingesting. Data: ../shared/eval/qasper-dev (QASPER v0.3).
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from forest.records import LEAF
from forest.retrieval import fill_budget, reciprocal_rank_fusion
from forest.service import MemoryForest
from forest.text import content_terms, estimate_tokens, tokenize

MODEL_ID = "qasper"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "qasper-dev"
TIMINGS_FILE = "qasper_ingest_seconds.json"  # kept in the data dir so --reuse can report them
FOUND_SHARE = 0.5  # a paragraph is found when MORE than this share of its terms is in one chunk
# "flat fused" is an ablation: the forest's own ranking (dense + word coverage, rank-fused) over
# every leaf of the forest, without the tree choosing which leaves to rank.
METHODS = ("forest", "flat dense", "flat fused", "BM25")


# --- data -----------------------------------------------------------------------------------
@dataclass
class Question:
    paper_id: str
    question_id: str
    text: str
    annotators: list[list[str]]  # each annotator's paragraph evidence (captions left out)


def paragraph_evidence(answer: dict) -> list[str]:
    seen, out = set(), []
    for ev in answer.get("evidence") or []:
        ev = ev.strip()
        if ev and not ev.startswith("FLOAT SELECTED") and ev not in seen:
            seen.add(ev)
            out.append(ev)
    return out


def load_questions(data: Path) -> dict[str, list[Question]]:
    """Questions with at least one paragraph of evidence, by paper id."""
    by_paper: dict[str, list[Question]] = defaultdict(list)
    for q in json.loads((data / "questions.json").read_text(encoding="utf-8")):
        annotators = [ev for ev in (paragraph_evidence(a) for a in q["answers"]) if ev]
        if annotators and (data / "papers" / f"{q['paper_id']}.txt").is_file():
            by_paper[q["paper_id"]].append(Question(q["paper_id"], q["question_id"], q["question"], annotators))
    return by_paper


# --- evidence matching ----------------------------------------------------------------------
def terms(text: str) -> frozenset[str]:
    return frozenset(content_terms(text))


def is_found(paragraph: frozenset[str], chunks: list[frozenset[str]]) -> bool:
    """More than half of the paragraph's distinct content terms are in one chunk."""
    if not paragraph:
        return False
    need = FOUND_SHARE * len(paragraph)
    return any(len(paragraph & chunk) > need for chunk in chunks)


def question_recall(q: Question, chunks: list[frozenset[str]], gold: dict[str, frozenset[str]]) -> float:
    return max(sum(is_found(gold[p], chunks) for p in evidence) / len(evidence) for evidence in q.annotators)


# --- baselines ------------------------------------------------------------------------------
@dataclass
class Leaf:
    id: int
    archive: str  # archive name (the paper id)
    content: str
    tokens: int
    terms: frozenset[str]


def pack(ranked: np.ndarray, leaves: list[Leaf], budget: int) -> list[Leaf]:
    """The forest's own rule (forest.retrieval.fill_budget) over a ranking of leaf indexes."""
    return fill_budget([leaves[i] for i in ranked], lambda leaf: leaf.tokens, budget)[0]


class BM25:
    """Okapi BM25 with per-posting weights computed once; a query is a few numpy scatter-adds."""

    def __init__(self, docs: list[list[str]], k1: float = 1.2, b: float = 0.75) -> None:
        self.n = len(docs)
        lengths = np.array([len(d) for d in docs], dtype=np.float64)
        avg = lengths.mean() if self.n else 1.0
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for i, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                postings[term].append((i, tf))
        self.postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, rows in postings.items():
            idx = np.array([r[0] for r in rows], dtype=np.int64)
            tf = np.array([r[1] for r in rows], dtype=np.float64)
            df = len(rows)
            idf = math.log(1 + (self.n - df + 0.5) / (df + 0.5))
            norm = k1 * (1 - b + b * lengths[idx] / avg)
            self.postings[term] = (idx, idf * tf * (k1 + 1) / (tf + norm))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n)
        for term in set(tokenize(query)):
            if term in self.postings:
                idx, weight = self.postings[term]
                out[idx] += weight
        return out


def rank(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, kind="stable")


def dense_pack(matrix: np.ndarray, query: np.ndarray, leaves: list[Leaf], budget: int) -> list[Leaf]:
    return pack(rank(matrix @ query.astype(np.float32)), leaves, budget)


def fused_pack(matrix: np.ndarray, query: np.ndarray, question: str, leaves: list[Leaf], budget: int) -> list[Leaf]:
    words = set(content_terms(question))
    coverage = [len(words & leaf.terms) / len(words) if words else 0.0 for leaf in leaves]
    fused = np.array(reciprocal_rank_fusion([list(matrix @ query.astype(np.float32)), coverage]))
    return pack(rank(fused), leaves, budget)


def bm25_pack(bm25: BM25, query: str, leaves: list[Leaf], budget: int) -> list[Leaf]:
    return pack(rank(bm25.scores(query)), leaves, budget)


# --- the run --------------------------------------------------------------------------------
def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def ingest(forest: MemoryForest, data: Path, papers: list[str], timings_path: Path | None) -> dict[str, float]:
    """Ingest the papers not already in the store; returns ingest seconds by paper (this run and,
    with a kept data dir, earlier runs)."""
    seconds: dict[str, float] = {}
    if timings_path and timings_path.is_file():
        seconds = json.loads(timings_path.read_text())
    present = {a.name for a in forest.archives(MODEL_ID)}
    todo = [p for p in papers if p not in present]
    unfinished = [a for a in forest.store.all_archives() if a["model_id"] == MODEL_ID and a["status"] != "ready"]
    if unfinished:
        print(f"warning: {len(unfinished)} unfinished archive(s) under {MODEL_ID!r} in the store "
              f"(run `forest doctor`); they are invisible to every method", file=sys.stderr)
    for paper in tqdm(todo, desc="ingest", unit="paper", disable=not todo):
        start = time.perf_counter()
        forest.ingest_file(data / "papers" / f"{paper}.txt", MODEL_ID, name=paper)
        seconds[paper] = time.perf_counter() - start
        if timings_path:
            timings_path.write_text(json.dumps(seconds, indent=1))
    if len(papers) > len(todo):
        print(f"reused {len(papers) - len(todo)} paper(s) already in the store, ingested {len(todo)}")
    return seconds


def load_leaves(forest: MemoryForest, model_id: str = MODEL_ID) -> tuple[list[Leaf], np.ndarray, dict[str, int]]:
    """Every leaf of every archive under the model_id (the forest searches them all), with the
    matrix of their stored vectors (rows in the same order)."""
    leaves: list[Leaf] = []
    names = Counter()
    for archive in forest.archives(model_id):
        names[archive.name] += 1
        for node in forest.tree(model_id, archive.id):
            if node.node_type == LEAF:
                leaves.append(Leaf(node.id, archive.name, node.content, estimate_tokens(node.content),
                                   terms(node.content)))
    duplicates = [n for n, c in names.items() if c > 1]
    if duplicates:
        print(f"warning: archives ingested more than once: {', '.join(duplicates)}", file=sys.stderr)
    stored = forest.vectors.get_vectors(model_id, [leaf.id for leaf in leaves])
    missing = [leaf.id for leaf in leaves if leaf.id not in stored]
    if missing:
        raise SystemExit(f"{len(missing)} leaves have no stored vector (e.g. node {missing[0]}); "
                         "run `forest doctor --repair` on the data dir")
    matrix = np.stack([stored[leaf.id] for leaf in leaves]).astype(np.float32)
    return leaves, matrix, names


def timed(fn: Callable, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the qasper-dev folder (default: %(default)s)")
    parser.add_argument("--papers", type=int, default=40, help="first N papers (sorted ids) with paragraph evidence")
    parser.add_argument("--skip", type=int, default=0,
                        help="skip this many papers first: --skip 40 measures papers the defaults never saw")
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 2000], help="token budgets (default 500 2000)")
    parser.add_argument("--data-dir", type=Path, help="store location (default: a temporary dir, deleted after)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep --data-dir and skip papers already ingested there (matched by archive name)")
    parser.add_argument("--search-mode", choices=("vector", "bm25", "hybrid"), default=None,
                        help="hits the forest's context starts from (default: the search_mode setting)")
    parser.add_argument("--json", type=Path, help="write every figure (and per-question recall) here")
    args = parser.parse_args()
    if args.papers < 1 or args.skip < 0 or any(b < 1 for b in args.budgets):
        parser.error("--papers and --budgets must be positive")
    if args.reuse and not args.data_dir:
        parser.error("--reuse needs --data-dir")
    budgets = list(dict.fromkeys(args.budgets))

    by_paper = load_questions(args.data)
    papers = sorted(by_paper)[args.skip : args.skip + args.papers]
    questions = [q for p in papers for q in by_paper[p]]

    temporary = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="qasper-eval-")) if temporary else args.data_dir
    forest = MemoryForest(data_dir=data_dir, search_mode=args.search_mode)
    try:
        if not args.reuse and forest.archives(MODEL_ID):
            raise SystemExit(f"{data_dir} already holds archives under {MODEL_ID!r}: pass --reuse or use an empty dir")
        seconds = ingest(forest, args.data, papers, None if temporary else data_dir / TIMINGS_FILE)
        report = evaluate(forest, args.data, papers, questions, budgets, seconds)
    finally:
        forest.close()
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
        print(f"\nwrote {args.json}")


def evaluate(forest: MemoryForest, data: Path, papers: list[str], questions: list[Question],
             budgets: list[int], ingest_seconds: dict[str, float]) -> dict:
    leaves, matrix, archive_names = load_leaves(forest)
    bm25 = BM25([tokenize(leaf.content) for leaf in leaves])
    by_archive: dict[str, list[frozenset[str]]] = defaultdict(list)
    for leaf in leaves:
        by_archive[leaf.archive].append(leaf.terms)
    missing = [p for p in papers if p not in by_archive]
    if missing:
        raise SystemExit(f"papers not in the store: {', '.join(missing)}")
    gold = {p: terms(p) for q in questions for ev in q.annotators for p in ev}

    # Query embeddings are cached by the embedder; drop this question's entry before each timed
    # call so that every method's latency includes embedding the question once.
    query_cache = forest.embedder.__dict__.setdefault("_query_cache", {})
    recall: dict[str, dict[int, list[float]]] = {m: {b: [] for b in budgets} for m in METHODS}
    latency: dict[str, list[float]] = {m: [] for m in METHODS}
    used: dict[str, dict[int, list[int]]] = {m: {b: [] for b in budgets} for m in METHODS}
    embed_ms: list[float] = []
    ceiling: list[float] = []
    per_question = []
    for q in tqdm(questions, desc="answer", unit="question"):
        row = {"paper_id": q.paper_id, "question_id": q.question_id}
        for budget in budgets:
            query_cache.pop(q.text, None)
            ms, result = timed(forest.context, MODEL_ID, q.text, budget_tokens=budget)
            latency["forest"].append(ms)
            used["forest"][budget].append(sum(estimate_tokens(s.node.content) for s in result.leaves))
            recall["forest"][budget].append(question_recall(q, [terms(s.node.content) for s in result.leaves], gold))

            query_cache.pop(q.text, None)
            ms_embed, vector = timed(forest.embedder.embed_query, q.text)
            embed_ms.append(ms_embed)
            ms, taken = timed(dense_pack, matrix, vector, leaves, budget)
            latency["flat dense"].append(ms_embed + ms)
            used["flat dense"][budget].append(sum(leaf.tokens for leaf in taken))
            recall["flat dense"][budget].append(question_recall(q, [leaf.terms for leaf in taken], gold))

            ms, taken = timed(fused_pack, matrix, vector, q.text, leaves, budget)
            latency["flat fused"].append(ms_embed + ms)
            used["flat fused"][budget].append(sum(leaf.tokens for leaf in taken))
            recall["flat fused"][budget].append(question_recall(q, [leaf.terms for leaf in taken], gold))

            ms, taken = timed(bm25_pack, bm25, q.text, leaves, budget)
            latency["BM25"].append(ms)
            used["BM25"][budget].append(sum(leaf.tokens for leaf in taken))
            recall["BM25"][budget].append(question_recall(q, [leaf.terms for leaf in taken], gold))
            for m in METHODS:
                row[f"{m}@{budget}"] = recall[m][budget][-1]
        ceiling.append(question_recall(q, by_archive[q.paper_id], gold))
        row["ceiling"] = ceiling[-1]
        per_question.append(row)

    # Paragraph-level ceiling: each distinct (paper, paragraph) once.
    gold_pairs = {(q.paper_id, p) for q in questions for ev in q.annotators for p in ev}
    reachable = sum(is_found(gold[p], by_archive[paper]) for paper, p in gold_pairs)

    leaves_per_paper = [len(by_archive[p]) for p in papers]
    run_seconds = [ingest_seconds[p] for p in papers if p in ingest_seconds]
    mean = {m: {b: statistics.fmean(recall[m][b]) for b in budgets} for m in METHODS}
    ceiling_mean = statistics.fmean(ceiling)

    print(f"\nQASPER dev: {len(papers)} papers, {len(questions)} questions with paragraph evidence, "
          f"{sum(leaves_per_paper)} leaves in those papers")
    if len(archive_names) != len(papers):
        print(f"the store holds {sum(archive_names.values())} archives under {MODEL_ID!r} ({len(leaves)} leaves); "
              "every method ranks over all of them")
    print(f"settings: chunk_size {forest.settings.chunk_size}, overlap {forest.settings.chunk_overlap}, "
          f"top_k {forest.settings.top_k}, drill_threshold {forest.settings.drill_threshold}, "
          f"embedder {forest.embedder.name}")
    print(f"\nevidence recall (paragraph found: >{FOUND_SHARE:.0%} of its content terms in one returned chunk; "
          "max over annotators, mean over questions)")
    header = f"{'method':<28}" + "".join(f"{f'recall@{b}':>13}" for b in budgets)
    print(header)
    print("-" * len(header))
    for m in METHODS:
        print(f"{m:<28}" + "".join(f"{mean[m][b]:13.3f}" for b in budgets))
    print(f"{'ceiling (all paper chunks)':<28}" + "".join(f"{ceiling_mean:13.3f}" for _ in budgets))
    print(f"gold paragraphs held by some chunk of their paper: {reachable}/{len(gold_pairs)} "
          f"({reachable / len(gold_pairs):.1%})")

    print("\nmean tokens put in the context (estimate_tokens)")
    print(f"{'method':<28}" + "".join(f"{f'budget {b}':>13}" for b in budgets))
    for m in METHODS:
        print(f"{m:<28}" + "".join(f"{statistics.fmean(used[m][b]):13.0f}" for b in budgets))
    print(f"\nleaves per paper: mean {statistics.fmean(leaves_per_paper):.1f}, "
          f"min {min(leaves_per_paper)}, max {max(leaves_per_paper)}")
    if run_seconds:
        print(f"ingest seconds per paper ({len(run_seconds)} timed): mean {statistics.fmean(run_seconds):.1f}, "
              f"p50 {statistics.median(run_seconds):.1f}, max {max(run_seconds):.1f}")
    else:
        print("ingest seconds per paper: none recorded (papers were ingested outside this script)")
    print(f"\nquery latency, ms per (question, budget) call, question embedding included "
          f"(embedding alone p50 {statistics.median(embed_ms):.1f})")
    print(f"{'method':<12}{'p50':>9}{'p95':>9}")
    for m in METHODS:
        print(f"{m:<12}{statistics.median(latency[m]):9.1f}{percentile(latency[m], 0.95):9.1f}")

    return {
        "papers": papers, "questions": len(questions), "leaves": sum(leaves_per_paper),
        "store_archives": sum(archive_names.values()), "store_leaves": len(leaves), "budgets": budgets,
        "settings": {"chunk_size": forest.settings.chunk_size, "chunk_overlap": forest.settings.chunk_overlap,
                     "top_k": forest.settings.top_k, "drill_threshold": forest.settings.drill_threshold,
                     "embedder": forest.embedder.name},
        "recall": {m: {str(b): mean[m][b] for b in budgets} for m in METHODS},
        "ceiling": ceiling_mean,
        "mean_tokens_used": {m: {str(b): statistics.fmean(used[m][b]) for b in budgets} for m in METHODS},
        "gold_paragraphs": len(gold_pairs), "gold_paragraphs_reachable": reachable,
        "leaves_per_paper": dict(zip(papers, leaves_per_paper)),
        "ingest_seconds": {p: ingest_seconds[p] for p in papers if p in ingest_seconds},
        "latency_ms": {m: {"p50": statistics.median(latency[m]), "p95": percentile(latency[m], 0.95)}
                       for m in METHODS},
        "embed_query_ms_p50": statistics.median(embed_ms),
        "per_question": per_question,
    }


if __name__ == "__main__":
    main()
