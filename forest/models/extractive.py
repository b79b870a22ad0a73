"""Offline, extractive summaries and labels of a tree node from the text below it.

A node's summary is chosen from its own sentences, not from its children's summaries (a summary
of summaries lets one sentence climb to the top of the tree): the sentences closest to the node's
term centroid (tf-idf against the whole document, the centroid method of MEAD), taken in turn
from each child, biggest children first, so a section's summary covers its parts.

A node without a heading (a group of passages inside a section, or of an unheaded text) is named
by a key phrase: a run of up to three content words as the text writes it, recurring in the group
and rare elsewhere in the document (tf-idf), chosen so that no two siblings share one. Citations
go first (a name with its year or "et al." names no topic), and a reference list is named by no
phrase at all: its words are authors, venues and years.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from forest.references import looks_like_citations
from forest.text import STOPWORDS, cjk_ratio, content_terms, s_stem, split_sentences, tokenize, truncate

PHRASE_WORDS = 3
# A sentence naming a venue is a reference entry, not prose to summarize with.
_REFERENCE = re.compile(r"\b(?:In )?Proceedings of\b|\bpp\.\s*\d|\barXiv:\d|\bdoi:", re.IGNORECASE)
# Formulas, LaTeX commands and reference placeholders make no label ("mathbf · theta").
_NOT_WORDS = re.compile(r"\$\$.*?\$\$|\$[^$]*\$|\\[a-zA-Z]+|\b(?:BIBREF|TABREF|FIGREF|EQREF)\s*\d*", re.DOTALL)
# A citation with the one or two names before it: "Peterson et al. (1988)", "Berant & Liang (2014)",
# "Lin [12]", "Ji and Bhatia BIBREF3". Every repetition is bounded: no backtracking on long text.
_CITATION = re.compile(
    r"(?:\b[A-Z][^\W\d_]{1,30}(?:\s{1,3}(?:and|&)\s{1,3}[A-Z][^\W\d_]{1,30})?\s{0,3})?"
    r"(?:et\s{1,3}al\b\.?\s{0,3})?"
    r"(?:\([^()]{0,80}?\b(?:1[89]|20)\d\d[a-z]?\)|\[\s{0,3}\d[\d,;\s–-]{0,30}\]|BIBREF\s{0,2}\d+)"
    r"|\bet\s{1,3}al\b\.?")
_URL = re.compile(r"\b(?:https?://|www\.)\S{1,300}|[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,5}")
_TOKEN = re.compile(r"[^\W\d_]+(?:[-'][^\W\d_]+)*|\S")
# Words of bibliographies and page furniture: they name no part of a paper's content.
BIBLIOGRAPHIC = frozenset(
    "arxiv preprint proceedings pages pp vol volume doi isbn issn url http https www org com edu journal "
    "conference workshop symposium annual meeting association transactions press publisher editor editors "
    "eds ed abs corr ieee acm acl emnlp naacl coling eacl aaai ijcai icml iclr neurips nips springer elsevier "
    "figure fig table tab section sec appendix equation eq et al ibid".split())
# Words that carry no topic although no stopword list has them: counting words, and the verbs and
# adverbs with which papers report ("we use two ...", "results show ..."), in all their forms.
_GENERIC_VERBS = ("use show propose present report achieve obtain perform create make give take find see note "
                  "apply consider describe introduce compare follow include provide require allow base conduct "
                  "adopt denote define call evaluate improve outperform yield lead help let seem become")
NOT_TOPICS = frozenset(
    "one two three four five six seven eight nine ten first second third fourth fifth last next per several "
    "various different many much new also however well respectively significantly finally thus hence "
    "therefore already almost often usually still even rather instead made given done found shown taken "
    "based using used uses set sets way ways case cases thing things number numbers kind kinds type types "
    "example examples result results work works paper papers approach approaches method methods".split()
    + [form for verb in _GENERIC_VERBS.split()
       for form in (verb, verb + "s", verb + "es", verb + "d", verb + "ed", verb + "ing", verb[:-1] + "ing")])


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


def group_labels(texts: Sequence[str], stats: TermStats) -> list[str | None]:
    """Names for sibling nodes without a heading, one per text (the text under each): its best
    key phrase that no sibling took before it, biggest text first; None where the text has no
    phrase to name it by (a reference list, a table, a formula)."""
    ranked = [_key_phrases(text, stats) for text in texts]
    taken: set[frozenset[str]] = set()
    labels: list[str | None] = [None] * len(texts)
    for i in sorted(range(len(texts)), key=lambda i: -len(texts[i])):
        for words, surface in ranked[i]:
            if not any(words & other for other in taken):
                taken.add(words)
                labels[i] = surface[:1].upper() + surface[1:]
                break
    return labels


def _key_phrases(text: str, stats: TermStats) -> list[tuple[frozenset[str], str]]:
    """The text's key phrases, best first, each as (its stemmed words, how the text writes it):
    runs of up to PHRASE_WORDS content words, scored by tf-idf; a phrase of two or three words
    said twice or more (a term of the text) ranks above the rest. A phrase must hold a word the
    text writes in lower case (all capitals or capitalized alone are names and acronyms)."""
    if cjk_ratio(text) > 0.5:
        return []   # no spaces to find phrase boundaries by; CJK nodes keep the summary's words
    if looks_like_citations(text):
        return []   # a reference list names no part of the paper
    clean = _NOT_WORDS.sub(" . ", _URL.sub(" . ", _CITATION.sub(" . ", text))).replace("\n\n", " . ")
    counts: Counter[tuple[str, ...]] = Counter()
    forms: dict[tuple[str, ...], Counter[str]] = {}
    run: list[str] = []
    for token in [*_TOKEN.findall(clean), "."]:
        lower = token.lower()
        if token[0].isalpha() and len(token) > 1 and lower not in STOPWORDS and lower not in BIBLIOGRAPHIC \
                and lower not in NOT_TOPICS:
            run.append(token)
            continue
        for size in range(1, PHRASE_WORDS + 1):
            for start in range(len(run) - size + 1):
                phrase = run[start:start + size]
                key = tuple(s_stem(w.lower()) for w in phrase)
                counts[key] += 1
                forms.setdefault(key, Counter())[" ".join(phrase)] += 1
        run = []
    # a phrase only ever said inside a longer one is a piece of it ("adversarial neural" of
    # "adversarial neural network"): the C-value rule for nested terms
    nested = {key[start:start + size] for key in counts if len(key) > 1
              for size in range(1, len(key)) for start in range(len(key) - size + 1)
              if counts[key[start:start + size]] == counts[key]}
    scored = []
    for key, count in counts.items():
        surface = max(forms[key].items(), key=lambda item: (item[1], item[0].islower()))[0]
        if key in nested or not any(w.islower() for w in surface.split()):
            continue
        lower = surface.lower().split()
        pairs = [" ".join(lower[i:i + 2]) for i in range(len(lower) - 1)] or lower
        idf = max(stats.idf.get(term, stats.default_idf) for term in pairs)
        scored.append(((count > 1 and len(key) > 1, count * idf), frozenset(key), surface))
    scored.sort(key=lambda item: (item[0], item[2]), reverse=True)
    return [(words, surface) for _, words, surface in scored]


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
