"""Evidence recall on QASPER (real papers, real questions): the forest's budgeted context vs flat
dense retrieval and BM25 over the same leaf chunks and the same token budget.

Each of the first N QASPER dev papers (sorted ids, papers with at least one question whose
evidence is a paragraph) is ingested as its own archive under model_id "qasper". For every such
question, four methods fill a token budget from the leaves of the whole forest (all archives):
  forest      MemoryForest.context(question, budget_tokens=B) (vector hits, LCA, drill-down)
  flat dense  every leaf ranked by cosine with the query (the leaves' stored vectors)
  flat fused  every leaf ranked by cosine and word coverage, reciprocal-rank fused (the order
              in which the forest lets trees compete), without the tree
  BM25        every leaf ranked by Okapi BM25 (k1 1.2, b 0.75, forest.text.tokenize)
The baselines are packed greedily with the forest's rule: walk the ranking, take a chunk if its
estimate_tokens fits in what is left, skip it otherwise.

A gold paragraph ("FLOAT SELECTED" captions left out) is found when more than half of its
distinct content terms are in ONE returned chunk. Recall of a question = max over annotators of
found/total for that annotator's paragraphs; a method's figure is the mean over questions. The
ceiling is the same figure when every chunk of the question's paper is returned (chunking can
split a paragraph so that no chunk holds most of it).

Run: `python -m bench.eval_qasper` (40 papers, budgets 500 and 2000, temporary store), or
`python -m bench.eval_qasper --papers 3 --data-dir /tmp/qeval3 --reuse` to keep the store and
re-measure retrieval changes without re-ingesting. Data: ../shared/eval/qasper-dev (QASPER v0.3).
"""
from __future__ import annotations

import argparse
import json
import math
import re
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

from bench.flat_baselines import DENSE_1000, CachedEmbedder, EmbeddingCache, FlatConfig, FlatIndex, mcnemar_exact
from forest.records import LEAF
from forest.recall.retrieval import fill_budget, reciprocal_rank_fusion
from forest.models import registry as components
from forest.config import load_settings
from forest.service import MemoryForest
from forest.text import content_terms, estimate_tokens, tokenize

