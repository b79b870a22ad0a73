"""Precision and recall of the offline conflict rules on labelled claim pairs from real papers
(tests/data/claim_pairs.json), per split and per kind, for this checkout and a base commit in the
same run.

A pair is predicted a conflict when forest.research.claims.detect_conflicts finds one between its
two sides with the topic gate open (the gate is the embedder's job; this measures whether the
sentences disagree). Positives are the pairs labelled numbers / negation / direction; "agree" pairs
are look-alikes that must not be flagged. Per kind: recall of each conflict kind (and how often the
kind named is the labelled one), and the share of each look-alike aspect wrongly flagged. McNemar's
exact test compares the two versions' right/wrong per pair.

Run: `python bench/eval_conflicts.py [--against f26fb79]` (the base runs from a temporary git
worktree through bench/baseline.py); `--against none` measures this checkout only.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "tests" / "data" / "claim_pairs.json"
BASE = "f26fb79"
CONFLICT_LABELS = ("numbers", "negation", "direction")


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
        sides = [Statement(f"{name}:{pair['id']}", side["text"], _source(side, name), side.get("citation") or "")
                 for name, side in (("a", pair["a"]), ("b", pair["b"]))]
        found = detect_conflicts(sides, topic_threshold=-1.0)
        predictions[pair["id"]] = found[0].kind if found else None
    return predictions


def _source(side: dict[str, Any], name: str) -> str:
    return side.get("title") or f"finding {name}"


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


def mcnemar_exact(a: list[bool], b: list[bool]) -> tuple[int, int, float]:
    """(right only in a, right only in b, two-sided exact p) over paired outcomes."""
    from math import comb

    only_a = sum(x and not y for x, y in zip(a, b))
    only_b = sum(y and not x for x, y in zip(a, b))
    n, k = only_a + only_b, min(only_a, only_b)
    return only_a, only_b, min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n) if n else 1.0


def report(pairs: list[dict[str, Any]], versions: dict[str, dict[str, str | None]]) -> str:
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
    args = parser.parse_args()
    pairs = load_pairs()
    if args.json_out == "-":
        json.dump(predict(pairs), sys.stdout)
        return
    versions = {}
    if args.against != "none":
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from baseline import measure_against

        versions["base"] = measure_against(args.against, Path(__file__).resolve(), [])
    versions["this"] = predict(pairs)
    against = f"; base = {args.against}" if "base" in versions else ""
    print(f"Conflict rules on {len(pairs)} labelled claim pairs ({PAIRS.relative_to(ROOT)}{against})"
          + report(pairs, versions))


if __name__ == "__main__":
    main()
