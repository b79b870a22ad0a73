"""Likely conflicts between research statements, and the offline side-by-side used to reconcile them
(seed 002 §3.3 and §4 step 4).

A statement is a retrieved passage or a recorded finding. Two statements from different sources are
compared only when they are on the same topic (cosine of their vectors, else the overlap of their
content words). They conflict when, about the same thing,
- one negates what the other asserts: the word a negation governs ("not competitive", "did not
  tune") stands un-negated in the other, with the context shared;
- they order the same two things oppositely ("A outperforms B" / "B outperforms A", "smaller than"
  / "larger than"), or move the same quantity in opposite directions ("increases" / "decreases");
- they report different numbers for the same measure: a number is compared only with numbers of
  the same measure (the metric, or what it counts: "140k question/answer pairs"), level or change,
  on the same dataset and about the same named subject, as the number was written (rounding, "over",
  "about", k/M, %, ratios and units taken into account).
Everything is rule-based, English and Chinese, with no model calls: a detected conflict is a prompt
to look, and the side-by-side says so.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from itertools import combinations
from typing import Any

from forest.text import content_terms, is_cjk_char, s_stem, split_sentences, truncate

TOPIC_THRESHOLD = 0.3
SENTENCE_OVERLAP = 0.5      # share of the smaller sentence's words the other must hold to be "about the same"
SETTING_OVERLAP = 0.5       # "when/if/under" clauses sharing more than this share of words are one setting
APPROXIMATE = 0.05          # "about 1.5M": the relative slack of a number written as approximate
KINDS = ("negation", "direction", "numbers")   # strongest first: the one kept for a pair
OFFLINE_REVIEW = "offline rules (not reviewed by an LLM)"

# Latin word edges that also hold next to CJK characters (which `\b` counts as word characters).
_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"
_CLAUSE_BREAK = re.compile(r"[,;:，；：]|(?<![A-Za-z])(?:but|while|whereas|although|though)(?![A-Za-z])|但|而",
                           re.IGNORECASE)

# --- cue words ---------------------------------------------------------------------------------
# Words that move something up or down. "quality" cues judge (better/worse); "quantity" cues move a
# number (higher/lower): "lower perplexity" and "better perplexity" agree.
_DIRECTION_CUES = [
    (re.compile(_L + r"(?:improv\w*|enhanc\w*|benefit\w*|help(?:s|ed)?)(?![\w-])", re.IGNORECASE), "up", "quality"),
    (re.compile(_L + r"(?:increas\w*|rais(?:e|es|ed|ing)|boost\w*|gain(?:s|ed)?|ris(?:e|es|ing)|rose|"
                r"grow(?:s|n|ing)?|grew)(?![\w-])", re.IGNORECASE), "up", "quantity"),
    (re.compile(_L + r"(?:degrad\w*|hurt(?:s|ing)?|harm(?:s|ed|ing)?|impair\w*)(?![\w-])", re.IGNORECASE),
     "down", "quality"),
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
    r"lacks?\s+(?:of|any))" + _R + r"|n['’]t" + _R
    # 不 and 未 only where they negate: not in 不同 (different), 不断 (continually), 未来 (future) ...
    + r"|并未|并没有|没有|未能|无法|无显著|无明显|无助于|并非|(?<!差)不(?![同断仅但少过如久])|未(?!来)|没", re.IGNORECASE)
_INSIGNIFICANT = re.compile(r"not\s+(?:statistically\s+)?significant|insignificant|negligible|不显著|不明显|可忽略",
                            re.IGNORECASE)
# Words between a negation and the word it governs: "did not significantly improve", "is not as good".
_NEGATION_FILLER = frozenset(["be", "is", "are", "was", "were", "been", "being", "have", "has", "had", "do", "does",
                              "did", "get", "got", "to", "a", "an", "the", "any", "as", "so", "too", "very", "much",
                              "really", "necessarily", "always", "yet", "quite", "well", "more", "significantly",
                              "substantially", "statistically", "notably", "clearly", "strongly", "greatly",
                              "considerably", "seem", "seems", "appear", "appears", "even", "still"])
_AUXILIARY = re.compile(_L + r"(?:was|were|is|are|has|have|had|did|do|does|can|could|will|would)" + _R, re.IGNORECASE)
# A negated "effect" word denies any change: "no significant effect" against "improves".
_EFFECT_WORDS = frozenset(["effect", "impact", "difference", "benefit", "help", "change", "significant",
                           "improvement", "gain"])
_CJK_FILLER = re.compile(r"^(?:[\s了的得地着]|显著|明显|大幅|略微|稍微|进一步|大大)+")
_ADVERBS = frozenset(["significantly", "substantially", "slightly", "consistently", "greatly", "considerably",
                      "markedly", "dramatically", "even", "further", "much", "clearly", "modestly", "overall",
                      "still", "also", "marginally", "strongly", "already", "both"])
# Words every result sentence uses: sharing them says nothing about being on the same claim.
_GENERIC = frozenset(["achieves", "achieved", "achieve", "obtains", "obtained", "obtain", "reaches", "reached",
                      "reach", "reports", "reported", "report", "shows", "showed", "show", "shown", "yields",
                      "yielded", "results", "result", "performance", "performances", "score", "scores", "find",
                      "found", "observe", "observed", "experiments", "experiment", "using", "use", "used", "paper",
                      "work", "study", "value", "compared", "respectively", "approximately", "table", "tables",
                      "figure", "fig", "section", "appendix", "setting", "settings", "although", "though",
                      "whereas", "however", "model", "models", "system", "systems", "method", "methods",
                      "approach", "approaches", "classifier", "classifiers", "network", "networks", "proposed",
                      "perform", "performs", "performed", "works", "worked", "version", "dataset", "datasets",
                      "data", "set", "sets", "total", "number"] + list(_ADVERBS))

# --- comparisons ---------------------------------------------------------------------------------
# "A outperforms B", "A is worse than B", "A is smaller than B": (scale, +1 when A is the greater).
_COMPARATIVE = re.compile(
    _L + r"(?:(?P<verb>outperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?|beat(?:s|ing)?|underperform(?:s|ed|ing)?|"
    r"exceed(?:s|ed|ing)?)|(?P<adj>better|worse|stronger|weaker|higher|lower|larger|smaller|bigger|greater|faster|"
    r"slower|more|less|fewer)(?:\s+[\w-]+){0,2}?\s+than|(?P<prep>improv(?:es|ed|ing|ements?)\s+over|superior\s+to|"
    r"inferior\s+to|advantage\s+over))" + _R, re.IGNORECASE)
_COMPARATIVE_SENSE = {"outperform": ("quality", 1), "surpass": ("quality", 1), "beat": ("quality", 1),
                      "underperform": ("quality", -1), "exceed": ("quantity", 1), "better": ("quality", 1),
                      "worse": ("quality", -1), "stronger": ("quality", 1), "weaker": ("quality", -1),
                      "higher": ("quantity", 1), "lower": ("quantity", -1), "larger": ("quantity", 1),
                      "smaller": ("quantity", -1), "bigger": ("quantity", 1), "greater": ("quantity", 1),
                      "faster": ("speed", 1), "slower": ("speed", -1), "more": ("quantity", 1),
                      "less": ("quantity", -1), "fewer": ("quantity", -1), "improv": ("quality", 1),
                      "superior": ("quality", 1), "inferior": ("quality", -1), "advantage": ("quality", 1)}
_COMPARED_WITH = re.compile(r"compared\s+(?:with|to)\s+(?P<other>[^,;:]{2,80})", re.IGNORECASE)
_OBJECT_END = re.compile(r"[,;:()]|\s(?:by|on|in|for|across|at|when|while|which|that|because|since|with|without|"
                         r"under|during|after|and\s+(?:is|are|was|were|achieves?|obtains?|yields?))\s", re.IGNORECASE)

# --- metrics -----------------------------------------------------------------------------------
_METRIC_NAMES = (
    r"(?:recall|hits|precision|pass|ndcg|map)@\d+|f1[- ]?scores?|f-?1|f-scores?|f-measures?|exact[- ]match|(?-i:EM)|"
    r"(?:word |character )?error[- ]rates?|win[- ]rates?|success[- ]rates?|inference[- ]time|training[- ]time|"
    r"run[- ]?time|accuracy|accuracies|acc|precision|recall|bleu(?:-\d)?|rouge(?:-(?:l|lsum|\d))?|meteor|perplexity|"
    r"ppl|roc[- ]auc|auroc|auc|(?-i:mAP|MAP)|miou|iou|wer|cer|errors?|latency|throughput|speed-?ups?|loss|mrr|ndcg|"
    r"psnr|ssim|fid|rmse|mae|mse|correlation|memory(?: usage| footprint)?|(?-i:RTF)|real[- ]time factor")
_QUALIFIER = r"(?:top-?\d+|macro|micro|weighted|balanced|average|mean|overall|test|validation|dev|held-out)"
_QUALIFIER_RE = re.compile(_QUALIFIER, re.IGNORECASE)
_METRIC_EN = re.compile(_L + rf"(?P<qual>(?:{_QUALIFIER}[- ])*)(?P<name>{_METRIC_NAMES})" + _R, re.IGNORECASE)
_METRIC_GENERIC = re.compile(_L + r"(?P<word>[A-Za-z][A-Za-z0-9-]*)\s+(?P<kind>score|rate)s?" + _R, re.IGNORECASE)
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
# Words before a metric that make it another metric ("joint goal accuracy") unless they only
# say which of its values is reported ("maximum accuracy").
_METRIC_MODIFIER = re.compile(r"(?P<words>(?:[A-Za-z][\w-]*\s+){1,2})$")
_NOT_MODIFIERS = frozenset(["maximum", "max", "best", "highest", "lowest", "minimum", "average", "mean", "overall",
                            "absolute", "final", "reported", "our", "its", "their", "the", "an", "a", "of", "and",
                            "with", "in", "on", "by", "is", "was", "has", "had", "achieves", "achieved", "obtains",
                            "reaches", "gives", "higher", "lower", "better", "worse", "same", "similar"])
_LOWER_IS_BETTER = frozenset(["error", "error rate", "word error rate", "character error rate", "wer", "cer",
                              "latency", "loss", "perplexity", "fid", "rmse", "mae", "mse", "memory", "memory usage",
                              "memory footprint", "runtime", "inference time", "training time", "rtf"])

# --- numbers -----------------------------------------------------------------------------------
_UNITS = {"%": "%", "％": "%", "percent": "%", "percentage point": "pp", "percentage points": "pp", "pp": "pp",
          "point": "pp", "points": "pp", "个百分点": "pp", "百分点": "pp", "ms": "ms", "millisecond": "ms",
          "milliseconds": "ms", "毫秒": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
          "秒": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "分钟": "min", "h": "h",
          "hour": "h", "hours": "h", "小时": "h", "x": "x", "×": "x", "times": "x", "倍": "x", "GB": "GB", "MB": "MB"}
_UNIT_BASE = {"%": ("ratio", 0.01), "pp": ("pp", 1.0), "ms": ("time", 0.001), "s": ("time", 1.0),
              "min": ("time", 60.0), "h": ("time", 3600.0), "x": ("factor", 1.0), "GB": ("bytes", 1e9),
              "MB": ("bytes", 1e6)}
_MAGNITUDES = {"k": 1e3, "K": 1e3, "thousand": 1e3, "M": 1e6, "million": 1e6, "B": 1e9, "bn": 1e9, "billion": 1e9}
_NUMBER_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
                 "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
                 "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
                 "fifty": 50, "hundred": 100}
_NUMBER = re.compile(
    r"(?P<sign>(?<![A-Za-z0-9_.])[+\-−])?(?<![A-Za-z0-9_.])(?<![A-Za-z]-)"
    r"(?:(?P<num>\d{1,3}(?:,\d{3})+(?![\d,]\d)|\d+(?:\.\d+)?|\.\d+)"
    r"(?:(?P<mag>[kKMB]|bn)(?![A-Za-z])|\s(?P<magword>thousand|million|billion)(?![A-Za-z]))?"
    r"|(?P<word>" + "|".join(_NUMBER_WORDS) + r")(?=\s+(?:times|[a-z])))"
    r"\s?(?P<unit>" + "|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)) + r")?"
    r"(?![A-Za-z0-9])", re.IGNORECASE)
# Numbers that are not results: references to parts of the paper, citations, years and dates.
_REFERENCE = re.compile(
    r"(?:" + _L + r"(?:tables?|tab\.|figures?|figs?\.|sections?|sec\.|eqs?\.|equations?|appendix|chapter|"
    r"algorithm|lines?|pp?\.|pages?|conll|semeval|task|wmt|v)|§|图|表|第|公式|章节)\s*\(?\d+(?:\.\d+)*[a-z]?\)?"
    r"|\[\s*\d+(?:\s*[,–-]\s*\d+)*\s*\]|(?:BIB|TAB|FIG)REF\s?\d+|[pκα]\s*[<=>]\s*\d*\.?\d+(?:\s*[−-]\s*\d+)?"
    r"|\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r"|(?<![\d.,])(?:19[5-9]\d|20[0-3]\d)(?![\d.]|\s?%|,\d)", re.IGNORECASE)
# Between a metric and its value: "accuracy of 85.2%", "accuracy improved by 3 points", "准确率为85.2%".
_LINK_BEFORE = re.compile(
    r"(?:\s|[:=：~≈(（]|of|is|was|were|are|be|been|reach(?:es|ed)?|achiev(?:es|ed)|attain(?:s|ed)|obtain(?:s|ed)|"
    r"gets?|got|scor(?:es|ed)|at|around|about|approximately|roughly|nearly|almost|close|near|only|just|an?|the|"
    r"value|(?:improv|increas|decreas|declin|reduc|boost|rais)\w*|drop(?:s|ped)?|fell|falls|rose|rises|went|goes|up|"
    r"down|by|to|from|on|in|for|reported|remains|remained|stays|over|more|than|值|为|达到|高达|仅为|达|是|约|仅|提高|"
    r"提升|降低|下降|增加|减少|到|至|了|从|有)*", re.IGNORECASE)
_LINK_AFTER = re.compile(r"(?:\s|的|in|of)*(?:\s*(?:absolute|relative|token-level|macro|micro)\s*)?", re.IGNORECASE)
_LINK_CHAIN = re.compile(r"\s*(?:,|,?\s*and|to|vs\.?|versus|/|到|至|和|与|或)\s*", re.IGNORECASE)
_DELTA_GAP = re.compile(r"(?<![A-Za-z])by(?![A-Za-z])|(?:提高|提升|降低|下降|增加|减少)了?\s*$", re.IGNORECASE)
_CHANGE_WORDS = re.compile(_L + r"(?:improvements?|gains?|boosts?|drops?|increases?|decreases?|reductions?|declines?|"
                           r"advantages?|margins?)" + _R, re.IGNORECASE)
_CHANGE_BEFORE = re.compile(_L + r"(?:by|(?:improvements?|gains?|boosts?|drops?|increases?|decreases?|reductions?|"
                            r"declines?)(?:\s+of)?)\s*(?:about|around|approximately|only|just|over|almost|nearly)?\s*$",
                            re.IGNORECASE)
_SHARE_OF = re.compile(r"\s*of\s+(?:the\s+|all\s+|our\s+)?(?P<noun>[A-Za-z][\w-]*)")
_FROM = re.compile(r"(?<![A-Za-z])from\s*$", re.IGNORECASE)
_LOWER_BOUND = re.compile(r"(?:over|more\s+than|above|at\s+least|greater\s+than|exceed(?:s|ing)?|>|≥|超过|逾)\s*$",
                          re.IGNORECASE)
_UPPER_BOUND = re.compile(r"(?:under|less\s+than|fewer\s+than|below|at\s+most|up\s+to|<|≤|不到|不足)\s*$", re.IGNORECASE)
_APPROXIMATE = re.compile(r"(?:about|around|approximately|roughly|nearly|almost|close\s+to|near|some|~|≈|约|大约|近)\s*$",
                          re.IGNORECASE)
_SPEED_WORDS = frozenset(["faster", "speedup", "speed", "quicker", "speed-up"])
_MAX_LINK = 40
_ROUNDING = 0.49

# --- conditions --------------------------------------------------------------------------------
_SHOT_WORDS = {"zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "ten": "10",
               "few": "few", "a few": "few", "a handful of": "few", "many": "many", "零": "0", "小": "few", "少": "few"}
_SHOT = re.compile(
    _L + r"(?P<n>\d+|zero|one|two|three|four|five|ten|few|many)[- ]shots?" + _R
    + r"|" + _L + r"(?:with|using|from|on)\s+(?:only\s+|just\s+)?(?P<m>\d+(?:,\d{3})*|a few|few|a handful of)\s+"
    r"(?:labell?ed\s+|annotated\s+|training\s+|in-context\s+)?(?:examples|samples|instances|images|demonstrations|"
    r"labels|shots)" + _R
    + r"|(?P<c>[小少零])样本|每类\s?(?P<k>\d+)\s?个?(?:标注)?样本|(?P<j>\d+)\s?个(?:标注)?样本", re.IGNORECASE)
_WAY = re.compile(_L + r"(?P<n>\d+)[- ]way" + _R, re.IGNORECASE)
_MODEL = re.compile(
    _L + r"(?:[A-Z][A-Za-z]*(?:-[A-Za-z]+)*(?:-(?:\d+(?:\.\d+)?[A-Za-z]*|base|large|small|tiny|medium|xl|xxl))+"
    r"|\d+(?:\.\d+)?[BM](?:\s+param(?:eter)?s|\s+models?)|\d+(?:\.\d+)?\s?(?:billion|million)\s+param(?:eter)?s)" + _R)
_DATASET = re.compile(
    r"(?<![A-Za-z])(?:[Oo]n|[Ii]n|[Aa]cross)\s+(?:the\s+)?"
    r"(?P<name>(?:[A-Z]|[a-z]+[A-Z])[A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*(?:\s+[A-Z0-9][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)*)"
    r"|(?P<named>[A-Z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*)\s+(?:dataset|benchmark|corpus|data|test\s+set)" + _R
    + r"|在\s?(?P<cn>[A-Za-z][A-Za-z0-9\-. ]*?|[\u4e00-\u9fff]{1,8}?)\s?(?:数据集|基准|语料库?)?上(?!升)")
_NOT_DATASETS = frozenset(["the", "a", "an", "we", "its", "table", "tab", "figure", "fig", "section", "sec", "appendix", "eq", "equation", "chapter",
                           "algorithm", "experiment", "experiments", "addition", "contrast", "particular", "general",
                           "practice", "summary", "fact", "short", "sum", "this", "these", "that", "those", "our",
                           "their", "both", "all", "each", "such", "turn", "theory", "principle", "conclusion",
                           "order", "total", "most", "many", "some", "average", "terms", "case", "cases"])
_SETTING = re.compile(
    r"(?<![A-Za-z])(?:when|if|under|unless|given|assuming)\s+(?P<body>[^,;.:()，；。]{3,80})"
    r"|(?<![A-Za-z])(?:with|without|using)\s+(?P<noun>(?:[\w-]+\s+){0,4}?(?:data|setting|regime|supervision|"
    r"pre-?training|augmentation|backbone|fine-?tuning|distillation))(?![A-Za-z])"
    r"|当(?P<when>[^，,；;。]{1,20}?)时"
    r"|(?:在)?(?P<scene>[\u4e00-\u9fffA-Za-z0-9\-]{1,6})(?:场景|设置|条件|情况|环境|设定)下", re.IGNORECASE)
# Names of systems, datasets and the like: a capital after the first letter ("BiDAF", "LSTM-CRF"), a
# capital and a digit ("GPT-4"), or a capitalized word inside a sentence ("Attention Sum Reader").
_NAME = re.compile(r"(?<![\w+\-])(?P<name>[A-Za-z0-9][\w+\-.]*[\w+])(?![\w+\-])")
_SELF_REFERENCE = re.compile(r"(?<![A-Za-z])(?:our|the\s+proposed)\s+(?:[\w-]+\s+)?(?:model|method|approach|system|"
                             r"framework|architecture)s?(?![A-Za-z])", re.IGNORECASE)
_NOT_NAMES = frozenset(["i", "we", "our", "table", "figure", "section", "appendix", "eq", "however", "finally",
                        "moreover", "furthermore", "thus", "therefore", "also", "then", "first", "second", "third"])


@dataclass(frozen=True)
class Statement:
    key: str                                  # "node:123", "finding:7"
    text: str
    source: str                               # document label; statements of one source are never compared
    citation: str = ""
    vector: tuple[float, ...] | None = None   # unit-normalized embedding when known


@dataclass(frozen=True)
class Measure:
    metric: str       # canonical measure ("accuracy", "question/answer pair"); "<name> change" for a gain or a drop
    value: float      # signed for a change
    unit: str         # "%", "pp", "ms", "s", "x", ... or ""
    text: str         # as written: "85.2% accuracy", "准确率为85.2%", "140k question/answer pairs"


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


@dataclass(frozen=True)
class _Quantity:
    """A number as written, with what it measures and what it is about."""
    measure: Measure
    key: str                   # metric name or the counted noun's head: what must match to compare
    words: frozenset[str]      # the metric's modifiers or the counted noun's words
    change: bool               # a gain or a drop rather than a level
    low: float                 # the values the writing allows, in base units
    high: float
    dimension: str             # "ratio", "plain", "time", "pp", "factor", "bytes"
    dataset: str | None        # the dataset this number is on, when the sentence says
    names: frozenset[str]      # the named things of its clause
    prior: bool                # "from 70%": the value before a change, not a result
    written: str               # the number as written, with its "over" or "about": "over 140k"


@dataclass(frozen=True)
class _Comparison:
    greater: frozenset[str]    # words of the side ranked higher on the scale
    lesser: frozenset[str]
    scale: str                 # "quality", "quantity" or "speed"


@dataclass
class _Sentence:
    """A claim with what comparing needs, computed once per statement."""
    claim: Claim
    terms: frozenset[str]       # stemmed content words without numbers, cue words and generic result words
    names: frozenset[str]       # named things (systems, datasets), lower-cased
    metrics: frozenset[str]
    objects: frozenset[str]     # what moves up or down: the metrics and the word each cue acts on
    quality: str | None         # the direction as better/worse (flipped for lower-is-better metrics)
    denied: list[str]           # the words negations govern ("competitive", "tune", "提高")
    asserted: str               # the sentence with its negated words blanked: where a word stands un-negated
    comparisons: list[_Comparison]
    quantities: list[_Quantity]
    setting: list[_Condition]   # the sentence's conditions plus the statement's unambiguous ones
    is_claim: bool              # negates, compares, moves something or reports a number


@dataclass
class _Parsed:
    statement: Statement
    terms: frozenset[str]
    sentences: list[_Sentence]
    conditions: list[_Condition]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for s in self.sentences for n in s.names)


@dataclass
class _Match:
    """The disagreement kept for a pair of statements."""
    kind: str
    x: _Sentence
    y: _Sentence
    detail: str


def extract_claims(text: str) -> list[Claim]:
    """One Claim per sentence that negates, compares, says something goes up or down, or reports a number."""
    return [s.claim for s in _parse_text(text)[0] if s.is_claim]


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
    conditions only one side states, the measures both report, the conflicting sentences when the
    rules find a disagreement, and a verdict written as a sentence naming both sources."""
    x, y = _parse(a), _parse(b)
    only_a = [c.text for c in x.conditions if not _states(y, c)]
    only_b = [c.text for c in y.conditions if not _states(x, c)]
    found = _strongest(x, y, SENTENCE_OVERLAP)
    shared = _shared_metrics(x, y)
    return {"a": _side(x), "b": _side(y), "conditions_only_in_a": only_a, "conditions_only_in_b": only_b,
            "boundary_conditions": [f"{source_label(a)}: {c}" for c in only_a] + [f"{source_label(b)}: {c}" for c in only_b],
            "shared_metrics": shared,
            "conflict": {"kind": found.kind, "a_sentence": found.x.claim.sentence,
                         "b_sentence": found.y.claim.sentence, "detail": found.detail} if found else None,
            "verdict": _verdict(a, b, found, only_a, only_b, shared), "reviewed_by": OFFLINE_REVIEW}


