"""Direction: the words that move something up or down ("improves", "reduces", "提高") and what each
acts on, and comparisons that rank two things ("A outperforms B", "smaller than")."""
from __future__ import annotations

import re
from dataclasses import dataclass

from forest.research.claims.words import (ADVERBS, CJK_FILLER, GENERIC, WORD_END, WORD_START, clause_after,
                                          clause_before, is_number, names_meet, overlaps)
from forest.text import content_terms, is_cjk_char, s_stem

# Words that move something up or down. "quality" cues judge (better/worse); "quantity" cues move a
# number (higher/lower): "lower perplexity" and "better perplexity" agree.
_DIRECTION_CUES = [
    (re.compile(WORD_START + r"(?:improv\w*|enhanc\w*|benefit\w*|help(?:s|ed)?)(?![\w-])", re.IGNORECASE),
     "up", "quality"),
    (re.compile(WORD_START + r"(?:increas\w*|rais(?:e|es|ed|ing)|boost\w*|gain(?:s|ed)?|ris(?:e|es|ing)|rose|"
                r"grow(?:s|n|ing)?|grew)(?![\w-])", re.IGNORECASE), "up", "quantity"),
    (re.compile(WORD_START + r"(?:degrad\w*|hurt(?:s|ing)?|harm(?:s|ed|ing)?|impair\w*)(?![\w-])", re.IGNORECASE),
     "down", "quality"),
    (re.compile(WORD_START + r"(?:decreas\w*|lower(?:s|ed|ing)?|reduc\w*|drop(?:s|ped|ping)?|declin\w*|fall(?:s|ing)?|"
                r"fell|diminish\w*)(?![\w-])", re.IGNORECASE), "down", "quantity"),
    (re.compile(r"优于|改善|改进|更好|增强|加快|超过|超越|胜过|有助于"), "up", "quality"),
    (re.compile(r"提高|提升|增加|增长|上升|高于|更高"), "up", "quantity"),
    (re.compile(r"劣于|变差|更差|恶化|不如|减慢|损害|削弱"), "down", "quality"),
    (re.compile(r"降低|减少|下降|低于|更低"), "down", "quantity"),
]
# Nouns that contain a cue word: "数据增强" is data augmentation, not "enhances".
_CUE_NOUNS = re.compile(r"数据增强|图像增强|增强学习|增强版|增强型|增量|上升沿")

# "A outperforms B", "A is worse than B", "A is smaller than B": (scale, +1 when A is the greater).
_COMPARATIVE = re.compile(
    WORD_START + r"(?:(?P<verb>outperform(?:s|ed|ing)?|surpass(?:es|ed|ing)?|beat(?:s|ing)?|"
    r"underperform(?:s|ed|ing)?|exceed(?:s|ed|ing)?)|(?P<adj>better|worse|stronger|weaker|higher|lower|larger|smaller|"
    r"bigger|greater|faster|slower|more|less|fewer)(?:\s+[\w-]+){0,2}?\s+than|(?P<prep>improv(?:es|ed|ing|ements?)\s+"
    r"over|superior\s+to|inferior\s+to|advantage\s+over))" + WORD_END, re.IGNORECASE)
_COMPARATIVE_SENSE = {"outperform": ("quality", 1), "surpass": ("quality", 1), "beat": ("quality", 1),
                      "underperform": ("quality", -1), "exceed": ("quantity", 1), "better": ("quality", 1),
                      "worse": ("quality", -1), "stronger": ("quality", 1), "weaker": ("quality", -1),
                      "higher": ("quantity", 1), "lower": ("quantity", -1), "larger": ("quantity", 1),
                      "smaller": ("quantity", -1), "bigger": ("quantity", 1), "greater": ("quantity", 1),
                      "faster": ("speed", 1), "slower": ("speed", -1), "more": ("quantity", 1),
                      "less": ("quantity", -1), "fewer": ("quantity", -1), "improv": ("quality", 1),
                      "superior": ("quality", 1), "inferior": ("quality", -1), "advantage": ("quality", 1)}
