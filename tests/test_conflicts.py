"""Conflict detection between research statements and the offline side-by-side (the DeepScholar
spec's reconciliation): hand-written conflicting pairs, look-alikes that must not be flagged,
claim extraction, and the comparison used for reconciliation. English and Chinese."""
import json

import pytest

from forest.research.claims import OFFLINE_REVIEW, Measure, Statement, detect_conflicts, extract_claims, side_by_side
from forest.research.claims import compare


def pair(text_a: str, text_b: str, b_is_note: bool = False, **kwargs):
    """A passage of archive 1 against a passage of archive 2, or against a researcher's finding."""
    b = Statement("finding:2", text_b, "finding 2") if b_is_note else Statement("node:2", text_b, "archive 2")
    return detect_conflicts([Statement("node:1", text_a, "archive 1"), b], **kwargs)


# --- claims ------------------------------------------------------------------------------------
def test_extract_claims_finds_measures_and_conditions_but_not_references_years_or_shot_counts():
    text = ("We describe the setup in Section 2. In the 5-shot setting, ResNet-50 with feature fusion reaches "
            "85.2% top-1 accuracy on miniImageNet (Table 3, 2021) [12].")
    claims = extract_claims(text)
    assert len(claims) == 1      # the setup sentence carries no claim
    claim = claims[0]
    assert claim.sentence.startswith("In the 5-shot setting")
    assert claim.measures == [Measure("top-1 accuracy", 85.2, "%", "85.2% top-1 accuracy")]
    assert {"5-shot", "ResNet-50", "on miniImageNet"} <= set(claim.conditions)
    assert not claim.negated and claim.direction is None
    [dated] = extract_claims("Accuracy in 2021 was 85.2%, up from 80.1% in 2019.")
    assert [(m.metric, m.value) for m in dated.measures] == [("accuracy", 85.2)]   # years are not values


def test_extract_claims_reads_changes_ranges_units_and_labelled_example_counts():
    claims = extract_claims("With 100 labelled examples, accuracy dropped by 2.5 points. "
                            "Latency fell from 40 ms to 25 ms, and the F1 is 0.81.")
    assert [(m.metric, m.value, m.unit) for m in claims[0].measures] == [("accuracy change", -2.5, "pp")]
    assert claims[0].conditions == ["With 100 labelled examples"] and claims[0].direction == "down"
    assert [(m.metric, m.value, m.unit) for m in claims[1].measures] == [
        ("latency", 40.0, "ms"), ("latency", 25.0, "ms"), ("f1", 0.81, "")]


@pytest.mark.parametrize("sentence, negated, direction", [
    ("Feature fusion does not significantly improve accuracy.", True, "up"),
    ("Feature fusion fails to reduce the error rate.", True, "down"),
    ("The gain from fusion is not statistically significant.", True, "up"),
    ("There is no significant difference between the two methods.", True, None),
    ("Fusion improves accuracy, although we did not tune the baseline.", False, "up"),   # negation elsewhere
    ("Fusion not only improves accuracy but also speeds up training.", False, "up"),
    ("Fusion improves accuracy but lowers throughput.", False, None),                    # mixed: no direction
    ("小样本场景下特征融合并未提高准确率。", True, "up"),
    ("不同数据集上特征融合都提高了准确率。", False, "up"),       # 不同 is "different", not a negation
    ("未来的工作将降低推理延迟。", False, "down"),               # 未来 is "future"
    ("数据增强降低了模型的鲁棒性。", False, "down"),             # 数据增强 is a noun, not "enhances"
])
def test_extract_claims_negation_and_direction(sentence, negated, direction):
    [claim] = extract_claims(sentence)
    assert (claim.negated, claim.direction) == (negated, direction)


def test_extract_claims_chinese_measures_and_conditions():
    [first, second] = extract_claims("在ImageNet上，小样本场景下准确率为85.2%。准确率提高了3个百分点。")
    assert [(m.metric, m.value, m.unit, m.text) for m in first.measures] == [("accuracy", 85.2, "%", "准确率为85.2%")]
    assert {"在ImageNet上", "小样本"} <= set(first.conditions)
    assert [(m.metric, m.value, m.unit) for m in second.measures] == [("accuracy change", 3.0, "pp")]


