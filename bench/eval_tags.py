"""The tagger (forest/personal/tags.py) on labelled users (tests/data/tags_labelled.json, English
and Chinese): each user has a few memories and the tags a person would name for them
(preferences, dislikes, topics). The users marked "heldout" were written before the tagger was
changed and never used to change it; the "dev" users are the ones it is improved on.

The tagger sees what the service gives it: the memories and the offline extractor's triples of
them. Tags are compared lower-cased, without a leading "my"/"the"/"a", with English plurals folded
(forest.text.s_stem). A predicted tag matches a gold tag
- "equal": when the two are then equal;
- "contains": also when one contains the other (English: as whole words, so "heavy metal at all"
  matches "heavy metal"; Chinese: as a substring of at least two characters, "去爬山" matches "爬山");
and never when their polarities conflict (a predicted preference does not match a gold dislike,
nor the reverse). precision@k: the share of each user's top k predicted tags (k, or all when
fewer) that match a gold tag; recall@k: the share of gold tags matched by one of the top k. Both
are pooled over users, per language and part.
Run: `python -m bench.eval_tags` (`-v` lists each dev user's top tags and missed gold tags).
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from forest.personal.graph import TripleExtractor
from forest.personal.tags import extract_tags
from forest.text import s_stem

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "tags_labelled.json"
ZH = re.compile(r"[\u4e00-\u9fff]")
K = (5, 10)
_OPPOSITE = {"preference": "dislike", "dislike": "preference"}


def _norm(tag: str) -> str:
    words = re.sub(r"^(?:my|the|a|an)\s+", "", tag.strip().lower()).split()
    return " ".join(s_stem(w) for w in words)


def _contains(longer: str, shorter: str) -> bool:
    if ZH.search(shorter):
        return len(shorter) >= 2 and shorter in longer
    return f" {shorter} " in f" {longer} "


def matches(predicted: dict, gold_tag: str, gold_kind: str, loose: bool = True) -> bool:
    """Whether a predicted {tag, kind} names the gold tag: "contains" when loose, else "equal"."""
    if _OPPOSITE.get(str(predicted["kind"])) == gold_kind:
        return False
    a, b = _norm(str(predicted["tag"])), _norm(gold_tag)
    return a == b or loose and (_contains(a, b) or _contains(b, a))


def score(users: Iterable[dict], k: int, loose: bool = True, verbose: bool = False) -> tuple[float, float]:
    """(precision@k, recall@k) pooled over the users."""
    extractor = TripleExtractor()
    right = shown = found = wanted = 0
    for user in users:
        triples = [t for memory in user["memories"] for t in extractor.extract(memory, speaker=user["user"])]
        top = extract_tags(user["user"], user["memories"], triples, limit=k)
        gold = [(tag, kind) for kind, tags in user["gold"].items() for tag in tags]
        right += sum(any(matches(p, *g, loose) for g in gold) for p in top)
        hit = [g for g in gold if any(matches(p, *g, loose) for p in top)]
        shown, found, wanted = shown + len(top), found + len(hit), wanted + len(gold)
        if verbose:
            print(f"  {user['user']}: {[(p['tag'], p['kind']) for p in top]}; "
                  f"missed {[g[0] for g in gold if g not in hit]}")
    return right / max(1, shown), found / max(1, wanted)


def main() -> None:
    users = json.loads(DATA.read_text(encoding="utf-8"))
    verbose = "-v" in sys.argv
    print("tags: precision@k / recall@k of the gold tags, a match by containment (equal: by equality)")
    for part in ("dev", "heldout"):
        in_part = [u for u in users if u["part"] == part]
        for language, subset in (("English", [u for u in in_part if not ZH.search(u["memories"][0])]),
                                 ("Chinese", [u for u in in_part if ZH.search(u["memories"][0])]),
                                 ("all", in_part)):
            show = verbose and part == "dev" and language != "all"
            loose = "  ".join("P@{0} {1:.3f}  R@{0} {2:.3f}".format(k, *score(subset, k, verbose=show and k == K[-1]))
                              for k in K)
            strict = "P@{0} {1:.3f}  R@{0} {2:.3f}".format(K[-1], *score(subset, K[-1], loose=False))
            print(f"{part:<8} {language:<8} {len(subset):>2} users  {loose}  | equal: {strict}")


if __name__ == "__main__":
    main()