def _states(p: _Parsed, condition: _Condition) -> bool:
    """Whether the statement states this condition too, or names the dataset anywhere."""
    if any(_same_condition(condition, d) for d in p.conditions):
        return True
    return condition.category == "dataset" and any(
        _same_name(condition.norm, re.sub(r"[^a-z0-9\u4e00-\u9fff]", "", n)) for n in p.names)


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
            if "dataset" in single and "dataset" not in stated:
                sentence.quantities = [_with_dataset(q, single["dataset"].norm) for q in sentence.quantities]
            sentences.append(sentence)
    terms = frozenset(t for _, _, ts in analysed for t in ts)
    return sentences, conditions, terms


def _with_dataset(quantity: _Quantity, dataset: str) -> _Quantity:
    if quantity.dataset:
        return quantity
    return replace(quantity, dataset=dataset)


def _analyse(sentence: str) -> tuple[_Sentence | None, list[_Condition], list[str]]:
    raw_terms = content_terms(sentence)
    metrics = _find_metrics(sentence)
    conditions, condition_spans, dataset_spans = _find_conditions(sentence, [(s, e) for s, e, _ in metrics])
    comparisons, comparator_spans = _find_comparisons(sentence)
    nouns = [m.span() for m in _CUE_NOUNS.finditer(sentence)]
    cues = sorted(((m.start(), m.end(), direction, kind) for pattern, direction, kind in _DIRECTION_CUES
                   for m in pattern.finditer(sentence)
                   if not _overlaps(m.start(), m.end(), nouns + comparator_spans)), key=lambda c: c[0])
    negations = [(m.start(), m.end()) for m in _NEGATION.finditer(sentence)]
    denied, asserted = _denied(sentence, negations)
    names = _find_names(sentence, [(s, e) for s, e, _ in metrics])
    quantities = _find_quantities(sentence, metrics, condition_spans, dataset_spans, cues, names)
    negated = _is_negated(sentence, cues, negations)
    directions = {direction for _, _, direction, _ in cues}
    direction = directions.pop() if len(directions) == 1 else None
    if not raw_terms:
        return None, conditions, raw_terms
    claim = Claim(sentence, negated, direction, [q.measure for q in quantities],
                  list(dict.fromkeys(c.text for c in conditions)))
    cue_words = {t for s, e, _, _ in cues for t in content_terms(sentence[s:e])}
    cue_words |= {t for s, e in negations for t in content_terms(sentence[s:e])}
    terms = frozenset(s_stem(t) for t in raw_terms if t not in cue_words and t not in _GENERIC and t not in _UNITS
                      and not _is_number(t) and not t.endswith(("n't", "n’t")))
    metric_names = frozenset(name for _, _, name in metrics)
    targets = frozenset(t for cue in cues for t in _cue_target(sentence, cue))
    lower_is_better = bool(metric_names) and all(_lower_is_better(n) for n in metric_names)
    quality = direction
    if direction and lower_is_better and {kind for _, _, _, kind in cues} == {"quantity"}:
        quality = "up" if direction == "down" else "down"
    signals = negated or bool(cues or quantities or comparator_spans)
    parsed = _Sentence(claim, terms, names, metric_names, metric_names | targets, quality, denied, asserted,
                       comparisons, quantities, conditions, signals)
    return parsed, conditions, raw_terms


