"""The labelled (earlier, later) statement sets bench/eval_updates.py measures superseding on: where
each lives, how one is read (and refused when malformed), and how a builder writes one."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
SETS = {"locomo": DATA / "update_pairs.json",
        "cdconv": DATA / "update_pairs_cdconv.json",
        "multiwoz": DATA / "update_pairs_multiwoz.json"}
SPLITS = ("dev", "heldout")


def load_pairs(path: Path) -> list[dict[str, Any]]:
    """A set's pairs, refused when a pair lacks a split, a label or either statement."""
    pairs = json.loads(path.read_text(encoding="utf-8"))["pairs"]
    for n, pair in enumerate(pairs):
        if pair.get("split") not in SPLITS or not isinstance(pair.get("should_supersede"), bool) \
                or not pair.get("earlier") or not pair.get("later"):
            raise ValueError(f"{path.name}: pair {n} needs a split ({'/'.join(SPLITS)}), "
                             "should_supersede (true/false), earlier and later")
    return pairs


def write_set(path: Path, source: str, license: str, how: str, pairs: list[dict[str, Any]]) -> None:
    """Write a set as load_pairs reads it, and print its size per split."""
    doc = {"source": source, "license": license, "how": how, "pairs": pairs}
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for split in SPLITS:
        part = [p for p in pairs if p["split"] == split]
        print(f"{split}: {len(part)} pairs, {sum(p['should_supersede'] for p in part)} should supersede")
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")


def docstring_how(doc: str) -> str:
    """A builder's module docstring between its title and its "Run:" paragraph, on one line."""
    return doc.split("\n\n", 1)[1].split("\n\nRun:")[0].replace("\n", " ")
