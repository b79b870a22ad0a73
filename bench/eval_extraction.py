"""The offline triple extractor (forest/personal/graph.py) on two labelled sets of English and
Chinese sentences, each scored apart:
- dev (tests/data/extraction_dev.json): the sentences the rules are improved on;
- held-out (tests/data/extraction_heldout.json): written after the first rules and never used to
  change them, so it tells how the rules do on what they were not fitted to.
A predicted triple is correct when source, relationship and target match a gold one (compared
case-insensitively, without a leading article); a gold target "(unnamed)" is a relation whose
other end has no name, so no triple can match it and it counts as a miss. Precision is over the
predicted triples, recall over the gold ones, both pooled over the sentences.
Run: `python -m bench.eval_extraction` (`-v` lists every miss and false triple of the dev set;
`-v heldout` of the held-out set too).
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from forest.personal.graph import Triple, TripleExtractor

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
PARTS = {"dev": DATA / "extraction_dev.json", "held-out": DATA / "extraction_heldout.json"}
ZH = re.compile(r"[\u4e00-\u9fff]")


def _norm(name: str) -> str:
    """Lower case without a leading article: "the city hospital" = "City Hospital"."""
    return re.sub(r"^(?:the|a|an)\s+", "", name.strip().lower())


def score(cases: list[dict], extract: Callable[..., list[Triple]] | None = None,
          verbose: bool = False) -> tuple[float, float]:
    """(precision, recall) of `extract(text, speaker="user")` (the offline extractor by default)
    against the cases' gold triples."""
    extract = extract or TripleExtractor().extract
    right = predicted = gold = 0
    for case in cases:
        want = {tuple(map(_norm, t)) for t in case["triples"]}
        got = {(_norm(t.source), _norm(t.relationship), _norm(t.target)) for t in extract(case["text"], speaker="user")}
        right, predicted, gold = right + len(want & got), predicted + len(got), gold + len(want)
        if verbose and want != got:
            print(f"  {case['text']!r}: missed {sorted(want - got)}, false {sorted(got - want)}")
    return right / max(1, predicted), right / max(1, gold)


def main() -> None:
    verbose = "-v" in sys.argv
    print("offline triple extraction: precision / recall (exact triples)")
    for part, path in PARTS.items():
        cases = json.loads(path.read_text(encoding="utf-8"))
        show = verbose and (part == "dev" or "heldout" in sys.argv)
        for language, subset in (("English", [c for c in cases if not ZH.search(c["text"])]),
                                 ("Chinese", [c for c in cases if ZH.search(c["text"])]), ("all", cases)):
            precision, recall = score(subset, verbose=show and language != "all")
            print(f"{part:<8} {language:<8} {len(subset):>3} sentences  precision {precision:.3f}  recall {recall:.3f}")


if __name__ == "__main__":
    main()
