"""The shape of the trees Memory Forest builds from real papers: do they read like the paper?

For the 7 PDFs of ../shared/eval/pdfs and the first 40 QASPER dev papers (sorted ids), each
ingested as its own archive with the offline models, prints per corpus:
  depth       levels from the root to the deepest leaf (max, median)
  fan-out     children per summary node (mean, max)
  peels       summary nodes whose children are one leaf and one summary node (a chain's links)
  content ×   stored node content / the document's text (summary nodes' content counted as stored)
  text ×      all stored text (content, summaries, titles) / the document's text
  root ≈ abs  share of root summaries drawn from the title and abstract (>= 80% of the summary's
              content words occur in them)
  titled      share of summary nodes with a title
  build s     ingest seconds per paper (models loaded before the clock)
With `--against REF` (default: ef1c2a5, the last commit before outline-aware trees) the same
measurement runs on that version too, in the same run, and both are printed.

Run: `python -m bench.tree_shape [--papers 40] [--against REF | --against none]`
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
EVAL = BENCH.parents[1] / "shared" / "eval"
DEFAULT_BASELINE = "ef1c2a5"
DRAWN_SHARE = 0.8


def qasper_papers(count: int) -> list[Path]:
    questions = json.loads((EVAL / "qasper-dev" / "questions.json").read_text())
    ids = sorted({q["paper_id"] for q in questions})[:count]
    return [EVAL / "qasper-dev" / "papers" / f"{paper}.txt" for paper in ids]


def title_and_abstract(path: Path, document) -> str:
    """The authors' own words about the paper: QASPER's title and abstract where the paper is in
    QASPER, else the parsed title and the passages of the section headed Abstract (or page 1)."""
    text_version = EVAL / "qasper-dev" / "papers" / f"{path.stem}.txt"
    if text_version.exists():
        text = text_version.read_text()
        title = text.splitlines()[0].lstrip("# ")
        abstract = re.search(r"^## Abstract\s*\n(.*?)(?=^## )", text, re.S | re.M)
        return title + "\n" + (abstract.group(1) if abstract else "")
    passages = [p.text for p in document.passages if (p.section or "").strip().lower().endswith("abstract")]
    passages = passages or [p.text for p in document.passages if p.page_start == 1]
    return (document.title or "") + "\n" + "\n".join(passages)


def measure(paths: list[Path]) -> list[dict]:
    from forest.service import MemoryForest
    from forest.text import content_terms
    from forest.ingest import load_document

    rows = []
    with tempfile.TemporaryDirectory() as data_dir:
        forest = MemoryForest(data_dir=data_dir)
        forest.embedder.embed_query("warm up")
        for i, path in enumerate(paths):
            document = load_document(path)
            started = time.perf_counter()
            archive = forest.ingest_file(path, f"shape-{i}")
            seconds = time.perf_counter() - started
            nodes = forest.tree(f"shape-{i}", archive.id)
            children: dict[int, list] = {}
            for node in nodes:
                children.setdefault(node.parent_id, []).append(node)
            summaries = [n for n in nodes if not n.is_leaf]
            peels = sum(1 for n in summaries if len(children.get(n.id, [])) == 2
                        and sorted(c.is_leaf for c in children[n.id]) == [False, True])
            reference = set(content_terms(title_and_abstract(path, document)))
            roots = children.get(None, [])
            drawn = [len(set(content_terms(r.summary)) & reference) >= DRAWN_SHARE * max(len(set(content_terms(r.summary))), 1)
                     for r in roots if not r.is_leaf]
            length = len(document.text)
            rows.append({
                "paper": path.stem, "pages": document.page_count, "leaves": archive.leaves, "nodes": archive.nodes,
                "depth": max(n.depth for n in nodes),
                "fanout": [len(children.get(n.id, [])) for n in summaries],
                "peels": peels, "summary_nodes": len(summaries),
                "content_ratio": sum(len(n.content) for n in nodes) / length,
                "text_ratio": sum(len(n.content) + len(n.summary) + len(getattr(n, "title", None) or "")
                                  for n in nodes) / length,
                "roots_drawn": sum(drawn), "summary_roots": len(drawn),
                "titled": sum(1 for n in summaries if getattr(n, "title", None)),
                "seconds": seconds})
        forest.close()
    return rows


def summarize(rows: list[dict]) -> dict:
    fanouts = [f for r in rows for f in r["fanout"]]
    roots = sum(r["summary_roots"] for r in rows)
    nodes = sum(r["summary_nodes"] for r in rows)
    return {"papers": len(rows), "depth_max": max(r["depth"] for r in rows),
            "depth_median": statistics.median(r["depth"] for r in rows),
            "fanout_mean": statistics.mean(fanouts) if fanouts else 0.0, "fanout_max": max(fanouts, default=0),
            "peels": sum(r["peels"] for r in rows), "summary_nodes": nodes,
            "content_ratio": sum(r["content_ratio"] for r in rows) / len(rows),
            "content_ratio_max": max(r["content_ratio"] for r in rows),
            "text_ratio": sum(r["text_ratio"] for r in rows) / len(rows),
            "roots_drawn": sum(r["roots_drawn"] for r in rows) / roots if roots else 0.0,
            "titled": sum(r["titled"] for r in rows) / nodes if nodes else 0.0,
            "seconds": statistics.mean(r["seconds"] for r in rows)}


def table(results: dict[str, dict[str, dict]]) -> str:
    header = (f"{'corpus':<14}{'version':<12}{'papers':>7}{'depth max/med':>15}{'fan-out mean/max':>18}"
              f"{'peels':>7}{'content ×':>11}{'(max)':>7}{'text ×':>8}{'root≈abs':>10}{'titled':>8}{'build s':>9}")
    lines = [header, "-" * len(header)]
    for corpus, versions in results.items():
        for version, s in versions.items():
            lines.append(f"{corpus:<14}{version:<12}{s['papers']:>7}{s['depth_max']:>9} / {s['depth_median']:<3g}"
                         f"{s['fanout_mean']:>11.1f} / {s['fanout_max']:<4}{s['peels']:>7}"
                         f"{s['content_ratio']:>10.2f}×{s['content_ratio_max']:>6.2f}×{s['text_ratio']:>7.2f}×"
                         f"{s['roots_drawn']:>10.2f}{s['titled']:>8.2f}{s['seconds']:>9.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=40, help="QASPER dev papers (first N sorted ids)")
    parser.add_argument("--against", default=DEFAULT_BASELINE, help="git ref to measure too ('none' to skip)")
    parser.add_argument("--json-out", help="write the per-paper figures as JSON here ('-': stdout, no table)")
    args = parser.parse_args()
    corpora = {"pdfs": sorted((EVAL / "pdfs").glob("*.pdf")), "qasper-dev": qasper_papers(args.papers)}
    if args.json_out == "-":
        json.dump({name: measure(paths) for name, paths in corpora.items()}, sys.stdout)
        return
    measured = {"this version": {name: measure(paths) for name, paths in corpora.items()}}
    if args.against != "none":
        from bench.baseline import measure_against

        measured[args.against] = measure_against(args.against, Path(__file__), ["--papers", str(args.papers)])
    results = {name: {version: summarize(rows[name]) for version, rows in measured.items()} for name in corpora}
    print(table(results))
    under_20 = [r for r in measured["this version"]["pdfs"] if (r["pages"] or 0) <= 20]
    print(f"\nthis version, PDFs of <= 20 pages: depth <= 5 for {sum(r['depth'] <= 5 for r in under_20)} of "
          f"{len(under_20)}; per paper: " + ", ".join(f"{r['paper']} {r['depth']}" for r in under_20))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(measured, indent=1))


if __name__ == "__main__":
    main()
