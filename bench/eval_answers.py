"""The offline answers of `ask` against QASPER's gold answers: answer-F1 (QASPER's own measure)
and evidence found, with a flat baseline at the same answer length; optionally against another
git ref of the engine in the same run (before/after).

Each paper is the only archive of its own model_id (eval_qasper's per-paper protocol: a QASPER
question is asked about one paper). For every question of the papers (all of them, answerable
or not, as QASPER's evaluator counts them):
  answer-F1     QASPER's token F1 (lower-cased, punctuation and articles dropped) between the
                answer's quoted sentences (the offline note and the [node ...] markers removed)
                and each annotator's reference, the best one kept; a reference is the extractive
                spans joined by ", ", else the free-form answer, else "Yes"/"No", or
                "Unanswerable" (the rules of qasper_evaluator.py). Also by the best reference's type.
  evidence      the question has paragraph evidence and some gold paragraph has half its word
                5-grams in the passages the answer cites (eval_qasper's rule).
  flat          the strongest flat answer built from the same parts: the paper's 1,000-char
                chunks ranked by cosine (flat dense) or by BM25, the sentences of the top
                FLAT_PASSAGES chunks ranked by the share of the question's words they hold (then
                chunk rank, then position), taken until they hold as many words as the forest's
                answer to that question, the last one cut there: the same answer length.
Differences are paired: a bootstrap 95% interval of the mean F1 difference, McNemar on evidence.

Run: `python -m bench.eval_answers --papers 40 --data-dir /tmp/qa-dev --baseline f26fb79` (dev:
papers 1-40) and `--papers 20 --skip 40 --data-dir /tmp/qa-held --baseline f26fb79` (held-out:
papers 41-60). With --baseline the same script first runs against that ref in a temporary git
worktree, on the same store, and both are printed: the two engines answer from the same trees
(built by whichever version ingested the papers first: `--ingest-only` builds them with this
one), so the difference is the asking (retrieval, the loop, the answer), not the build. Papers are
those of eval_qasper (sorted ids of papers with a question whose evidence is a paragraph).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import string
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from bench.eval_qasper import BM25, load_questions, ngram_hit, paper_arguments, per_paper_model_id, words
from bench.flat_baselines import DENSE_1000, CachedEmbedder, EmbeddingCache, FlatIndex, mcnemar_exact

from forest.models import registry as components
from forest.recall.agent import OfflinePolicy
from forest.config import load_settings
from forest.service import MemoryForest
from forest.text import content_terms, split_sentences, tokenize
from forest.ingest import load_document

FLAT_PASSAGES = 3
MARKER = re.compile(r"\s*\[node \d+[^\]]*\]")
BOOTSTRAP = 2000


class SectionFirst(OfflinePolicy):
    """The ablation: of the nodes leading to a guide, open the one the question scored highest
    (the guides only break ties), i.e. follow the best-scoring section."""

    @staticmethod
    def priority(candidate, held):
        return candidate.score, sum(1 / rank for rank, _ in held)


# --- QASPER's evaluator (qasper_evaluator.py, Dasigi et al. 2021) ----------------------------
def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def token_f1(prediction: str, reference: str) -> float:
    predicted, gold = normalize_answer(prediction).split(), normalize_answer(reference).split()
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def references(answers: list[dict]) -> list[tuple[str, str]]:
    """(reference answer, its type) per annotator, as the official evaluator builds them."""
    out = []
    for answer in answers:
        if answer.get("unanswerable"):
            out.append(("Unanswerable", "none"))
        elif answer.get("extractive_spans"):
            out.append((", ".join(answer["extractive_spans"]), "extractive"))
        elif answer.get("free_form_answer"):
            out.append((answer["free_form_answer"], "abstractive"))
        elif answer.get("yes_no") is not None:
            out.append(("Yes" if answer["yes_no"] else "No", "boolean"))
    return out


def best_f1(prediction: str, refs: list[tuple[str, str]]) -> tuple[float, str]:
    return max(((token_f1(prediction, ref), kind) for ref, kind in refs), key=lambda pair: pair[0],
               default=(0.0, "none"))


# --- answers ----------------------------------------------------------------------------------
def answer_text(answer: str) -> str:
    """What the offline answer says: its quoted sentences, without the note and the markers."""
    lines = [line[2:] for line in answer.splitlines() if line.startswith("- ")] or answer.splitlines()[1:]
    return " ".join(MARKER.sub("", line).strip() for line in lines)


def same_length_answer(question: str, passages: list[str], length: int) -> tuple[str, list[str]]:
    """The flat answer: the passages' sentences best covering the question's words, `length`
    words in all; and the passages it quotes."""
    terms = set(content_terms(question))
    ranked = sorted(((len(terms & set(content_terms(s))), -rank, -position, s)
                     for rank, passage in enumerate(passages)
                     for position, s in enumerate(split_sentences(passage))), reverse=True)
    taken: list[str] = []
    quoted: dict[int, str] = {}
    for _, rank, _, sentence in ranked:
        if len(taken) >= length:
            break
        taken += sentence.split()
        quoted[-rank] = passages[-rank]
    return " ".join(taken[:length]), list(quoted.values())


def measure(args: argparse.Namespace) -> dict:
    raw = json.loads((args.data / "questions.json").read_text(encoding="utf-8"))
    with_evidence = load_questions(args.data)
    papers = sorted(with_evidence)[args.skip : args.skip + args.papers]
    evidence = {q.question_id: q for p in papers for q in with_evidence[p]}
    questions = [q for q in raw if q["paper_id"] in set(papers)]
    settings = load_settings().replace(data_dir=args.data_dir)
    forest = MemoryForest(settings, embedder=CachedEmbedder(components.make_embedder(settings)))
    if args.section_first:
        forest.agent.policy = SectionFirst()
    rows = []
    try:
        for paper in papers:
            if not forest.archives(per_paper_model_id(paper)):
                forest.ingest_file(args.data / "papers" / f"{paper}.txt", per_paper_model_id(paper), name=paper)
        if args.ingest_only:
            return {"papers": papers, "rows": []}
        documents = {p: load_document(args.data / "papers" / f"{p}.txt") for p in papers}
        dense = FlatIndex.build(DENSE_1000, documents, EmbeddingCache(forest.embedder))
        lexical = {p: BM25([tokenize(dense.texts[i]) for i in dense.scope(p)]) for p in papers}
        gold_words = {p: words(p) for q in evidence.values() for ev in q.annotators for p in ev}
        for q in questions:
            state = forest.ask(per_paper_model_id(q["paper_id"]), q["question"])
            text = answer_text(state.answer or "")
            cited = [c.node.content for c in state.cited]
            refs = references(q["answers"])
            f1, kind = best_f1(text, refs)
            row = {"question_id": q["question_id"], "paper": q["paper_id"], "question": q["question"],
                   "answer": text, "words": len(text.split()), "f1": f1, "type": kind,
                   "evidence": None}
            scope = dense.scope(q["paper_id"])
            vector = forest.embedder.embed_query(q["question"])
            by_dense = scope[np.argsort(-(dense.matrix[scope] @ vector.astype(np.float32)), kind="stable")]
            by_bm25 = scope[np.argsort(-lexical[q["paper_id"]].scores(q["question"]), kind="stable")]
            gold = evidence.get(q["question_id"])
            if gold is not None:
                row["evidence"] = ngram_hit(gold, cited, gold_words)
            for name, order in (("flat dense", by_dense), ("flat bm25", by_bm25)):
                passages = [dense.texts[i] for i in order[:FLAT_PASSAGES]]
                flat, used = same_length_answer(q["question"], passages, row["words"])
                row[name] = best_f1(flat, refs)[0]
                row[name + " evidence"] = None if gold is None else ngram_hit(gold, used, gold_words)
            rows.append(row)
    finally:
        forest.close()
    return {"papers": papers, "rows": rows}


# --- report -----------------------------------------------------------------------------------
def bootstrap_interval(differences: list[float], seed: int = 7) -> tuple[float, float]:
    rng = random.Random(seed)
    n = len(differences)
    means = sorted(statistics.fmean(rng.choices(differences, k=n)) for _ in range(BOOTSTRAP))
    return means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1]


def report(label: str, result: dict) -> None:
    rows = result["rows"]
    print(f"\n{label}: {len(result['papers'])} papers, {len(rows)} questions; "
          f"answer {statistics.fmean(r['words'] for r in rows):.1f} words on average")
    print(f"  answer-F1 forest ask {statistics.fmean(r['f1'] for r in rows):.3f}; at the same length: "
          + ", ".join(f"{name} {statistics.fmean(r[name] for r in rows):.3f}" for name in ("flat dense", "flat bm25")))
    for name in ("flat dense", "flat bm25"):
        low, high = bootstrap_interval([r["f1"] - r[name] for r in rows])
        print(f"  forest - {name}: {statistics.fmean(r['f1'] - r[name] for r in rows):+.3f} "
              f"(95% bootstrap interval {low:+.3f} .. {high:+.3f})")
    by_type: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r["f1"])
    print("  by the best reference's type: " + ", ".join(f"{t} {statistics.fmean(v):.3f} (n={len(v)})"
                                                          for t, v in sorted(by_type.items())))
    judged = [r for r in rows if r["evidence"] is not None]
    if judged:
        found = [r["evidence"] for r in judged]
        print(f"  evidence found in the cited passages: {statistics.fmean(found):.3f} of {len(judged)} questions "
              "with paragraph evidence; flat answers' passages: "
              + ", ".join(f"{name} {statistics.fmean(r[name + ' evidence'] for r in judged):.3f}"
                          for name in ("flat dense", "flat bm25")))


def compare(before: dict, after: dict, ref: str) -> None:
    paired = {r["question_id"]: r for r in before["rows"]}
    rows = [(paired[r["question_id"]], r) for r in after["rows"] if r["question_id"] in paired]
    low, high = bootstrap_interval([a["f1"] - b["f1"] for b, a in rows])
    print(f"\nafter - before ({ref}): answer-F1 {statistics.fmean(a['f1'] - b['f1'] for b, a in rows):+.3f} "
          f"(95% bootstrap interval {low:+.3f} .. {high:+.3f}, {len(rows)} questions)")
    judged = [(b, a) for b, a in rows if a["evidence"] is not None and b["evidence"] is not None]
    if judged:
        after_only, before_only, p = mcnemar_exact([a["evidence"] for _, a in judged], [b["evidence"] for b, _ in judged])
        print(f"  evidence found: after only {after_only}, before only {before_only}, McNemar p = {p:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    paper_arguments(parser)
    parser.add_argument("--baseline", metavar="REF", help="also measure this git ref of the engine, same run")
    parser.add_argument("--rows", type=Path, help="write every question's answers and scores here (JSON)")
    parser.add_argument("--json-out", help="'-': print the measurement as JSON only (used by --baseline)")
    parser.add_argument("--ingest-only", action="store_true", help="build the papers' store and stop")
    parser.add_argument("--section-first", action="store_true",
                        help="ablation: the offline policy opens the best-scoring node leading to a guide first")
    args = parser.parse_args()
    span = f"QASPER dev papers {args.skip + 1}-{args.skip + args.papers}"
    if args.ingest_only:
        measure(args)
        return
    if args.json_out == "-":
        json.dump(measure(args), sys.stdout)
        return
    before = None
    if args.baseline:
        from bench.baseline import measure_against

        forwarded = ["--data", str(args.data), "--papers", str(args.papers), "--skip", str(args.skip),
                     "--data-dir", str(args.data_dir)]
        before = measure_against(args.baseline, Path(__file__).resolve(), forwarded)
    after = measure(args)
    if args.rows:
        args.rows.write_text(json.dumps({"after": after, "before": before}, indent=1))
    if before is not None:
        report(f"{span}, engine at {args.baseline}", before)
    report(f"{span}, this engine", after)
    if before is not None:
        compare(before, after, args.baseline)


if __name__ == "__main__":
    main()
