"""Language-aware text helpers shared by the summarizer, reranker and token budgeting.

CJK text has no spaces, so it is tokenized into character bigrams; everything else into
lower-cased word tokens.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[。！？；])|\n{2,}")

# Untrusted Markdown (document text, model output): the syntax that could make a browser load
# something or link away, found without backtracking (each pattern matches in linear time).
_IMAGE_START = re.compile(r"!\[")                     # every image, inline or by reference
_REMOTE_LINK = re.compile(r"\]\((?=\s*(?:<\s*)?(?:[A-Za-z][A-Za-z0-9+.\-]{0,31}:|[/\\]{2}))")
_REFERENCE_DEFINITION = re.compile(r"\]:")              # "[label]: url" gives any "[text][label]" a target
_TAG_OR_AUTOLINK = re.compile(r"<(?=[A-Za-z/!?])")      # raw HTML, and "<https://...>" autolinks
# GFM makes links of these in the rendered text, after escapes are read: a word joiner (U+2060,
# invisible) after "http" or "www" is what stops it.
_BARE_ADDRESS = re.compile(r"(?i)(?<![a-z0-9])(?:https?(?=://)|www(?=\.))")
WORD_JOINER = "\u2060"

STOPWORDS = frozenset(
    ["a", "an", "the", "and", "or", "but", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "as", "is", "are", "was", "were", "be", "been", "being", "this", "that", "these", "those", "it", "its", "into", "than", "then", "there", "their", "they", "them", "we", "our", "you", "your", "he", "she", "his", "her", "i", "me", "my", "do", "does", "did", "done", "have", "has", "had", "not", "no", "nor", "so", "such", "can", "could", "would", "should", "will", "may", "might", "must", "shall", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "all", "any", "both", "each", "few", "many", "much", "more", "most", "other", "some", "only", "own", "same", "too", "very", "just", "also", "about", "above", "after", "again", "against", "below", "between", "during", "before", "under", "over", "out", "up", "down", "off", "once", "here", "further", "while", "because", "until", "s", "t", "的", "了", "是", "在", "和", "与", "及", "或", "而", "也", "就", "都", "这", "那", "一个", "我们", "你们", "他们", "它们", "之", "其", "为", "以", "于", "对", "从"]
)


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
            for part in re.split(f"([{_CJK}]+)", piece):
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
    """Sentences (Latin and CJK punctuation); paragraph breaks always end a sentence."""
    pieces = _SENTENCE_END.split(text.strip())
    return [" ".join(p.split()) for p in pieces if p and p.strip()]


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


def term_coverage(query_terms: set[str], text: str,
                  terms_of: Callable[[str], Iterable[str]] = content_terms) -> float:
    """Share of the query's terms that occur in the text (its terms by `terms_of`: content words,
    or another normalization the query's terms were made with)."""
    if not query_terms:
        return 0.0
    return len(query_terms & set(terms_of(text))) / len(query_terms)


def safe_markdown(text: str) -> str:
    """Untrusted text (a document's, a model's) made safe to render as Markdown: no image (of any
    address), no link to another site (inline, by reference, autolink or bare address: a link
    within the page, "#cite-3", stays), no raw HTML. The syntax is escaped, not removed, so the
    text reads as it was written, addresses included (as text)."""
    text = _IMAGE_START.sub(r"!\\[", text)
    text = _REMOTE_LINK.sub(r"]\\(", text)
    text = _REFERENCE_DEFINITION.sub(r"]\\:", text)
    text = _BARE_ADDRESS.sub(lambda m: m.group(0) + WORD_JOINER, text)
    return _TAG_OR_AUTOLINK.sub(r"\\<", text)
