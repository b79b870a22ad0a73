"""Preference and topic tags from a user's memories (seed 004's preference tag extraction).

Offline and deterministic: preference tags come from the knowledge graph's like/dislike relations
of the user (weight grows with the memories that mention the thing), topic tags from the content words that recur across
the user's memories (weight relative to the most frequent). Applying the same memories twice gives
the same tags: the write is an upsert keyed by (user_id, tag).
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from forest.personal.graph import Triple
from forest.text import content_terms

LIKES = frozenset(["likes", "loves", "prefers", "喜欢", "爱", "更喜欢"])
DISLIKES = frozenset(["hates", "dislikes", "讨厌", "不喜欢"])
MIN_TOPIC_MEMORIES = 2   # a word in one memory only is not a topic yet
# A CJK bigram is a topic only if it is no function-word fragment: no pronoun or particle in it,
# and no relation word ("我喜", "喜欢" say how the user feels, not what about).
_FUNCTION_CHARS = frozenset("我你他她它们的了是在和也都很就不没有这那个吗呢吧啊")
_RELATION_WORDS = frozenset(["喜欢", "讨厌", "爱吃", "更喜", "工作", "住在", "来自"])


def _topic_term(term: str) -> bool:
    if term.isdigit():
        return False
    if term.isascii():
        return True
    return term not in _RELATION_WORDS and not (set(term) & _FUNCTION_CHARS)


def extract_tags(user_id: str, memories: Iterable[str], triples: Iterable[Triple],
                 limit: int = 20) -> list[dict[str, object]]:
    """[{tag, kind: preference | dislike | topic, weight 0-1}], strongest first."""
    memories = list(memories)
    lowered = [m.lower() for m in memories]
    tags: dict[str, dict[str, object]] = {}
    for t in triples:
        if t.source == user_id and t.relationship in LIKES | DISLIKES:
            # The graph keeps a fact once; its weight grows with the memories that mention it.
            count = max(1, sum(t.target.lower() in m for m in lowered))
            tags[t.target] = {"tag": t.target, "kind": "preference" if t.relationship in LIKES else "dislike",
                              "weight": round(min(1.0, 0.5 + 0.25 * (count - 1)), 2)}
    seen_in: Counter[str] = Counter()
    # The preference targets and relation words are cut out first, so their fragments ("欢爵",
    # "士乐" of "喜欢爵士乐") are not counted as topics again.
    taken = sorted(set(tags) | LIKES | DISLIKES | _RELATION_WORDS, key=len, reverse=True)
    for memory in memories:
        for phrase in taken:
            if not phrase.isascii():
                memory = memory.replace(phrase, " ")
        seen_in.update(set(t for t in content_terms(memory) if _topic_term(t)))
    common = [(term, n) for term, n in seen_in.most_common() if n >= MIN_TOPIC_MEMORIES]
    top = common[0][1] if common else 1
    for term, count in common:
        if term not in tags:
            tags[term] = {"tag": term, "kind": "topic", "weight": round(0.8 * count / top, 2)}
    ranked = sorted(tags.values(), key=lambda t: (-float(t["weight"]), t["kind"] != "preference", str(t["tag"])))
    return ranked[:limit]
