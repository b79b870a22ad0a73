"""Likely conflicts between research statements, and the offline side-by-side used to reconcile them
(issue 6 §6; seed 002 §3.3 and §4 step 4).

A statement is a retrieved passage or a recorded finding. Two statements from different sources are
compared only when they are on the same topic (cosine of their vectors, else the overlap of their
content words); then a sentence of each must be about the same thing (shared words, the same subject
and metric, compatible experimental conditions) and disagree: one negates what the other states,
they move the same quantity in opposite directions, or they report different numbers for the same
metric. Everything is rule-based, English and Chinese, with no model calls: a detected conflict is a
prompt to look, and the side-by-side says so.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

from forest.text import STOPWORDS, content_terms, is_cjk_char, split_sentences, truncate

TOPIC_THRESHOLD = 0.3
SENTENCE_OVERLAP = 0.5
RELATIVE_TOLERANCE = 0.02   # values this close (relative) are the same number, rounded differently
SETTING_OVERLAP = 0.5       # "when/if/under" clauses sharing more than this share of words are one setting
KINDS = ("negation", "direction", "numbers")   # strongest first: the one kept for a pair
OFFLINE_REVIEW = "offline rules (not reviewed by an LLM)"

# Latin word edges that also hold next to CJK characters (which `\b` counts as word characters).
_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"
_CLAUSE_BREAK = re.compile(r"[,;:，；：]|(?<![A-Za-z])(?:but|while|whereas|although|though)(?![A-Za-z])|但|而",
                           re.IGNORECASE)

# --- cue words ---------------------------------------------------------------------------------
# "quality" cues judge (better/worse); "quantity" cues move a number (higher/lower). The difference
# matters for metrics where lower is better: "lower perplexity" and "better perplexity" agree.
_DIRECTION_CUES = [
    (re.compile(_L + r"(?:improv\w*|outperform\w*|better|faster|enhanc\w*|surpass\w*|exceed\w*|benefit\w*|"
                r"help(?:s|ed)?)(?![\w-])", re.IGNORECASE), "up", "quality"),
    (re.compile(_L + r"(?:increas\w*|higher|rais(?:e|es|ed|ing)|boost\w*|gain(?:s|ed)?|ris(?:e|es|ing)|rose|"
                r"grow(?:s|n|ing)?|grew)(?![\w-])", re.IGNORECASE), "up", "quantity"),
    (re.compile(_L + r"(?:degrad\w*|underperform\w*|worse|slower|hurt(?:s|ing)?|harm(?:s|ed|ing)?|impair\w*)"
                r"(?![\w-])", re.IGNORECASE), "down", "quality"),
    (re.compile(_L + r"(?:decreas\w*|lower(?:s|ed|ing)?|reduc\w*|drop(?:s|ped|ping)?|declin\w*|fall(?:s|ing)?|fell|"
                r"diminish\w*)(?![\w-])", re.IGNORECASE), "down", "quantity"),
    (re.compile(r"优于|改善|改进|更好|增强|加快|超过|超越|胜过|有助于"), "up", "quality"),
    (re.compile(r"提高|提升|增加|增长|上升|高于|更高"), "up", "quantity"),
    (re.compile(r"劣于|变差|更差|恶化|不如|减慢|损害|削弱"), "down", "quality"),
    (re.compile(r"降低|减少|下降|低于|更低"), "down", "quantity"),
]
# Nouns that contain a cue word: "数据增强" is data augmentation, not "enhances".
_CUE_NOUNS = re.compile(r"数据增强|图像增强|增强学习|增强版|增强型|增量|上升沿")
_NEGATION = re.compile(
    _L + r"(?:not(?!\s+only)|no|never|neither|nor|cannot|none|fail(?:s|ed|ing)?\s+to|unable\s+to|"
    r"lacks?\s+(?:of|any)|without\s+(?:any\s+)?(?:significant\s+|notable\s+|measurable\s+)?"
    r"(?:improvement|gain|benefit|effect|change|difference))" + _R + r"|n['’]t" + _R
    # 不 and 未 only where they negate: not in 不同 (different), 不断 (continually), 未来 (future) ...
    + r"|并未|并没有|没有|未能|无法|无显著|无明显|无助于|并非|(?<!差)不(?![同断仅但少过如久])|未(?!来)|没", re.IGNORECASE)
_INSIGNIFICANT = re.compile(r"not\s+(?:statistically\s+)?significant|insignificant|negligible|不显著|不明显|可忽略",
                            re.IGNORECASE)
_EFFECT = re.compile(_L + r"(?:effect|impact|difference|benefit|help|significant|change)\w*|影响|效果|差异|显著|作用|帮助|变化",
                     re.IGNORECASE)
_LEADING_FILLER = re.compile(r"^(?:[\s了的得地着]|显著|明显|大幅|略微|稍微|进一步|大大)+")
_ADVERBS = frozenset(["significantly", "substantially", "slightly", "consistently", "greatly", "considerably",
                      "markedly", "dramatically", "even", "further", "much", "clearly", "modestly", "overall"])
# Words every result sentence uses: sharing them says nothing about being on the same claim.
_GENERIC = frozenset(["achieves", "achieved", "achieve", "obtains", "obtained", "obtain", "reaches", "reached",
                      "reach", "reports", "reported", "report", "shows", "showed", "show", "shown", "yields",
                      "yielded", "results", "result", "performance", "score", "scores", "find", "found",
                      "observe", "observed", "experiments", "experiment", "using", "use", "used", "paper",
                      "work", "study", "value", "compared", "respectively", "approximately", "about", "table",
                      "tables", "figure", "fig", "section", "appendix", "setting", "settings", "although",
                      "though", "whereas", "however"] + list(_ADVERBS))

# --- metrics -----------------------------------------------------------------------------------
_METRIC_NAMES = (
    r"(?:recall|hits|precision|pass|ndcg|map)@\d+|f1[- ]?scores?|f-?1|f-scores?|f-measures?|exact[- ]match|(?-i:EM)|"
    r"(?:word |character )?error[- ]rates?|win[- ]rates?|success[- ]rates?|inference[- ]time|training[- ]time|"
    r"run[- ]?time|accuracy|acc|precision|recall|bleu(?:-\d)?|rouge(?:-(?:l|lsum|\d))?|meteor|perplexity|ppl|"
    r"roc[- ]auc|auroc|auc|(?-i:mAP|MAP)|miou|iou|wer|cer|errors?|latency|throughput|speed-?ups?|loss|mrr|ndcg|"
    r"psnr|ssim|fid|rmse|mae|mse|correlation|memory(?: usage| footprint)?")
_QUALIFIER = r"(?:top-?\d+|macro|micro|weighted|balanced|average|mean|overall|test|validation|dev|held-out)"
_QUALIFIER_RE = re.compile(_QUALIFIER, re.IGNORECASE)
# At most four qualifiers: unbounded, every qualifier of a long run of them would rescan the rest.
_METRIC_EN = re.compile(_L + rf"(?P<qual>(?:{_QUALIFIER}[- ]){{0,4}})(?P<name>{_METRIC_NAMES})" + _R, re.IGNORECASE)
# The word starts where a hyphenated word starts: after each of its hyphens it would rescan the rest.
_METRIC_GENERIC = re.compile(r"(?<![A-Za-z0-9_-])(?P<word>[A-Za-z][A-Za-z0-9-]*)\s+(?P<kind>score|rate)s?" + _R,
                             re.IGNORECASE)
_NOT_METRICS = frozenset(["learning", "dropout", "sampling", "decay", "warmup", "masking", "mask", "frame", "bit"])
_METRIC_CN = {"准确率": "accuracy", "准确度": "accuracy", "正确率": "accuracy", "精确率": "precision",
              "查准率": "precision", "召回率": "recall", "查全率": "recall", "错误率": "error rate", "误差": "error",
              "延迟": "latency", "时延": "latency", "吞吐量": "throughput", "困惑度": "perplexity", "损失": "loss",
              "成功率": "success rate", "加速比": "speedup", "精度": "精度"}
_METRIC_CN_RE = re.compile("|".join(sorted(_METRIC_CN, key=len, reverse=True)))
_CANONICAL = {"acc": "accuracy", "f 1": "f1", "f1 score": "f1", "f score": "f1", "f measure": "f1", "ppl": "perplexity",
              "em": "exact match", "errors": "error", "auroc": "auc", "roc auc": "auc", "run time": "runtime",
              "speed up": "speedup", "dev": "validation"}
_LOWER_IS_BETTER = frozenset(["error", "error rate", "word error rate", "character error rate", "wer", "cer",
                              "latency", "loss", "perplexity", "fid", "rmse", "mae", "mse", "memory", "memory usage",
                              "memory footprint", "runtime", "inference time", "training time"])

# --- numbers -----------------------------------------------------------------------------------
_UNITS = {"%": "%", "％": "%", "percent": "%", "percentage point": "pp", "percentage points": "pp", "pp": "pp",
          "point": "pp", "points": "pp", "个百分点": "pp", "百分点": "pp", "ms": "ms", "millisecond": "ms",
          "milliseconds": "ms", "毫秒": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
          "秒": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "分钟": "min", "h": "h",
          "hour": "h", "hours": "h", "小时": "h", "x": "x", "×": "x", "times": "x", "倍": "x", "GB": "GB", "MB": "MB"}
_UNIT_BASE = {"%": ("ratio", 0.01), "pp": ("pp", 1.0), "ms": ("time", 0.001), "s": ("time", 1.0),
              "min": ("time", 60.0), "h": ("time", 3600.0), "x": ("factor", 1.0), "GB": ("bytes", 1e9),
              "MB": ("bytes", 1e6)}
_NUMBER = re.compile(
    r"(?P<sign>(?<![A-Za-z0-9_.])[+\-−])?(?<![A-Za-z0-9_.])(?<![A-Za-z]-)"
    r"(?P<num>\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d+)?)\s?"
    r"(?P<unit>" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + r")?(?![A-Za-z0-9])")
# Numbers that are not results: references to parts of the paper, citations and years.
_REFERENCE = re.compile(
    r"(?:" + _L + r"(?:tables?|tab\.|figures?|figs?\.|sections?|sec\.|eqs?\.|equations?|appendix|chapter|"
    r"algorithm|lines?|pp?\.|pages?)|§|图|表|第|公式|章节)\s*\(?\d+(?:\.\d+)*[a-z]?\)?"
    r"|\[\s*\d+(?:\s*[,–-]\s*\d+)*\s*\]"
    r"|(?<![\d.])(?:19[5-9]\d|20[0-3]\d)(?![\d.]|\s?%)", re.IGNORECASE)
# Between a metric and its value: "accuracy of 85.2%", "accuracy improved by 3 points", "准确率为85.2%".
_LINK_BEFORE = re.compile(
    r"(?:\s|[:=：~≈(（]|of|is|was|were|are|be|been|reach(?:es|ed)?|achiev(?:es|ed)|attain(?:s|ed)|obtain(?:s|ed)|"
    r"gets?|got|scor(?:es|ed)|at|around|about|approximately|roughly|nearly|almost|only|just|an?|the|value|"
    r"(?:improv|increas|decreas|declin|reduc|boost|rais)\w*|drop(?:s|ped)?|fell|falls|rose|rises|went|goes|up|"
    r"down|by|to|from|on|in|for|reported|remains|remained|stays|值|为|达到|高达|仅为|达|是|约|仅|提高|提升|降低|下降|增加|"
    r"减少|到|至|了|从|有)*", re.IGNORECASE)
_LINK_AFTER = re.compile(r"(?:\s|的|in|of)*", re.IGNORECASE)
_LINK_CHAIN = re.compile(r"(?<!\s)\s*(?:to|and|vs\.?|versus|/|到|至|和|与|或)\s*", re.IGNORECASE)
_DELTA_GAP = re.compile(r"(?<![A-Za-z])by(?![A-Za-z])|(?:提高|提升|降低|下降|增加|减少)了?\s*$", re.IGNORECASE)
_MAX_LINK = 40

# --- conditions --------------------------------------------------------------------------------
_NUMBER_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "ten": "10",
                 "few": "few", "a few": "few", "a handful of": "few", "many": "many", "零": "0", "小": "few", "少": "few"}
_SHOT = re.compile(
    _L + r"(?P<n>\d+|zero|one|two|three|four|five|ten|few|many)[- ]shots?" + _R
    + r"|" + _L + r"(?:with|using|from|on)\s+(?:only\s+|just\s+)?(?P<m>\d+(?:,\d{3})*|a few|few|a handful of)\s+"
    r"(?:labell?ed\s+|annotated\s+|training\s+|in-context\s+)?(?:examples|samples|instances|images|demonstrations|"
    r"labels|shots)" + _R
    + r"|(?P<c>[小少零])样本|每类\s?(?P<k>\d+)\s?个?(?:标注)?样本|(?<!\d)(?P<j>\d+)\s?个(?:标注)?样本", re.IGNORECASE)
_WAY = re.compile(_L + r"(?P<n>\d+)[- ]way" + _R, re.IGNORECASE)
_MODEL = re.compile(
    _L + r"(?:[A-Z][A-Za-z]*(?:-[A-Za-z]+){0,4}(?:-(?:\d+(?:\.\d+)?[A-Za-z]*|base|large|small|tiny|medium|xl|xxl)){1,4}"
    r"|\d+(?:\.\d+)?[BM](?:\s+param(?:eter)?s)?|\d+(?:\.\d+)?\s?(?:billion|million)\s+param(?:eter)?s"
    r"|\d+-layers?)" + _R)
_DATASET = re.compile(
    r"(?<![A-Za-z])(?:[Oo]n|[Ii]n|[Oo]ver|[Aa]cross)\s+(?:the\s+)?"
    r"(?P<name>(?:[A-Z]|[a-z]+[A-Z])[A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?:\s+[A-Z0-9][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)*)"
    r"|(?<![A-Za-z0-9_.-])(?P<named>[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)\s+(?:dataset|benchmark|corpus)" + _R
    + r"|在\s?(?P<cn>[A-Za-z][A-Za-z0-9\-. ]{0,40}?|[\u4e00-\u9fff]{1,8}?)\s?(?:数据集|基准|语料库?)?上(?!升)")
_NOT_DATASETS = frozenset(["table", "tab", "figure", "fig", "section", "sec", "appendix", "eq", "equation", "chapter",
                           "algorithm", "experiment", "experiments", "addition", "contrast", "particular", "general",
                           "practice", "summary", "fact", "short", "sum", "this", "these", "that", "those", "our",
                           "their", "both", "all", "each", "such", "turn", "theory", "principle", "conclusion",
                           "order", "total", "most", "many", "some", "average"])
_SETTING = re.compile(
    r"(?<![A-Za-z])(?:when|if|under|unless|given|assuming)\s+(?P<body>[^,;.:()，；。]{3,80})"
    r"|(?<![A-Za-z])(?:with|without|using)\s+(?P<noun>(?:[\w-]+\s+){0,4}?(?:data|setting|regime|supervision|"
    r"pre-?training|augmentation|backbone|fine-?tuning|distillation))(?![A-Za-z])"
    r"|当(?P<when>[^，,；;。]{1,20}?)时"
    r"|(?:在)?(?P<scene>[\u4e00-\u9fffA-Za-z0-9\-]{1,6})(?:场景|设置|条件|情况|环境|设定)下", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    key: str                                  # "node:123", "finding:7"
    text: str
    source: str                               # document label; statements of one source are never compared
    citation: str = ""
    vector: tuple[float, ...] | None = None   # unit-normalized embedding when known


@dataclass(frozen=True)
class Measure:
    metric: str       # canonical name ("accuracy", "top-1 accuracy"); "<name> change" for a gain or a drop
    value: float      # signed for a change
    unit: str         # "%", "pp", "ms", "s", "x", ... or ""
    text: str         # as written: "85.2% accuracy", "准确率为85.2%"


@dataclass
class Claim:
    sentence: str
    negated: bool
    direction: str | None      # "up" / "down" as the words say; None when absent or mixed
    measures: list[Measure]
    conditions: list[str]      # datasets, shot counts, model sizes, "when/if/under" settings


@dataclass
class Conflict:
    a: Statement
    b: Statement
    kind: str                  # one of KINDS
    topic_similarity: float    # cosine of the vectors when both have one, else content-word overlap
    a_claim: Claim
    b_claim: Claim
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"a": _statement_dict(self.a), "b": _statement_dict(self.b), "kind": self.kind,
                "topic_similarity": round(self.topic_similarity, 4), "a_claim": asdict(self.a_claim),
                "b_claim": asdict(self.b_claim), "detail": self.detail}


@dataclass(frozen=True)
class _Condition:
    category: str     # "dataset", "shots", "ways", "model" or "setting"
    text: str
    norm: str         # compared for equality; a "setting" holds its words, compared by overlap


@dataclass
class _Sentence:
    """A claim with what alignment needs, computed once per statement."""
    claim: Claim
    terms: frozenset[str]       # content words without numbers, cue words and generic result words
    subject: frozenset[str]     # terms minus metric and condition words: what the claim is about
    metrics: frozenset[str]
    objects: frozenset[str]     # what moves up or down: the metrics and the word each cue acts on
    quality: str | None         # the direction as better/worse (flipped for lower-is-better metrics)
    effect: bool                # a negated "no effect / no significant difference" without a direction
    setting: list[_Condition]   # the sentence's conditions plus the statement's unambiguous ones


@dataclass
class _Parsed:
    statement: Statement
    terms: frozenset[str]
    sentences: list[_Sentence]
    conditions: list[_Condition]


@dataclass
class _Match:
    """The disagreement kept for a pair of statements."""
    kind: str
    x: _Sentence
    y: _Sentence
    detail: str


def extract_claims(text: str) -> list[Claim]:
    """One Claim per sentence that negates, says something goes up or down, or reports a measured value."""
    return [s.claim for s in _parse_text(text)[0]]


def detect_conflicts(statements: Sequence[Statement], *, topic_threshold: float = TOPIC_THRESHOLD,
                     sentence_overlap: float = SENTENCE_OVERLAP,
                     calibrate: Callable[[float], float] | None = None) -> list[Conflict]:
    """Likely conflicts between statements of different sources, most similar pairs first; at most
    one per pair (the strongest kind, then the best-aligned sentences). `calibrate` puts a vector
    cosine on the 0-1 scale the threshold uses (the embedder's: E5 cosines crowd into 0.7-1)."""
    parsed = [_parse(s) for s in statements]
    conflicts = []
    for x, y in combinations(parsed, 2):
        if x.statement.source == y.statement.source or not x.sentences or not y.sentences:
            continue
        similarity = _topic_similarity(x, y, calibrate)
        if similarity < topic_threshold:
            continue
        found = _strongest(x, y, sentence_overlap)
        if found:
            conflicts.append(Conflict(x.statement, y.statement, found.kind, similarity, found.x.claim,
                                      found.y.claim, found.detail))
    conflicts.sort(key=lambda c: (-c.topic_similarity, KINDS.index(c.kind)))
    return conflicts


def side_by_side(a: Statement, b: Statement) -> dict[str, Any]:
    """The offline comparison for reconciliation: both sides' claims, measures and conditions, the
    conditions only one side states, the metrics both report, and a templated verdict."""
    x, y = _parse(a), _parse(b)
    only_a = [c.text for c in x.conditions if not any(_same_condition(c, d) for d in y.conditions)]
    only_b = [c.text for c in y.conditions if not any(_same_condition(c, d) for d in x.conditions)]
    shared = _shared_metrics(x, y)
    found = _strongest(x, y, SENTENCE_OVERLAP)
    label_a, label_b = _label(a), _label(b)
    if found:
        verdict = f"Likely conflict ({found.kind}): {found.detail}."
    elif any(m["agree"] is False for m in shared):
        names = ", ".join(m["metric"] for m in shared if m["agree"] is False)
        verdict = (f"Different values for {names}, but the sentences differ in subject or setting, "
                   "so the rules do not count them as a conflict.")
    else:
        verdict = "No contradiction found by the offline rules."
    if only_a or only_b:
        verdict += (f" Conditions stated on one side only: {label_a}: {'; '.join(only_a) or 'none'}; "
                    f"{label_b}: {'; '.join(only_b) or 'none'}. They may explain the difference.")
    elif x.conditions:
        verdict += " Both state the same conditions."
    else:
        verdict += " Neither states its experimental conditions."
    return {"a": _side(x), "b": _side(y), "conditions_only_in_a": only_a, "conditions_only_in_b": only_b,
            "boundary_conditions": [f"{label_a}: {c}" for c in only_a] + [f"{label_b}: {c}" for c in only_b],
            "shared_metrics": shared,
            "conflict": {"kind": found.kind, "a_sentence": found.x.claim.sentence,
                         "b_sentence": found.y.claim.sentence, "detail": found.detail} if found else None,
            "verdict": verdict, "reviewed_by": OFFLINE_REVIEW}


# --- parsing -----------------------------------------------------------------------------------
def _parse(statement: Statement) -> _Parsed:
    sentences, conditions, terms = _parse_text(statement.text)
    return _Parsed(statement, terms, sentences, conditions)


def _parse_text(text: str) -> tuple[list[_Sentence], list[_Condition], frozenset[str]]:
    analysed = [_analyse(sentence) for sentence in split_sentences(text)]
    conditions = _unique([c for _, conds, _ in analysed for c in conds])
    # A claim inherits the statement's condition of a kind it does not state itself, when the
    # statement names only one (the dataset or shot count set in an earlier sentence).
    single = {}
    for category in {c.category for c in conditions} - {"setting"}:
        values = [c for c in conditions if c.category == category]
        if len({c.norm for c in values}) == 1:
            single[category] = values[0]
    sentences = []
    for sentence, conds, _ in analysed:
        if sentence:
            stated = {c.category for c in conds}
            sentence.setting = conds + [c for k, c in single.items() if k not in stated]
            sentences.append(sentence)
    terms = frozenset(t for _, _, ts in analysed for t in ts)
    return sentences, conditions, terms


def _analyse(sentence: str) -> tuple[_Sentence | None, list[_Condition], list[str]]:
    raw_terms = content_terms(sentence)
    metrics = _find_metrics(sentence)
    conditions, masked_spans = _find_conditions(sentence, [(s, e) for s, e, _ in metrics])
    nouns = [m.span() for m in _CUE_NOUNS.finditer(sentence)]
    cues = sorted(((m.start(), m.end(), direction, kind) for pattern, direction, kind in _DIRECTION_CUES
                   for m in pattern.finditer(sentence) if not _overlaps(m.start(), m.end(), nouns)),
                  key=lambda c: c[0])
    negations = [(m.start(), m.end()) for m in _NEGATION.finditer(sentence)]
    measures = _find_measures(sentence, metrics, masked_spans, cues)
    negated = _is_negated(sentence, cues, negations)
    directions = {direction for _, _, direction, _ in cues}
    direction = directions.pop() if len(directions) == 1 else None
    condition_texts = [c.text for c in conditions]
    if not (negated or cues or measures):
        return None, conditions, raw_terms
    claim = Claim(sentence, negated, direction, measures, list(dict.fromkeys(condition_texts)))
    cue_terms = {t for s, e, _, _ in cues for t in content_terms(sentence[s:e])}
    cue_terms |= {t for s, e in negations for t in content_terms(sentence[s:e])}
    terms = frozenset(t for t in raw_terms if t not in cue_terms and t not in _GENERIC and t not in _UNITS
                      and not t.isdigit() and not t.endswith(("n't", "n’t")))
    names = frozenset(name for _, _, name in metrics)
    metric_words = {t for s, e, _ in metrics for t in content_terms(sentence[s:e])}
    condition_words = {t for c in condition_texts for t in content_terms(c)}
    targets = frozenset(t for cue in cues for t in _cue_target(sentence, cue))
    lower_is_better = bool(names) and all(_lower_is_better(n) for n in names)
    kinds = {kind for _, _, _, kind in cues}
    quality = direction
    if direction and lower_is_better and kinds == {"quantity"}:
        quality = "up" if direction == "down" else "down"
    effect = negated and not direction and bool(_EFFECT.search(sentence))
    parsed = _Sentence(claim, terms, terms - metric_words - condition_words, names, names | targets, quality,
                       effect, conditions)
    return parsed, conditions, raw_terms


def _is_negated(sentence: str, cues: list[tuple[int, int, str, str]], negations: list[tuple[int, int]]) -> bool:
    if _INSIGNIFICANT.search(sentence):
        return True
    if not cues:
        return bool(negations)
    # With a cue word, only a negation shortly before it in the same clause negates the claim:
    # "improves accuracy, although we did not tune it" is not negated.
    return any(0 <= start - end <= 30 and not _CLAUSE_BREAK.search(sentence[end:start])
               for start, _, _, _ in cues for _, end in negations)


def _cue_target(sentence: str, cue: tuple[int, int, str, str]) -> list[str]:
    """The word a cue acts on: the first after it in the clause ("improves robustness"), else the
    last before it ("accuracy drops"); two bigrams for CJK, which is one word of about three characters."""
    start, end = cue[0], cue[1]
    after = _LEADING_FILLER.sub("", _clause_after(sentence, end))
    if is_cjk_char(after[:1]) and "的" in after[:6]:
        after = after[after.index("的") + 1:]      # "模型的鲁棒性": the robustness, not the model
    words = [t for t in content_terms(after[:40]) if t not in _ADVERBS and not t.isdigit()]
    if words:
        return words[:2] if is_cjk_char(after[:1]) else words[:1]
    before = _clause_before(sentence, start)
    words = [t for t in content_terms(before[-40:]) if t not in _ADVERBS and not t.isdigit()]
    return words[-2:] if before and is_cjk_char(before[-1:]) else words[-1:]


def _clause_after(sentence: str, end: int) -> str:
    rest = sentence[end:]
    brk = _CLAUSE_BREAK.search(rest)
    return rest[: brk.start()] if brk else rest


def _clause_before(sentence: str, start: int) -> str:
    head = sentence[:start]
    breaks = list(_CLAUSE_BREAK.finditer(head))
    return (head[breaks[-1].end():] if breaks else head).rstrip()


def _find_metrics(sentence: str) -> list[tuple[int, int, str]]:
    found = []
    for m in _METRIC_EN.finditer(sentence):
        # top-k, macro/micro and the split make different metrics; "average" or "overall" do not
        qualifiers = [re.sub(r"top-?", "top-", q.lower()) for q in _QUALIFIER_RE.findall(m.group("qual"))]
        kept = [_CANONICAL.get(q, q) for q in qualifiers if q not in ("average", "mean", "overall")]
        found.append((m.start(), m.end(), " ".join(kept + [_canonical_metric(m.group("name"))])))
    for m in _METRIC_CN_RE.finditer(sentence):
        found.append((m.start(), m.end(), _METRIC_CN[m.group(0)]))
    for m in _METRIC_GENERIC.finditer(sentence):
        word = m.group("word").lower()
        if word not in STOPWORDS and word not in _NOT_METRICS and not _overlaps(m.start(), m.end(), found):
            found.append((m.start(), m.end(), f"{word} {m.group('kind').lower()}"))
    return sorted(found)


def _canonical_metric(name: str) -> str:
    name = re.sub(r"[\s-]+", " ", name.lower()).strip()
    if re.search(r"(rate|score|measure|speedup|speed up|error)s$", name):
        name = name[:-1]
    return _CANONICAL.get(name, name)


def _lower_is_better(metric: str) -> bool:
    return any(metric == name or metric.endswith(" " + name) for name in _LOWER_IS_BETTER)


def _find_conditions(sentence: str,
                     metric_spans: list[tuple[int, int]]) -> tuple[list[_Condition], list[tuple[int, int]]]:
    """The sentence's conditions and the spans whose numbers are conditions, not results."""
    found: list[tuple[int, int, _Condition]] = []
    for m in _DATASET.finditer(sentence):
        name = m.group("name") or m.group("named") or m.group("cn")
        first = re.split(r"[\s.\-]", name.strip(), maxsplit=1)[0].lower()
        cited_author = "et al" in sentence[m.end():m.end() + 7]
        if first in _NOT_DATASETS or name.strip()[:1] in "此这该其" or "基础" in name or cited_author:
            continue
        start = m.start("name") if m.group("name") else m.start("named") if m.group("named") else m.start()
        if _overlaps(start, m.end(), metric_spans):
            continue      # "on BLEU" is a metric, not a dataset
        norm = re.sub(r"[^a-z0-9\u4e00-\u9fff]", "", name.lower())
        found.append((start, m.end(), _Condition("dataset", m.group(0).strip(), norm)))
    for m in _SHOT.finditer(sentence):
        word = (m.group("n") or m.group("m") or m.group("c") or m.group("k") or m.group("j")).lower()
        norm = _NUMBER_WORDS.get(word, word.replace(",", ""))
        found.append((m.start(), m.end(), _Condition("shots", m.group(0).strip(), norm)))
    for m in _WAY.finditer(sentence):
        found.append((m.start(), m.end(), _Condition("ways", m.group(0), m.group("n"))))
    taken = [(s, e) for s, e, _ in found] + metric_spans
    for m in _MODEL.finditer(sentence):
        if m.group(0).lower().startswith("top-") or _overlaps(m.start(), m.end(), taken):
            continue
        norm = re.sub(r"[^a-z0-9.]", "", m.group(0).lower())
        found.append((m.start(), m.end(), _Condition("model", m.group(0), norm)))
    masked = [(s, e) for s, e, _ in found]
    for m in _SETTING.finditer(sentence):
        body = next(g for g in (m.group("body"), m.group("noun"), m.group("when"), m.group("scene")) if g)
        words = sorted(set(content_terms(body)))
        if words:
            found.append((m.start(), m.end(), _Condition("setting", m.group(0).strip(), " ".join(words))))
    found.sort(key=lambda f: f[0])
    return _unique([c for _, _, c in found]), masked


def _find_measures(sentence: str, metrics: list[tuple[int, int, str]], condition_spans: list[tuple[int, int]],
                   cues: list[tuple[int, int, str, str]]) -> list[Measure]:
    masked = list(sentence)
    for m in _REFERENCE.finditer(sentence):
        masked[m.start():m.end()] = " " * (m.end() - m.start())
    for start, end in condition_spans:
        masked[start:end] = " " * (end - start)
    measures: list[Measure] = []
    previous: tuple[int, tuple[str, bool, int, int]] | None = None   # (end of the last value, its binding)
    masked_text = "".join(masked)
    metric_spans = [(s, e) for s, e, _ in metrics]
    for number in _NUMBER.finditer(masked_text):
        start, end = number.start(), number.end()
        if _overlaps(start, end, metric_spans):
            continue
        bound = _bind(sentence, masked_text, metrics, start, end)
        if bound is None and previous and _LINK_CHAIN.fullmatch(sentence[previous[0]:start]):
            bound = previous[1]      # "from 60.1% to 64.3%": the second value belongs to the same metric
        if bound is None:
            previous = None
            continue
        metric, delta, metric_start, metric_end = bound
        value = float(number.group("num").replace(",", ""))
        unit = _UNITS[number.group("unit")] if number.group("unit") else ""
        delta = delta or bool(number.group("sign")) or unit == "pp"
        if delta and (number.group("sign") in ("-", "−") or _last_cue_before(sentence, cues, start) == "down"):
            value = -value
        text = sentence[min(start, metric_start):max(end, metric_end)].strip()
        measures.append(Measure(f"{metric} change" if delta else metric, value, unit, text))
        previous = (end, (metric, delta, metric_start, metric_end))
    return measures


def _bind(sentence: str, masked: str, metrics: list[tuple[int, int, str]], start: int,
          end: int) -> tuple[str, bool, int, int] | None:
    """The metric a number belongs to, if it is written next to one: (name, is a change, its span).
    The gaps are read with conditions blanked out: "accuracy on CIFAR-10 is 78.1%"."""
    before = [(start - e, name, s, e) for s, e, name in metrics if e <= start and start - e <= _MAX_LINK
              and _LINK_BEFORE.fullmatch(masked[e:start])]
    after = [(s - end, name, s, e) for s, e, name in metrics if s >= end and s - end <= 5
             and _LINK_AFTER.fullmatch(masked[end:s])]
    candidates = sorted(before + after)
    if not candidates:
        return None
    _, name, metric_start, metric_end = candidates[0]
    # "accuracy improved by 3 points" and "准确率提高了3%" report a change, not a level.
    delta = metric_end <= start and bool(_DELTA_GAP.search(sentence[metric_end:start]))
    return name, delta, metric_start, metric_end


def _last_cue_before(sentence: str, cues: list[tuple[int, int, str, str]], position: int) -> str | None:
    before = [c for c in cues if c[1] <= position and not _CLAUSE_BREAK.search(sentence[c[1]:position])]
    return before[-1][2] if before else None


def _overlaps(start: int, end: int, spans: Sequence[tuple]) -> bool:
    return any(start < s[1] and s[0] < end for s in spans)


def _unique(conditions: list[_Condition]) -> list[_Condition]:
    return list(dict.fromkeys(conditions))


# --- comparing ---------------------------------------------------------------------------------
def _topic_similarity(x: _Parsed, y: _Parsed, calibrate: Callable[[float], float] | None) -> float:
    u, v = x.statement.vector, y.statement.vector
    if u is not None and v is not None and len(u) == len(v):
        cosine = sum(p * q for p, q in zip(u, v))
        return float(calibrate(cosine)) if calibrate else cosine
    return _overlap(x.terms, y.terms)


def _overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """Share of the smaller set's words found in the other: a short finding against a long passage
    scores by how much of the finding the passage covers (Jaccard would punish the length gap)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def _strongest(x: _Parsed, y: _Parsed, sentence_overlap: float) -> _Match | None:
    """The strongest kind of disagreement between aligned claim sentences, best aligned first."""
    best: tuple[tuple[int, float], _Match] | None = None
    for sx in x.sentences:
        for sy in y.sentences:
            aligned = _aligned(sx, sy, sentence_overlap)
            found = _disagreement(sx, sy, x.statement, y.statement) if aligned is not None else None
            if found:
                rank = (KINDS.index(found[0]), -aligned)
                if best is None or rank < best[0]:
                    best = (rank, _Match(found[0], sx, sy, found[1]))
    return best[1] if best else None


def _aligned(x: _Sentence, y: _Sentence, sentence_overlap: float) -> float | None:
    """How well two claim sentences are about the same thing, or None when they are not."""
    shared = x.terms & y.terms
    if not shared or len(shared) < min(2, len(x.terms), len(y.terms)):
        return None
    score = _overlap(x.terms, y.terms)
    if score < sentence_overlap:
        return None
    if x.subject and y.subject and not x.subject & y.subject:
        return None      # "method A reaches 80%" vs "method B reaches 85%"
    if x.metrics and y.metrics and not x.metrics & y.metrics:
        return None      # "improves accuracy" vs "improves latency"
    if not _settings_compatible(x.setting, y.setting):
        return None      # "5-shot" vs "1-shot": different experiments, not a contradiction
    return score


def _disagreement(x: _Sentence, y: _Sentence, a: Statement, b: Statement) -> tuple[str, str] | None:
    cx, cy = x.claim, y.claim
    if cx.negated != cy.negated:
        (positive, stating), (negative, negating) = ((x, a), (y, b)) if cy.negated else ((y, b), (x, a))
        # "does not improve" against "improves"; "no significant effect" against either direction
        if positive.quality and (negative.quality == positive.quality and _same_target(x, y) or negative.effect):
            return "negation", (f"{_label(negating)} negates what {_label(stating)} states: "
                                f"{_quote(cx.sentence)} vs {_quote(cy.sentence)}")
    if not cx.negated and not cy.negated and x.quality and y.quality and x.quality != y.quality and _same_target(x, y):
        about = ", ".join(sorted(x.metrics & y.metrics))
        return "direction", (f"opposite directions{' on ' + about if about else ''}: {_label(a)} "
                             f"{_quote(cx.sentence)} vs {_label(b)} {_quote(cy.sentence)}")
    for metric in sorted({m.metric for m in cx.measures} & {m.metric for m in cy.measures}):
        ours = [m for m in cx.measures if m.metric == metric]
        theirs = [m for m in cy.measures if m.metric == metric]
        if _values_agree(ours, theirs) is False:
            return "numbers", (f"{metric}: {_values(ours)} ({_label(a)}) vs {_values(theirs)} ({_label(b)})")
    return None


def _same_target(x: _Sentence, y: _Sentence) -> bool:
    if x.metrics and y.metrics:
        return bool(x.metrics & y.metrics)
    return bool(x.objects & y.objects)


def _settings_compatible(xs: list[_Condition], ys: list[_Condition]) -> bool:
    """Compatible unless both sides state the same kind of condition with no value in common."""
    for category in {c.category for c in xs} & {c.category for c in ys}:
        ours = [c for c in xs if c.category == category]
        theirs = [c for c in ys if c.category == category]
        if not any(_same_condition(c, d) for c in ours for d in theirs):
            return False
    return True


def _same_condition(c: _Condition, d: _Condition) -> bool:
    if c.category != d.category:
        return False
    if c.category == "setting":
        return _overlap(set(c.norm.split()), set(d.norm.split())) > SETTING_OVERLAP
    return c.norm == d.norm


def _values_agree(ours: list[Measure], theirs: list[Measure]) -> bool | None:
    """True if some pair of values is the same number, False if comparable values all differ, None
    if no pair has compatible units."""
    comparable = False
    for m in ours:
        for n in theirs:
            pair = _comparable(m, n)
            if pair is None:
                continue
            comparable = True
            p, q = pair
            if abs(p - q) <= RELATIVE_TOLERANCE * max(abs(p), abs(q)) + 1e-9:
                return True
    return False if comparable else None


def _comparable(m: Measure, n: Measure) -> tuple[float, float] | None:
    (dm, vm), (dn, vn) = _base_value(m), _base_value(n)
    if dm == dn:
        return vm, vn
    # "F1 of 81.2" and "F1 of 0.812" / "81.2%": a plain number over 1 read as a percentage.
    if {dm, dn} == {"ratio", "plain"}:
        return (vm / 100 if dm == "plain" else vm), (vn / 100 if dn == "plain" else vn)
    return None


def _base_value(m: Measure) -> tuple[str, float]:
    if m.unit in _UNIT_BASE:
        dimension, factor = _UNIT_BASE[m.unit]
        return dimension, m.value * factor
    return ("ratio", m.value) if abs(m.value) <= 1 else ("plain", m.value)


def _shared_metrics(x: _Parsed, y: _Parsed) -> list[dict[str, Any]]:
    ours = [m for s in x.sentences for m in s.claim.measures]
    theirs = [m for s in y.sentences for m in s.claim.measures]
    shared = []
    for metric in sorted({m.metric for m in ours} & {m.metric for m in theirs}):
        a_values = [m for m in ours if m.metric == metric]
        b_values = [m for m in theirs if m.metric == metric]
        shared.append({"metric": metric, "a": [_format(m) for m in a_values], "b": [_format(m) for m in b_values],
                       "agree": _values_agree(a_values, b_values)})
    return shared


# --- presenting --------------------------------------------------------------------------------
def _side(p: _Parsed) -> dict[str, Any]:
    claims = [s.claim for s in p.sentences]
    return {"key": p.statement.key, "source": p.statement.source, "citation": p.statement.citation,
            "claims": [asdict(c) for c in claims], "measures": [asdict(m) for c in claims for m in c.measures],
            "conditions": [c.text for c in p.conditions]}


def _statement_dict(statement: Statement) -> dict[str, Any]:
    return {"key": statement.key, "source": statement.source, "citation": statement.citation,
            "excerpt": truncate(statement.text, 300)}


def _label(statement: Statement) -> str:
    return f"{statement.source} ({statement.citation})" if statement.citation else statement.source


def _quote(sentence: str) -> str:
    return f"“{truncate(sentence, 120)}”"


def _format(m: Measure) -> str:
    number = f"{m.value:+g}" if m.metric.endswith(" change") else f"{m.value:g}"
    return f"{number}{m.unit}" if m.unit in ("%", "x", "") else f"{number} {m.unit}"


def _values(measures: list[Measure]) -> str:
    return " / ".join(_format(m) for m in measures)
