"""The words and clauses every rule reads: Latin word edges that hold next to CJK text, clause
breaks, the words every result sentence uses, references that are not results, and named things;
and how a list is written ("a, b and c")."""
from __future__ import annotations

import re
from collections.abc import Sequence

# Latin word edges that also hold next to CJK characters (which `\b` counts as word characters).
WORD_START = r"(?<![A-Za-z0-9_])"
WORD_END = r"(?![A-Za-z0-9_])"
CLAUSE_BREAK = re.compile(r"[,;:，；：]|(?<![A-Za-z])(?:but|while|whereas|although|though)(?![A-Za-z])|但|而",
                          re.IGNORECASE)
# Particles and intensifiers between a Chinese cue and the word it acts on.
CJK_FILLER = re.compile(r"^(?:[\s了的得地着]|显著|明显|大幅|略微|稍微|进一步|大大)+")
ADVERBS = frozenset(["significantly", "substantially", "slightly", "consistently", "greatly", "considerably",
                     "markedly", "dramatically", "even", "further", "much", "clearly", "modestly", "overall",
                     "still", "also", "marginally", "strongly", "already", "both"])
# Words every result sentence uses: sharing them says nothing about being on the same claim.
GENERIC = frozenset(["achieves", "achieved", "achieve", "obtains", "obtained", "obtain", "reaches", "reached",
                     "reach", "reports", "reported", "report", "shows", "showed", "show", "shown", "yields",
                     "yielded", "results", "result", "performance", "performances", "score", "scores", "find",
                     "found", "observe", "observed", "experiments", "experiment", "using", "use", "used", "paper",
                     "work", "study", "value", "compared", "respectively", "approximately", "table", "tables",
                     "figure", "fig", "section", "appendix", "setting", "settings", "although", "though",
                     "whereas", "however", "model", "models", "system", "systems", "method", "methods",
                     "approach", "approaches", "classifier", "classifiers", "network", "networks", "proposed",
                     "perform", "performs", "performed", "works", "worked", "version", "dataset", "datasets",
                     "data", "set", "sets", "total", "number"] + list(ADVERBS))
# Numbers that are not results: references to parts of the paper, citations, years and dates.
REFERENCE = re.compile(
    r"(?:" + WORD_START + r"(?:tables?|tab\.|figures?|figs?\.|sections?|sec\.|eqs?\.|equations?|appendix|chapter|"
    r"algorithm|lines?|pp?\.|pages?|conll|semeval|task|wmt|v)|§|图|表|第|公式|章节)\s*\(?\d+(?:\.\d+)*[a-z]?\)?"
    r"|\[\s*\d+(?:\s*[,–-]\s*\d+)*\s*\]|(?:BIB|TAB|FIG|SEC|EQ)REF\s?\d+|(?:INLINE|DISPLAY)FORM\d+|[pκα]\s*[<=>]\s*\d*\.?\d+(?:\s*[−-]\s*\d+)?"
    r"|\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)"
    r"|(?<![\d.,])(?:19[5-9]\d|20[0-3]\d)(?![\d.]|\s?%|,\d)", re.IGNORECASE)
# Names of systems, datasets and the like: a capital after the first letter ("BiDAF", "LSTM-CRF"), a
# capital and a digit ("GPT-4"), or a capitalized word inside a sentence ("Attention Sum Reader").
_NAME = re.compile(r"(?<![\w+\-])(?P<name>[A-Za-z0-9][\w+\-.]*[\w+])(?![\w+\-])")
_SELF_REFERENCE = re.compile(r"(?<![A-Za-z])(?:our|the\s+proposed)\s+(?:[\w-]+\s+)?(?:model|method|approach|system|"
                             r"framework|architecture)s?(?![A-Za-z])", re.IGNORECASE)
_NOT_NAMES = frozenset(["i", "we", "our", "table", "figure", "section", "appendix", "eq", "however", "finally",
                        "moreover", "furthermore", "thus", "therefore", "also", "then", "first", "second", "third"])


def is_number(token: str) -> bool:
    return bool(re.fullmatch(r"[\d.,]+[kmb]?", token))


def overlaps(start: int, end: int, spans: Sequence[tuple]) -> bool:
    """Whether the span start-end overlaps any of `spans` (tuples that begin with a start and an end)."""
    return any(start < s[1] and s[0] < end for s in spans)


def overlap(a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
    """Share of the smaller set's words found in the other: a short finding against a long passage
    scores by how much of the finding the passage covers (Jaccard would punish the length gap)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


# --- clauses -------------------------------------------------------------------------------------
def clause_after(sentence: str, end: int) -> str:
    rest = sentence[end:]
    brk = CLAUSE_BREAK.search(rest)
    return rest[: brk.start()] if brk else rest


def clause_before(sentence: str, start: int) -> str:
    head = sentence[:start]
    breaks = list(CLAUSE_BREAK.finditer(head))
    return (head[breaks[-1].end():] if breaks else head).rstrip()


def clause_span(sentence: str, start: int, end: int) -> tuple[int, int]:
    before = list(CLAUSE_BREAK.finditer(sentence[:start]))
    after = CLAUSE_BREAK.search(sentence, end)
    return (before[-1].end() if before else 0), (after.start() if after else len(sentence))


# --- named things --------------------------------------------------------------------------------
def find_names(sentence: str, metric_spans: list[tuple[int, int]]) -> frozenset[str]:
    names = set()
    for m in _NAME.finditer(sentence):
        word = m.group("name")
        inner_capital = any(c.isupper() for c in word[1:])
        capitalized_inside = word[0].isupper() and m.start() > 0 and sentence[:m.start()].rstrip()[-1:] not in ".!?"
        if (inner_capital or capitalized_inside) and word.lower() not in _NOT_NAMES and not word.isdigit() \
                and not overlaps(m.start(), m.end(), metric_spans) and not REFERENCE.fullmatch(word):
            names.add(word.lower())
    if _SELF_REFERENCE.search(sentence):
        names.add("ours")      # "our method" is not "ResNet"
    return frozenset(names)


def same_name(p: str, q: str) -> bool:
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


def names_meet(a: frozenset[str], b: frozenset[str]) -> bool:
    return any(same_name(p, q) for p in a for q in b)


# --- writing -------------------------------------------------------------------------------------
def join(items: list[str], conjunction: str) -> str:
    """"a", "a or b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conjunction} " + items[-1]
