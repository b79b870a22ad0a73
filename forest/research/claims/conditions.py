"""The conditions a claim holds under: the dataset, the shot and way counts, the model and its size,
and "when/if/under" settings. Two claims under incompatible conditions are different experiments,
never a conflict."""
from __future__ import annotations

import re
from dataclasses import dataclass

from forest.research.claims.words import WORD_END, WORD_START, overlap, overlaps, same_name
from forest.text import content_terms

SETTING_OVERLAP = 0.5       # "when/if/under" clauses sharing more than this share of words are one setting

_SHOT_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "ten": "10",
               "few": "few", "a few": "few", "a handful of": "few", "many": "many", "零": "0", "小": "few", "少": "few"}
_SHOT = re.compile(
    WORD_START + r"(?P<n>\d+|zero|one|two|three|four|five|ten|few|many)[- ]shots?" + WORD_END
    + r"|" + WORD_START + r"(?:with|using|from|on)\s+(?:only\s+|just\s+)?(?P<m>\d+(?:,\d{3})*|a few|few|a handful of)\s+"
    r"(?:labell?ed\s+|annotated\s+|training\s+|in-context\s+)?(?:examples|samples|instances|images|demonstrations|"
    r"labels|shots)" + WORD_END
    + r"|(?P<c>[小少零])样本|每类\s?(?P<k>\d+)\s?个?(?:标注)?样本|(?<!\d)(?P<j>\d+)\s?个(?:标注)?样本", re.IGNORECASE)
_WAY = re.compile(WORD_START + r"(?P<n>\d+)[- ]way" + WORD_END, re.IGNORECASE)
_MODEL = re.compile(
    WORD_START + r"(?:[A-Z][A-Za-z]*(?:-[A-Za-z]+){0,4}"
    r"(?:-(?:\d+(?:\.\d+)?[A-Za-z]*|(?i:base|large|small|tiny|medium|xl|xxl))){1,4}"
    r"|\d+(?:\.\d+)?[BM](?:\s+param(?:eter)?s|\s+models?)|\d+(?:\.\d+)?\s?(?:billion|million)\s+param(?:eter)?s)"
    + WORD_END)
_DATASET = re.compile(
    r"(?<![A-Za-z])(?:[Oo]n|[Ii]n|[Aa]cross)\s+(?:the\s+)?"
    r"(?P<name>(?:[A-Z]|[a-z]+[A-Z])[A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?:\s+[A-Z0-9][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)*)"
    r"|(?<![A-Za-z0-9_.-])(?P<named>[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)\s+(?:dataset|benchmark|corpus|data|test\s+set)"
    + WORD_END + r"|在\s?(?P<cn>[A-Za-z][A-Za-z0-9\-. ]{0,40}?|[\u4e00-\u9fff]{1,8}?)\s?(?:数据集|基准|语料库?)?上(?!升)")
_NOT_DATASETS = frozenset(["the", "a", "an", "we", "its", "table", "tab", "figure", "fig", "section", "sec", "appendix",
                           "eq", "equation", "chapter", "algorithm", "experiment", "experiments", "addition",
                           "contrast", "particular", "general", "practice", "summary", "fact", "short", "sum", "this",
                           "these", "that", "those", "our", "their", "both", "all", "each", "such", "turn", "theory",
                           "principle", "conclusion", "order", "total", "most", "many", "some", "average", "terms",
                           "case", "cases"])
# A run of blanks is entered from its start only: inside it the pattern would rescan to its end.
_A_MODEL_AFTER = re.compile(r"(?<!\s)\s+(?:models?|architectures?|networks?|encoders?)" + WORD_END, re.IGNORECASE)
_SETTING = re.compile(
    r"(?<![A-Za-z])(?:when|if|under|unless|given|assuming)\s+(?P<body>[^,;.:()，；。]{3,80})"
    r"|(?<![A-Za-z])(?:with|without|using)\s+(?P<noun>(?:[\w-]+\s+){0,4}?(?:data|setting|regime|supervision|"
    r"pre-?training|augmentation|backbone|fine-?tuning|distillation))(?![A-Za-z])"
    r"|当(?P<when>[^，,；;。]{1,20}?)时"
    r"|(?:在)?(?P<scene>[\u4e00-\u9fffA-Za-z0-9\-]{1,6})(?:场景|设置|条件|情况|环境|设定)下", re.IGNORECASE)