def _is_number(token: str) -> bool:
    return bool(re.fullmatch(r"[\d.,]+[kmb]?", token))


def _denied(sentence: str, negations: list[tuple[int, int]]) -> tuple[list[str], str]:
    """The words the sentence's negations govern, and the sentence with them blanked out."""
    denied, blanked = [], list(sentence)
    for start, end in negations:
        cue = sentence[start:end]
        if is_cjk_char(cue[-1:]):
            rest = sentence[end:]
            filler = _CJK_FILLER.match(rest)
            offset = filler.end() if filler else 0
            word = rest[offset:offset + 2]
            if len(word) == 2 and all(is_cjk_char(c) for c in word):
                denied.append(word)
                blanked[end + offset:end + offset + 2] = "  "
            continue
        scope_start = end
        if cue.lower() in ("none", "neither") and re.match(r"\s+of\b", sentence[end:]):
            auxiliary = _AUXILIARY.search(sentence, end)     # "none of the partitions was biased"
            if auxiliary is None:
                continue
            scope_start = auxiliary.end()
        for word in re.finditer(r"[A-Za-z][\w-]*", sentence[scope_start:scope_start + 60]):
            token = word.group(0).lower()
            if token in _NEGATION_FILLER:
                continue
            if _CLAUSE_BREAK.search(sentence[scope_start:scope_start + word.start()]):
                break
            denied.append(token)
            at = scope_start + word.start()
            blanked[at:at + len(token)] = " " * len(token)
            break
    return denied, "".join(blanked)


