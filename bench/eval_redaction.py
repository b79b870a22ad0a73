"""Secret redaction (forest/personal/redact.py) on a labelled set of secrets and look-alikes
(tests/data/redaction_cases.json: credentials, card/account numbers, government ids, PINs and
passwords, in English and Chinese; order and tracking numbers, years, dates, phone numbers, zip
codes and ids the user wants remembered). A secret value counts as caught when it no longer
appears in the redacted text; a look-alike counts as a false alarm when it was removed.
Run: `python bench/eval_redaction.py` (`-v` lists every miss and false alarm).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from forest.personal.redact import redact

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "redaction_cases.json"


def evaluate(cases: list[dict]) -> dict[str, object]:
    caught = missed = kept = removed = 0
    problems = []
    for case in cases:
        text = redact(case["text"]).text
        for secret in case["secrets"]:
            if secret in text:
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
    return {"secrets": caught + missed, "look_alikes": kept + removed, "recall": caught / max(1, caught + missed),
            "precision": caught / max(1, caught + removed), "problems": problems}


def main() -> None:
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    result = evaluate(cases)
    print(f"redaction on {len(cases)} labelled texts: {result['secrets']} secret values, "
          f"{result['look_alikes']} look-alikes")
    print(f"recall {result['recall']:.3f}  precision {result['precision']:.3f}")
    if "-v" in sys.argv:
        print("\n".join(result["problems"]))


if __name__ == "__main__":
    main()
