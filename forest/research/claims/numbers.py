"""Numbers as results: what each number measures (a metric, or the noun it counts), whether it is a
level or a change, the values its writing allows (rounding, "over", "about", k/M, %, ratios and
units), and whether two such numbers can be the same value."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from forest.research.claims.words import (CLAUSE_BREAK, GENERIC, REFERENCE, WORD_END, WORD_START, clause_span,
                                          find_names, is_number, overlaps)
from forest.text import s_stem

APPROXIMATE = 0.05          # "about 1.5M": the relative slack of a number written as approximate

UNITS = {"%": "%", "％": "%", "percent": "%", "percentage point": "pp", "percentage points": "pp", "pp": "pp",
         "point": "pp", "points": "pp", "个百分点": "pp", "百分点": "pp", "ms": "ms", "millisecond": "ms",
         "milliseconds": "ms", "毫秒": "ms", "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
         "秒": "s", "min": "min", "mins": "min", "minute": "min", "minutes": "min", "分钟": "min", "h": "h",
         "hour": "h", "hours": "h", "小时": "h", "x": "x", "×": "x", "times": "x", "倍": "x", "GB": "GB", "MB": "MB"}
# The pattern reads units in any case ("6Gb", "3 X faster", "5 Percent"): looked up folded.
_UNITS_FOLDED = {written.lower(): unit for written, unit in UNITS.items()}
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
    r"\s?(?P<unit>" + "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True)) + r")?"
    r"(?![A-Za-z0-9])", re.IGNORECASE)
# Between a metric and its value: "accuracy of 85.2%", "accuracy improved by 3 points", "准确率为85.2%".
_LINK_BEFORE = re.compile(
    r"(?:\s|[:=：~≈(（]|of|is|was|were|are|be|been|reach(?:es|ed)?|achiev(?:es|ed)|attain(?:s|ed)|obtain(?:s|ed)|"
    r"gets?|got|scor(?:es|ed)|at|around|about|approximately|roughly|nearly|almost|close|near|only|just|an?|the|"
    r"value|(?:improv|increas|decreas|declin|reduc|boost|rais)\w*|drop(?:s|ped)?|fell|falls|rose|rises|went|goes|up|"
    r"down|by|to|from|on|in|for|reported|remains|remained|stays|over|more|than|值|为|达到|高达|仅为|达|是|约|仅|提高|"
    r"提升|降低|下降|增加|减少|到|至|了|从|有)*", re.IGNORECASE)
# The qualifier group starts after the blanks the loop took: two blank runs side by side backtrack.
_LINK_AFTER = re.compile(r"(?:\s|的|in|of)*(?:(?:absolute|relative|token-level|macro|micro)\s*)?", re.IGNORECASE)
_LINK_CHAIN = re.compile(r"(?<!\s)\s*(?:,(?:\s*and(?![A-Za-z]))?|and|to|vs\.?|versus|/|到|至|和|与|或)\s*", re.IGNORECASE)
_DELTA_GAP = re.compile(r"(?<![A-Za-z])by(?![A-Za-z])|(?:提高|提升|降低|下降|增加|减少)了?\s*$", re.IGNORECASE)
_CHANGE_WORDS = re.compile(WORD_START + r"(?:improvements?|gains?|boosts?|drops?|increases?|decreases?|reductions?|"
                           r"declines?|advantages?|margins?)" + WORD_END, re.IGNORECASE)
_CHANGE_BEFORE = re.compile(WORD_START + r"(?:by|(?:improvements?|gains?|boosts?|drops?|increases?|decreases?|"
                            r"reductions?|declines?)(?:\s+of)?)(?:\s*(?:about|around|approximately|only|just|over|"
                            r"almost|nearly))?\s*$", re.IGNORECASE)
_SHARE_OF = re.compile(r"(?<!\s)\s*of\s+(?:the\s+|all\s+|our\s+)?(?P<noun>[A-Za-z][\w-]*)")
_FROM = re.compile(r"(?<![A-Za-z])from\s*$", re.IGNORECASE)
_LOWER_BOUND = re.compile(r"(?:over|more\s+than|above|at\s+least|greater\s+than|exceed(?:s|ing)?|>|≥|超过|逾)\s*$",
                          re.IGNORECASE)
_UPPER_BOUND = re.compile(r"(?:under|less\s+than|fewer\s+than|below|at\s+most|up\s+to|<|≤|不到|不足)\s*$", re.IGNORECASE)
# The writer speaking of their own work: "we trained", "our model" (not "US", a country).
_FIRST_PERSON = re.compile(r"(?<![A-Za-z])(?:[Ww]e|[Oo]urs?|us)(?![A-Za-z])|我们|本文")
_APPROXIMATE = re.compile(r"(?:about|around|approximately|roughly|nearly|almost|close\s+to|near|some|~|≈|约|大约|近)\s*$",
                          re.IGNORECASE)
# Words before a metric that make it another metric ("joint goal accuracy") unless they only
# say which of its values is reported ("maximum accuracy").
_METRIC_MODIFIER = re.compile(r"(?<![\w-])(?P<words>(?:[A-Za-z][\w-]*\s+){1,2})$")
_NOT_MODIFIERS = frozenset(["maximum", "max", "best", "highest", "lowest", "minimum", "average", "mean", "overall",
                            "absolute", "final", "reported", "our", "its", "their", "the", "an", "a", "of", "and",
                            "with", "in", "on", "by", "is", "was", "has", "had", "achieves", "achieved", "obtains",
                            "reaches", "gives", "higher", "lower", "better", "worse", "same", "similar"])
_LINK_WORDS = frozenset(["of", "is", "was", "were", "are", "to", "at", "by", "from", "with", "and", "or", "for", "on",
                         "in", "than", "as", "only", "just", "about", "around", "over", "under", "up", "down", "than",
                         "after", "before", "into", "per", "contains", "contain", "has", "have", "had", "into",
                         "yields", "yielding", "gives", "giving", "takes", "uses", "use", "using", "which"])
_STOP_COUNTED = frozenset(["the", "a", "an", "this", "that", "these", "those", "we", "it", "they", "which", "when",
                           "while", "where", "respectively", "compared", "than", "relative", "absolute", "more",
                           "less", "higher", "lower", "better", "worse", "not", "also", "both", "each", "all"])
_SPEED_WORDS = frozenset(["faster", "speedup", "speed", "quicker", "speed-up"])
_MAX_LINK = 40
_ROUNDING = 0.49


@dataclass(frozen=True)
class Measure:
    metric: str       # canonical measure ("accuracy", "question/answer pair"); "<name> change" for a gain or a drop
    value: float      # signed for a change
    unit: str         # "%", "pp", "ms", "s", "x", ... or ""
    text: str         # as written: "85.2% accuracy", "准确率为85.2%", "140k question/answer pairs"


@dataclass(frozen=True)
class Quantity:
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
    result: bool               # a metric's value ("85.2% accuracy"): a system's result, its dataset a condition
    own: bool                  # stated as the writer's own work: its clause says "we" or "our", or "our method"


# A number's binding to what it measures: (measure, its words, is a change, span of the measure's
# words, is a named metric).
_Binding = tuple[str, frozenset[str], bool, int, int, bool]


def find_quantities(sentence: str, metrics: list[tuple[int, int, str]], condition_spans: list[tuple[int, int]],
                    datasets: list[tuple[int, int, str]], cues: list[tuple[int, int, str, str]],
                    names: frozenset[str]) -> list[Quantity]:
    """The numbers of a sentence that report a result, each with what it measures."""
    masked = list(sentence)
    for m in REFERENCE.finditer(sentence):
        masked[m.start():m.end()] = " " * (m.end() - m.start())
    for start, end in condition_spans:
        masked[start:end] = " " * (end - start)
    masked_text = "".join(masked)
    metric_spans = [(s, e) for s, e, _ in metrics]
    found: list[tuple[int, int, _Binding | None, re.Match]] = []
    for number in _NUMBER.finditer(masked_text):
        if overlaps(number.start(), number.end(), metric_spans):
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


def _bind(sentence: str, masked: str, metrics: list[tuple[int, int, str]], number: re.Match) -> _Binding | None:
    """What a number measures, when written next to it: a metric ("accuracy of 85.2%", "3.4 F1"), the
    noun it counts ("140k question/answer pairs"), or the noun it is the value of ("batch size of 32")."""
    start, end = number.start(), number.end()
    before = [(start - e, name, s, e) for s, e, name in metrics if e <= start and start - e <= _MAX_LINK
              and _LINK_BEFORE.fullmatch(masked[e:start])]
    after = [(s - end, name, s, e) for s, e, name in metrics if s >= end and s - end <= 25
             and _LINK_AFTER.fullmatch(masked[end:s])]
    change = bool(number.group("sign")) or _unit(number) == "pp" \
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
    unit = _unit(number)
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
    # Each blank run before a word the group takes: side by side, blank runs backtrack.
    valued = re.search(r"(?<![\w-])(?P<words>(?:[A-Za-z][\w-]*\s+)?[A-Za-z][\w-]*)"
                       r"(?:\s*(?:of|=|:|is|was|were|are|to|at))?(?:\s*(?:about|around|approximately|only|just|over))?"
                       r"\s*$", prefix)
    if valued:
        words = [w for w in re.findall(r"[A-Za-z][\w-]*", valued.group("words").lower())
                 if w not in _NOT_MODIFIERS and w not in GENERIC and len(w) > 1 and w not in _LINK_WORDS
                 and w not in UNITS]
        if words:
            head = s_stem(words[-1])
            if unit == "x" and head in _SPEED_WORDS:
                head = "speedup"
            if _CHANGE_WORDS.fullmatch(words[-1]):
                change = True
            offset = start - len(prefix)   # the measure is its words, without the "of" or "is" before the number
            return (head, frozenset(s_stem(w) for w in words), change, offset + valued.start("words"),
                    offset + valued.end("words"), False)
    return None


def _unit(number: re.Match) -> str:
    """The unit written after a number, as one of UNITS' values ("6Gb" -> "GB"), or ""."""
    return _UNITS_FOLDED.get((number.group("unit") or "").lower(), "")