def _is_negated(sentence: str, cues: list[tuple[int, int, str, str]], negations: list[tuple[int, int]]) -> bool:
    """Whether the claim is negated: with a cue word, only a negation shortly before it in the same
    clause counts ("improves accuracy, although we did not tune it" is not negated)."""
    if _INSIGNIFICANT.search(sentence):
        return True
    if not cues:
        return bool(negations)
    return any(0 <= start - end <= 30 and not _CLAUSE_BREAK.search(sentence[end:start])
               for start, _, _, _ in cues for _, end in negations)


def _find_names(sentence: str, metric_spans: list[tuple[int, int]]) -> frozenset[str]:
    names = set()
    for m in _NAME.finditer(sentence):
        word = m.group("name")
        inner_capital = any(c.isupper() for c in word[1:])
        capitalized_inside = word[0].isupper() and m.start() > 0 and sentence[:m.start()].rstrip()[-1:] not in ".!?"
        if (inner_capital or capitalized_inside) and word.lower() not in _NOT_NAMES and not word.isdigit() \
                and not _overlaps(m.start(), m.end(), metric_spans) and not _REFERENCE.fullmatch(word):
            names.add(word.lower())
    if _SELF_REFERENCE.search(sentence):
        names.add("ours")      # "our method" is not "ResNet"
    return frozenset(names)


