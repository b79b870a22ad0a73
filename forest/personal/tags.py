"""Preference and topic tags from a user's memories (the mem0 memory-tool spec's preference tags).

Offline and deterministic: preference tags come from the knowledge graph's like/dislike relations
of the user (weight grows with the memories that mention the thing), topic tags from what recurs
across the user's memories (weight relative to the most frequent): the people, pets and places
the graph names, and content words. Chinese is cut into words by rjieba (jieba's dictionary and
HMM, shipped inside its wheel), keeping words whose part of speech can name a topic; English words
are counted with their plurals folded. Applying the same memories twice gives the same tags: the
write is an upsert keyed by (user_id, tag).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

from forest.personal.graph import Triple, entities_in
from forest.text import content_terms, s_stem

LIKES = frozenset(["likes", "loves", "prefers", "喜欢", "爱", "更喜欢"])
DISLIKES = frozenset(["hates", "dislikes", "讨厌", "不喜欢"])
MIN_TOPIC_MEMORIES = 2   # a word in one memory only is not a topic yet
# Words that say how the user feels or relates, or when, not what about.
_NOT_TOPICS = frozenset(
    "like likes liked love loves loved hate hates hated enjoy enjoys enjoyed prefer prefers dislike dislikes "
    "adore really fan favorite favourite can't don't time times day days week weeks month months year years "
    "thing things lot way "
    "喜欢 讨厌 爱吃 更喜 工作 住在 来自 不喜欢 热爱".split())
# A Chinese word is no topic when it is a pronoun, number, measure word, adverb, preposition,
# conjunction, particle, time or locality word, adjective, onomatopoeia, affix or punctuation
# (jieba's tag set), or holds a pronoun or particle ("我家", "的话").
_NOT_TOPIC_POS = frozenset("r m q d p c u uj ul uz ug uv ud y e o x t f zg a ad k b".split())
_FUNCTION_CHARS = frozenset("我你他她它们的了是在和也都很就不没有这那个吗呢吧啊")
_CJK_RUN = re.compile(r"([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)")


def _chinese_words(text: str) -> list[str]:
    import rjieba  # imported where used: only Chinese text needs the segmenter

    return [word for word, pos in rjieba.tag(text) if len(word) >= 2 and pos not in _NOT_TOPIC_POS
            and not set(word) & _FUNCTION_CHARS]


def _topic_terms(memory: str) -> dict[str, str]:
    """The memory's candidate topic words: {counting key: how the tag is spelled}."""
    terms: dict[str, str] = {}
    for index, piece in enumerate(_CJK_RUN.split(memory)):
        if index % 2:  # a CJK run
            terms.update((word, word) for word in _chinese_words(piece))
        else:
            # reversed: of "bikes ... bike", the spelling met first is the one kept
            terms.update((s_stem(word), word) for word in reversed(content_terms(piece)) if not word.isdigit())
    return {key: word for key, word in terms.items() if word.lower() not in _NOT_TOPICS}


def extract_tags(user_id: str, memories: Iterable[str], triples: Iterable[Triple],
                 limit: int = 20) -> list[dict[str, object]]:
    """[{tag, kind: preference | dislike | topic, weight 0-1}], strongest first."""
    memories = list(memories)
    triples = list(triples)
    lowered = [m.lower() for m in memories]
    tags: dict[str, dict[str, object]] = {}
    for t in triples:
        if t.source == user_id and t.relationship in LIKES | DISLIKES:
            # The graph keeps a fact once; its weight grows with the memories that mention it.
            count = max(1, sum(t.target.lower() in m for m in lowered))
            tags[t.target] = {"tag": t.target, "kind": "preference" if t.relationship in LIKES else "dislike",
                              "weight": round(min(1.0, 0.5 + 0.25 * (count - 1)), 2)}
    # The graph's people, pets and places are topics whole ("灿灿", "New York"); they and the
    # preference targets are cut out before counting words, so their fragments are not counted again.
    entities = {name for t in triples for name in (t.source, t.target) if name != user_id}
    seen_in: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    for memory in memories:
        named = entities_in(memory, entities - set(tags))
        for phrase in sorted(named + [tag for tag in tags if tag.lower() in memory.lower()], key=len, reverse=True):
            memory = re.sub(re.escape(phrase), " ", memory, flags=re.IGNORECASE)
        terms = {name.casefold(): name for name in named} | _topic_terms(memory)
        for key, word in terms.items():
            spelled.setdefault(key, word)
        seen_in.update(terms.keys())
    preference_keys = {s_stem(tag.casefold()) for tag in tags}
    common = [(key, n) for key, n in seen_in.most_common() if n >= MIN_TOPIC_MEMORIES and key not in preference_keys]
    top = common[0][1] if common else 1
    for key, count in common:
        tags.setdefault(spelled[key], {"tag": spelled[key], "kind": "topic", "weight": round(0.8 * count / top, 2)})
    ranked = sorted(tags.values(), key=lambda t: (-float(t["weight"]), t["kind"] != "preference", str(t["tag"])))
    return ranked[:limit]
