"""How well forest.ingest.metadata reads a paper's title, first author, year, DOI and arXiv id from
the PDF alone, against the PDF's metadata dictionary alone (the baseline).

Labels: a JSON list, one object per PDF, written by a person who read the rendered first page:
    {"file": "paper.pdf",                 # name inside the PDF folder
     "sha256": "…",                       # of the file: a changed file is reported and skipped
     "title": "As printed on page 1",
     "authors": ["First Last", …],        # in order; at least the first author
     "first_author_last": "Last",         # the first author's surname, as printed; null if no author
     "year": 2018,                        # year of publication printed on page 1 (venue, copyright,
                                          #   journal header; else the arXiv stamp's date); null if none
                                          #   is printed (then the year is not scored)
     "venue": "…", "doi": "10.…", "arxiv_id": "1705.07830",   # optional: scored only where given
     "source": "owner/repo@commit:path, or where the file came from"}

Measures, per set and pooled, each a share with its n: title exact match after normalisation
(casefold, accents folded, punctuation dropped, whitespace collapsed), first-author surname match
(normalised the same way), year exact, and DOI / arXiv id exact where labelled; venue (where
labelled) counts when one normalised text contains the other. The baseline reads /Title, the first
/Author's surname and the year of /CreationDate (DOI and arXiv id: a pattern in the dictionary's
fields). McNemar's exact test (two-sided, on the discordant pairs) compares ours with the baseline
per field. Time: milliseconds per PDF for read_paper_metadata (median, max; opening included).

    python -m bench.eval_metadata                                   # the dev set (7 arXiv PDFs)
    python -m bench.eval_metadata --heldout LABELS.json:PDF_DIR     # and a held-out set (repeatable)
    python -m bench.eval_metadata --labels LABELS.json --pdfs DIR   # only your own labelled set
    add --show to print every miss.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

from bench.flat_baselines import mcnemar_exact
from forest.ingest.metadata import read_paper_metadata

ROOT = Path(__file__).resolve().parents[1]
DEV_LABELS = ROOT / "bench" / "data" / "metadata_dev.json"
DEV_PDFS = ROOT.parent / "shared" / "eval" / "pdfs"
FIELDS = ("title", "first author", "year", "doi", "arxiv id", "venue")
DOI = re.compile(r"10\.\d{4,9}/[^\s\"<>]{1,200}")
ARXIV = re.compile(r"arXiv:\s?(\d{4}\.\d{4,5}|[a-z][a-z.-]{1,20}/\d{7})", re.IGNORECASE)


def normal(text: str | None) -> str:
    text = unicodedata.normalize("NFKD", str(text or "").casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"[^\w\s]|_", "", text)
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class Outcome:
    ours: dict[str, bool] = field(default_factory=dict)
    baseline: dict[str, bool] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)


def baseline(path: Path) -> dict:
    """What the metadata dictionary alone gives."""
    try:
        with pymupdf.open(path) as pdf:
            meta = pdf.metadata or {}
    except Exception:
        meta = {}
    author = (meta.get("author") or "").strip()
    first = re.split(r";|,|\band\b|&", author)[0].split() if author else []
    created = re.match(r"(?:D:)?((?:19|20)\d\d)", meta.get("creationDate") or "")
    fields = " ".join(str(meta.get(key) or "") for key in ("title", "subject", "keywords"))
    doi = DOI.search(fields)
    arxiv = ARXIV.search(fields)
    return {"title": meta.get("title") or "", "last": first[-1] if first else "",
            "year": int(created.group(1)) if created else None, "doi": doi.group(0).rstrip(".,;") if doi else "",
            "arxiv": arxiv.group(1) if arxiv else "", "venue": ""}


def score(label: dict, path: Path, seconds: list[float]) -> Outcome:
    start = time.perf_counter()
    found = read_paper_metadata(path)
    seconds.append(time.perf_counter() - start)
    ours = {"title": found.title, "last": found.authors[0][0] if found.authors else "", "year": found.year,
            "doi": found.doi, "arxiv": found.arxiv_id, "venue": found.venue}
    base = baseline(path)
    wanted = {"title": label["title"], "last": label["first_author_last"], "year": label.get("year"),
              "doi": label.get("doi"), "arxiv": label.get("arxiv_id"), "venue": label.get("venue")}
    outcome = Outcome()
    for name, key in zip(FIELDS, ("title", "last", "year", "doi", "arxiv", "venue")):
        if key != "title" and not wanted[key]:
            continue  # not labelled (or not printed on the page): not scored
        for side, got, into in (("ours", ours, outcome.ours), ("base", base, outcome.baseline)):
            into[name] = matches(key, got[key], wanted[key])
        if not outcome.ours[name]:
            outcome.misses.append(f"{name}: got {ours[key]!r}, wanted {wanted[key]!r}")
    return outcome


def matches(key: str, got, wanted) -> bool:
    if key == "year":
        return got == wanted
    if key == "venue":
        have, want = normal(got), normal(wanted)
        return bool(have and want) and (want in have or have in want)
    return bool(normal(got)) and normal(got) == normal(wanted)


def evaluate(name: str, labels_path: Path, folder: Path, show: bool, seconds: list[float]) -> list[Outcome]:
    labels = json.loads(labels_path.read_text(encoding="utf-8"))
    outcomes = []
    for label in labels:
        path = folder / label["file"]
        if not path.exists():
            print(f"  [{name}] missing: {path}", file=sys.stderr)
            continue
        if label.get("sha256") and hashlib.sha256(path.read_bytes()).hexdigest() != label["sha256"]:
            print(f"  [{name}] changed file, skipped: {path}", file=sys.stderr)
            continue
        outcome = score(label, path, seconds)
        outcomes.append(outcome)
        if show and outcome.misses:
            print(f"  [{name}] {label['file']}")
            for miss in outcome.misses:
                print(f"      {miss}")
    return outcomes


def table(name: str, outcomes: list[Outcome]) -> None:
    print(f"\n{name}: {len(outcomes)} PDFs")
    print(f"  {'field':<13}{'n':>4}  {'ours':>14}  {'baseline':>14}  {'McNemar p':>9}")
    for field_name in FIELDS:
        rows = [o for o in outcomes if field_name in o.ours]
        if not rows:
            continue
        ours = [o.ours[field_name] for o in rows]
        base = [o.baseline[field_name] for o in rows]
        n = len(rows)
        print(f"  {field_name:<13}{n:>4}  {sum(ours):>4}/{n:<3} {sum(ours) / n:>5.0%}  "
              f"{sum(base):>4}/{n:<3} {sum(base) / n:>5.0%}  {mcnemar_exact(ours, base)[2]:>9.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labels", type=Path, help="a labels JSON file (instead of the dev set)")
    parser.add_argument("--pdfs", type=Path, help="the folder holding the labelled PDFs")
    parser.add_argument("--heldout", action="append", default=[], metavar="LABELS:DIR",
                        help="a held-out set to evaluate as well (repeatable)")
    parser.add_argument("--show", action="store_true", help="print every miss")
    args = parser.parse_args()
    if bool(args.labels) != bool(args.pdfs):
        parser.error("--labels and --pdfs go together")
    sets = [("given", args.labels, args.pdfs)] if args.labels else [("dev", DEV_LABELS, DEV_PDFS)]
    for spec in args.heldout:
        labels, _, folder = spec.partition(":")
        if not folder:
            parser.error(f"--heldout wants LABELS.json:DIR, got {spec!r}")
        sets.append((f"held-out {Path(labels).stem}", Path(labels), Path(folder)))

    seconds: list[float] = []
    read_paper_metadata(next(iter(sorted(sets[0][2].glob("*.pdf"))), sets[0][2]))  # warm up imports and fonts
    everything: list[Outcome] = []
    for name, labels, folder in sets:
        outcomes = evaluate(name, labels, folder, args.show, seconds)
        table(name, outcomes)
        everything += outcomes
    if len(sets) > 1:
        table("all sets pooled", everything)
    if seconds:
        ms = [s * 1000 for s in seconds]
        print(f"\ntime per PDF (read_paper_metadata, opening included): median {statistics.median(ms):.1f} ms, "
              f"max {max(ms):.1f} ms over {len(ms)} PDFs")


if __name__ == "__main__":
    main()