def _find_comparisons(sentence: str) -> tuple[list[_Comparison], list[tuple[int, int]]]:
    found, spans = [], []
    for m in _COMPARATIVE.finditer(sentence):
        spans.append(m.span())
        word = (m.group("verb") or m.group("adj") or m.group("prep")).lower()
        stem = next((k for k in _COMPARATIVE_SENSE if word.startswith(k)), None)
        if stem is None:
            continue
        scale, sign = _COMPARATIVE_SENSE[stem]
        subject = _subject(sentence[:m.start()])
        rest = sentence[m.end():]
        end = _OBJECT_END.search(rest, 1)
        other = rest[:end.start()] if end else rest
        if not other.strip():
            compared = _COMPARED_WITH.search(sentence)
            other = compared.group("other") if compared else ""
        left, right = _side_words(subject), _side_words(other)
        if not left or not right:
            continue
        greater, lesser = (left, right) if sign > 0 else (right, left)
        found.append(_Comparison(greater, lesser, scale))
    # "when compared with CRF, CRF-VT performs worse": a bare comparative against the compared-with side
    bare = re.search(_L + r"(?:perform(?:s|ed)?|works?|worked|did|does|is|are|was|were)\s+(?:\w+\s+)?"
                     r"(?P<adj>better|worse)" + _R + r"(?!\s+than)", sentence, re.IGNORECASE)
    compared = _COMPARED_WITH.search(sentence)
    if bare and compared and not found:
        head = sentence[compared.end():bare.start()]
        left = _side_words(re.sub(r"^[^,]*,", "", head))
        right = _side_words(compared.group("other"))
        if left and right:
            sign = 1 if bare.group("adj").lower() == "better" else -1
            greater, lesser = (left, right) if sign > 0 else (right, left)
            found.append(_Comparison(greater, lesser, "quality"))
            spans.append(bare.span())
    return found, spans


def _subject(head: str) -> str:
    """The subject before a comparative: the last phrase of its clause that is not a participle or
    prepositional aside ("CRF-VT, trained on the voted corpus, performs worse")."""
    clause = re.split(r"[;:]|(?<![A-Za-z])(?:that|which|while|whereas|where|but)\s", head)[-1]
    for phrase in reversed(clause.split(",")):
        if _side_words(phrase) and not _ASIDE.match(phrase):
            return phrase
    return ""


_ASIDE = re.compile(r"\s*(?:trained|using|used|with|without|when|compared|on|in|for|given|as|based|after|"
                    r"interestingly|however|finally|overall|moreover|\w+ly\s*$)", re.IGNORECASE)


def _side_words(text: str) -> frozenset[str]:
    return frozenset(s_stem(t) for t in content_terms(text) if t not in _GENERIC and t not in _ADVERBS
                     and t not in ("which", "it", "they", "this", "those", "these", "one", "ones"))


def _cue_target(sentence: str, cue: tuple[int, int, str, str]) -> list[str]:
    """The word a cue acts on: the first after it in the clause ("improves robustness"), else the
    last before it ("accuracy drops"); two bigrams for CJK, which is one word of about three characters."""
    start, end = cue[0], cue[1]
    after = _CJK_FILLER.sub("", _clause_after(sentence, end))
    if is_cjk_char(after[:1]) and "的" in after[:6]:
        after = after[after.index("的") + 1:]      # "模型的鲁棒性": the robustness, not the model
    words = [t for t in content_terms(after[:40]) if t not in _ADVERBS and not _is_number(t)]
    if words:
        return words[:2] if is_cjk_char(after[:1]) else words[:1]
    before = _clause_before(sentence, start)
    words = [t for t in content_terms(before[-40:]) if t not in _ADVERBS and not _is_number(t)]
    return words[-2:] if before and is_cjk_char(before[-1:]) else words[-1:]


def _clause_after(sentence: str, end: int) -> str:
    rest = sentence[end:]
    brk = _CLAUSE_BREAK.search(rest)
    return rest[: brk.start()] if brk else rest


def _clause_before(sentence: str, start: int) -> str:
    head = sentence[:start]
    breaks = list(_CLAUSE_BREAK.finditer(head))
    return (head[breaks[-1].end():] if breaks else head).rstrip()


def _clause_span(sentence: str, start: int, end: int) -> tuple[int, int]:
    before = list(_CLAUSE_BREAK.finditer(sentence[:start]))
    after = _CLAUSE_BREAK.search(sentence, end)
    return (before[-1].end() if before else 0), (after.start() if after else len(sentence))


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
        if word not in _NOT_METRICS and not _overlaps(m.start(), m.end(), found) and len(word) > 1 \
                and word not in ("the", "a", "an", "our", "its", "this", "that", "high", "low"):
            found.append((m.start(), m.end(), f"{word} {m.group('kind').lower()}"))
    return sorted(found)


def _canonical_metric(name: str) -> str:
    name = re.sub(r"[\s-]+", " ", name.lower()).strip()
    if re.search(r"(rate|score|measure|speedup|speed up|error)s$", name):
        name = name[:-1]
    return _CANONICAL.get(name, name)


def _lower_is_better(metric: str) -> bool:
    return any(metric == name or metric.endswith(" " + name) for name in _LOWER_IS_BETTER)


def _find_conditions(sentence: str, metric_spans: list[tuple[int, int]]
                     ) -> tuple[list[_Condition], list[tuple[int, int]], list[tuple[int, int, str]]]:
    """The sentence's conditions, the spans whose numbers are conditions rather than results, and
    the datasets with where they are named."""
    found: list[tuple[int, int, _Condition]] = []
    datasets = []
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
        datasets.append((start, m.end(), norm))
    for m in _SHOT.finditer(sentence):
        word = (m.group("n") or m.group("m") or m.group("c") or m.group("k") or m.group("j")).lower()
        norm = _SHOT_WORDS.get(word, word.replace(",", ""))
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
    return _unique([c for _, _, c in found]), masked, datasets


def _find_quantities(sentence: str, metrics: list[tuple[int, int, str]], condition_spans: list[tuple[int, int]],
                     datasets: list[tuple[int, int, str]], cues: list[tuple[int, int, str, str]],
                     names: frozenset[str]) -> list[_Quantity]:
    masked = list(sentence)
    for m in _REFERENCE.finditer(sentence):
        masked[m.start():m.end()] = " " * (m.end() - m.start())
    for start, end in condition_spans:
        masked[start:end] = " " * (end - start)
    masked_text = "".join(masked)
    metric_spans = [(s, e) for s, e, _ in metrics]
    found: list[tuple[int, int, tuple | None, re.Match]] = []
    for number in _NUMBER.finditer(masked_text):
        if _overlaps(number.start(), number.end(), metric_spans):
            continue
        found.append((number.start(), number.end(), _bind(sentence, masked_text, metrics, number), number))
    # A run of numbers without their own measure shares a neighbour's: "from 60.1% to 64.3%",
    # "+1.08 F1 on DL-PS, +1.24 on EC-MT", "99,820, 13,393 and 27,248 examples".
    bound = [b for _, _, b, _ in found]
    for order in (range(1, len(found)), range(len(found) - 2, -1, -1)):
        for i in order:
            j = i - 1 if order.step == 1 else i + 1
            if bound[i] is None and bound[j] is not None and _chained(masked_text, found, min(i, j),
                                                                      datasets + metrics):
                bound[i] = bound[j]
    quantities = []
    for (start, end, _, number), binding in zip(found, bound):
        if binding is None:
            continue
        quantities.append(_quantity(sentence, number, binding, datasets, cues, names, metric_spans))
    return quantities


