"""Build bench/data/update_pairs_cdconv.json: (earlier, later) statement pairs of one speaker from
CDConv (Zheng et al., EMNLP 2022, github.com/thu-coai/CDConv, CC BY-NC 4.0), labelled by the
dataset's own annotators, for bench/eval_updates.py.

Each CDConv conversation is u1, b1, u2, b2: a bot's reply b1, a user turn u2 written to make the
bot say the same thing again, and the bot's next reply b2. Annotators labelled b2: 0 no
contradiction, 3 contradicts the history (with a persona label: 1 attribute, 2 opinion or
preference, 3 experience, 0 unrelated), 1 and 2 other faults. A pair is (b1, b2), both the bot's:
should_supersede when labelled 3 with a persona label 1-3 (the later statement gives another value
of what the earlier one said of the speaker), not when labelled 0. Labels 1, 2 and persona 0 are
left out. Only statements in the first person ("我" in both, b2 not a question but for a
closing "你呢?") are kept, the same filter for both labels; the same two replies count once, and
not at all when CDConv labels them both ways in different conversations.

Split by the earlier statement (a stable hash of b1): every conversation that starts from the
same statement lands in the same split. Each split takes `--per-class` positives and as many
negatives; a positive's own conversation context (the same u1 and b1) gives its negative when it
has one, so the two classes talk about the same things.

Run: `git -C <CDConv clone> show 2e88d21:cdconv.txt > cdconv.txt` then
`python -m bench.make_update_pairs_cdconv cdconv.txt`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.update_sets import SETS, docstring_how, write_set

PERSONA_KINDS = {1: "attribute", 2: "opinion", 3: "experience"}
SOURCE_COMMIT = "2e88d215b2986a3719f9f63508e10a2e0fe72bfe"


def split_of(earlier: str) -> str:
    """dev or heldout, fixed by the earlier statement's text so no statement straddles the split."""
    return "dev" if hashlib.sha256(earlier.encode("utf-8")).digest()[0] % 2 == 0 else "heldout"


TAG_QUESTION = re.compile(r"[,，]?\s*你呢\s*[?？!！]*\s*$")  # "..., 你呢?" (and you?) still states what precedes it


def first_person_statements(row: dict[str, Any]) -> bool:
    later = TAG_QUESTION.sub("", row["b2"]).rstrip()
    return "我" in row["b1"] and "我" in later and not later.endswith(("?", "？"))


def label_of(row: dict[str, Any]) -> bool | None:
    """The dataset's label as should_supersede; None for rows this set leaves out."""
    if row["label"] == 0:
        return False
    if row["label"] == 3 and row.get("persona") in PERSONA_KINDS:
        return True
    return None


def order_key(line: int, text: str) -> str:
    # A fixed, label-blind order to take rows in (not the file's, which groups by batch).
    return hashlib.sha256(f"{line}:{text}".encode("utf-8")).hexdigest()


def build_pairs(rows: list[dict[str, Any]], per_class: int) -> list[dict[str, Any]]:
    labelled = [(n, row, label_of(row)) for n, row in enumerate(rows, start=1)
                if first_person_statements(row) and label_of(row) is not None]
    # The same two replies in several conversations count once, and not at all when labelled both ways.
    labels: dict[tuple[str, str], set[bool]] = defaultdict(set)
    for _, row, positive in labelled:
        labels[(row["b1"], row["b2"])].add(positive)
    candidates, seen = [], set()
    for n, row, positive in labelled:
        if len(labels[(row["b1"], row["b2"])]) == 1 and (row["b1"], row["b2"]) not in seen:
            seen.add((row["b1"], row["b2"]))
            candidates.append((n, row, positive))
    negatives_by_context: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, row, positive in sorted(candidates, key=lambda c: order_key(c[0], c[1]["b2"])):
        if not positive:
            negatives_by_context[(row["u1"], row["b1"])].append(n)
    by_line = {n: row for n, row, _ in candidates}
    pairs = []
    for split in ("dev", "heldout"):
        in_split = sorted((c for c in candidates if split_of(c[1]["b1"]) == split),
                          key=lambda c: order_key(c[0], c[1]["b2"]))
        # Positives whose context also has a negative first: they give the matched negatives.
        positives = sorted((c for c in in_split if c[2]),
                           key=lambda c: not negatives_by_context.get((c[1]["u1"], c[1]["b1"])))[:per_class]
        taken: list[int] = []
        for _, row, _ in positives:
            same_context = [n for n in negatives_by_context.get((row["u1"], row["b1"]), []) if n not in taken]
            if same_context:
                taken.append(same_context[0])
        others = [n for n, _, positive in in_split if not positive and n not in taken]
        taken += others[:per_class - len(taken)]
        chosen = [(n, by_line[n], True) for n, _, _ in positives] + [(n, by_line[n], False) for n in taken]
        for n, row, positive in sorted(chosen):
            pairs.append({
                "conversation": f"cdconv-{n}", "split": split, "speaker": "bot",
                "attribute": PERSONA_KINDS[row["persona"]] if positive else None,
                "earlier_id": f"line {n} b1", "later_id": f"line {n} b2",
                "earlier": row["b1"], "later": row["b2"], "should_supersede": positive,
                "cdconv_label": row["label"], "batch": row["file"], "model": row["model"],
            })
    return pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="CDConv's cdconv.txt (one JSON conversation a line)")
    parser.add_argument("--per-class", type=int, default=150, help="positives (and negatives) per split")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.source.read_text(encoding="utf-8").splitlines() if line.strip()]
    write_set(SETS["cdconv"],
              source=f"CDConv (thu-coai/CDConv, cdconv.txt at {SOURCE_COMMIT[:7]}; Zheng et al., EMNLP 2022): "
                     "Chinese conversations between people and two chatbots (EVA 2.0, PLATO), each bot reply "
                     "labelled by annotators",
              license="CC BY-NC 4.0 (the repository's LICENSE): research use with attribution, no commercial use",
              how=docstring_how(__doc__), pairs=build_pairs(rows, args.per_class))


if __name__ == "__main__":
    main()