# --- conflicts ---------------------------------------------------------------------------------
CONFLICTS = [
    ("negation", "Feature fusion improves few-shot accuracy on miniImageNet.",
     "We ran it again. In our runs, feature fusion does not improve few-shot accuracy on miniImageNet.",
     "In our runs, feature fusion does not improve few-shot accuracy on miniImageNet."),
    ("negation", "小样本场景下特征融合提高了准确率。", "小样本场景下特征融合并未提高准确率。", "小样本场景下特征融合并未提高准确率。"),
    ("negation", "Fusion improves accuracy on CIFAR-10.", "Fusion has no significant effect on accuracy on CIFAR-10.",
     "Fusion has no significant effect on accuracy on CIFAR-10."),
    ("direction", "Label smoothing increases calibration error on CIFAR-100.",
     "Label smoothing reduces calibration error on CIFAR-100.",
     "Label smoothing reduces calibration error on CIFAR-100."),
    ("direction", "Dropout consistently outperforms weight decay on CIFAR-10.",
     "On CIFAR-10, dropout underperforms weight decay.", "On CIFAR-10, dropout underperforms weight decay."),
    ("direction", "Larger batches lower perplexity on WikiText-103.",
     "Larger batches increase perplexity on WikiText-103.", "Larger batches increase perplexity on WikiText-103."),
    ("direction", "数据增强提高了模型的鲁棒性。", "数据增强降低了模型的鲁棒性。", "数据增强降低了模型的鲁棒性。"),
]
# A paper's numbers against a researcher's note about that paper's experiment (between two papers,
# each one's unnamed results are its own: test_two_papers_own_numbers_are_not_compared).
NOTED_NUMBERS = [
    ("Our fusion model reaches 85.2% accuracy on CIFAR-10.", "With the same fusion model, accuracy on CIFAR-10 is 78.1%."),
    ("在ImageNet上，准确率为85.2%。", "在ImageNet上，准确率为78.1%。"),
    ("Pretraining brings latency to 20 ms per query.", "Pretraining leaves latency at 0.035 s per query."),
    ("Fusion improves accuracy by 3 points on SQuAD.", "Fusion improves accuracy by 7 points on SQuAD."),
]


@pytest.mark.parametrize("kind, text_a, text_b, b_sentence, note", [(*c, False) for c in CONFLICTS] + [
    ("numbers", a, b, b, True) for a, b in NOTED_NUMBERS])
def test_conflicting_pairs_are_found_with_their_kind_and_aligned_sentences(kind, text_a, text_b, b_sentence, note):
    [conflict] = pair(text_a, text_b, b_is_note=note)
    source = "finding 2" if note else "archive 2"
    assert conflict.kind == kind
    assert conflict.a_claim.sentence == text_a.split(" We ran")[0]
    assert conflict.b_claim.sentence == b_sentence
    assert conflict.a.source == "archive 1" and conflict.b.source == source
    # the detail is a sentence naming both sources and quoting both sentences
    assert "archive 1" in conflict.detail.lower() and source in conflict.detail
    assert f"“{conflict.b_claim.sentence.rstrip('.')}”" in conflict.detail


def test_numbers_detail_names_the_metric_and_both_values():
    [conflict] = pair("在ImageNet上，准确率为85.2%。", "在ImageNet上，准确率为78.1%。", b_is_note=True)
    assert conflict.detail == ("They give different numbers for accuracy: 85.2% against 78.1%. "
                               "Archive 1 says “在ImageNet上，准确率为85.2%。”, but finding 2 says “在ImageNet上，准确率为78.1%。”.")
    [conflict] = pair("We use a batch size of 32 for training.", "The batch size is 64.", b_is_note=True)
    assert conflict.detail.startswith("They give different numbers for batch size: 32 against 64.")   # not "batch size of"