def _chained(masked: str, found: list, i: int, named: list[tuple[int, int, str]]) -> bool:
    """Whether the numbers at i and i + 1 are one list: between them only separators, datasets and
    the first one's measure ("+1.08 F1 improvements on DL-PS, +1.24 on EC-MT")."""
    gap_start, gap_end = found[i][1], found[i + 1][0]
    gap = list(masked[gap_start:gap_end])
    for start, end, _ in named:
        if start >= gap_start and end <= gap_end:
            gap[start - gap_start:end - gap_start] = " " * (end - start)
    words = re.sub(r"(?<![A-Za-z])(?:on|in|for|the|points?|respectively)(?![A-Za-z])", " ", "".join(gap),
                   flags=re.IGNORECASE)
    words = _CHANGE_WORDS.sub(" ", words)
    return bool(_LINK_CHAIN.fullmatch(words) or not words.strip(" ,"))


def _bind(sentence: str, masked: str, metrics: list[tuple[int, int, str]],
          number: re.Match) -> tuple[str, frozenset[str], bool, int, int, bool] | None:
    """What a number measures, when written next to it: a metric ("accuracy of 85.2%", "3.4 F1"), the
    noun it counts ("140k question/answer pairs"), or the noun it is the value of ("batch size of 32").
    Returns (measure, its words, is a change, span of the measure's words, is a named metric)."""
    start, end = number.start(), number.end()
    before = [(start - e, name, s, e) for s, e, name in metrics if e <= start and start - e <= _MAX_LINK
              and _LINK_BEFORE.fullmatch(masked[e:start])]
    after = [(s - end, name, s, e) for s, e, name in metrics if s >= end and s - end <= 25
             and _LINK_AFTER.fullmatch(masked[end:s])]
    change = bool(number.group("sign")) or _UNITS.get(number.group("unit") or "") == "pp" \
        or bool(_CHANGE_BEFORE.search(sentence[max(0, start - 30):start]))
    following = sentence[end:end + 40]
    change = change or bool(_CHANGE_WORDS.match(re.sub(r"^\s*(?:[\w-]+\s+)?", "", following, count=1)) or
                            _CHANGE_WORDS.match(following.lstrip()))
    candidates = sorted(before + after)
    if candidates:
        _, name, metric_start, metric_end = candidates[0]
        # "accuracy improved by 3 points", "准确率提高了3%", "+6.12 F1 improvement" report a change.
        if metric_end <= start and _DELTA_GAP.search(sentence[metric_end:start]) \
                or _CHANGE_WORDS.search(sentence[metric_end:start] if metric_end <= start else ""):
            change = True
        return name, _metric_words(sentence, metric_start), change, metric_start, metric_end, True
    unit = _UNITS.get(number.group("unit") or "")
    share = _SHARE_OF.match(masked[end:end + 40]) if unit == "%" else None
    if share:     # "10% of the questions"
        noun_word = s_stem(share.group("noun").lower())
        return f"share of {noun_word}", frozenset([noun_word]), change, end, end + share.end(), True
    noun = re.match(r"[\s-]*(?P<words>(?:[A-Za-z][\w/-]*\s*){1,3})", masked[end:end + 60])
    if noun:
        words, length = _counted(noun.group("words"))
        if words:
            head = words[-1]
            if unit == "x" and head in _SPEED_WORDS:
                head = "speedup"
            return head, frozenset(words), change, end, end + noun.start("words") + length, False
    prefix = sentence[max(0, start - 50):start]
    valued = re.search(r"(?P<words>(?:[A-Za-z][\w-]*\s+){0,1}[A-Za-z][\w-]*)\s*(?:of|=|:|is|was|were|are|to|at)?"
                       r"\s*(?:about|around|approximately|only|just|over)?\s*$", prefix)
    if valued:
        words = [w for w in re.findall(r"[A-Za-z][\w-]*", valued.group("words").lower())
                 if w not in _NOT_MODIFIERS and w not in _GENERIC and len(w) > 1 and w not in _LINK_WORDS
                 and w not in _UNITS]
        if words:
            head = s_stem(words[-1])
            if unit == "x" and head in _SPEED_WORDS:
                head = "speedup"
            if _CHANGE_WORDS.fullmatch(words[-1]):
                change = True
            return head, frozenset(s_stem(w) for w in words), change, start - len(valued.group(0)), start, False
    return None


_LINK_WORDS = frozenset(["of", "is", "was", "were", "are", "to", "at", "by", "from", "with", "and", "or", "for", "on",
                         "in", "than", "as", "only", "just", "about", "around", "over", "under", "up", "down", "than",
                         "after", "before", "into", "per", "contains", "contain", "has", "have", "had", "into",
                         "yields", "yielding", "gives", "giving", "takes", "uses", "use", "using", "which"])


def _counted(text: str) -> tuple[list[str], int]:
    """The noun phrase a number counts: "question/answer pairs and" -> [question, answer, pair] and
    the length of its text."""
    words, length = [], 0
    for match in re.finditer(r"[A-Za-z][\w-]*(?:/[A-Za-z][\w-]*)*", text):
        lower = match.group(0).lower()
        if lower in _LINK_WORDS or lower in _STOP_COUNTED or lower in _UNITS or words and lower.endswith(("ed", "ing")):
            break      # "2,300 sentences annotated by ...": the noun ends before its participle
        words.extend(s_stem(part) for part in re.split(r"[/-]", lower) if len(part) > 1)
        length = match.end()
    return words, length


_STOP_COUNTED = frozenset(["the", "a", "an", "this", "that", "these", "those", "we", "it", "they", "which", "when",
                           "while", "where", "respectively", "compared", "than", "relative", "absolute", "more",
                           "less", "higher", "lower", "better", "worse", "not", "also", "both", "each", "all"])


def _metric_words(sentence: str, metric_start: int) -> frozenset[str]:
    """Modifiers written before a metric that make it a different measure ("joint goal accuracy")."""
    m = _METRIC_MODIFIER.search(sentence[max(0, metric_start - 40):metric_start])
    if not m:
        return frozenset()
    return frozenset(s_stem(w) for w in m.group("words").lower().split()
                     if w not in _NOT_MODIFIERS and w not in _GENERIC and w not in _LINK_WORDS and not _is_number(w)
                     and len(w) > 1)


