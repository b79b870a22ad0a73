"""Compare papers (MemoryForest.compare): how long a table takes, and how good its cells are, on
QASPER papers (real papers, real questions, gold evidence).

Stores (built once in --data-dir, reused after): each group of GROUP consecutive QASPER dev papers
(sorted ids of papers with a question whose evidence is a paragraph, eval_qasper's order) is the
model_id "compare-<first>": the dev groups (papers 1-40) are those looked at while building the
feature, the held-out groups (papers 141-180) were not. "compare-pdfs" holds the seven real PDFs
of ../shared/eval/pdfs (five of them QASPER dev papers, with questions).

Latency, on "compare-1" (10 text papers) and "compare-pdfs" (7 PDFs): 3 questions of the papers,
new ones every run, each question's cached embedding dropped first, so each run embeds its
questions. Cold: `forest compare` as a fresh process (imports, opening the store, loading the
embedder), and a new engine's first table in this process. Warm: median and max over --runs, on
1, 5 and all the papers (how a table's time grows). Against: the same table as one `ask` per cell,
each searching its paper on its own.

Quality: every question of a group's papers (with paragraph evidence) is asked of the group's
papers, so each question has its own paper's cell and the other papers' cells.
  own cell       found (its passage's drill-down relevance >= the threshold) and its passage is
                 the evidence: it holds a gold paragraph (eval_qasper's rule: more than half of the
                 paragraph's distinct content terms are in the passage) or, a leaf being at most a
                 paragraph, lies in one (more than half of the passage's terms are in it);
                 "sentence": found and its first sentence lies in a gold paragraph.
  flat           the same parts without the tree: the paper's leaf nearest the question by cosine
                 (the stored vectors, reference lists left out), the same sentence choice
                 (answer_sentences), scored by the same drill-down (its relevance as its parent's
                 child) against the same threshold.
  other cells    the share of the other papers' cells that say "not found" (a generic question,
                 "which datasets do they use?", is rightly answered by other papers too), and how
                 often the own paper's cell scores highest of the group (the table picks the paper).
Wilson 95% intervals; McNemar (exact) pairs the own-cell hits of the forest and the flat cell.
The threshold is FOUND_THRESHOLD (forest/recall/compare.py): the one that best separates a
question's own paper from the others on the dev papers (Youden's J, printed with them), checked on
the held-out papers and the PDFs; the other thresholds printed show the trade-off.

Run: `python -m bench.bench_compare --data-dir /tmp/compare-bench` (builds the stores the first
time: about 15 minutes on 2 cores); `--skip-quality` or `--skip-latency` for one part.
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from bench.eval_qasper import DEFAULT_DATA, Question, is_found, load_questions, terms
from bench.eval_redaction import wilson
from bench.flat_baselines import mcnemar_exact

from forest.config import load_settings
from forest.recall.agent import ContextNode, answer_sentences
from forest.limits import MAX_CELLS, MAX_QUESTIONS
from forest.recall.compare import FOUND_THRESHOLD, Comparison
from forest.references import is_reference_node
from forest.service import MemoryForest

PDFS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "pdfs"
PDF_MODEL_ID = "compare-pdfs"
GROUP = 10
DEV_GROUPS = (0, 10, 20, 30)
HELD_OUT_GROUPS = (140, 150, 160, 170)
LATENCY_QUESTIONS = 3
SHOWN_THRESHOLDS = (0.2, 0.3, 0.4, 0.5)


def group_model_id(start: int) -> str:
    return f"compare-{start + 1}"


# --- stores -----------------------------------------------------------------------------------
def build_stores(forest: MemoryForest, ordered: list[str]) -> None:
    """Every group's papers and the PDFs, those not in the store yet."""
    wanted = [(group_model_id(start), DEFAULT_DATA / "papers" / f"{paper}.txt")
              for start in DEV_GROUPS + HELD_OUT_GROUPS for paper in ordered[start:start + GROUP]]
    wanted += [(PDF_MODEL_ID, pdf) for pdf in sorted(PDFS.glob("*.pdf"))]
    for model_id, path in wanted:
        if path.stem in {a.name for a in forest.archives(model_id)}:
            continue
        start = time.perf_counter()
        forest.ingest_file(path, model_id, name=path.stem)
        print(f"built {model_id}: {path.stem} in {time.perf_counter() - start:.1f} s", flush=True)


# --- latency ----------------------------------------------------------------------------------
def timed_compare(forest: MemoryForest, model_id: str, questions: list[str], archive_ids: list[int]) -> float:
    for question in questions:
        forest.embedder.forget_query(question)
    start = time.perf_counter()
    forest.compare(model_id, questions, archive_ids)
    return time.perf_counter() - start


def cold_cli(settings, model_id: str, questions: list[str]) -> float:
    """Wall seconds of `forest compare` as a fresh process (start, imports, opening the store,
    loading the embedder, the table), while no other process holds the store."""
    command = [str(Path(sys.executable).parent / "forest"), "compare", *questions, "--model-id", model_id, "--json"]
    env = {**os.environ, "FOREST_DATA_DIR": str(settings.data_dir)}
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, timeout=600)
    return time.perf_counter() - start