NOT_CONFLICTS = [
    # agreeing paraphrases and restatements
    ("Feature fusion improves accuracy on ImageNet.", "On ImageNet, accuracy is improved by feature fusion."),
    ("Our fusion model reaches 85.2% accuracy on CIFAR-10.",
     "The fusion model obtains an accuracy of 0.852 on CIFAR-10."),
    ("SearchQA contains over 140k question/answer pairs.", "SearchQA has more than 140,000 question-answer pairs."),
    ("The corpus has about 53.4k tokens.", "The corpus comprises 53453 tokens."),
    ("Accuracy increased from 70% to 75% with fusion.", "With fusion, accuracy rose to 75%."),
    ("Fusion lowers perplexity on WikiText-103.", "Fusion gives better perplexity on WikiText-103."),
    ("特征融合在ImageNet上的准确率为85.2%。", "在ImageNet上，特征融合的准确率达到85.2%。"),
    # different metrics
    ("Our fusion model reaches 85.2% accuracy on CIFAR-10.", "Our fusion model reaches 0.81 F1 on CIFAR-10."),
    ("Fusion raises accuracy on CIFAR-10.", "Fusion lowers latency on CIFAR-10."),
    ("Fusion gets 85.2% top-1 accuracy.", "Fusion gets 93.0% top-5 accuracy."),
    ("Fusion improves accuracy by 3 points.", "Fusion reaches an accuracy of 80%."),      # a change is not a level
    # different topics or subjects
    ("Feature fusion improves accuracy on ImageNet.",
     "Volcanic ash does not improve soil fertility in the first year."),
    ("Feature fusion improves robustness.", "Feature fusion degrades efficiency."),
    ("ResNet achieves 76% accuracy on ImageNet.", "Our method achieves 80% accuracy on ImageNet."),
    # numbers that are not results
    ("Fusion reaches 85.2% accuracy (Table 3, 2021).", "Fusion reaches 85.2% accuracy, see Table 5 [14] (2019)."),
    # different settings: shot counts, example counts, datasets, clauses
    ("In the 5-shot setting, fusion reaches 70.1% accuracy.", "In the 1-shot setting, fusion reaches 55.3% accuracy."),
    ("With 5 labelled examples, fusion reaches 60.2% accuracy.",
     "With 50 labelled examples, fusion reaches 71.0% accuracy."),
    ("Fusion improves accuracy when the backbone is frozen.",
     "Fusion degrades accuracy when the backbone is fine-tuned."),
    ("数据增强在ImageNet上提高了准确率。", "数据增强在CIFAR-10上降低了准确率。"),
    ("少样本场景下准确率为62.0%。", "零样本场景下准确率为41.5%。"),
]


@pytest.mark.parametrize("text_a, text_b", NOT_CONFLICTS)
def test_look_alikes_are_not_conflicts(text_a, text_b):
    assert pair(text_a, text_b) == []


def test_statements_from_the_same_source_are_never_compared():
    a = Statement("node:1", "Feature fusion improves accuracy on ImageNet.", "archive 1")
    b = Statement("node:2", "Feature fusion does not improve accuracy on ImageNet.", "archive 1")
    assert detect_conflicts([a, b]) == []
    assert len(detect_conflicts([a, Statement("finding:3", b.text, "finding 3")])) == 1


def test_one_conflict_per_pair_keeps_the_strongest_kind():
    # Both a negation and different numbers: the negation is reported.
    [conflict] = pair("Fusion improves accuracy on CIFAR-10 to 85.2%.",
                      "Fusion does not improve accuracy on CIFAR-10, where accuracy is 78.1%. "
                      "Fusion reaches an accuracy of 70.0% on CIFAR-10.")
    assert conflict.kind == "negation"
    assert conflict.b_claim.sentence.startswith("Fusion does not improve")


def test_vectors_decide_the_topic_and_order_the_conflicts(monkeypatch):
    up = Statement("node:1", "Fusion improves accuracy on ImageNet.", "archive 1", vector=(1.0, 0.0))
    near = Statement("node:2", "Fusion degrades accuracy on ImageNet.", "archive 2", vector=(0.9, 0.43588989))
    nearer = Statement("finding:3", "Fusion does not improve accuracy on ImageNet.", "finding 3",
                       vector=(0.98, 0.19899749))
    far = Statement("node:4", "Fusion degrades accuracy on ImageNet.", "archive 4", vector=(0.0, 1.0))
    found = detect_conflicts([up, near, nearer, far])
    assert [(c.a.key, c.b.key, c.kind) for c in found] == [
        ("node:1", "finding:3", "negation"), ("node:1", "node:2", "direction")]
    assert found[0].topic_similarity == pytest.approx(0.98)
    # Sentences are compared only for pairs on the same topic: none here.
    calls = []
    original = compare.aligned
    monkeypatch.setattr(compare, "aligned", lambda *args: calls.append(args) or original(*args))
    assert detect_conflicts([up, far]) == [] and calls == []
    assert len(detect_conflicts([up, far], topic_threshold=-1.0)) == 1 and calls


