"""Negation: which words a sentence's "not", "never", "fails to", "没有" or "未" govern, whether the
claim itself is negated, and whether another sentence asserts a denied word un-negated."""
from __future__ import annotations

import re

from forest.research.claims.words import CJK_FILLER, CLAUSE_BREAK, WORD_END, WORD_START
from forest.text import is_cjk_char

NEGATION = re.compile(
    WORD_START + r"(?:not(?!\s+only)|no|never|neither|nor|cannot|none|fail(?:s|ed|ing)?\s+to|unable\s+to|"
    r"lacks?\s+(?:of|any))" + WORD_END + r"|n['’]t" + WORD_END
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
_AUXILIARY = re.compile(WORD_START + r"(?:was|were|is|are|has|have|had|did|do|does|can|could|will|would)" + WORD_END,
                        re.IGNORECASE)
# A negated "effect" word denies any change: "no significant effect" against "improves".
EFFECT_WORDS = frozenset(["effect", "impact", "difference", "benefit", "help", "change", "significant",
                          "improvement", "gain"])


def denied(sentence: str, negations: list[tuple[int, int]]) -> tuple[list[str], str]:
    """The words the sentence's negations govern, and the sentence with them blanked out."""
    words, blanked = [], list(sentence)
    for start, end in negations:
        cue = sentence[start:end]
        if is_cjk_char(cue[-1:]):
            rest = sentence[end:]
            filler = CJK_FILLER.match(rest)
            offset = filler.end() if filler else 0
            word = rest[offset:offset + 2]
            if len(word) == 2 and all(is_cjk_char(c) for c in word):
                words.append(word)
                blanked[end + offset:end + offset + 2] = "  "
            continue
        scope_start = end
        if cue.lower() in ("none", "neither") and re.match(r"(?<!\s)\s+of\b", sentence[end:]):
            auxiliary = _AUXILIARY.search(sentence, end)     # "none of the partitions was biased"
            if auxiliary is None:
                continue
            scope_start = auxiliary.end()
        for word in re.finditer(r"[A-Za-z][\w-]*", sentence[scope_start:scope_start + 60]):
            token = word.group(0).lower()
            if token in _NEGATION_FILLER:
                continue
            if CLAUSE_BREAK.search(sentence[scope_start:scope_start + word.start()]):
                break
            words.append(token)
            at = scope_start + word.start()
            blanked[at:at + len(token)] = " " * len(token)
            break
    return words, "".join(blanked)


def is_negated(sentence: str, cues: list[tuple[int, int, str, str]], negations: list[tuple[int, int]]) -> bool:
    """Whether the claim is negated: with a cue word, only a negation shortly before it in the same
    clause counts ("improves accuracy, although we did not tune it" is not negated)."""
    if _INSIGNIFICANT.search(sentence):
        return True
    if not cues:
        return bool(negations)
    return any(0 <= start - end <= 30 and not CLAUSE_BREAK.search(sentence[end:start])
               for start, _, _, _ in cues for _, end in negations)


def asserts(asserted: str, word: str) -> bool:
    """Whether `asserted` (a sentence with its negated words blanked) holds `word` or an inflection of it."""
    if is_cjk_char(word[:1]):
        return word in asserted
    root = word[:-1] if word.endswith("e") and len(word) > 4 else word
    return bool(re.search(WORD_START + re.escape(root) + r"(?:e|es|s|d|ed|ing|ment|ments|ement|ements)?" + WORD_END,
                          asserted, re.IGNORECASE))
