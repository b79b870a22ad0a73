"""The offline triple extractor (forest/personal/graph.py) on sentences it was not written from
(tests/data/extraction_heldout.json, English and Chinese, written after the rules and not used to
change them). A predicted triple is correct when source, relationship and target match a gold one
(entity names compared case-insensitively, without a leading article; a gold target "(unnamed)" is a relation whose other
end has no name, so no triple can match it and it counts as a miss). The test suite's pattern
cases (tests/test_personal_graph.py) are the rules' own development set, reported apart.
Run: `python bench/eval_extraction.py` (`-v` lists every miss and false triple).
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from forest.personal.graph import TripleExtractor

HELDOUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "extraction_heldout.json"
ZH = re.compile(r"[\u4e00-\u9fff]")


def _norm(name: str) -> str:
    """Lower case without a leading article: "the city hospital" = "City Hospital"."""
    return re.sub(r"^(?:the|a|an)\s+", "", name.strip().lower())


def score(cases: list[dict], verbose: bool = False) -> tuple[float, float, int]:
    extractor = TripleExtractor()
    right = predicted = gold = 0
    for case in cases:
        want = {tuple(map(_norm, t)) for t in case["triples"]}
        got = {(_norm(t.source), _norm(t.relationship), _norm(t.target))
               for t in extractor.extract(case["text"], speaker="user")}
        right, predicted, gold = right + len(want & got), predicted + len(got), gold + len(want)
        if verbose and want != got:
            print(f"  {case['text']!r}: missed {sorted(want - got)}, false {sorted(got - want)}")
    return right / max(1, predicted), right / max(1, gold), len(cases)


def main() -> None:
    cases = json.loads(HELDOUT.read_text(encoding="utf-8"))
    verbose = "-v" in sys.argv
    print("offline triple extraction, held-out sentences: precision / recall (exact triples)")
    for name, part in (("English", [c for c in cases if not ZH.search(c["text"])]),
                       ("Chinese", [c for c in cases if ZH.search(c["text"])]), ("all", cases)):
        precision, recall, n = score(part, verbose and name != "all")
        print(f"{name:<8} {n:>3} sentences  precision {precision:.3f}  recall {recall:.3f}")


if __name__ == "__main__":
    main()
