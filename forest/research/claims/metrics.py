"""Metric names as papers write them ("top-1 accuracy", "F1", "word error rate", "准确率"), put in one
canonical form so two papers' numbers for the same measure meet, and which of them are better low."""
from __future__ import annotations

import re

from forest.research.claims.words import WORD_END, WORD_START, overlaps

_METRIC_NAMES = (
    r"(?:recall|hits|precision|pass|ndcg|map)@\d+|f1[- ]?scores?|f-?1|f-scores?|f-measures?|exact[- ]match|(?-i:EM)|"
    r"(?:word |character )?error[- ]rates?|win[- ]rates?|success[- ]rates?|inference[- ]time|training[- ]time|"
    r"run[- ]?time|accuracy|accuracies|acc|precision|recall|bleu(?:-\d)?|rouge(?:-(?:l|lsum|\d))?|meteor|perplexity|"
    r"ppl|roc[- ]auc|auroc|auc|(?-i:mAP|MAP)|miou|iou|wer|cer|errors?|latency|throughput|speed-?ups?|loss|mrr|ndcg|"
    r"psnr|ssim|fid|rmse|mae|mse|correlation|memory(?: usage| footprint)?|(?-i:RTF)|real[- ]time factor")
_QUALIFIER = r"(?:top-?\d+|macro|micro|weighted|balanced|average|mean|overall|test|validation|dev|held-out)"
_QUALIFIER_RE = re.compile(_QUALIFIER, re.IGNORECASE)
# At most four qualifiers: unbounded, every qualifier of a long run of them would rescan the rest.
_METRIC_EN = re.compile(WORD_START + rf"(?P<qual>(?:{_QUALIFIER}[- ]){{0,4}})(?P<name>{_METRIC_NAMES})" + WORD_END,
                        re.IGNORECASE)
# The word starts where a hyphenated word starts: after each of its hyphens it would rescan the rest.
_METRIC_GENERIC = re.compile(r"(?<![A-Za-z0-9_-])(?P<word>[A-Za-z][A-Za-z0-9-]*)\s+(?P<kind>score|rate)s?" + WORD_END,
                             re.IGNORECASE)
_NOT_METRICS = frozenset(["learning", "dropout", "sampling", "decay", "warmup", "masking", "mask", "frame", "bit"])
_METRIC_CN = {"准确率": "accuracy", "准确度": "accuracy", "正确率": "accuracy", "精确率": "precision",
              "查准率": "precision", "召回率": "recall", "查全率": "recall", "错误率": "error rate", "误差": "error",
              "延迟": "latency", "时延": "latency", "吞吐量": "throughput", "困惑度": "perplexity", "损失": "loss",
              "成功率": "success rate", "加速比": "speedup", "精度": "精度"}
_METRIC_CN_RE = re.compile("|".join(sorted(_METRIC_CN, key=len, reverse=True)))
_CANONICAL = {"acc": "accuracy", "accuracie": "accuracy", "f 1": "f1", "f1 score": "f1", "f score": "f1",
              "f measure": "f1", "ppl": "perplexity", "em": "exact match", "errors": "error", "auroc": "auc",
              "roc auc": "auc", "run time": "runtime", "speed up": "speedup", "dev": "validation",
              "real time factor": "rtf"}
_LOWER_IS_BETTER = frozenset(["error", "error rate", "word error rate", "character error rate", "wer", "cer",
                              "latency", "loss", "perplexity", "fid", "rmse", "mae", "mse", "memory", "memory usage",
                              "memory footprint", "runtime", "inference time", "training time", "rtf"])


def find_metrics(sentence: str) -> list[tuple[int, int, str]]:
    """The metrics a sentence names: (start, end, canonical name), in the order written."""
    found = []
    for m in _METRIC_EN.finditer(sentence):
        # top-k, macro/micro and the split make different metrics; "average" or "overall" do not
        qualifiers = [re.sub(r"top-?", "top-", q.lower()) for q in _QUALIFIER_RE.findall(m.group("qual"))]
        kept = [_CANONICAL.get(q, q) for q in qualifiers if q not in ("average", "mean", "overall")]
        found.append((m.start(), m.end(), " ".join(kept + [canonical_metric(m.group("name"))])))
    for m in _METRIC_CN_RE.finditer(sentence):
        found.append((m.start(), m.end(), _METRIC_CN[m.group(0)]))
    for m in _METRIC_GENERIC.finditer(sentence):
        word = m.group("word").lower()
        if word not in _NOT_METRICS and not overlaps(m.start(), m.end(), found) and len(word) > 1 \
                and word not in ("the", "a", "an", "our", "its", "this", "that", "high", "low"):
            found.append((m.start(), m.end(), f"{word} {m.group('kind').lower()}"))
    return sorted(found)


def canonical_metric(name: str) -> str:
    name = re.sub(r"[\s-]+", " ", name.lower()).strip()
    if re.search(r"(rate|score|measure|speedup|speed up|error)s$", name):
        name = name[:-1]
    return _CANONICAL.get(name, name)


def lower_is_better(metric: str) -> bool:
    return any(metric == name or metric.endswith(" " + name) for name in _LOWER_IS_BETTER)


# What an experiment is set up with rather than what it found: the training settings and the model's
# sizes ("a batch size of 32", "a learning rate of 0.001", "10 epochs", "512 hidden units", "6 layers").
# Two papers' values of these are two experiments' choices, stemmed as a number's measure words are.
SETTING_WORDS = frozenset(
    "batch minibatch mini-batch epoch dropout iteration step warmup momentum decay beam seed patience clipping "
    "learning layer unit hidden dimension dimensional head filter kernel window gpu gpus neuron".split())


def is_setting(measure_words: frozenset[str]) -> bool:
    """Whether a number's measure (its stemmed words: {"batch", "size"}) is a setting of an experiment."""
    return bool(measure_words & SETTING_WORDS)


# Metrics whose modifiers make another measure: "joint goal accuracy" is not "joint domain accuracy".
METRIC_KEYS = frozenset(canonical_metric(n) for n in ("accuracy", "f1", "precision", "recall", "bleu", "error"))