def test_a_short_finding_matches_the_sentence_of_a_long_passage():
    passage = Statement("node:9", "We evaluate on miniImageNet in the 5-shot setting with a ResNet-12 backbone. "
                                  "Training takes four hours on one GPU. Prototype refinement uses cosine distances. "
                                  "Adding feature fusion lowers accuracy to 61.0%, a clear drop. "
                                  "Further ablations are left to future work.", "archive 3", "p. 7, §4.2")
    finding = Statement("finding:7", "Feature fusion raises 5-shot accuracy on miniImageNet.", "finding 7")
    [conflict] = detect_conflicts([passage, finding])
    assert conflict.kind == "direction"
    assert conflict.a_claim.sentence == "Adding feature fusion lowers accuracy to 61.0%, a clear drop."
    assert conflict.b_claim.sentence == finding.text
    assert "Archive 3 (p. 7, §4.2) says “Adding feature fusion lowers accuracy to 61.0%, a clear drop”" in conflict.detail


def test_conflict_to_dict_is_json_without_vectors():
    a = Statement("node:1", "准确率为85.2%。", "archive 1", "p. 3", vector=(1.0, 0.0))
    b = Statement("finding:2", "准确率为78.1%。", "finding 2", vector=(1.0, 0.0))
    data = json.loads(json.dumps(detect_conflicts([a, b])[0].to_dict(), ensure_ascii=False))
    assert data["kind"] == "numbers" and data["topic_similarity"] == 1.0
    assert data["a"] == {"key": "node:1", "source": "archive 1", "citation": "p. 3", "excerpt": "准确率为85.2%。"}
    assert data["b_claim"]["measures"] == [{"metric": "accuracy", "value": 78.1, "unit": "%", "text": "准确率为78.1%"}]
    assert "vector" not in data["a"]


# --- side by side ------------------------------------------------------------------------------
def test_side_by_side_lists_differing_conditions_and_shared_metrics_offline():
    a = Statement("node:9", "We evaluate on miniImageNet in the 5-shot setting with ResNet-12. "
                            "Feature fusion reaches 72.4% accuracy and an F1 of 0.70.", "archive 3", "p. 7")
    b = Statement("finding:7", "In the 1-shot setting on miniImageNet, feature fusion reaches 55.0% accuracy "
                               "and an F1 of 0.71.", "finding 7")
    result = side_by_side(a, b)
    assert result["reviewed_by"] == OFFLINE_REVIEW == "offline rules (not reviewed by an LLM)"
    assert result["conditions_only_in_a"] == ["5-shot", "ResNet-12"]
    assert result["conditions_only_in_b"] == ["1-shot"]
    assert result["boundary_conditions"] == ["archive 3 (p. 7): 5-shot", "archive 3 (p. 7): ResNet-12",
                                             "finding 7: 1-shot"]
    # 0.70 and 0.71 are different values as written (rounding covers 0.695-0.705)
    assert result["shared_metrics"] == [{"metric": "accuracy", "a": ["72.4%"], "b": ["55%"], "agree": False},
                                        {"metric": "f1", "a": ["0.7"], "b": ["0.71"], "agree": False}]
    assert result["conflict"] is None      # different shot counts: different experiments
    assert result["verdict"] == (
        "Archive 3 (p. 7) and finding 7 give different values for accuracy and f1, but not for the same experiment "
        "(dataset, subject or setting), so the offline rules do not count that as a contradiction. The settings "
        "differ (only archive 3 (p. 7) states 5-shot and ResNet-12; only finding 7 states 1-shot), which may "
        "explain any gap.")
    assert result["a"]["conditions"] == ["on miniImageNet", "5-shot", "ResNet-12"]
    assert [c["sentence"] for c in result["b"]["claims"]] == [b.text]
    assert [m["value"] for m in result["a"]["measures"]] == [72.4, 0.70]


