"""How readable are the titles of the tree's groups (summary nodes with no heading of their own)?

The 7 PDFs of ../shared/eval/pdfs (the dev set the offline labeller was written against) and the
first N QASPER dev papers (sorted ids; held out: never looked at while writing it) are each
ingested as an archive with the offline models. A group is a summary node whose title is not its
section's heading path, a span of sections ("2 Related Work – 4 Experiments") or the document's
title. Each group's title is checked against its paper, by rules that know nothing of the
labeller:
  number       a digit in the title (years, table cells, "h1")
  author       a word that is a name in this paper: capitalized before a citation ("Peterson et
               al.", "Lin (2004)", "Ji BIBREF3") or capitalized in its reference list and never
               written in lower case outside it; or "et al" / "BIBREF"
  bibliographic  a word of bibliographies or page furniture (arxiv, pages, proceedings, ...)
  junk         any of the three
  salad        fragments joined by " · " (keyword labels)
  phrase       the title's words, in order and adjacent, occur in the group's own text
  place        a title that says where the group is, not what it holds ("References, part 2 of 3")
and, over every summary node, sibling nodes with the same title ("2 Related Work" twice).
The same groups are also named by the labeller of `--labeller-ref` (default f26fb79, whose
"term · two-word phrase · term" labels the workbench showed before), read from git history and
run on the same text with the same term statistics, so both labellers are compared on identical
groups (McNemar's exact test on junk). With `--against REF` that whole version builds the papers
too, in the same run (its own trees: its groups and duplicate titles); slower.

Run: `python -m bench.eval_labels [--papers 20] [--labeller-ref REF] [--against REF] [--examples 12]`;
`--json-out FILE` keeps the built trees and `--reuse FILE` checks them again without building.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import types
from collections import Counter, defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# ../shared/eval beside the checkout (or beside the folder of worktrees it is in)
EVAL = next((p / "shared" / "eval" for p in BENCH.parents if (p / "shared" / "eval").is_dir()),
            BENCH.parents[1] / "shared" / "eval")
DEFAULT_LABELLER = "f26fb79"
HEADING_JOIN, SPAN_JOIN = " › ", " – "
BIBLIOGRAPHIC = {"arxiv", "preprint", "proceedings", "pages", "pp", "vol", "volume", "doi", "conference",
                 "journal", "workshop", "association", "transactions", "annual", "meeting", "ieee", "acm",
                 "http", "https", "www", "url", "isbn", "springer", "press", "fig", "figure", "table", "eq"}
PLACE = re.compile(r"(?:.+, )?[Pp]art \d+ of \d+")
WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
CITED_NAME = re.compile(r"\b([A-Z][a-z]+)(?:\s+(?:and|&)\s+([A-Z][a-z]+))?\s+(?:et al\b|\(\s*(?:19|20)\d\d|\[\d|BIBREF)")
REFERENCE_HEADING = re.compile(r"\b(?:references|bibliography)\b", re.IGNORECASE)


def qasper_papers(data: Path, count: int) -> list[Path]:
    questions = json.loads((data / "qasper-dev" / "questions.json").read_text())
    ids = sorted({q["paper_id"] for q in questions})[:count]
    return [data / "qasper-dev" / "papers" / f"{paper}.txt" for paper in ids]


# --- the engine's side: runs with whichever version is on PYTHONPATH -----------------------------
def build(paths: list[Path]) -> list[dict]:
    """Every node of each paper's tree: what the checks read (ids, titles, leaf ranges, leaf text
    and headings)."""
    from forest.service import MemoryForest

    papers = []
    with tempfile.TemporaryDirectory() as data_dir:
        forest = MemoryForest(data_dir=data_dir)
        for i, path in enumerate(paths):
            archive = forest.ingest_file(path, f"labels-{i}")
            nodes = [{"id": n.id, "parent": n.parent_id, "leaf": n.is_leaf, "title": n.title,
                      "first": n.first_leaf, "last": n.last_leaf, "index": n.leaf_index,
                      "text": n.content if n.is_leaf else "", "headings": n.headings if n.is_leaf else []}
                     for n in forest.tree(f"labels-{i}", archive.id)]
            papers.append({"paper": path.stem, "name": archive.name, "nodes": nodes})
            print(f"built {path.name}", file=sys.stderr, flush=True)
        forest.close()
    return papers


# --- the checks -----------------------------------------------------------------------------
def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def names_in(leaves: list[dict]) -> set[str]:
    """Lower-cased names of this paper: capitalized words right before a citation, and words of its
    reference list that are capitalized there and never written in lower case elsewhere."""
    cited = {name.lower() for leaf in leaves for pair in CITED_NAME.findall(leaf["text"]) for name in pair if name}
    references = [leaf for leaf in leaves if any(REFERENCE_HEADING.search(h) for h in leaf["headings"])]
    body_lower = {w for leaf in leaves if leaf not in references for w in WORD.findall(leaf["text"]) if w.islower()}
    listed = {w.lower() for leaf in references for w in WORD.findall(leaf["text"])
              if w[:1].isupper() and w[1:].islower() and w.lower() not in body_lower}
    return cited | listed


def from_headings(node: dict, leaves: list[dict], name: str) -> bool:
    """The title is the section's heading path, a span of sections, or the document's title."""
    paths = [leaf["headings"] for leaf in leaves]
    headed = {HEADING_JOIN.join(path[:k]) for path in paths for k in range(1, len(path) + 1)}
    lasts = {part for path in paths for part in path}
    title = node["title"] or ""
    span = title.split(SPAN_JOIN)
    return (title in headed or title == name or node["parent"] is None
            or (len(span) == 2 and span[0] in lasts and span[1] in lasts))


def check(paper: dict, labeller: types.SimpleNamespace | None = None) -> list[dict]:
    """One row per group of the paper: its passages, title and the checks; with a `labeller`, the
    title it gives the same group (from the group's text and the paper's term statistics)."""
    leaves = sorted((n for n in paper["nodes"] if n["leaf"]), key=lambda n: n["index"])
    names = names_in(leaves)
    stats = labeller.stats([leaf["text"] for leaf in leaves]) if labeller else None
    rows = []
    for node in paper["nodes"]:
        if node["leaf"] or not node["title"]:
            continue
        under = leaves[node["first"]: node["last"] + 1]
        if from_headings(node, under, paper["name"]):
            continue
        group_text = "\n\n".join(leaf["text"] for leaf in under)
        title = labeller.label(group_text, stats) if labeller else node["title"]
        place = bool(PLACE.fullmatch(title))
        tokens = words(title)
        text = " ".join(words(group_text))
        flags = {
            "number": not place and any(ch.isdigit() for ch in title),
            "author": "et al" in title.lower() or "bibref" in title.lower() or any(t in names for t in tokens),
            "bibliographic": any(t in BIBLIOGRAPHIC for t in tokens),
            "salad": " · " in title,
            "phrase": not place and bool(tokens) and f" {' '.join(tokens)} " in f" {text} ",
            "place": place,
        }
        flags["junk"] = flags["number"] or flags["author"] or flags["bibliographic"]
        rows.append({"paper": paper["paper"], "span": (node["first"], node["last"]), "title": title, **flags})
    return rows


def labeller_at(ref: str) -> types.SimpleNamespace:
    """The group labeller of forest/models/extractive.py as it was at `ref` (from git history), to run in
    this process: `stats(leaf texts)` and `label(text, stats)`."""
    source = subprocess.run(["git", "-C", str(BENCH.parent), "show", f"{ref}:forest/extractive.py"],
                            check=True, capture_output=True, text=True).stdout
    module = types.ModuleType(f"extractive_at_{ref}")
    sys.modules[module.__name__] = module     # its dataclasses look themselves up there
    exec(compile(source, f"{ref}:forest/extractive.py", "exec"), module.__dict__)
    return types.SimpleNamespace(stats=module.TermStats.from_texts, label=module.keyword_label)


def duplicate_titles(paper: dict) -> int:
    """Summary nodes whose title a sibling has too."""
    by_parent: dict = defaultdict(Counter)
    for node in paper["nodes"]:
        if not node["leaf"] and node["title"]:
            by_parent[node["parent"]][node["title"]] += 1
    return sum(count for titles in by_parent.values() for count in titles.values() if count > 1)


FLAGS = ("junk", "number", "author", "bibliographic", "salad", "phrase", "place")


def measure(measured: dict[str, dict[str, list[dict]]], labeller_ref: str | None) -> dict:
    """Per (corpus, who named the groups): the rows of check() and the duplicate titles (None for
    a labeller run on this version's trees: it names only the groups)."""
    labeller = labeller_at(labeller_ref) if labeller_ref else None
    results = {}
    for corpus in ("pdfs", "qasper"):
        for version, papers in measured.items():
            results[corpus, f"{version} (built)"] = ([r for p in papers[corpus] for r in check(p)],
                                                     sum(duplicate_titles(p) for p in papers[corpus]))
        if labeller:
            results[corpus, f"{labeller_ref} labeller"] = (
                [r for p in measured["this version"][corpus] for r in check(p, labeller)], None)
    return results


def table(results: dict) -> str:
    header = f"{'corpus':<8}{'titles by':<22}{'groups':>7}" + "".join(f"{f:>15}" for f in FLAGS) + f"{'dup titles':>12}"
    lines = [header, "-" * len(header)]
    for (corpus, who), (rows, dups) in results.items():
        cells = "".join(f"{sum(r[f] for r in rows):>8} ({sum(r[f] for r in rows) / max(len(rows), 1):>4.0%})"
                        for f in FLAGS)
        lines.append(f"{corpus:<8}{who:<22}{len(rows):>7}{cells}{'-' if dups is None else dups:>12}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=int, default=20, help="QASPER dev papers (first N sorted ids)")
    parser.add_argument("--labeller-ref", default=DEFAULT_LABELLER,
                        help="git ref whose labeller names the same groups ('none' to skip)")
    parser.add_argument("--against", default="none", help="git ref whose whole version builds the papers too")
    parser.add_argument("--examples", type=int, default=12, help="groups to print per corpus, named both ways")
    parser.add_argument("--eval-dir", type=Path, default=EVAL, help="the shared evaluation data")
    parser.add_argument("--json-out", help="write the built trees as JSON here ('-': stdout, no table)")
    parser.add_argument("--reuse", help="check the trees a --json-out FILE of an earlier run holds, building none")
    args = parser.parse_args()
    corpora = {"pdfs": sorted((args.eval_dir / "pdfs").glob("*.pdf")),
               "qasper": qasper_papers(args.eval_dir, args.papers)}
    if args.json_out == "-":
        json.dump({name: build(paths) for name, paths in corpora.items()}, sys.stdout)
        return
    if args.reuse:
        measured = json.loads(Path(args.reuse).read_text())
    else:
        measured = {"this version": {name: build(paths) for name, paths in corpora.items()}}
    if args.against != "none" and args.against not in measured:
        from bench.baseline import measure_against

        measured[args.against] = measure_against(args.against, Path(__file__), ["--papers", str(args.papers),
                                                                               "--eval-dir", str(args.eval_dir)])
    labeller_ref = None if args.labeller_ref == "none" else args.labeller_ref
    results = measure(measured, labeller_ref)
    print(table(results))
    if labeller_ref:
        from bench.flat_baselines import mcnemar_exact

        for corpus in ("pdfs", "qasper"):
            old, new = results[corpus, f"{labeller_ref} labeller"][0], results[corpus, "this version (built)"][0]
            only_old, only_new, p = mcnemar_exact([r["junk"] for r in old], [r["junk"] for r in new])
            print(f"\n{corpus}: the same {len(new)} groups; junk only in {labeller_ref}'s labels: {only_old}, only "
                  f"in this version's: {only_new}; McNemar exact p = {p:.2g}")
            for before, after in list(zip(old, new))[: args.examples]:
                print(f"  {after['paper']:<12} {before['title'][:44]!r:<48} -> {after['title']!r}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(measured))


if __name__ == "__main__":
    main()
