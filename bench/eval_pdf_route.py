"""The PDF route next to the text route: the same QASPER dev papers, ingested once from their
real arXiv PDFs (PyMuPDF) and once from QASPER's text, measured with the same questions.

The five papers of ../shared/eval/pdfs that are QASPER dev papers each go into two forests
(model_ids "route-text" and "route-pdf"); for every question with paragraph evidence, the
forest's context and flat dense retrieval fill budgets of 500 and 2,000 tokens. Scoring is
eval_qasper's (a gold paragraph is found when most of its content terms are in one chunk),
which tolerates the differences between PDF text and QASPER's text.

Run: `python -m bench.eval_pdf_route [--data-dir DIR --reuse]`
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bench.eval_qasper import DEFAULT_DATA, dense_pack, load_leaves, load_questions, question_recall, terms

from forest.service import MemoryForest

DEFAULT_PDFS = DEFAULT_DATA.parent / "pdfs"
ROUTES = {"text": "route-text", "pdf": "route-pdf"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--data-dir", type=Path, help="store location (default: a temporary dir, deleted after)")
    parser.add_argument("--reuse", action="store_true", help="skip papers already in --data-dir")
    args = parser.parse_args()
    by_paper = load_questions(args.data)
    papers = sorted(p.stem for p in args.pdfs.glob("*.pdf") if p.stem in by_paper)
    questions = [q for p in papers for q in by_paper[p]]
    gold = {p: terms(p) for q in questions for ev in q.annotators for p in ev}
    temporary = args.data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="pdf-route-")) if temporary else args.data_dir
    forest = MemoryForest(data_dir=data_dir)
    try:
        print(f"{len(papers)} papers with a PDF and paragraph-evidence questions: {', '.join(papers)}; "
              f"{len(questions)} questions")
        header = f"{'route':<6}{'leaves':>8}{'ingest s':>10}" + "".join(
            f"{f'{m}@{b}':>17}" for m in ("forest", "flat") for b in args.budgets)
        print(header)
        print("-" * len(header))
        for route, model_id in ROUTES.items():
            present = {a.name for a in forest.archives(model_id)} if args.reuse else set()
            seconds = []
            for paper in papers:
                if paper in present:
                    continue
                path = args.pdfs / f"{paper}.pdf" if route == "pdf" else args.data / "papers" / f"{paper}.txt"
                start = time.perf_counter()
                forest.ingest_file(path, model_id, name=paper)
                seconds.append(time.perf_counter() - start)
            leaves, matrix, _ = load_leaves(forest, model_id)
            recall = {(m, b): [] for m in ("forest", "flat") for b in args.budgets}
            for q in questions:
                vector = forest.embedder.embed_query(q.text)
                for b in args.budgets:
                    context = forest.context(model_id, q.text, budget_tokens=b)
                    recall["forest", b].append(question_recall(q, [terms(s.node.content) for s in context.leaves], gold))
                    flat = dense_pack(matrix, vector, leaves, b)
                    recall["flat", b].append(question_recall(q, [leaf.terms for leaf in flat], gold))
            mean_seconds = f"{statistics.fmean(seconds):.1f}" if seconds else "reused"
            print(f"{route:<6}{len(leaves):>8}{mean_seconds:>10}" + "".join(
                f"{statistics.fmean(recall[key]):>17.3f}" for key in recall))
    finally:
        forest.close()
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