def test_side_by_side_of_a_real_conflict_says_so_and_finds_no_condition_gap():
    a = Statement("node:1", "小样本场景下特征融合提高了准确率。", "archive 1")
    b = Statement("node:2", "小样本场景下特征融合并未提高准确率。", "archive 2")
    result = side_by_side(a, b)
    assert result["conflict"]["kind"] == "negation"
    assert result["conflict"]["b_sentence"] == b.text
    assert result["verdict"] == ("They contradict each other. Archive 1 says “小样本场景下特征融合提高了准确率。”, "
                                 "but archive 2 says “小样本场景下特征融合并未提高准确率。”.")   # no empty parts
    assert result["conditions_only_in_a"] == result["conditions_only_in_b"] == result["boundary_conditions"] == []


# --- measures, negation scope and rankings on real paper text (arXiv 1705.07830) ----------------
AQA_DATA = "SearchQA contains over 140k question/answer pairs and 6.9M snippets."
AQA_RESULTS = ("BiDAF's performance drops by 40 F1 points on SearchQA compared to SQuAD. However, BiDAF is still "
               "competitive on SeachQA, improving over the Attention Sum Reader network by 13.7 F1 points.")


@pytest.mark.parametrize("finding, passage, kind", [
    ("SearchQA contains only 40k question/answer pairs.", AQA_DATA, "numbers"),             # 40k vs over 140k
    ("SearchQA has 6.9 billion snippets.", AQA_DATA, "numbers"),                             # M vs billion
    ("BiDAF is not competitive on SearchQA: it is worse than the Attention Sum Reader network by 13.7 F1 points.",
     AQA_RESULTS, "negation"),                                                               # not / still competitive
    ("The Attention Sum Reader network outperforms BiDAF on SearchQA.", AQA_RESULTS, "direction"),   # reversed
])
def test_the_reported_disagreements_are_found(finding, passage, kind):
    [conflict] = pair(finding, passage)
    assert conflict.kind == kind


@pytest.mark.parametrize("finding, passage", [
    ("SearchQA has more than 140,000 question-answer pairs and about 6.9 million snippets.", AQA_DATA),
    ("BiDAF is still competitive on SearchQA, beating the Attention Sum Reader by 13.7 F1 points.", AQA_RESULTS),
    ("BiDAF outperforms the Attention Sum Reader network on SearchQA.", AQA_RESULTS),
    ("SearchQA contains 6.9M snippets.", "SQuAD contains over 100k question/answer pairs."),   # other measure
])
def test_restatements_and_unrelated_numbers_are_not_conflicts(finding, passage):
    assert pair(finding, passage) == []


def test_numbers_are_compared_on_their_own_dataset_and_subject():
    passage = ("Compared with the strong baseline LSTM-CRF, ALCrowd shows its advantage with +1.08 F1 improvements "
               "on DL-PS, +1.24 on EC-MT, and +2.38 on EC-UQ, respectively.")
    assert pair("ALCrowd improves over LSTM-CRF by 2.38 F1 on EC-UQ.", passage) == []
    [conflict] = pair("ALCrowd improves over LSTM-CRF by 2.38 F1 on DL-PS.", passage)
    assert conflict.kind == "numbers" and "2.38 against +1.08" in conflict.detail
    gaps = "BiDAF alone has a gap of 3.4 F1. After training the CNN, AQA-Full has a slightly larger gap of 3.9 F1."
    assert pair("AQA-Full has a gap of 3.9 F1.", gaps) == []
    assert pair("BiDAF alone has a gap of 3.9 F1.", gaps)[0].kind == "numbers"


def test_units_written_in_any_case_are_read_not_a_crash():
    # Papers write "5.6Gb of unlabelled text", "3 X faster": the unit pattern ignores case, so the
    # lookup must too (it raised KeyError and took the whole conflict search down with it).
    claims = extract_claims("Skip-gram vectors are trained over 5.6Gb of unlabelled text. It runs 3 X faster. "
                            "Accuracy rose by 5 Percent. Latency is 20 MS.")
    assert [(m.value, m.unit) for c in claims for m in c.measures] == [(5.6, "GB"), (3.0, "x"), (5.0, "%"),
                                                                      (20.0, "ms")]
    [conflict] = detect_conflicts([Statement("node:1", "Latency of ResNet-50 is 20 MS on one GPU.", "archive 1"),
                                   Statement("node:2", "Latency of ResNet-50 is 35 ms on one GPU.", "archive 2")])
    assert conflict.kind == "numbers" and "20 MS against 35 ms" in conflict.detail