@dataclass(frozen=True)
class Condition:
    category: str     # "dataset", "shots", "ways", "model" or "setting"
    text: str
    norm: str         # compared for equality; a "setting" holds its words, compared by overlap


def dataset_norm(name: str) -> str:
    """A dataset's name as compared: lower case, letters and digits only ("CIFAR-10" -> "cifar10")."""
    return re.sub(r"[^a-z0-9\u4e00-\u9fff]", "", name.lower())


def find_conditions(sentence: str, metric_spans: list[tuple[int, int]]
                    ) -> tuple[list[Condition], list[tuple[int, int]], list[tuple[int, int, str]]]:
    """The sentence's conditions, the spans whose numbers are conditions rather than results, and
    the datasets with where they are named."""
    found: list[tuple[int, int, Condition]] = []
    datasets = []
    for m in _DATASET.finditer(sentence):
        name = m.group("name") or m.group("named") or m.group("cn")
        first = re.split(r"[\s.\-]", name.strip(), maxsplit=1)[0].lower()
        cited_author = "et al" in sentence[m.end():m.end() + 7]
        if first in _NOT_DATASETS or name.strip()[:1] in "此这该其" or "基础" in name or cited_author \
                or _A_MODEL_AFTER.match(sentence, m.end()):
            continue      # "on the BERT-base model" names a model
        start = m.start("name") if m.group("name") else m.start("named") if m.group("named") else m.start()
        if overlaps(start, m.end(), metric_spans):
            continue      # "on BLEU" is a metric, not a dataset
        norm = dataset_norm(name)
        found.append((start, m.end(), Condition("dataset", m.group(0).strip(), norm)))
        datasets.append((start, m.end(), norm))
    for m in _SHOT.finditer(sentence):
        word = (m.group("n") or m.group("m") or m.group("c") or m.group("k") or m.group("j")).lower()
        norm = _SHOT_WORDS.get(word, word.replace(",", ""))
        found.append((m.start(), m.end(), Condition("shots", m.group(0).strip(), norm)))
    for m in _WAY.finditer(sentence):
        found.append((m.start(), m.end(), Condition("ways", m.group(0), m.group("n"))))
    taken = [(s, e) for s, e, _ in found] + metric_spans
    for m in _MODEL.finditer(sentence):
        if m.group(0).lower().startswith("top-") or overlaps(m.start(), m.end(), taken):
            continue
        norm = re.sub(r"[^a-z0-9.]", "", m.group(0).lower())
        found.append((m.start(), m.end(), Condition("model", m.group(0), norm)))
    masked = [(s, e) for s, e, _ in found]
    for m in _SETTING.finditer(sentence):
        body = next(g for g in (m.group("body"), m.group("noun"), m.group("when"), m.group("scene")) if g)
        words = sorted(set(content_terms(body)))
        if words:
            found.append((m.start(), m.end(), Condition("setting", m.group(0).strip(), " ".join(words))))
    found.sort(key=lambda f: f[0])
    return unique([c for _, _, c in found]), masked, datasets


def unique(conditions: list[Condition]) -> list[Condition]:
    return list(dict.fromkeys(conditions))


def settings_compatible(xs: list[Condition], ys: list[Condition]) -> bool:
    """Compatible unless both sides state the same kind of condition with no value in common."""
    for category in {c.category for c in xs} & {c.category for c in ys}:
        ours = [c for c in xs if c.category == category]
        theirs = [c for c in ys if c.category == category]
        if not any(same_condition(c, d) for c in ours for d in theirs):
            return False
    return True


def same_condition(c: Condition, d: Condition) -> bool:
    if c.category != d.category:
        return False
    if c.category == "setting":
        return overlap(set(c.norm.split()), set(d.norm.split())) > SETTING_OVERLAP
    if c.category == "dataset":
        return same_name(c.norm, d.norm)
    return c.norm == d.norm
