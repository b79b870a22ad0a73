"""Language-aware text helpers every layer shares: tokens, sentences, token estimates, titles and
counts said in words. CJK text has no spaces, so it is tokenized into character bigrams;
everything else into lower-cased word tokens. (Untrusted text shown as Markdown: markdown_safety.)
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_RUN_KEPT = re.compile(f"([{_CJK}]+)")  # split on CJK runs, keeping them
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)

STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "this", "that", "these", "those", "it", "its", "into", "than", "then", "there", "their", "they", "them", "we", "our", "you", "your", "he", "she", "his", "her", "i", "me", "my", "do", "does", "did", "done", "have", "has", "had", "not", "no", "nor", "so", "such", "can", "could", "would", "should", "will", "may", "might", "must", "shall", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "all", "any", "both", "each", "few", "many", "much", "more", "most", "other", "some", "only", "own", "same", "too", "very", "just", "also", "about", "above", "after", "again", "against", "below", "between", "during", "before", "under", "over", "out", "up", "down", "off", "once", "here", "further", "while", "because", "until", "s", "t", "的", "了", "是", "在", "和", "与", "及", "或", "而", "也", "就", "都", "这", "那", "一个", "我们", "你们", "他们", "它们", "之", "其", "为", "以", "于", "对", "从"]
)
# A possible sentence end: Latin end punctuation (and closing quotes or brackets) before a space,
# CJK end punctuation, or a blank line. Each is then judged by the words around it.
_POSSIBLE_END = re.compile(r"[.!?][\"'”’)\]]*\s+|[。！？；]|\n[^\S\n]*\n\s*")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
_NEXT_WORD = re.compile(r"\S+")
# Abbreviations a sentence never ends with ("Fig. 3", "e.g. the", "vs. BM25"), lower-cased.
_ABBREVIATIONS = frozenset(
    "e.g i.e cf vs viz approx resp fig figs eq eqs eqn eqns sec secs sect tab tabs alg def thm lem prop "
    "appx ch chap vol dr mr mrs ms prof st jr sr mt ref refs dept univ".split())
# Abbreviations that end no sentence before a number ("No. 5", "pp. 12", "Jan. 2019").
_BEFORE_NUMBER = frozenset("no nos nr p pp jan feb mar apr jun jul aug sep sept oct nov dec".split())
# After "et al." or an initial ("J. Smith"), a sentence ends only if the next word opens one.
_NAME_ENDINGS = frozenset(["al"])
_OPENERS = frozenset(
    "however thus therefore moreover furthermore finally first second third next hence instead "
    "similarly specifically overall still yet although though since unlike like note".split()) | STOPWORDS
_DOTTED = re.compile(r"(?:[a-z]{1,2}\.)+[a-z]{1,2}")          # "e.g", "i.e", "u.s", "w.r.t", "ph.d"
_CITATION = re.compile(r"BIBREF\d|\[\d|\(\d")                 # "et al. BIBREF3", "et al. (2016)"


def is_cjk_char(ch: str) -> bool:
    return bool(_CJK_RUN.fullmatch(ch))


def cjk_ratio(text: str) -> float:
    """Share of non-space characters that are CJK (decides how to tokenize and count)."""
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return 0.0
    return sum(1 for c in chars if is_cjk_char(c)) / len(chars)


def tokenize(text: str) -> list[str]:
    """Word tokens (lower-cased) plus CJK character bigrams, in order of appearance."""
    tokens: list[str] = []
    for match in _WORD.finditer(text):
        piece = match.group(0)
        if _CJK_RUN.search(piece):
            for part in _CJK_RUN_KEPT.split(piece):
                if not part:
                    continue
                if _CJK_RUN.fullmatch(part):
                    tokens.extend(part[i : i + 2] for i in range(max(1, len(part) - 1)))
                else:
                    tokens.append(part.lower())
        else:
            tokens.append(piece.lower())
    return tokens


def content_terms(text: str) -> list[str]:
    """Tokens that carry meaning: stopwords and one-letter latin tokens dropped."""
    return [t for t in tokenize(text) if t not in STOPWORDS and (len(t) > 1 or is_cjk_char(t))]


def single_line(text: str) -> str:
    """Text as one line: its line breaks, tabs and runs of spaces become one space (a title, a name)."""
    return " ".join(text.split())


def matching_terms(text: str) -> set[str]:
    """The content words of a question or sentence, plurals folded, for matching one to the other."""
    return {s_stem(t) for t in content_terms(text)}


def s_stem(token: str) -> str:
    """Harman's S stemmer (1991): English plurals and third-person -s folded ("contains" ->
    "contain", "studies" -> "study"), nothing else, so it never merges unrelated words."""
    if len(token) > 3 and token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if len(token) > 2 and token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


def split_sentences(text: str) -> list[str]:
    """Sentences, each with its inner whitespace folded (sentence_spans says where they end)."""
    return [" ".join(text[start:end].split()) for start, end in sentence_spans(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence in `text`, as written. A blank line or CJK end punctuation
    always ends one; '.', '!' or '?' before a space ends one when the next word starts with a
    capital or a digit, and, for '.', the word before is no abbreviation ("e.g.", "Fig.",
    "vs.", "i.e."), no "et al." or initial followed by a name or citation, and no "No." or
    "pp." before a number. One pass over the text, each end judged by the words beside it."""
    spans, start = [], 0
    for end in _POSSIBLE_END.finditer(text):
        if _ends_sentence(text, end):
            spans.append((start, end.start() + len(end.group().rstrip())))
            start = end.end()
    spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _ends_sentence(text: str, end: re.Match[str]) -> bool:
    mark = end.group()[0]
    if mark not in ".!?" or _BLANK_LINE.search(end.group()):
        return True   # a blank line, CJK punctuation
    following = _NEXT_WORD.match(text, end.end())
    if following is None:
        return True
    word = following.group()
    opening = word.lstrip("\"'“‘([")
    if _CITATION.match(word) or not opening or not (opening[0].isupper() or opening[0].isdigit()):
        return False
    if mark != ".":
        return True
    before = text[:end.start()].rsplit(None, 1)[-1].lstrip("\"'“‘([") if end.start() else ""
    key = before.lower()
    if key in _ABBREVIATIONS or (len(key) <= 12 and _DOTTED.fullmatch(key)):
        return False
    if key in _BEFORE_NUMBER and opening[0].isdigit():
        return False
    if key in _NAME_ENDINGS or (len(before) == 1 and before.isupper()):
        return opening.lower().strip(",;:") in _OPENERS
    return True