# --- two papers' own numbers: the reported "batch size of 32 against 64" ------------------------
# Real sentences of unrelated QASPER papers, each giving its own experiment's settings
# (1904.10503 / 1912.10011, 1910.01863 / 1909.03582, 1910.03634 / 1710.03348, 1909.02304 / 1905.07791,
# 1709.07814 / 1909.04002).
OWN_SETTINGS = [
    ("We train with a batch size of 32 for 30 epochs.", "The models are trained with a batch size of 64."),
    ("The model is trained using the Adam optimizer with learning rate of 0.0005 and batch size of 32.",
     "MLE training: An Adam optimizer is used with the learning rate of 0.0001 to optimize $L_{\\text{MLE}}$."),
    ("The model was trained for 25 epochs.",
     "We trained the systems with dimension size of 1,000 and batch size of 80 for 20 epochs."),
    ("We applied dropout at a rate 0.3.",
     "Following BIBREF5 , we use the Adam optimizer with learning rate of 0.001, decay 0.9, batch size 20 and dropout 0.5."),
    (("We used one unidirectional LSTM with 512 hidden units and followed by a softmax layer to output the "
      "character probability."),
     ("We use an LSTM layer with 768 units with dropout and recurrent dropout ratio 0.2, followed by a dense layer "
      "with sigmoid activation.")),
]
OPEN = {"topic_threshold": -1.0}   # the topic gate is the embedder's: these compare the sentences


@pytest.mark.parametrize("text_a, text_b", OWN_SETTINGS)
def test_two_papers_own_settings_are_no_conflict_but_a_note_misstating_one_is(text_a, text_b):
    assert pair(text_a, text_b, **OPEN) == []
    # the same words as a researcher's note about the paper's experiment: then the numbers disagree
    [conflict] = pair(text_a, text_b, b_is_note=True, **OPEN)
    assert conflict.kind == "numbers"


def test_two_papers_own_numbers_are_not_compared():
    for text_a, text_b in NOTED_NUMBERS + [("Our model reaches 85% accuracy on SQuAD.",
                                            "Our model gets 80% accuracy on SQuAD.")]:
        assert pair(text_a, text_b, **OPEN) == [], (text_a, text_b)
        assert pair(text_a, text_b, b_is_note=True, **OPEN)
    # within one paper "we" is one team: its two passages are compared as before
    same = detect_conflicts([Statement("node:1", "We use a batch size of 32.", "Paper A"),
                             Statement("node:2", "We use a batch size of 64.", "Paper A")], **OPEN)
    assert same == []      # one source is never compared with itself


@pytest.mark.parametrize("text_a, text_b", [
    # SQuAD's articles in two papers (QASPER 1810.12196 and 1801.02073, verbatim)
    (("SQuAD: The Standford Question Answering Dataset (SQuAD) introduced in BIBREF0 is a large dataset of natural "
      "questions over the 500 most popular articles of Wikipedia."),
     ("SQuAD BIBREF12 presents 107K+ crowdsourced questions on 536 Wikipedia articles, where the answer contexts are "
      "guaranteed to exist within the provided paragraph.")),
    # a named system's result on one dataset, and a named model's size
    ("BiDAF reaches 77.3 F1 on SQuAD.", "On SQuAD, BiDAF gets 70.1 F1."),
    ("The method is evaluated on the BERT-base model, which has 12 layers.", "BERT-base has 24 layers."),
    # one dataset counted by two papers
    ("The SNLI dataset consists of 570,000 pairs of sentences.", "The SNLI dataset has 470,000 sentence pairs."),
])
def test_two_papers_giving_different_numbers_for_one_named_thing_conflict(text_a, text_b):
    [conflict] = pair(text_a, text_b, **OPEN)
    assert conflict.kind == "numbers"


def test_two_papers_agreeing_on_a_named_thing_do_not_conflict():
    # QASPER 1907.09369 and 1611.02988: Ekman's six basic emotions, as a digit and as a word
    assert pair("There have been many emotional models in psychology which tried to classify and point out basic "
                "human emotions such as Ekman's 6 basic emotions BIBREF3 , Plutchik's wheel of emotions BIBREF4 , or "
                "Parrott's three-level categorization of emotions BIBREF5 .",
                "The used emotion labels were Anger, Disgust, Fear, Joy, Sadness, Surprise, in line with the six basic "
                "emotions of Ekman's standard model BIBREF8 .", **OPEN) == []