def _quantity(sentence: str, number: re.Match, binding: tuple[str, frozenset[str], bool, int, int, bool],
              datasets: list[tuple[int, int, str]], cues: list[tuple[int, int, str, str]], names: frozenset[str],
              metric_spans: list[tuple[int, int]]) -> _Quantity:
    key, words, change, metric_start, metric_end, named_metric = binding
    start, end = number.start(), number.end()
    if number.group("word"):
        value, step = float(_NUMBER_WORDS[number.group("word").lower()]), 0.0
    else:
        digits = number.group("num").replace(",", "")
        magnitude = _MAGNITUDES.get(number.group("mag") or "", _MAGNITUDES.get((number.group("magword") or "").lower(), 1))
        value = float(digits) * magnitude
        decimals = len(digits.split(".")[1]) if "." in digits else 0
        trailing = len(digits) - len(digits.rstrip("0")) if "." not in digits else 0
        # Just under half a unit of the last digit written: "48.8" covers 48.79 and "163000" (rounded)
        # 163247, while neighbours ("0.70", "0.71") stay apart.
        step = _ROUNDING * 10 ** -decimals * magnitude if decimals or magnitude > 1 else (
            _ROUNDING * 10 ** trailing if trailing >= 3 else 0.0)
    unit = _UNITS[number.group("unit")] if number.group("unit") else ""
    signed = value
    if change and (number.group("sign") in ("-", "−") or _last_cue_before(sentence, cues, start) == "down"):
        signed = -value
    prefix = sentence[max(0, start - 25):start]
    dimension, factor = _UNIT_BASE.get(unit, ("ratio" if value <= 1 and not change else "plain", 1.0))
    low, high = (value - step) * factor, (value + step) * factor
    if _APPROXIMATE.search(prefix):
        low, high = low * (1 - APPROXIMATE), high * (1 + APPROXIMATE)
    if _LOWER_BOUND.search(prefix):
        high = math.inf
    elif _UPPER_BOUND.search(prefix):
        low = -math.inf
    text = sentence[min(start, metric_start):max(end, metric_end)].strip()
    label = key if named_metric else sentence[metric_start:metric_end].strip(" -") or key
    measure = Measure(f"{label} change" if change else label, signed, unit, text)
    clause_start, clause_end = _clause_span(sentence, start, end)
    clause_names = _find_names(sentence[clause_start:clause_end],
                               [(s - clause_start, e - clause_start) for s, e in metric_spans])
    qualifier = next((m.group(0).strip() for m in (_APPROXIMATE.search(prefix), _LOWER_BOUND.search(prefix),
                                                    _UPPER_BOUND.search(prefix)) if m and m.group(0).strip()), "")
    return _Quantity(measure, key, words, change, low, high, dimension, _dataset_of(start, end, datasets, sentence),
                     (clause_names or names) - {d for _, _, d in datasets}, bool(_FROM.search(prefix)),
                     f"{qualifier} {sentence[start:end].strip()}".strip())


def _dataset_of(start: int, end: int, datasets: list[tuple[int, int, str]], sentence: str) -> str | None:
    """The dataset a number is on: named right after it in its clause ("+1.24 on EC-MT"), else before
    it in the clause, else the sentence's only one."""
    clause_start, clause_end = _clause_span(sentence, start, end)
    after = [d for s, _, d in datasets if end <= s < clause_end and s - end <= 30]
    if after:
        return after[0]
    before = [d for s, e, d in datasets if clause_start <= s and e <= start]
    if before:
        return before[-1]
    named = {d for _, _, d in datasets}
    return named.pop() if len(named) == 1 else None


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
    """The strongest kind of disagreement between the statements, best aligned sentences first."""
    best: tuple[tuple[int, float], _Match] | None = None
    for sx in x.sentences:
        for sy in y.sentences:
            if not _settings_compatible(sx.setting, sy.setting):
                continue      # "5-shot" vs "1-shot", "on ImageNet" vs "on CIFAR-10": different experiments
            found = _negation(sx, sy, x, y) or _reversed(sx, sy, x.statement, y.statement) \
                or _opposite_change(sx, sy, x.statement, y.statement, sentence_overlap)
            if found:
                rank = (KINDS.index(found.kind), -_overlap(sx.terms, sy.terms))
                if best is None or rank < best[0]:
                    best = (rank, found)
    return best[1] if best else _numbers(x, y, sentence_overlap)


def _negation(x: _Sentence, y: _Sentence, a: _Parsed, b: _Parsed) -> _Match | None:
    """One sentence denies a word the other asserts, about the same thing: two more words in common,
    or a name in common (one word more when the name is elsewhere in the other statement)."""
    for (neg, n_side), (pos, p_side) in (((x, a), (y, b)), ((y, b), (x, a))):
        for word in neg.denied:
            effect = word in _EFFECT_WORDS and pos.quality is not None and not pos.denied
            if not (effect or _asserts(pos, word)):
                continue
            shared = (neg.terms & pos.terms) - {s_stem(word)}
            if len(shared) < 2 and not _names_meet(neg.names, pos.names) and not (
                    shared and _names_meet(n_side.names, p_side.names)):
                continue
            if word.startswith(("outperform", "surpass", "beat", "exceed")) and _opposed(neg.comparisons,
                                                                                          pos.comparisons):
                continue      # "A does not outperform B" agrees with "B outperforms A"
            return _Match("negation", x, y, _says("They contradict each other.", x, y, a.statement, b.statement))
    return None


def _asserts(sentence: _Sentence, word: str) -> bool:
    """Whether the sentence holds `word` (or an inflection of it) outside any negation."""
    if is_cjk_char(word[:1]):
        return word in sentence.asserted
    root = word[:-1] if word.endswith("e") and len(word) > 4 else word
    return bool(re.search(_L + re.escape(root) + r"(?:e|es|s|d|ed|ing|ment|ments|ement|ements)?" + _R,
                          sentence.asserted, re.IGNORECASE))