def estimate_tokens(text: str) -> int:
    """Rough LLM token count: about 4 characters per token for Latin text, 1 per CJK character."""
    cjk = sum(len(run) for run in _CJK_RUN.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4


def truncate(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary for Latin text, with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if cjk_ratio(cut) < 0.5 and " " in cut[limit // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:") + "…"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """'1 memory', '2 memories', '0 passages': a count with its noun in the right number."""
    if count == 1:
        return f"1 {noun}"
    if plural is None:
        plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else \
            noun + "es" if noun.endswith(("s", "x", "ch", "sh")) else noun + "s"
    return f"{count:,} {plural}"


_SMALL_WORDS = frozenset("a an and as at but by for from in into nor of on or over per the to via vs with".split())
# Section numbers: "II", "IV-B" (a valid numeral: "CIVIL" is a word)
_ROMAN = re.compile(r"(?=[MDCLXVI])M{0,3}(?:C[MD]|D?C{0,3})(?:X[CL]|L?X{0,3})(?:I[XV]|V?I{0,3})(?:-[A-Z0-9]+)?")
_CAPS_WORD = re.compile(r"[^\W\d_]+")


def display_title(title: str) -> str:
    """A title or heading set in capitals, as a reader writes it: "ASK THE RIGHT QUESTIONS: ACTIVE
    QUESTION REFORMULATION" -> "Ask the Right Questions: Active Question Reformulation". Text with
    a lower-case letter is left alone, and so is one short capitalised word (an acronym: "CNN")."""
    letters = [c for c in title if c.isalpha()]
    if not letters or any(c.islower() for c in letters) or not any(c.isupper() for c in letters):
        return title
    words = title.split(" ")
    if len(words) == 1 and len(letters) <= 4:
        return title
    out = []
    for index, word in enumerate(words):
        if _ROMAN.fullmatch(word.strip(".:,;()")):
            out.append(word)
            continue
        lower = word.lower()
        opens_clause = index == 0 or out[-1].endswith((":", "—", "?", "!"))
        if lower in _SMALL_WORDS and not opens_clause:
            out.append(lower)
        else:   # each part of "PRE-TRAINING" and "Q&A" starts with a capital
            out.append(_CAPS_WORD.sub(lambda m: m.group(0).capitalize(), lower))
    return " ".join(out)


def term_coverage(query_terms: set[str], text: str,
                  terms_of: Callable[[str], Iterable[str]] = content_terms) -> float:
    """Share of the query's terms that occur in the text (its terms by `terms_of`: content words,
    or another normalization the query's terms were made with)."""
    if not query_terms:
        return 0.0
    return len(query_terms & set(terms_of(text))) / len(query_terms)