def _counted(text: str) -> tuple[list[str], int]:
    """The noun phrase a number counts: "question/answer pairs and" -> [question, answer, pair] and
    the length of its text."""
    words, length = [], 0
    for match in re.finditer(r"[A-Za-z][\w-]*(?:/[A-Za-z][\w-]*)*", text):
        lower = match.group(0).lower()
        if lower in _LINK_WORDS or lower in _STOP_COUNTED or lower in UNITS or words and lower.endswith(("ed", "ing")):
            break      # "2,300 sentences annotated by ...": the noun ends before its participle
        words.extend(s_stem(part) for part in re.split(r"[/-]", lower) if len(part) > 1)
        length = match.end()
    return words, length


def _metric_words(sentence: str, metric_start: int) -> frozenset[str]:
    """Modifiers written before a metric that make it a different measure ("joint goal accuracy")."""
    m = _METRIC_MODIFIER.search(sentence[max(0, metric_start - 40):metric_start])
    if not m:
        return frozenset()
    return frozenset(s_stem(w) for w in m.group("words").lower().split()
                     if w not in _NOT_MODIFIERS and w not in GENERIC and w not in _LINK_WORDS and not is_number(w)
                     and len(w) > 1)


def _quantity(sentence: str, number: re.Match, binding: _Binding, datasets: list[tuple[int, int, str]],
              cues: list[tuple[int, int, str, str]], names: frozenset[str],
              metric_spans: list[tuple[int, int]]) -> Quantity:
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
    unit = _unit(number)
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
    clause_start, clause_end = clause_span(sentence, start, end)
    clause_names = find_names(sentence[clause_start:clause_end],
                              [(s - clause_start, e - clause_start) for s, e in metric_spans])
    qualifier = next((m.group(0).strip() for m in (_APPROXIMATE.search(prefix), _LOWER_BOUND.search(prefix),
                                                    _UPPER_BOUND.search(prefix)) if m and m.group(0).strip()), "")
    named = (clause_names or names) - {d for _, _, d in datasets}
    own = "ours" in named or bool(_FIRST_PERSON.search(sentence[clause_start:clause_end]))
    return Quantity(measure, key, words, change, low, high, dimension, _dataset_of(start, end, datasets, sentence),
                    named, bool(_FROM.search(prefix)), f"{qualifier} {sentence[start:end].strip()}".strip(),
                    named_metric and not key.startswith("share of "), own)


