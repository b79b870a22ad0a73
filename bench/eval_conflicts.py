"""Precision and recall of the offline conflict rules on labelled claim pairs from real papers
(tests/data/claim_pairs.json), per split and per kind, for this checkout and a base commit in the
same run.

A pair is predicted a conflict when forest.research.claims.detect_conflicts finds one between its
two sides with the topic gate open (the gate is the embedder's job; this measures whether the
sentences disagree). Positives are the pairs labelled numbers / negation / direction; "agree" pairs
are look-alikes that must not be flagged. Per kind: recall of each conflict kind (and how often the
kind named is the labelled one), and the share of each look-alike aspect wrongly flagged. McNemar's
exact test compares the two versions' right/wrong per pair.

`--wild` also counts, unlabelled, the numeric conflicts flagged between paragraphs of different
QASPER papers (../shared/eval/qasper-dev) that share a measure word (WILD_WORDS: "batch size",
"accuracy", ...), WILD_PER_WORD paragraphs a word: what two unrelated papers' own numbers set off.

Run: `python -m bench.eval_conflicts [--against f26fb79] [--wild]` (the base runs from a temporary
git worktree through bench/baseline.py); `--against none` measures this checkout only.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "tests" / "data" / "claim_pairs.json"
BASE = "f26fb79"
CONFLICT_LABELS = ("numbers", "negation", "direction")
QASPER = ROOT.parent / "shared" / "eval" / "qasper-dev" / "papers"
WILD_WORDS = ("batch size", "learning rate", "epochs", "dropout", "hidden", "layers", "accuracy", "F1", "tweets",
              "sentences")
WILD_PER_WORD = 40


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    return json.loads(path.read_text())["pairs"]


def predict(pairs: list[dict[str, Any]]) -> dict[str, str | None]:
    """Pair id -> the kind of conflict the engine on sys.path finds, or None."""
    try:
        from forest.research.claims import Statement, detect_conflicts
    except ImportError:      # a base version from before the rules were a package
        from forest.research.conflicts import Statement, detect_conflicts

    predictions = {}
    for pair in pairs:
        sides = [Statement(_key(side, name, pair["id"]), side["text"], _source(side, name), side.get("citation") or "")
                 for name, side in (("a", pair["a"]), ("b", pair["b"]))]
        found = detect_conflicts(sides, topic_threshold=-1.0)
        predictions[pair["id"]] = found[0].kind if found else None
    return predictions


def wild_pairs(papers: Path = QASPER) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Pairs of (paper, paragraph) from different papers whose paragraphs both hold a number and the
    same WILD_WORDS entry: WILD_PER_WORD paragraphs a word, spread evenly over the sorted papers."""
    paragraphs = [(path.stem, text.strip()) for path in sorted(papers.glob("*.txt"))
                  for text in path.read_text(encoding="utf-8").split("\n\n")
                  if not text.startswith("#") and any(c.isdigit() for c in text)]
    pairs = set()
    for word in WILD_WORDS:
        holding = [p for p in paragraphs if word in p[1]]
        chosen = holding[::max(1, len(holding) // WILD_PER_WORD)][:WILD_PER_WORD]
        pairs.update((a, b) for a, b in combinations(chosen, 2) if a[0] != b[0])
    return sorted(pairs)


def predict_wild(pairs: list[tuple[tuple[str, str], tuple[str, str]]]) -> list[str | None]:
    """The kind of conflict the engine on sys.path finds between each pair's paragraphs, as two
    documents' passages, or None."""
    from forest.research.claims import Statement, detect_conflicts

    kinds = []
    for (paper_a, a), (paper_b, b) in pairs:
        found = detect_conflicts([Statement("node:1", a, paper_a), Statement("node:2", b, paper_b)], topic_threshold=-1.0)
        kinds.append(found[0].kind if found else None)
    return kinds


def _source(side: dict[str, Any], name: str) -> str:
    return side.get("title") or f"finding {name}"


def _key(side: dict[str, Any], name: str, pair_id: str) -> str:
    """As the engine keys them: a paper's passage is a node, a researcher's note a finding."""
    return f"node:{name}-{pair_id}" if side.get("paper") else f"finding:{name}-{pair_id}"


def score(pairs: list[dict[str, Any]], predicted: dict[str, str | None]) -> dict[str, Any]:
    """Confusion counts, precision/recall/F1, per-kind recall and per-aspect false alarms."""
    tp = fp = fn = tn = right_kind = 0
    kinds: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])     # found, right kind, total
    aspects: dict[str, list[int]] = defaultdict(lambda: [0, 0])      # flagged, total
    for pair in pairs:
        guess, label = predicted[pair["id"]], pair["label"]
        if label in CONFLICT_LABELS:
            kinds[label][2] += 1
            if guess:
                tp += 1
                kinds[label][0] += 1
                kinds[label][1] += guess == label
                right_kind += guess == label
            else:
                fn += 1
        else:
            aspects[pair["aspect"]][1] += 1
            if guess:
                fp += 1
                aspects[pair["aspect"]][0] += 1
            else:
                tn += 1
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"n": len(pairs), "tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall,
            "f1": f1, "kind_right": right_kind, "kinds": dict(kinds), "agree_flagged": dict(aspects)}


