"""The sentence splitter (forest.text.split_sentences) on labelled possible sentence ends from the
held-out PDFs (tests/data/sentence_boundaries.json), against the splitter it replaced (a split
after '.', '!' or '?' and a space before a capital or a digit, whatever the word before).

For each case the text around the possible end is split; the end is predicted a boundary when a
sentence ends there. Printed: accuracy, and precision and recall of the boundaries.

Run: `python -m bench.eval_sentences` (no model, under a second).
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from forest.text import split_sentences

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "sentence_boundaries.json"
# What forest.text split on before it judged the words around an end.
_PUNCTUATION_ONLY = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[。！？；])|\n{2,}")


def punctuation_only(text: str) -> list[str]:
    return [" ".join(p.split()) for p in _PUNCTUATION_ONLY.split(text.strip()) if p and p.strip()]


def ends_there(splitter: Callable[[str], list[str]], left: str, right: str) -> bool:
    tail = " ".join(left.split())[-20:]
    return any(s.endswith(tail) for s in splitter(f"{left} {right}")[:-1])


def report(name: str, cases: list[dict], splitter: Callable[[str], list[str]]) -> None:
    pairs = [(case["boundary"], ends_there(splitter, case["left"], case["right"])) for case in cases]
    right = sum(label == predicted for label, predicted in pairs)
    tp = sum(label and predicted for label, predicted in pairs)
    predicted, actual = sum(p for _, p in pairs), sum(label for label, _ in pairs)
    print(f"{name:<28} accuracy {right / len(pairs):.3f} ({right}/{len(pairs)}); boundaries: precision "
          f"{tp / predicted:.3f} ({tp}/{predicted}), recall {tp / actual:.3f} ({tp}/{actual})")


def main() -> None:
    cases = json.loads(CASES.read_text(encoding="utf-8"))["cases"]
    print(f"{len(cases)} labelled possible sentence ends, {sum(c['boundary'] for c in cases)} of them boundaries")
    report("split_sentences", cases, split_sentences)
    report("punctuation only (before)", cases, punctuation_only)


if __name__ == "__main__":
    main()
