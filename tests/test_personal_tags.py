"""The tagger (forest/personal/tags.py) on the offline extractor's triples, and the scoring of the
two labelled-set benches (bench/eval_extraction.py, bench/eval_tags.py) on hand-counted cases."""
from __future__ import annotations

import json

from bench import eval_extraction, eval_tags
from forest.personal.graph import Triple, TripleExtractor
from forest.personal.tags import extract_tags


def tags_of(user: str, memories: list[str], limit: int = 20) -> dict[str, str]:
    extractor = TripleExtractor()
    triples = [t for memory in memories for t in extractor.extract(memory, speaker=user)]
    return {str(t["tag"]): str(t["kind"]) for t in extract_tags(user, memories, triples, limit)}


def test_a_but_pair_gives_a_preference_and_a_dislike():
    assert tags_of("ann", ["I love my job but I hate Mondays."]) == {"my job": "preference", "Mondays": "dislike"}


def test_chinese_topics_are_words_not_feelings_or_function_characters():
    memories = ["我喜欢爵士乐", "我喜欢看电影", "我很喜欢爵士乐和电影", "阳台上的花开了", "我们的阳台要打扫了", "电影票买好了"]
    tags = tags_of("zhu", memories)
    assert tags["爵士乐"] == "preference" and tags["阳台"] == "topic"
    for tag in tags:
        assert "喜欢" not in tag and "我喜" not in tag and not set(tag) & set("我你他她们的了是在和也都很就不")
    assert "台上" not in tags  # a fragment of 阳台上, which the segmenter does not make


def test_english_topics_fold_plurals_and_skip_feeling_words():
    tags = tags_of("ben", ["My bike has a flat tire.", "Two bikes in the garage now.", "I really love long rides."])
    assert tags.get("bike") == "topic" and "bikes" not in tags
    assert not {"love", "really"} & set(tags)


def test_the_graph_names_people_as_topics_whole():
    tags = tags_of("zhu", ["我女儿灿灿今年上小学了", "周末带灿灿去上画画课", "灿灿的画得了奖"])
    assert tags.get("灿灿") == "topic"


def test_extraction_scoring_counts_exact_triples_without_articles_or_case():
    cases = [{"text": "a", "triples": [["user", "likes", "The Jazz"], ["user", "hates", "rain"]]},
             {"text": "b", "triples": []}]
    replies = {"a": [Triple("user", "likes", "jazz"), Triple("user", "likes", "rain")],
               "b": [Triple("user", "likes", "tea")]}
    precision, recall = eval_extraction.score(cases, lambda text, speaker: replies[text])
    assert (precision, recall) == (1 / 3, 1 / 2)


def test_tag_matching_by_containment_or_equality_never_across_polarity():
    assert eval_tags.matches({"tag": "heavy metal at all", "kind": "dislike"}, "heavy metal", "dislike")
    assert not eval_tags.matches({"tag": "heavy metal at all", "kind": "dislike"}, "heavy metal", "dislike", loose=False)
    assert eval_tags.matches({"tag": "Bikes", "kind": "topic"}, "my bike", "topic", loose=False)
    assert eval_tags.matches({"tag": "去爬山", "kind": "preference"}, "爬山", "preference")
    assert not eval_tags.matches({"tag": "爬", "kind": "topic"}, "爬山", "topic")  # one character is no word
    assert not eval_tags.matches({"tag": "metal", "kind": "topic"}, "metallica", "topic")  # whole words only
    assert not eval_tags.matches({"tag": "rain", "kind": "preference"}, "rain", "dislike")


def test_the_labelled_sets_are_split_and_sized_as_documented():
    extraction = [json.loads(p.read_text(encoding="utf-8")) for p in eval_extraction.PARTS.values()]
    assert [len(cases) for cases in extraction] == [50, 40]
    users = json.loads(eval_tags.DATA.read_text(encoding="utf-8"))
    assert len(users) >= 16 and {u["part"] for u in users} == {"dev", "heldout"}
    assert all(4 <= len(u["memories"]) <= 10 and any(u["gold"].values()) for u in users)