def latency(settings, model_id: str, questions: list[str], runs: int, label: str) -> None:
    """A fresh process's first table; then, in one engine, its first call and warm runs on 1, 5
    and all papers of the model_id; and the same table as one ask per cell."""
    rng = random.Random(7)
    batches = [rng.sample(questions, LATENCY_QUESTIONS) for _ in range(runs + 2)]
    cold = cold_cli(settings, model_id, batches[0])
    forest = MemoryForest(settings)
    try:
        ids = [a.id for a in forest.archives(model_id)]
        first = timed_compare(forest, model_id, batches[1], ids)
        print(f"\n{label}: {len(ids)} papers × {LATENCY_QUESTIONS} questions")
        print(f"  cold: `forest compare` as a fresh process {cold:.2f} s; a new engine's first table {first:.2f} s")
        print(f"  {'papers':>6} {'cells':>6} {'median s':>9} {'max s':>7}   (warm, {runs} runs, new questions each)")
        for papers in sorted({1, 5, len(ids)}):
            if papers <= len(ids):
                seconds = [timed_compare(forest, model_id, batch, ids[:papers]) for batch in batches[2:]]
                print(f"  {papers:>6} {papers * LATENCY_QUESTIONS:>6} {statistics.median(seconds):>9.2f} "
                      f"{max(seconds):>7.2f}")
        widest = min(MAX_QUESTIONS, len(questions), MAX_CELLS // len(ids))
        seconds = [timed_compare(forest, model_id, rng.sample(questions, widest), ids) for _ in range(3)]
        print(f"  {len(ids):>6} {len(ids) * widest:>6} {statistics.median(seconds):>9.2f} {max(seconds):>7.2f}"
              f"   ({widest} questions, 3 runs)")
        asks = []
        for batch in batches[2:4]:
            for question in batch:
                forest.embedder.forget_query(question)
            start = time.perf_counter()
            for question in batch:
                for archive_id in ids:
                    forest.ask(model_id, question, archive_ids=[archive_id])
            asks.append(time.perf_counter() - start)
        print(f"  the same {len(ids) * LATENCY_QUESTIONS} cells as one ask per cell (no shared search): "
              f"{statistics.median(asks):.2f} s (median of {len(asks)})")
    finally:
        forest.close()


# --- quality ----------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One question of a group: its own paper's cell against the flat cell, and the other cells."""
    own_score: float
    own_cites: bool         # found, and the cited passage holds a gold paragraph or lies in one
    own_sentence: bool      # found, and the first sentence lies in a gold paragraph
    flat_score: float
    flat_cites: bool
    flat_sentence: bool
    other_scores: list[float]


def in_evidence(question: Question, text: str) -> bool:
    """More than half of the text's content terms are in one gold paragraph."""
    mine = terms(text)
    return any(is_found(mine, [terms(p)]) for evidence in question.annotators for p in evidence)


def is_evidence(question: Question, passage: str) -> bool:
    """The passage holds a gold paragraph (eval_qasper's rule), or lies in one."""
    chunk = terms(passage)
    return in_evidence(question, passage) or any(
        is_found(terms(p), [chunk]) for evidence in question.annotators for p in evidence)


def flat_cell(forest: MemoryForest, model_id: str, archive_id: int, question: str,
              leaves: dict[int, list], vectors: dict[int, np.ndarray]) -> tuple[float, str, str]:
    """(score, passage, first sentence) of the flat cell: the paper's leaf nearest the question."""
    query = forest.embedder.embed_query(question)
    best = max(leaves[archive_id], key=lambda leaf: (float(vectors[leaf.id] @ query), -leaf.id))
    scored = forest.explore(model_id, best.parent_id, question, threshold=0.0) if best.parent_id else []
    score = next((s.relevance_score for s in scored if s.node.id == best.id), 1.0)
    quoted = answer_sentences(question, [ContextNode(best, score, "")])
    return score, best.content, quoted[0][0] if quoted else ""


def quality(forest: MemoryForest, model_id: str, by_paper: dict[str, list[Question]]) -> list[Outcome]:
    archives = {a.name: a.id for a in forest.archives(model_id)}
    leaves = {a: [n for n in forest.tree(model_id, a) if n.is_leaf and not is_reference_node(n)]
              for a in archives.values()}
    vectors = forest.vectors.get_vectors(model_id, [n.id for ns in leaves.values() for n in ns])
    asked = [q for paper in archives for q in by_paper.get(paper, [])]
    per_call = max(1, min(10, MAX_CELLS // len(archives)))
    tables: list[Comparison] = [forest.compare(model_id, [q.text for q in asked[i:i + per_call]])
                                for i in range(0, len(asked), per_call)]
    cells = {(c.archive_id, c.question): c for table in tables for c in table.cells}
    nodes = forest.store.nodes(model_id, [c.node_id for c in cells.values() if c.node_id])
    outcomes = []
    for q in asked:
        own_id = archives[q.paper_id]
        own = cells[own_id, q.text.strip()]
        passage = nodes[own.node_id].content if own.found else ""
        flat_score, flat_passage, flat_sentence = flat_cell(forest, model_id, own_id, q.text, leaves, vectors)
        flat_found = flat_score >= FOUND_THRESHOLD
        outcomes.append(Outcome(
            own.score, own.found and is_evidence(q, passage), own.found and in_evidence(q, own.sentences[0]),
            flat_score, flat_found and is_evidence(q, flat_passage), flat_found and in_evidence(q, flat_sentence),
            [cells[a, q.text.strip()].score for a in archives.values() if a != own_id]))
    return outcomes


def rate(hits: int, total: int) -> str:
    low, high = wilson(hits, total)
    return f"{hits / total if total else 0:.2f} [{low:.2f}, {high:.2f}] ({hits}/{total})"


def best_separating(outcomes: list[Outcome]) -> float:
    """The threshold (0.05 grid, ties to the lower) maximizing Youden's J: the share of own cells
    found minus the share of the other papers' cells found."""
    others = [s for o in outcomes for s in o.other_scores]

    def youden(t: float) -> float:
        return (sum(o.own_score >= t for o in outcomes) / len(outcomes)
                - sum(s >= t for s in others) / len(others))

    return max((round(0.05 * i, 2) for i in range(21)), key=lambda t: (round(youden(t), 6), -t))


def report(label: str, outcomes: list[Outcome], threshold: float = FOUND_THRESHOLD) -> None:
    n = len(outcomes)
    print(f"\n{label}: {n} questions, each asked of its paper and {len(outcomes[0].other_scores)} others "
          f"(threshold {threshold})")
    for name, hits in (("own cell cites the evidence", [o.own_cites for o in outcomes]),
                       ("flat cell cites the evidence", [o.flat_cites for o in outcomes]),
                       ("own cell quotes a sentence of the evidence", [o.own_sentence for o in outcomes]),
                       ("flat cell quotes a sentence of the evidence", [o.flat_sentence for o in outcomes])):
        print(f"  {name:<46} {rate(sum(hits), n)}")
    for what, ours, theirs in (("passage", [o.own_cites for o in outcomes], [o.flat_cites for o in outcomes]),
                               ("sentence", [o.own_sentence for o in outcomes], [o.flat_sentence for o in outcomes])):
        only_ours, only_flat, p = mcnemar_exact(ours, theirs)
        print(f"  McNemar ({what}): forest only {only_ours}, flat only {only_flat}, p = {p:.3f}")
    others = [s for o in outcomes for s in o.other_scores]
    print(f"  own cell found                                 {rate(sum(o.own_score >= threshold for o in outcomes), n)}")
    print(f"  other papers' cells 'not found'                {rate(sum(s < threshold for s in others), len(others))}")
    top = sum(o.own_score >= threshold and o.own_score > max(o.other_scores) for o in outcomes)
    print(f"  own cell found and scoring highest of the group {rate(top, n)}")
    print("  at other thresholds (the same cells, their scores against another threshold):")
    for shown in SHOWN_THRESHOLDS:
        print(f"    {shown:.2f}: own found {sum(o.own_score >= shown for o in outcomes) / n:.2f}, "
              f"others not found {sum(s < shown for s in others) / len(others):.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="store location, kept between runs")
    parser.add_argument("--runs", type=int, default=5, help="warm runs per latency row")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--skip-quality", action="store_true")
    args = parser.parse_args()
    by_paper = load_questions(DEFAULT_DATA)
    ordered = sorted(by_paper)
    settings = load_settings().replace(data_dir=args.data_dir)
    forest = MemoryForest(settings)
    try:
        build_stores(forest, ordered)
        pdf_papers = [a.name for a in forest.archives(PDF_MODEL_ID)]
    finally:
        forest.close()
    if not args.skip_latency:
        for model_id, papers, label in ((group_model_id(0), ordered[:GROUP], "QASPER text papers 1-10"),
                                        (PDF_MODEL_ID, pdf_papers, "the seven PDFs")):
            questions = [q.text for p in papers for q in by_paper.get(p, [])]
            latency(settings, model_id, questions, args.runs, label)
    if args.skip_quality:
        return
    forest = MemoryForest(settings)
    try:
        for label, starts in (("dev papers 1-40", DEV_GROUPS), ("held-out papers 141-180", HELD_OUT_GROUPS)):
            outcomes = [o for start in starts for o in quality(forest, group_model_id(start), by_paper)]
            report(f"{label} (groups of {GROUP})", outcomes)
            if starts == DEV_GROUPS:
                best = best_separating(outcomes)
                print(f"  the threshold that best separates own from other papers here (Youden's J, 0.05 grid): "
                      f"{best:.2f}; FOUND_THRESHOLD is {FOUND_THRESHOLD}")
        report("held-out: the PDFs", quality(forest, PDF_MODEL_ID, by_paper))
    finally:
        forest.close()


if __name__ == "__main__":
    sys.exit(main())