def _names_meet(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(_same_name(p, q) for p in a for q in b)


def _same_name(p: str, q: str) -> bool:
    """Equal, or one typo apart in a long name ("SeachQA" for "SearchQA")."""
    if p == q:
        return True
    if min(len(p), len(q)) < 6 or abs(len(p) - len(q)) > 1:
        return False
    if len(p) > len(q):
        p, q = q, p
    if len(p) == len(q):
        return sum(c != d for c, d in zip(p, q)) == 1
    return any(q[:i] + q[i + 1:] == p for i in range(len(q)))


def _meet(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a & b) or _names_meet(a, b)


def _opposed(xs: list[_Comparison], ys: list[_Comparison]) -> bool:
    return any(c.scale == d.scale and _meet(c.greater, d.lesser) and _meet(c.lesser, d.greater)
               for c in xs for d in ys)


def _reversed(x: _Sentence, y: _Sentence, a: Statement, b: Statement) -> _Match | None:
    """The same two things ranked oppositely: "A outperforms B" against "B outperforms A"."""
    if x.denied or y.denied:
        return None
    for c in x.comparisons:
        for d in y.comparisons:
            if c.scale == d.scale and _meet(c.greater, d.lesser) and _meet(c.lesser, d.greater):
                return _Match("direction", x, y, _says("They rank the same two the other way round.", x, y, a, b))
    return None


def _opposite_change(x: _Sentence, y: _Sentence, a: Statement, b: Statement, sentence_overlap: float) -> _Match | None:
    """The same quantity moved in opposite directions: "increases error" against "reduces error"."""
    if x.claim.negated or y.claim.negated or not (x.quality and y.quality) or x.quality == y.quality:
        return None
    if x.comparisons or y.comparisons or not _same_target(x, y) or _aligned(x, y, sentence_overlap) is None:
        return None
    about = " and ".join(sorted(x.metrics & y.metrics))
    return _Match("direction", x, y, _says(f"They move {about or 'it'} in opposite directions.", x, y, a, b))


def _aligned(x: _Sentence, y: _Sentence, sentence_overlap: float) -> float | None:
    """How well two claim sentences are about the same thing, or None when they are not."""
    shared = x.terms & y.terms
    if not shared or len(shared) < min(2, len(x.terms), len(y.terms)):
        return None
    score = _overlap(x.terms, y.terms)
    if score < sentence_overlap:
        return None
    if x.metrics and y.metrics and not x.metrics & y.metrics:
        return None      # "improves accuracy" vs "improves latency"
    return score


def _same_target(x: _Sentence, y: _Sentence) -> bool:
    if x.metrics and y.metrics:
        return bool(x.metrics & y.metrics)
    return bool(x.objects & y.objects)


def _numbers(x: _Parsed, y: _Parsed, sentence_overlap: float) -> _Match | None:
    """A number of one statement that every comparable number of the other contradicts."""
    for (p, q, first) in ((x, y, True), (y, x, False)):
        for sp in p.sentences:
            for mine in sp.quantities:
                if mine.prior:
                    continue
                theirs = [(sq, other) for sq in q.sentences if _settings_compatible(sp.setting, sq.setting)
                          for other in sq.quantities if not other.prior
                          and _comparable(sp, mine, sq, other, sentence_overlap)]
                if not theirs or any(_values_agree(mine, other) for _, other in theirs):
                    continue
                sq = theirs[0][0]
                values = _join(list(dict.fromkeys(o.written for _, o in theirs)), "or")
                lead = f"They give different numbers for {mine.measure.metric}: {mine.written} against {values}."
                if not first:
                    lead = f"They give different numbers for {mine.measure.metric}: {values} against {mine.written}."
                x_side, y_side = (sp, sq) if first else (sq, sp)
                return _Match("numbers", x_side, y_side, _says(lead, x_side, y_side, x.statement, y.statement))
    return None


def _comparable(sp: _Sentence, mine: _Quantity, sq: _Sentence, other: _Quantity, sentence_overlap: float) -> bool:
    """Same measure, both levels or both changes, the same dataset and subject, and the two sentences
    about the same thing (a shared name or dataset, else most words)."""
    if mine.change != other.change or not (mine.key == other.key or mine.key in other.words
                                           or other.key in mine.words):
        return False
    if mine.words and other.words and mine.key == other.key and mine.key in _METRIC_KEYS \
            and mine.words != other.words and not (mine.words <= other.words or other.words <= mine.words):
        return False      # "joint goal accuracy" vs "joint domain accuracy"
    if mine.dataset and other.dataset and not _same_name(mine.dataset, other.dataset):
        return False
    if mine.names and other.names:
        return _names_meet(mine.names, other.names)
    if mine.dataset and other.dataset:
        return True
    return _aligned(sp, sq, sentence_overlap) is not None


_METRIC_KEYS = frozenset(_canonical_metric(n) for n in ("accuracy", "f1", "precision", "recall", "bleu", "error"))


def _values_agree(mine: _Quantity, other: _Quantity) -> bool:
    """Whether the two numbers, as written, can be the same value (magnitudes for changes)."""
    pair = _in_common_units(mine, other)
    if pair is None:
        return True       # incomparable units: no evidence of a disagreement
    (lo1, hi1), (lo2, hi2) = pair
    if mine.change:
        lo1, hi1, lo2, hi2 = _magnitude(lo1, hi1) + _magnitude(lo2, hi2)
    tolerance = 1e-9 * max(1.0, abs(lo1), abs(lo2))
    return lo1 <= hi2 + tolerance and lo2 <= hi1 + tolerance


def _magnitude(low: float, high: float) -> tuple[float, float]:
    return (min(abs(low), abs(high)), max(abs(low), abs(high))) if low * high >= 0 else (0.0, max(-low, high))


def _in_common_units(m: _Quantity, n: _Quantity) -> tuple[tuple[float, float], tuple[float, float]] | None:
    if m.dimension == n.dimension:
        return (m.low, m.high), (n.low, n.high)
    dims = {m.dimension, n.dimension}
    # "F1 of 81.2" and "F1 of 0.812" / "81.2%": a plain number over 1 read as a percentage.
    if dims == {"ratio", "plain"}:
        scale = lambda q: (q.low / 100, q.high / 100) if q.dimension == "plain" else (q.low, q.high)  # noqa: E731
        return scale(m), scale(n)
    # "a drop of 0.3%" and "0.3 points below": percentage points either way.
    if dims <= {"ratio", "pp", "plain"} and m.change and n.change:
        as_points = lambda q: (q.low * 100, q.high * 100) if q.dimension == "ratio" else (q.low, q.high)  # noqa: E731
        return as_points(m), as_points(n)
    return None


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
    if c.category == "dataset":
        return _same_name(c.norm, d.norm)
    return c.norm == d.norm


def _shared_metrics(x: _Parsed, y: _Parsed) -> list[dict[str, Any]]:
    ours = [q for s in x.sentences for q in s.quantities]
    theirs = [q for s in y.sentences for q in s.quantities]
    shared = []
    for metric in sorted({q.measure.metric for q in ours} & {q.measure.metric for q in theirs}):
        a_values = [q for q in ours if q.measure.metric == metric]
        b_values = [q for q in theirs if q.measure.metric == metric]
        shared.append({"metric": metric, "a": [_format(q.measure) for q in a_values],
                       "b": [_format(q.measure) for q in b_values],
                       "agree": any(_values_agree(p, q) for p in a_values for q in b_values)})
    return shared


# --- presenting --------------------------------------------------------------------------------
def _verdict(a: Statement, b: Statement, found: _Match | None, only_a: list[str], only_b: list[str],
             shared: list[dict[str, Any]]) -> str:
    """The offline verdict as a researcher would write it: what disagrees, quoted, and the conditions
    that might explain it; nothing is said about what is absent."""
    differing = [m["metric"] for m in shared if not m["agree"]]
    if found:
        verdict = found.detail
    elif differing:
        verdict = (f"{source_label(a)[:1].upper()}{source_label(a)[1:]} and {source_label(b)} give different values for "
                   f"{_join(differing, 'and')}, but not for the same experiment (dataset, subject or setting), "
                   "so the offline rules do not count that as a contradiction.")
    else:
        verdict = f"The offline rules find no contradiction between {source_label(a)} and {source_label(b)}."
    stated = [f"only {source_label(s)} states {_join([_lower_first(c) for c in conds], 'and')}"
              for s, conds in ((a, only_a), (b, only_b)) if conds]
    if stated:
        verdict += f" The settings differ ({'; '.join(stated)}), which may explain {'it' if found else 'any gap'}."
    return verdict


def _says(lead: str, x: _Sentence, y: _Sentence, a: Statement, b: Statement) -> str:
    """'<lead> <A> says “…”, but <B> says “…”.'"""
    first = source_label(a)
    return f"{lead} {first[:1].upper()}{first[1:]} says {_quote(x.claim.sentence)}, but {source_label(b)} says " \
           f"{_quote(y.claim.sentence)}."


def _lower_first(text: str) -> str:
    """"With 5 examples" -> "with 5 examples", but "ResNet-50" stays."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in _CONDITION_OPENERS else text


_CONDITION_OPENERS = frozenset(["with", "without", "when", "if", "under", "using", "on", "in", "across", "given",
                                "assuming", "unless"])


def _join(items: list[str], conjunction: str) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conjunction} " + items[-1]


def _side(p: _Parsed) -> dict[str, Any]:
    claims = [s.claim for s in p.sentences]
    return {"key": p.statement.key, "source": p.statement.source, "citation": p.statement.citation,
            "claims": [asdict(c) for c in claims], "measures": [asdict(m) for c in claims for m in c.measures],
            "conditions": [c.text for c in p.conditions]}


def _statement_dict(statement: Statement) -> dict[str, Any]:
    return {"key": statement.key, "source": statement.source, "citation": statement.citation,
            "excerpt": truncate(statement.text, 300)}


def source_label(statement: Statement) -> str:
    """"Ask the Right Questions (p. 7, §5.5 Results)": the source and where in it."""
    return f"{statement.source} ({statement.citation})" if statement.citation else statement.source


def _quote(sentence: str) -> str:
    return f"“{truncate(sentence.rstrip('. '), 400)}”"


def _format(m: Measure) -> str:
    number = f"{m.value:+g}" if m.metric.endswith(" change") else f"{m.value:g}"
    return f"{number}{m.unit}" if m.unit in ("%", "x", "") else f"{number} {m.unit}"
