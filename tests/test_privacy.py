"""The privacy filter (NeuroMemory v2 spec: store PRIVATE, drop PUBLIC, store when unsure): offline
accuracy on a labelled bilingual set, the spec's examples, the Claude path against a local Messages
API server, and failures that store."""
import json
from pathlib import Path

import numpy as np
import pytest
from testkit.fake_anthropic import FakeAnthropic

from forest.models.embedders import Embedder
from forest.models.claude import ClaudeLLM
from forest.personal.privacy import (
    OFFLINE_LABEL,
    PRIVATE,
    PRIVATE_PROTOTYPES,
    PUBLIC,
    PUBLIC_PROTOTYPES,
    PrivacyClassifier,
    PrivacyDecision,
)

LABELLED = json.loads((Path(__file__).parent / "data" / "privacy_labelled.json").read_text("utf-8"))
SEED_EXAMPLES = [("我喜欢苹果", PRIVATE), ("苹果公司是乔布斯创立的", PUBLIC),
                 ("我明天要去北京出差", PRIVATE), ("北京是中国的首都", PUBLIC)]


class BrokenEmbedder(Embedder):
    name, dim = "broken", 4

    def _embed(self, texts, is_query):
        raise RuntimeError("model file missing")


class CountingEmbedder(Embedder):
    """The real embedder, counting how often the classifier asks it for vectors."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self.calls: list[int] = []

    def _embed(self, texts, is_query):
        return self.inner._embed(texts, is_query)

    def embed_passages(self, texts, batch_size=32, progress=None) -> np.ndarray:
        self.calls.append(len(texts))
        return super().embed_passages(texts, batch_size, progress)


@pytest.fixture(scope="module")
def offline(embedder) -> PrivacyClassifier:
    return PrivacyClassifier(embedder)


def claude_classifier(fake: FakeAnthropic) -> PrivacyClassifier:
    # A broken embedder proves the Claude path never falls back to the offline classifier.
    return PrivacyClassifier(BrokenEmbedder(), ClaudeLLM("test-key", "claude-test", retries=0, base_url=fake.url))


def test_the_labelled_set_is_bilingual_balanced_and_apart_from_the_prototypes():
    assert len(LABELLED) >= 60
    assert {e["label"] for e in LABELLED} == {PRIVATE, PUBLIC} and {e["lang"] for e in LABELLED} == {"en", "zh"}
    for key, value in (("lang", "en"), ("label", PRIVATE)):
        share = sum(e[key] == value for e in LABELLED) / len(LABELLED)
        assert 0.4 <= share <= 0.6, (key, share)
    assert not {e["text"] for e in LABELLED} & set(PRIVATE_PROTOTYPES + PUBLIC_PROTOTYPES)


@pytest.mark.slow
def test_offline_accuracy_on_the_labelled_set(offline):
    decisions = offline.classify_many([e["text"] for e in LABELLED])
    assert {d.decided_by for d in decisions} == {OFFLINE_LABEL}
    right = [d.label == e["label"] for d, e in zip(decisions, LABELLED)]
    scores = {lang: float(np.mean([r for r, e in zip(right, LABELLED) if lang in ("all", e["lang"])]))
              for lang in ("all", "en", "zh")}
    print(f"\nprivacy accuracy on {len(LABELLED)} sentences: overall {scores['all']:.3f}, "
          f"EN {scores['en']:.3f}, ZH {scores['zh']:.3f}")
    for ok, d, e in zip(right, decisions, LABELLED):
        if not ok:
            print(f"  wrong: {e['text']} -> {d.label} ({d.reason})")
    assert scores["all"] >= 0.85 and scores["en"] >= 0.85 and scores["zh"] >= 0.85, scores


@pytest.mark.parametrize(("text", "label"), SEED_EXAMPLES)
def test_the_seeds_four_examples(offline, text, label):
    decision = offline.classify(text)
    assert decision.label == label, decision
    assert decision.decided_by == OFFLINE_LABEL and decision.reason and "\n" not in decision.reason


def test_questions_assert_nothing_and_are_not_stored_unless_they_tell_something(offline):
    capital, own_past, telling = offline.classify_many([
        "What is the capital of France?", "What did I eat yesterday?",
        "My son is allergic to eggs, which cake can I bake for him?"])
    assert capital.label == own_past.label == PUBLIC
    assert "asserts nothing" in own_past.reason
    assert telling.label == PRIVATE and "possessive" in telling.reason


def test_relations_between_people_the_user_knows_are_private(offline):
    for text in ("灿灿是小朱的女儿", "Maya is Leo's daughter."):
        decision = offline.classify(text)
        assert decision.label == PRIVATE and decision.reason.startswith("rule: relation"), decision


@pytest.mark.slow
def test_classify_many_embeds_what_the_rules_leave_open_in_one_batch(embedder):
    counting = CountingEmbedder(embedder)
    classifier = PrivacyClassifier(counting)
    texts = ["Quarterly review with Dana moved to Monday.", "我喜欢苹果", "Honey never spoils.",
             "What time is it?", "苹果公司是乔布斯创立的"]
    decisions = classifier.classify_many(texts)
    assert counting.calls == [len(PRIVATE_PROTOTYPES + PUBLIC_PROTOTYPES), 2]  # prototypes, then one batch
    assert [d.reason.split(":")[0] for d in decisions] == ["embedding", "rule", "embedding", "rule", "rule"]
    assert [d.label for d in decisions[1::2]] == [PRIVATE, PUBLIC]
    assert decisions[4].label == PUBLIC and "encyclopedic" in decisions[4].reason
    classifier.classify("长江流经十一个省份。")
    assert counting.calls[2:] == [1]  # the prototype vectors are kept


def test_a_failing_embedder_stores_as_private():
    classifier = PrivacyClassifier(BrokenEmbedder())
    decision = classifier.classify("Honey never spoils.")  # a text only the embedding could decide
    assert decision.label == PRIVATE and decision.decided_by == "fallback:embedding-error"
    assert "model file missing" in decision.reason
    by_rule = classifier.classify("我喜欢苹果")  # the rules need no embedder
    assert by_rule.label == PRIVATE and by_rule.decided_by == OFFLINE_LABEL
    assert decision.to_dict() == {"label": PRIVATE, "reason": decision.reason,
                                  "decided_by": "fallback:embedding-error"}


@pytest.mark.slow
def test_claude_prompt_carries_the_text_and_the_definitions_and_its_reply_is_used():
    with FakeAnthropic() as fake:
        fake.script = ['{"label": "PRIVATE", "reason": "a personal plan"}',
                       '```json\n{"label": "public", "reason": "an encyclopedic fact"}\n```']
        plan, fact = claude_classifier(fake).classify_many(["我明天要去北京出差", "The Nile flows north."])
    assert plan == PrivacyDecision(PRIVATE, "a personal plan", "claude:claude-test")
    assert fact == PrivacyDecision(PUBLIC, "an encyclopedic fact", "claude:claude-test")
    prompt = fake.requests[0]["messages"][0]["content"]
    assert "Input: \"我明天要去北京出差\"" in prompt
    assert "PRIVATE: 个人偏好、经历、私有实体关系" in prompt and "PUBLIC: 通用知识、百科事实、公共信息" in prompt
    assert all(f'"{text}" -> {label}' in prompt for text, label in SEED_EXAMPLES)
    assert "\"The Nile flows north.\"" in fake.requests[1]["messages"][0]["content"]


@pytest.mark.parametrize("script", [
    ["It is clearly public."],
    ['{"label": "MAYBE", "reason": "unsure"}'],
], ids=["not-json", "bad-label"])
def test_an_unusable_answer_stores_as_private(script):
    with FakeAnthropic() as fake:
        fake.script = list(script)
        decision = claude_classifier(fake).classify("北京是中国的首都")
    assert decision.label == PRIVATE and decision.decided_by == "fallback:llm-error", decision
    assert decision.reason


def test_a_server_that_does_not_answer_fails_the_classification_so_the_queue_keeps_the_input():
    """A 500 on every attempt is a server down, not an answer: the write fails (and the personal
    write queue retries it) instead of storing a guess."""
    from forest.errors import ModelUnavailable

    with FakeAnthropic() as fake:
        fake.script = [(500, "overloaded")] * 2
        with pytest.raises(ModelUnavailable, match=f"LLM server at {fake.url}.*overloaded"):
            claude_classifier(fake).classify("北京是中国的首都")
    assert len(fake.requests) == 1  # retries=0: one attempt, then the clear error
