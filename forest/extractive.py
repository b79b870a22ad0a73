"""Offline, extractive summaries and labels of a tree node from the text below it.

A node's summary is chosen from its own sentences, not from its children's summaries (a summary
of summaries lets one sentence climb to the top of the tree): the sentences closest to the node's
term centroid (tf-idf against the whole document, the centroid method of MEAD), taken in turn
from each child, biggest children first, so a section's summary covers its parts. A node without
a heading gets a label: its most distinctive terms and two-word phrases against the document.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from forest.text import STOPWORDS, cjk_ratio, content_terms, split_sentences, tokenize, truncate

LABEL_TERMS = 3
# Formulas, LaTeX commands and reference placeholders make no label ("mathbf · theta").
_REFERENCE = re.compile(r"\b(?:In )?Proceedings of\b|\bpp\.\s*\d|\barXiv:\d|\bdoi:", re.IGNORECASE)
_NOT_WORDS = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|\\[a-zA-Z]+|\b(?:BIBREF|TABREF|FIGREF|EQREF)\s*\d*", re.DOTALL)


@dataclass(frozen=True)
class TermStats:
    """Inverse document frequencies over a document's passages (its leaves)."""

    idf: dict[str, float]
    default_idf: float

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> TermStats:
        frequency: Counter[str] = Counter()
        for text in texts:
            frequency.update(set(_terms_and_pairs(text)))
        total = max(len(texts), 1)
        idf = {term: math.log((1 + total) / (1 + df)) + 1 for term, df in frequency.items()}
        return cls(idf, math.log(1 + total) + 1)

    def weigh(self, terms: Sequence[str]) -> dict[str, float]:
        counts = Counter(terms)
        return {t: (1 + math.log(c)) * self.idf.get(t, self.default_idf) for t, c in counts.items()}


def summary_budget(leaves: int, limit: int) -> int:
    """Characters for a node over `leaves` leaves: a few sentences, more for bigger subtrees."""
    return min(limit, 160 + 40 * math.ceil(math.log2(max(leaves, 1) + 1)))


def central_sentences(parts: Sequence[str], weights: Sequence[int], stats: TermStats, max_chars: int) -> str:
    """Sentences of `parts` (one text per child, in document order) closest to their common
    centroid, one child at a time in order of weight, up to `max_chars`, in document order."""
    sentences = [[s for s in split_sentences(part) if _is_prose(s)] or split_sentences(part) for part in parts]
    vectors = [[stats.weigh(content_terms(s)) for s in group] for group in sentences]
    centroid: Counter[str] = Counter()
    for group in vectors:
        for vector in group:
            centroid.update(vector)
    norm = math.sqrt(sum(v * v for v in centroid.values())) or 1.0
    ranked = []
    for child, group in enumerate(vectors):
        scored = sorted(((-_cosine(vector, centroid, norm), position) for position, vector in enumerate(group)))
        ranked.append([position for _, position in scored])
    order = sorted(range(len(parts)), key=lambda c: (-weights[c], c))
    joiner = "" if cjk_ratio("".join(parts)) > 0.5 else " "
    chosen: list[tuple[int, int]] = []
    used = 0
    for _ in range(max((len(r) for r in ranked), default=0)):
        for child in order:
            while ranked[child]:
                position = ranked[child].pop(0)
                cost = len(sentences[child][position]) + (len(joiner) if chosen else 0)
                if used + cost <= max_chars:
                    chosen.append((child, position))
                    used += cost
                    break
        if used >= max_chars * 0.8:
            break
    if not chosen:
        best = next((c for c in order if sentences[c]), None)
        return "" if best is None else truncate(sentences[best][0], max_chars)
    return joiner.join(sentences[c][p] for c, p in sorted(chosen))


def lead_sentences(text: str, max_chars: int) -> str:
    """The first sentences of `text` that fit in `max_chars` (an abstract's own order)."""
    joiner = "" if cjk_ratio(text) > 0.5 else " "
    picked: list[str] = []
    used = 0
    for sentence in split_sentences(text):
        cost = len(sentence) + (len(joiner) if picked else 0)
        if used + cost > max_chars:
            break
        picked.append(sentence)
        used += cost
    return joiner.join(picked) if picked else truncate(text, max_chars)


def keyword_label(text: str, stats: TermStats) -> str:
    """'term · two-word phrase · term': the node's most distinctive terms against the document."""
    weights = stats.weigh(_terms_and_pairs(_NOT_WORDS.sub(" ", text)))
    if not weights:
        return truncate(text, 60)
    picked: list[str] = []
    for term in sorted(weights, key=lambda t: (-weights[t], t)):
        words = term.split()
        if any(w in p.split() for p in picked for w in words):
            continue  # a phrase and its own words say the same thing twice
        picked.append(term)
        if len(picked) == LABEL_TERMS:
            break
    return " · ".join(picked)


def _is_prose(sentence: str) -> bool:
    """A sentence of words, not a table row, a formula or a reference list entry."""
    tokens = tokenize(_NOT_WORDS.sub(" ", sentence))
    words = [t for t in tokens if t.isalpha() and t not in STOPWORDS]
    return len(words) >= 3 and len(words) >= 0.5 * len(tokens) and not _REFERENCE.search(sentence)


def _terms_and_pairs(text: str) -> list[str]:
    terms = content_terms(text)
    if cjk_ratio(text) > 0.5:
        return terms  # CJK terms are already character bigrams
    return terms + [f"{a} {b}" for a, b in zip(terms, terms[1:])]


def _cosine(vector: dict[str, float], centroid: Counter[str], centroid_norm: float) -> float:
    norm = math.sqrt(sum(v * v for v in vector.values()))
    if not norm:
        return 0.0
    return sum(w * centroid.get(t, 0.0) for t, w in vector.items()) / (norm * centroid_norm)