_COMPARED_WITH = re.compile(r"compared\s+(?:with|to)\s+(?P<other>[^,;:]{2,80})", re.IGNORECASE)
# "when compared with CRF, CRF-VT performs worse": a bare comparative, its other side compared with.
_BARE_COMPARATIVE = re.compile(WORD_START + r"(?:perform(?:s|ed)?|works?|worked|did|does|is|are|was|were)\s+"
                               r"(?:\w+\s+)?(?P<adj>better|worse)" + WORD_END + r"(?!\s+than)", re.IGNORECASE)
_OBJECT_END = re.compile(r"[,;:()]|\s(?:by|on|in|for|across|at|when|while|which|that|because|since|with|without|"
                         r"under|during|after|and\s+(?:is|are|was|were|achieves?|obtains?|yields?))\s", re.IGNORECASE)
_ASIDE = re.compile(r"(?<!\s)\s*(?:trained|using|used|with|without|when|compared|on|in|for|given|as|based|after|"
                    r"interestingly|however|finally|overall|moreover|(?<!\w)\w+ly\s*$)", re.IGNORECASE)

# A cue as found: (start, end, "up" or "down", "quality" or "quantity").
Cue = tuple[int, int, str, str]


@dataclass(frozen=True)
class Comparison:
    greater: frozenset[str]    # words of the side ranked higher on the scale
    lesser: frozenset[str]
    scale: str                 # "quality", "quantity" or "speed"


def find_cues(sentence: str, comparator_spans: list[tuple[int, int]]) -> list[Cue]:
    """The up/down words of a sentence in the order written, except inside a noun ("数据增强") or a
    comparison (its "higher than" ranks, it does not move)."""
    nouns = [m.span() for m in _CUE_NOUNS.finditer(sentence)]
    return sorted(((m.start(), m.end(), direction, kind) for pattern, direction, kind in _DIRECTION_CUES
                   for m in pattern.finditer(sentence)
                   if not overlaps(m.start(), m.end(), nouns + comparator_spans)), key=lambda c: c[0])


def cue_target(sentence: str, cue: Cue) -> list[str]:
    """The word a cue acts on: the first after it in the clause ("improves robustness"), else the
    last before it ("accuracy drops"); two bigrams for CJK, which is one word of about three characters."""
    start, end = cue[0], cue[1]
    after = CJK_FILLER.sub("", clause_after(sentence, end))
    if is_cjk_char(after[:1]) and "的" in after[:6]:
        after = after[after.index("的") + 1:]      # "模型的鲁棒性": the robustness, not the model
    words = [t for t in content_terms(after[:40]) if t not in ADVERBS and not is_number(t)]
    if words:
        return words[:2] if is_cjk_char(after[:1]) else words[:1]
    before = clause_before(sentence, start)
    words = [t for t in content_terms(before[-40:]) if t not in ADVERBS and not is_number(t)]
    return words[-2:] if before and is_cjk_char(before[-1:]) else words[-1:]


def find_comparisons(sentence: str) -> tuple[list[Comparison], list[tuple[int, int]]]:
    """The comparisons of a sentence, and the spans of their comparative words."""
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
        found.append(Comparison(greater, lesser, scale))
    bare = _BARE_COMPARATIVE.search(sentence)
    compared = _COMPARED_WITH.search(sentence)
    if bare and compared and not found:
        head = sentence[compared.end():bare.start()]
        left = _side_words(re.sub(r"^[^,]*,", "", head))
        right = _side_words(compared.group("other"))
        if left and right:
            sign = 1 if bare.group("adj").lower() == "better" else -1
            greater, lesser = (left, right) if sign > 0 else (right, left)
            found.append(Comparison(greater, lesser, "quality"))
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


def _side_words(text: str) -> frozenset[str]:
    return frozenset(s_stem(t) for t in content_terms(text) if t not in GENERIC and t not in ADVERBS
                     and t not in ("which", "it", "they", "this", "those", "these", "one", "ones"))


def opposed(xs: list[Comparison], ys: list[Comparison]) -> bool:
    """Whether two sentences rank the same two things the other way round on one scale."""
    return any(c.scale == d.scale and _meet(c.greater, d.lesser) and _meet(c.lesser, d.greater)
               for c in xs for d in ys)


def _meet(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a & b) or names_meet(a, b)