MODEL_ID = "qasper"
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "eval" / "qasper-dev"
TIMINGS_FILE = "qasper_ingest_seconds.json"  # kept in the data dir so --reuse can report them
FOUND_SHARE = 0.5  # a paragraph is found when MORE than this share of its terms is in one chunk
# The comparison's hit rule: a gold paragraph counts when at least NGRAM_SHARE of its
# word NGRAM-grams are in the returned context, wherever they are in it.
NGRAM, NGRAM_SHARE = 5, 0.5
WORD = re.compile(r"\w+")
# "flat fused" is an ablation: the forest's across-tree order (dense + word coverage, rank-fused)
# over every leaf of the forest, without the tree choosing which leaves to rank or their order
# inside a paper.
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


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def ngram_hit(q: Question, texts: list[str], gold_words: dict[str, list[str]]) -> bool:
    """The comparison's rule: some gold paragraph (of some annotator) has at least NGRAM_SHARE of its
    word NGRAM-grams in the returned context (a paragraph shorter than NGRAM words: its whole
    word sequence)."""
    returned = [words(t) for t in texts]
    seen: dict[int, set[tuple[str, ...]]] = {}
    for paragraph in (p for evidence in q.annotators for p in evidence):
        tokens = gold_words[paragraph]
        n = min(NGRAM, len(tokens))
        if n == 0:
            continue
        if n not in seen:
            seen[n] = set().union(*(ngrams(r, n) for r in returned)) if returned else set()
        wanted = ngrams(tokens, n)
        if len(wanted & seen[n]) >= NGRAM_SHARE * len(wanted):
            return True
    return False


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
    """The forest's own rule (forest.recall.retrieval.fill_budget) over a ranking of leaf indexes."""
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
    parser.add_argument("--no-compare", action="store_true",
                        help="skip the two-protocol comparison (forest context and ask, flat systems, McNemar)")
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
    settings = load_settings().replace(data_dir=data_dir, search_mode=args.search_mode)
    # Both protocols ingest the same papers and the flat systems embed much the same text: each
    # distinct passage is embedded once per run.
    forest = MemoryForest(settings, embedder=CachedEmbedder(components.make_embedder(settings)))
    try:
        if not args.reuse and forest.archives(MODEL_ID):
            raise SystemExit(f"{data_dir} already holds archives under {MODEL_ID!r}: pass --reuse or use an empty dir")
        seconds = ingest(forest, args.data, papers, None if temporary else data_dir / TIMINGS_FILE)
        report = evaluate(forest, args.data, papers, questions, budgets, seconds)
        if not args.no_compare:
            per_paper_seconds = ingest_per_paper(forest, args.data, papers)
            report["comparison"] = compare(forest, args.data, papers, questions, budgets, seconds,
                                           per_paper_seconds)
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
    recall: dict[str, dict[int, list[float]]] = {m: {b: [] for b in budgets} for m in METHODS}
    latency: dict[str, list[float]] = {m: [] for m in METHODS}
    used: dict[str, dict[int, list[int]]] = {m: {b: [] for b in budgets} for m in METHODS}
    embed_ms: list[float] = []
    ceiling: list[float] = []
    per_question = []
    for q in tqdm(questions, desc="answer", unit="question"):
        row = {"paper_id": q.paper_id, "question_id": q.question_id}
        for budget in budgets:
            forest.embedder.forget_query(q.text)
            ms, result = timed(forest.context, MODEL_ID, q.text, budget_tokens=budget)
            latency["forest"].append(ms)
            used["forest"][budget].append(sum(estimate_tokens(s.node.content) for s in result.leaves))
            recall["forest"][budget].append(question_recall(q, [terms(s.node.content) for s in result.leaves], gold))

            forest.embedder.forget_query(q.text)
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
    print(f"settings: chunker {forest.settings.chunker}, chunk_size {forest.settings.chunk_size}, overlap {forest.settings.chunk_overlap}, "
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


# --- two protocols, every system, one run ----------------------------------------------------
# Flat systems with the forest's embedder. "flat dense 1000" is the forest's old leaf chunking;
# the others are candidates for the strongest flat system (paragraph-aware chunks, the title and
# heading path in the embedded text); the best at the smallest budget, per-paper protocol, is the
# one the forest is tested against (McNemar).
FLAT_CANDIDATES = (
    DENSE_1000,
    FlatConfig("flat recursive 600 +title|path", "recursive", 600, 60, context=True),
    FlatConfig("flat para 600", "paragraph", 600),
    FlatConfig("flat para 400 +title|path", "paragraph", 400, context=True),
    FlatConfig("flat para 600 +title|path", "paragraph", 600, context=True),
    FlatConfig("flat para 1000 +title|path", "paragraph", 1000, context=True),
)
# The same chunks ranked by cosine and the share of the question's words they hold, rank-fused:
# hybrid flat systems from the same parts.
HYBRID_CANDIDATES = FLAT_CANDIDATES[3:]
PROTOCOLS = ("per-paper", "forest")


def hybrid_name(name: str) -> str:
    return f"{name} hybrid"


def paper_arguments(parser: argparse.ArgumentParser) -> None:
    """--data, --papers, --skip and a kept --data-dir: the paper set of the QASPER benches that ask."""
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the qasper-dev folder (default: %(default)s)")
    parser.add_argument("--papers", type=int, default=40, help="first N papers (sorted ids) with paragraph evidence")
    parser.add_argument("--skip", type=int, default=0, help="skip this many papers first (held-out papers)")
    parser.add_argument("--data-dir", type=Path, required=True, help="store location, kept between runs")


def per_paper_model_id(paper: str) -> str:
    return f"{MODEL_ID}-{paper}"


def ingest_per_paper(forest: MemoryForest, data: Path, papers: list[str]) -> dict[str, float]:
    """Each paper also ingested as the only archive of its own model_id (per-paper protocol)."""
    seconds: dict[str, float] = {}
    for paper in tqdm(papers, desc="ingest per paper", unit="paper"):
        if forest.archives(per_paper_model_id(paper)):
            continue
        start = time.perf_counter()
        forest.ingest_file(data / "papers" / f"{paper}.txt", per_paper_model_id(paper), name=paper)
        seconds[paper] = time.perf_counter() - start
    return seconds


def compare(forest: MemoryForest, data: Path, papers: list[str], questions: list[Question],
            budgets: list[int], ingest_seconds: dict[str, float], per_paper_seconds: dict[str, float]) -> dict:
    """Forest context, forest ask (offline policy, its cited passages), the flat candidates and
    BM25 (over the 1,000-char chunks) in both protocols. A question is a hit when some gold
    paragraph of some annotator has half its word 5-grams in the context (ngram_hit); McNemar
    pairs these hits."""
    from forest.ingest import load_document

    gold = {p: terms(p) for q in questions for ev in q.annotators for p in ev}
    documents = {p: load_document(data / "papers" / f"{p}.txt") for p in papers}
    cache = EmbeddingCache(forest.embedder)
    start = time.perf_counter()
    indexes = {c.name: FlatIndex.build(c, documents, cache) for c in FLAT_CANDIDATES}
    flat_build_s = time.perf_counter() - start
    dense = indexes[DENSE_1000.name]
    bm25 = BM25([tokenize(t) for t in dense.texts])

    gold_words = {p: words(p) for p in gold}

    def hit(q: Question, texts: list[str]) -> bool:
        return ngram_hit(q, texts, gold_words)

    archive_paper = {a.id: a.name for a in forest.archives(MODEL_ID)}
    # Forest protocol: is the first passage of the context from the question's paper?
    right_paper: dict[str, list[bool]] = defaultdict(list)
    hits: dict[tuple[str, str, int], list[bool]] = defaultdict(list)
    tokens: dict[tuple[str, str, int], list[int]] = defaultdict(list)
    latency_ms: dict[str, list[float]] = defaultdict(list)

    def record(system: str, protocol: str, budget: int, q: Question, texts: list[str]) -> None:
        hits[system, protocol, budget].append(hit(q, texts))
        tokens[system, protocol, budget].append(sum(estimate_tokens(t) for t in texts))

    for q in tqdm(questions, desc="compare", unit="question"):
        vector = forest.embedder.embed_query(q.text)
        for protocol in PROTOCOLS:
            model_id = per_paper_model_id(q.paper_id) if protocol == "per-paper" else MODEL_ID
            scope = q.paper_id if protocol == "per-paper" else None
            for budget in budgets:
                ms, result = timed(forest.context, model_id, q.text, budget_tokens=budget)
                latency_ms[f"context {protocol}"].append(ms)
                if protocol == "forest" and budget == budgets[0]:
                    right_paper["forest context"].append(
                        bool(result.leaves) and archive_paper.get(result.leaves[0].node.archive_id) == q.paper_id)
                    for name, index in indexes.items():
                        right_paper[name].append(index.top_paper(vector) == q.paper_id)
                record("forest context", protocol, budget, q, [s.node.content for s in result.leaves])
                for name, index in indexes.items():
                    record(name, protocol, budget, q, index.dense(vector, budget, scope))
                    if index.config in HYBRID_CANDIDATES:
                        record(hybrid_name(name), protocol, budget, q, index.hybrid(vector, q.text, budget, scope))
                rows = dense.scope(scope)
                order = rows[rank(bm25.scores(q.text)[rows])]
                record("BM25 1000", protocol, budget,
                       q, [dense.texts[i] for i in fill_budget(list(order), lambda i: dense.tokens[i], budget)[0]])
            ms, state = timed(forest.ask, model_id, q.text)
            latency_ms[f"ask {protocol}"].append(ms)
            cited = [c.node.content for c in state.cited]
            cited_tokens = sum(estimate_tokens(t) for t in cited)
            hits["forest ask (cited)", protocol, 0].append(hit(q, cited))
            tokens["forest ask (cited)", protocol, 0].append(cited_tokens)
            # flat dense at the very tokens ask's citations use
            record("flat dense 1000 @ ask tokens", protocol, 0, q,
                   dense.dense(vector, max(cited_tokens, 1), scope))

    def mean(key) -> float:
        return statistics.fmean(hits[key]) if hits[key] else float("nan")

    flat_names = [c.name for c in FLAT_CANDIDATES] + [hybrid_name(c.name) for c in HYBRID_CANDIDATES]
    best = max(flat_names, key=lambda n: (mean((n, "per-paper", budgets[0])), mean((n, "per-paper", budgets[-1]))))
    systems = ["forest context", *flat_names, "BM25 1000"]
    print(f"\n== two protocols, hit = some gold paragraph has >= {NGRAM_SHARE:.0%} of its word {NGRAM}-grams "
          f"in the context, {len(questions)} questions ==")
    header = f"{'system':<34}" + "".join(f"{f'{p[:9]}@{b}':>16}" for p in PROTOCOLS for b in budgets)
    print(header)
    print("-" * len(header))
    for system in systems:
        cells = "".join(f"{mean((system, p, b)):8.3f} ({statistics.fmean(tokens[system, p, b]):5.0f})"
                        for p in PROTOCOLS for b in budgets)
        print(f"{system + (' *best flat' if system == best else ''):<34}{cells}")
    print("(cells: hit rate (mean tokens used))")
    for p in PROTOCOLS:
        ask, flat = ("forest ask (cited)", p, 0), ("flat dense 1000 @ ask tokens", p, 0)
        print(f"{p}: forest ask cited {mean(ask):.3f} using {statistics.fmean(tokens[ask]):.0f} tokens; "
              f"flat dense 1000 at the same tokens {mean(flat):.3f}; "
              f"ask p50 {statistics.median(latency_ms[f'ask {p}']):.0f} ms")
    print("forest protocol, first passage from the question's paper: " + ", ".join(
        f"{name} {statistics.fmean(values):.3f}" for name, values in right_paper.items()))
    tests = {}
    print(f"\nMcNemar (exact binomial on discordant pairs), forest context vs {best}:")
    for p in PROTOCOLS:
        for b in budgets:
            only_forest, only_flat, pvalue = mcnemar_exact(hits["forest context", p, b], hits[best, p, b])
            tests[f"{p}@{b}"] = {"forest_only": only_forest, "flat_only": only_flat, "p": pvalue}
            print(f"  {p:<10} @{b:<5} forest only {only_forest:3d}, flat only {only_flat:3d}, p = {pvalue:.3f}")
    print("\ncontext latency ms: " + ", ".join(
        f"{p} p50 {statistics.median(latency_ms[f'context {p}']):.0f} p95 {percentile(latency_ms[f'context {p}'], 0.95):.0f}"
        for p in PROTOCOLS))
    both = [p for p in papers if p in ingest_seconds]
    print("ingest s/paper: " + (f"forest protocol mean {statistics.fmean(ingest_seconds[p] for p in both):.1f}; " if both else "")
          + (f"per-paper mean {statistics.fmean(per_paper_seconds.values()):.1f} (passages embedded once per run: "
             "its embeddings come from the first protocol's)" if per_paper_seconds else "per-paper reused")
          + f"; flat systems ({len(indexes)}) chunked and embedded in {flat_build_s:.0f} s total, "
          f"{len(cache.vectors)} distinct texts embedded")
    return {"best_flat": best,
            "hit_rate": {f"{s}|{p}|{b}": mean((s, p, b)) for (s, p, b) in hits},
            "mean_tokens": {f"{s}|{p}|{b}": statistics.fmean(v) for (s, p, b), v in tokens.items()},
            "mcnemar": tests,
            "right_paper_first": {name: statistics.fmean(values) for name, values in right_paper.items()},
            "latency_ms": {k: {"p50": statistics.median(v), "p95": percentile(v, 0.95)} for k, v in latency_ms.items()},
            "per_paper_ingest_seconds": per_paper_seconds, "flat_build_seconds": flat_build_s}


if __name__ == "__main__":
    main()
