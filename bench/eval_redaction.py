"""Secret redaction (forest/redaction.py) on a labelled set of secrets and look-alikes
(tests/data/redaction_cases.json: credentials, card/account numbers, government ids, PINs and
passwords, provider keys, tokens and passwords in URLs, in English and Chinese; order and tracking
numbers, years, dates, phone numbers, hashes, UUIDs and ids the user wants remembered; passphrases
of several words; metadata objects, whose values of any type are redacted, their keys naming a
secret as a cue does; keys a model server echoes back in an error).

The set has two parts: dev (the cases the rules were written and checked against) and held_out
(written before the rules were last changed, never used to tune them). A secret counts as caught
when no piece of it (8 characters, or the whole of a shorter one) is left in the redacted text;
a look-alike counts as a false alarm when it was not kept whole. Beside forest's redaction, the
strongest baseline made of the same parts: detect-secrets alone (every plugin, its keyword
detector included, high-entropy strings over their limits), with 95% Wilson intervals and an
exact McNemar test on the secrets both saw.
Run: `python -m bench.eval_redaction` (`-v` lists every miss and false alarm of forest's redaction).
"""
from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from bench.flat_baselines import mcnemar_exact
from forest.redaction import redact, redact_metadata

CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "redaction_cases.json"
SPLITS = ("dev", "held_out")
PIECE = 8  # a secret whose any 8 characters survive is not redacted


def load(split: str | None = None) -> list[dict]:
    cases = json.loads(CASES.read_text(encoding="utf-8"))
    return [c for c in cases if split is None or c.get("split", "dev") == split]


def survives(secret: str, text: str) -> bool:
    size = min(PIECE, len(secret))
    return any(secret[i:i + size] in text for i in range(len(secret) - size + 1))


def forest_redaction(case: dict) -> str:
    """A case as forest keeps it: its text redacted, or its metadata (as the JSON it is stored as)."""
    if "metadata" in case:
        return json.dumps(redact_metadata(case["metadata"]))
    return redact(case["text"]).text


def as_text(redactor: Callable[[str], str]) -> Callable[[dict], str]:
    """A text redactor over a case: a metadata case is given as its JSON."""
    return lambda case: redactor(case["text"] if "text" in case else json.dumps(case["metadata"]))


def outcomes(cases: list[dict], redactor: Callable[[dict], str] = forest_redaction
             ) -> tuple[list[bool], list[bool], list[str]]:
    """Per secret: caught; per look-alike: kept whole; and what went wrong, in words."""
    caught, kept, problems = [], [], []
    for case in cases:
        text = redactor(case)
        shown = case.get("text", case.get("metadata"))
        for secret in case["secrets"]:
            caught.append(not survives(secret, text))
            if not caught[-1]:
                problems.append(f"missed {secret!r} in {shown!r} -> {text!r}")
        for value in case["keep"]:
            kept.append(value in text)
            if not kept[-1]:
                problems.append(f"removed look-alike {value!r} in {shown!r} -> {text!r}")
    return caught, kept, problems


def evaluate(cases: list[dict], redactor: Callable[[dict], str] = forest_redaction) -> dict[str, object]:
    caught, kept, problems = outcomes(cases, redactor)
    hits, removed = sum(caught), kept.count(False)
    return {"texts": len(cases), "secrets": len(caught), "look_alikes": len(kept),
            "recall": hits / max(1, len(caught)), "precision": hits / max(1, hits + removed),
            "caught": hits, "false_alarms": removed, "problems": problems}


def detect_secrets_alone(text: str) -> str:
    """What detect-secrets finds in the text (every plugin; high-entropy strings over its limits),
    each value replaced, as a redactor would."""
    from detect_secrets.core.scan import scan_line
    from detect_secrets.settings import default_settings, get_settings

    found = set()
    with default_settings():
        # verification would call the providers' APIs: off (offline, and the labels are what count)
        get_settings().disable_filters("detect_secrets.filters.common.is_ignored_due_to_verification_policies")
        for line in text.splitlines() or [text]:
            for secret in scan_line(line):
                limit = getattr(_ENTROPY.get(secret.type), "entropy_limit", None)
                if limit is None or _ENTROPY[secret.type].calculate_shannon_entropy(secret.secret_value) > limit:
                    found.add(secret.secret_value)
    for value in sorted(found, key=len, reverse=True):
        text = text.replace(value, "[SECRET]")
    return text


def _entropy_plugins() -> dict[str, object]:
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString, HexHighEntropyString

    return {plugin.secret_type: plugin for plugin in (Base64HighEntropyString(), HexHighEntropyString())}


_ENTROPY = _entropy_plugins()


def wilson(hits: int, total: int, z: float = 1.96) -> tuple[float, float]:
    if total == 0:
        return 0.0, 0.0
    p = hits / total
    centre, half = p + z * z / (2 * total), z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return (centre - half) / (1 + z * z / total), (centre + half) / (1 + z * z / total)


def main() -> None:
    methods = {"forest redaction": forest_redaction, "detect-secrets alone": as_text(detect_secrets_alone)}
    for split in SPLITS:
        cases = load(split)
        seen = {}
        for name, redactor in methods.items():
            result = evaluate(cases, redactor)
            seen[name] = outcomes(cases, redactor)[0]
            low, high = wilson(result["caught"], result["secrets"])
            p_low, p_high = wilson(result["caught"], result["caught"] + result["false_alarms"])
            print(f"{split:<9} {name:<21} {result['texts']:>3} texts, {result['secrets']:>3} secrets, "
                  f"{result['look_alikes']:>3} look-alikes: recall {result['recall']:.3f} [{low:.2f}-{high:.2f}]  "
                  f"precision {result['precision']:.3f} [{p_low:.2f}-{p_high:.2f}]  "
                  f"({result['false_alarms']} look-alikes removed)")
            if "-v" in sys.argv and name == "forest redaction":
                print("\n".join(f"  {p}" for p in result["problems"]))
        only_ours, only_theirs, p = mcnemar_exact(seen["forest redaction"], seen["detect-secrets alone"])
        print(f"{split:<9} McNemar on secrets: {only_ours} caught only by forest, {only_theirs} only by "
              f"detect-secrets alone, exact p = {p:.2g}")


if __name__ == "__main__":
    main()