def _dataset_of(start: int, end: int, datasets: list[tuple[int, int, str]], sentence: str) -> str | None:
    """The dataset a number is on: named right after it in its clause ("+1.24 on EC-MT"), else before
    it in the clause, else the sentence's only one."""
    clause_start, clause_end = clause_span(sentence, start, end)
    after = [d for s, _, d in datasets if end <= s < clause_end and s - end <= 30]
    if after:
        return after[0]
    before = [d for s, e, d in datasets if clause_start <= s and e <= start]
    if before:
        return before[-1]
    named = {d for _, _, d in datasets}
    return named.pop() if len(named) == 1 else None


def _last_cue_before(sentence: str, cues: list[tuple[int, int, str, str]], position: int) -> str | None:
    """The direction of the last cue before a change in its clause: "dropped by 3 points" is -3."""
    before = [c for c in cues if c[1] <= position and not CLAUSE_BREAK.search(sentence[c[1]:position])]
    return before[-1][2] if before else None


# --- agreement -----------------------------------------------------------------------------------
def values_agree(mine: Quantity, other: Quantity) -> bool:
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


def _in_common_units(m: Quantity, n: Quantity) -> tuple[tuple[float, float], tuple[float, float]] | None:
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


def format_measure(m: Measure) -> str:
    """"+3 pp", "85.2%": a measure's value as a person reads it."""
    number = f"{m.value:+g}" if m.metric.endswith(" change") else f"{m.value:g}"
    return f"{number}{m.unit}" if m.unit in ("%", "x", "") else f"{number} {m.unit}"
