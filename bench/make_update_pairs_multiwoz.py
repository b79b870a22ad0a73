"""Build bench/data/update_pairs_multiwoz.json: (earlier, later) statement pairs of one person from
MultiWOZ 2.1 (Budzianowski et al. 2018, Eric et al. 2020) as ConvLab-2 ships it with the user's
dialogue acts annotated (github.com/thu-coai/ConvLab-2, data/multiwoz, CC BY 4.0), for
bench/eval_updates.py.

MultiWOZ's dialogues are written by two people, one playing a visitor to Cambridge with a goal
(a restaurant, a hotel, a train ...) that sometimes tells them to change a wish when it cannot
be met, the other the clerk. Annotators marked in each of the visitor's turns what it informs:
a domain, a slot and its value (Restaurant Food = chinese). A pair is two turns of the visitor
in one dialogue and one domain: should_supersede when the later informs a slot the earlier
informed with another value ("a table for 3 people at 19:00" then "actually let's try 18:00");
not when the later informs only other slots of that domain, nothing the earlier said with another
value ("... in the centre" then "I need it for 4 people on Tuesday"). Only the slots one search or
booking holds one value of are read (not a venue's name, which a visitor asks about several of, nor
a train's or a taxi's places, which differ from leg to leg); "dontcare" and values one of which
holds the other ("cheap" / "cheap price") are left out. Texts are MultiWOZ's, with its
tokenization undone (" 's" -> "'s", " ?" -> "?").

Split by MultiWOZ's own: its validation dialogues dev, its test dialogues held-out. Each split
takes `--per-class` updates and as many non-updates, a non-update with the same earlier turn as
an update first, so the two classes start from the same statements.

Run: `git -C <ConvLab-2 clone> show b014b81:data/multiwoz/val.json.zip > val.json.zip` (and
test.json.zip), then `python -m bench.make_update_pairs_multiwoz val.json.zip test.json.zip`.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from bench.update_sets import SETS, docstring_how, write_set

SOURCE_COMMIT = "b014b81"
# (domain, slot) the visitor wants one value of at a time.
ONE_VALUE = {("Restaurant", s) for s in ("Food", "Area", "Price", "Time", "Day", "People")} \
    | {("Hotel", s) for s in ("Area", "Price", "Type", "Stars", "Stay", "Day", "People", "Parking", "Internet")} \
    | {("Attraction", s) for s in ("Type", "Area")}
NO_VALUE = {"", "?", "none", "dontcare"}
_SPACED = [(re.compile(r" (n't|'s|'m|'re|'ll|'d|'ve)\b"), r"\1"), (re.compile(r" ([.,?!:;])"), r"\1"),
           (re.compile(r"\s+"), " ")]


def detokenized(text: str) -> str:
    for pattern, replacement in _SPACED:
        text = pattern.sub(replacement, text)
    return text.strip()


def informs(turn: dict[str, Any]) -> dict[tuple[str, str], str]:
    """What a visitor's turn informs, by its annotation: (domain, slot) -> value, slots read only."""
    said = {}
    for act, slot_values in turn["dialog_act"].items():
        domain, _, intent = act.partition("-")
        for slot, value in slot_values:
            value = value.lower().strip()
            if intent == "Inform" and (domain, slot) in ONE_VALUE and value not in NO_VALUE:
                said[(domain, slot)] = value
    return said


def other_value(earlier: str, later: str) -> bool:
    return earlier != later and earlier not in later and later not in earlier


def candidates(dialogue_id: str, log: list[dict[str, Any]], split: str) -> list[dict[str, Any]]:
    """Every (earlier, later) pair of the visitor's turns that inform the same domain, labelled by the
    annotation: an update when a slot changes value in any of their domains, none when the later
    informs only slots the earlier did not."""
    turns = [(n, informs(turn), turn["text"]) for n, turn in enumerate(log) if n % 2 == 0]
    found = []
    for i, (n_earlier, earlier, earlier_text) in enumerate(turns):
        for n_later, later, later_text in turns[i + 1:]:
            if not {d for d, _ in earlier} & {d for d, _ in later}:
                continue
            both = earlier.keys() & later.keys()
            changed = sorted(f"{d} {s}" for d, s in both if other_value(earlier[(d, s)], later[(d, s)]))
            if changed or not both:
                found.append({
                    "conversation": dialogue_id, "split": split, "speaker": "visitor",
                    "attribute": ", ".join(changed) if changed else None,
                    "earlier_id": f"{dialogue_id} turn {n_earlier}", "later_id": f"{dialogue_id} turn {n_later}",
                    "earlier": detokenized(earlier_text), "later": detokenized(later_text),
                    "should_supersede": bool(changed),
                    "informed": {"earlier": {f"{d} {s}": v for (d, s), v in earlier.items()},
                                 "later": {f"{d} {s}": v for (d, s), v in later.items()}},
                })
    return found


def order_key(pair: dict[str, Any]) -> str:
    # A fixed, label-blind order to take pairs in.
    return hashlib.sha256(f"{pair['earlier_id']}>{pair['later_id']}".encode("utf-8")).hexdigest()


def balanced(found: list[dict[str, Any]], per_class: int) -> list[dict[str, Any]]:
    """per_class updates, each from its own later turn, and as many non-updates, those sharing an
    update's earlier turn first."""
    positives, later_turns = [], set()
    for pair in sorted((p for p in found if p["should_supersede"]), key=order_key):
        if pair["later_id"] not in later_turns and len(positives) < per_class:
            positives.append(pair)
            later_turns.add(pair["later_id"])
    starts = {p["earlier_id"] for p in positives}
    negatives = sorted((p for p in found if not p["should_supersede"]),
                       key=lambda p: (p["earlier_id"] not in starts, order_key(p)))[:len(positives)]
    return sorted(positives + negatives, key=lambda p: (p["conversation"], p["earlier_id"], p["later_id"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dev", type=Path, help="ConvLab-2's data/multiwoz/val.json.zip")
    parser.add_argument("heldout", type=Path, help="ConvLab-2's data/multiwoz/test.json.zip")
    parser.add_argument("--per-class", type=int, default=150, help="updates (and non-updates) per split")
    args = parser.parse_args()
    pairs = []
    for split, archive in (("dev", args.dev), ("heldout", args.heldout)):
        with zipfile.ZipFile(archive) as opened:
            dialogues = json.loads(opened.read(opened.namelist()[0]))
        found = [pair for dialogue_id, dialogue in sorted(dialogues.items())
                 for pair in candidates(dialogue_id, dialogue["log"], split)]
        pairs += balanced(found, args.per_class)
    write_set(SETS["multiwoz"],
              source=f"MultiWOZ 2.1 with user dialogue acts, as ConvLab-2 ships it (thu-coai/ConvLab-2 at "
                     f"{SOURCE_COMMIT}, data/multiwoz/val.json.zip and test.json.zip): dialogues written by two "
                     "people, a visitor to Cambridge and a clerk",
              license="CC BY 4.0 (ConvLab-2's README, for its MultiWOZ 2.1 data): research use with attribution",
              how=docstring_how(__doc__), pairs=pairs)


if __name__ == "__main__":
    main()
