"""The reference-list detector (forest/references.py) on labelled passages of real PDFs: precision
and recall, dev papers (the rules were written from) and held-out papers apart.

The passages are the PDFs' leaves as the engine cuts them (ingest.load_document, the default
chunker); each is matched to its label in tests/data/reference_passages.json by page and the
first 60 characters of its text. Two detectors are scored: the engine's (a reference heading
above the passage, or its text reading as citation entries) and its text rule alone, which is
what catches a reference list whose heading the PDF reader did not recognise.

Run: `python -m bench.eval_references` (reads ../shared/eval/pdfs; a few seconds, no model).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from forest.config import load_settings
from forest.tree.leaves import leaf_chunks
from forest.references import looks_like_citations, under_reference_heading
from forest.ingest import load_document

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "tests" / "data" / "reference_passages.json"
DEFAULT_PDFS = ROOT.parent / "shared" / "eval" / "pdfs"


def key(page: int | None, text: str) -> tuple[int | None, str]:
    return page, " ".join(text.split())[:60]


def scores(pairs: list[tuple[bool, bool]]) -> str:
    """'precision P, recall R (TP/predicted, TP/actual)' for (label, predicted) pairs."""
    tp = sum(label and predicted for label, predicted in pairs)
    predicted = sum(p for _, p in pairs)
    actual = sum(label for label, _ in pairs)
    precision = tp / predicted if predicted else 1.0
    recall = tp / actual if actual else 1.0
    return f"precision {precision:.3f} ({tp}/{predicted}), recall {recall:.3f} ({tp}/{actual})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS, help="the PDFs folder (default: %(default)s)")
    args = parser.parse_args()
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    labels = {(p["paper"], p["page"], p["starts"]): p["reference"] for p in data["passages"]}
    settings = load_settings(environ={})
    results: dict[str, dict[str, list[tuple[bool, bool]]]] = {}
    unmatched = 0
    for split in ("dev", "held_out"):
        engine, text_only = [], []
        for paper in data[split]:
            document = load_document(args.pdfs / f"{paper}.pdf")
            for chunk in leaf_chunks(document, settings.chunker, settings.chunk_size, settings.chunk_overlap):
                label = labels.get((paper, *key(chunk.page_start, chunk.text)))
                if label is None:
                    unmatched += 1
                    continue
                by_text = looks_like_citations(chunk.text)
                engine.append((label, by_text or under_reference_heading(chunk.heading_path)))
                text_only.append((label, by_text))
        results[split] = {"engine": engine, "text": text_only}
    for split, name in (("dev", "dev papers"), ("held_out", "held-out papers")):
        got = results[split]
        print(f"{name} ({', '.join(data[split])}): {len(got['engine'])} passages, "
              f"{sum(label for label, _ in got['engine'])} of them reference lists")
        print(f"  heading or text (the engine): {scores(got['engine'])}")
        print(f"  text alone:                   {scores(got['text'])}")
    if unmatched:
        print(f"warning: {unmatched} passages had no label (the PDF reader or chunker changed since labelling)")


if __name__ == "__main__":
    main()
