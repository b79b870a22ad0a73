"""Secret redaction (forest/personal/redact.py) on a labelled set of secrets and look-alikes
(tests/data/redaction_cases.json: credentials, card/account numbers, government ids, PINs and
passwords, provider keys, tokens and passwords in URLs, in English and Chinese; order and tracking
numbers, years, dates, phone numbers, hashes, UUIDs and ids the user wants remembered).

The set has two parts: dev (the cases the rules were written and checked against) and held_out
(written before the rules were last changed, never used to tune them). A secret counts as caught
when no piece of it (8 characters, or the whole of a shorter one) is left in the redacted text;
a look-alike counts as a false alarm when it was not kept whole.
Run: `python bench/eval_redaction.py` (`-v` lists every miss and false alarm).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from forest.personal.redact import redact

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "redaction_cases.json"
SPLITS = ("dev", "held_out")
PIECE = 8  # a secret whose any 8 characters survive is not redacted


def load(split: str | None = None) -> list[dict]:
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    return [c for c in cases if split is None or c.get("split", "dev") == split]


def survives(secret: str, text: str) -> bool:
    size = min(PIECE, len(secret))
    return any(secret[i:i + size] in text for i in range(len(secret) - size + 1))


def evaluate(cases: list[dict]) -> dict[str, object]:
    caught = missed = kept = removed = 0
    problems = []
    for case in cases:
        text = redact(case["text"]).text
        for secret in case["secrets"]:
            if survives(secret, text):
                missed += 1
                problems.append(f"missed {secret!r} in {case['text']!r} -> {text!r}")
            else:
                caught += 1
        for value in case["keep"]:
            if value in text:
                kept += 1
            else:
                removed += 1
                problems.append(f"removed look-alike {value!r} in {case['text']!r} -> {text!r}")
    return {"texts": len(cases), "secrets": caught + missed, "look_alikes": kept + removed,
            "recall": caught / max(1, caught + missed), "precision": caught / max(1, caught + removed),
            "false_alarms": removed, "problems": problems}


def main() -> None:
    for split in SPLITS:
        result = evaluate(load(split))
        print(f"{split:<9} {result['texts']:>3} texts, {result['secrets']:>3} secret values, "
              f"{result['look_alikes']:>3} look-alikes: recall {result['recall']:.3f}  "
              f"precision {result['precision']:.3f}  ({result['false_alarms']} look-alikes removed)")
        if "-v" in sys.argv:
            print("\n".join(f"  {p}" for p in result["problems"]))


if __name__ == "__main__":
    main()