def correct(pairs: list[dict[str, Any]], predicted: dict[str, str | None]) -> list[bool]:
    return [bool(predicted[p["id"]]) == (p["label"] in CONFLICT_LABELS) for p in pairs]


def report(pairs: list[dict[str, Any]], versions: dict[str, dict[str, str | None]]) -> str:
    from bench.flat_baselines import mcnemar_exact   # here: the engine measured against runs this script too

    lines = []
    for split in ("dev", "heldout"):
        subset = [p for p in pairs if p["split"] == split]
        positives = sum(p["label"] in CONFLICT_LABELS for p in subset)
        lines.append(f"\n{split}: {len(subset)} pairs ({positives} conflicts, {len(subset) - positives} look-alikes)")
        scores = {name: score(subset, predicted) for name, predicted in versions.items()}
        lines.append(f"  {'version':<10} {'precision':>9} {'recall':>7} {'F1':>6}   tp  fp  fn  tn  kind named right")
        for name, s in scores.items():
            lines.append(f"  {name:<10} {s['precision']:>9.2f} {s['recall']:>7.2f} {s['f1']:>6.2f}  {s['tp']:>3} "
                         f"{s['fp']:>3} {s['fn']:>3} {s['tn']:>3}  {s['kind_right']}/{s['tp']}")
        for label in CONFLICT_LABELS:
            cells = "  ".join(f"{name} {s['kinds'].get(label, [0, 0, 0])[0]}/{s['kinds'].get(label, [0, 0, 0])[2]}"
                              for name, s in scores.items())
            lines.append(f"  recall {label:<22} {cells}")
        aspects = sorted({a for s in scores.values() for a in s["agree_flagged"]})
        for aspect in aspects:
            cells = "  ".join(f"{name} {s['agree_flagged'].get(aspect, [0, 0])[0]}/"
                              f"{s['agree_flagged'].get(aspect, [0, 0])[1]}" for name, s in scores.items())
            lines.append(f"  flagged look-alike: {aspect:<16} {cells}")
        if len(versions) == 2:
            (a_name, a), (b_name, b) = versions.items()
            only_a, only_b, p = mcnemar_exact(correct(subset, a), correct(subset, b))
            lines.append(f"  McNemar: right only with {a_name} {only_a}, only with {b_name} {only_b}, exact p = {p:.2g}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default=BASE, help="git ref to compare with, or 'none' (default: %(default)s)")
    parser.add_argument("--json-out", help="'-': print this checkout's predictions as JSON (used for the base run)")
    parser.add_argument("--wild", action="store_true", help="also count conflicts between different QASPER papers")
    args = parser.parse_args()
    pairs = load_pairs()
    wild = wild_pairs() if args.wild else []
    if args.json_out == "-":
        json.dump({"labelled": predict(pairs), "wild": predict_wild(wild)}, sys.stdout)
        return
    versions, wild_kinds = {}, {}
    if args.against != "none":
        from bench.baseline import measure_against

        base = measure_against(args.against, Path(__file__).resolve(), ["--wild"] if args.wild else [])
        versions["base"], wild_kinds["base"] = base["labelled"], base["wild"]
    versions["this"], wild_kinds["this"] = predict(pairs), predict_wild(wild)
    against = f"; base = {args.against}" if "base" in versions else ""
    print(f"Conflict rules on {len(pairs)} labelled claim pairs ({PAIRS.relative_to(ROOT)}{against})"
          + report(pairs, versions))
    if wild:
        print(f"\nunlabelled: {len(wild)} pairs of paragraphs of different QASPER papers sharing a measure word; "
              "flagged as conflicts (of which numbers): " + ", ".join(
                  f"{name} {sum(k is not None for k in kinds)} ({sum(k == 'numbers' for k in kinds)})"
                  for name, kinds in wild_kinds.items()))


if __name__ == "__main__":
    main()
