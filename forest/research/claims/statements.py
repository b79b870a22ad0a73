"""A statement read sentence by sentence: each sentence's claim (negated, its direction, its measures
and conditions) with what comparing it needs, computed once per statement."""
from __future__ import annotations

from dataclasses import dataclass, replace

from forest.research.claims.conditions import Condition, find_conditions, unique
from forest.research.claims.direction import Comparison, cue_target, find_comparisons, find_cues
from forest.research.claims.metrics import find_metrics, lower_is_better
from forest.research.claims.negation import NEGATION, denied, is_negated
from forest.research.claims.numbers import UNITS, Measure, Quantity, find_quantities
from forest.research.claims.words import GENERIC, find_names, is_number
from forest.text import content_terms, s_stem, split_sentences


@dataclass(frozen=True)
class Statement:
    key: str                                  # "node:123", "finding:7"
    text: str
    source: str                               # document label; statements of one source are never compared
    citation: str = ""
    vector: tuple[float, ...] | None = None   # unit-normalized embedding when known

    @property
    def from_document(self) -> bool:
        """A passage of a document ("node:…"), whose "we" is its authors; not a researcher's finding."""
        return self.key.startswith("node:")


@dataclass
class Claim:
    sentence: str
    negated: bool
    direction: str | None      # "up" / "down" as the words say; None when absent or mixed
    measures: list[Measure]
    conditions: list[str]      # datasets, shot counts, model sizes, "when/if/under" settings


@dataclass
class Sentence:
    """A claim with what comparing needs."""
    claim: Claim
    terms: frozenset[str]       # stemmed content words without numbers, cue words and generic result words
    names: frozenset[str]       # named things (systems, datasets), lower-cased
    metrics: frozenset[str]
    objects: frozenset[str]     # what moves up or down: the metrics and the word each cue acts on
    quality: str | None         # the direction as better/worse (flipped for lower-is-better metrics)
    denied: list[str]           # the words negations govern ("competitive", "tune", "提高")
    asserted: str               # the sentence with its negated words blanked: where a word stands un-negated
    comparisons: list[Comparison]
    quantities: list[Quantity]
    setting: list[Condition]    # the sentence's conditions plus the statement's unambiguous ones
    is_claim: bool              # negates, compares, moves something or reports a number


@dataclass
class Parsed:
    statement: Statement
    terms: frozenset[str]
    sentences: list[Sentence]
    conditions: list[Condition]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(n for s in self.sentences for n in s.names)


def extract_claims(text: str) -> list[Claim]:
    """One Claim per sentence that negates, compares, says something goes up or down, or reports a number."""
    return [s.claim for s in _parse_text(text)[0] if s.is_claim]


def parse(statement: Statement) -> Parsed:
    sentences, conditions, terms = _parse_text(statement.text)
    return Parsed(statement, terms, sentences, conditions)


def _parse_text(text: str) -> tuple[list[Sentence], list[Condition], frozenset[str]]:
    analysed = [_analyse(sentence) for sentence in split_sentences(text)]
    conditions = unique([c for _, conds, _ in analysed for c in conds])
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


def _with_dataset(quantity: Quantity, dataset: str) -> Quantity:
    if quantity.dataset:
        return quantity
    return replace(quantity, dataset=dataset)


def _analyse(sentence: str) -> tuple[Sentence | None, list[Condition], list[str]]:
    raw_terms = content_terms(sentence)
    metrics = find_metrics(sentence)
    conditions, condition_spans, dataset_spans = find_conditions(sentence, [(s, e) for s, e, _ in metrics])
    comparisons, comparator_spans = find_comparisons(sentence)
    cues = find_cues(sentence, comparator_spans)
    negations = [(m.start(), m.end()) for m in NEGATION.finditer(sentence)]
    denied_words, asserted = denied(sentence, negations)
    names = find_names(sentence, [(s, e) for s, e, _ in metrics])
    quantities = find_quantities(sentence, metrics, condition_spans, dataset_spans, cues, names)
    negated = is_negated(sentence, cues, negations)
    directions = {direction for _, _, direction, _ in cues}
    direction = directions.pop() if len(directions) == 1 else None
    if not raw_terms:
        return None, conditions, raw_terms
    claim = Claim(sentence, negated, direction, [q.measure for q in quantities],
                  list(dict.fromkeys(c.text for c in conditions)))
    cue_words = {t for s, e, _, _ in cues for t in content_terms(sentence[s:e])}
    cue_words |= {t for s, e in negations for t in content_terms(sentence[s:e])}
    terms = frozenset(s_stem(t) for t in raw_terms if t not in cue_words and t not in GENERIC and t not in UNITS
                      and not is_number(t) and not t.endswith(("n't", "n’t")))
    metric_names = frozenset(name for _, _, name in metrics)
    targets = frozenset(t for cue in cues for t in cue_target(sentence, cue))
    lower_better = bool(metric_names) and all(lower_is_better(n) for n in metric_names)
    quality = direction
    if direction and lower_better and {kind for _, _, _, kind in cues} == {"quantity"}:
        quality = "up" if direction == "down" else "down"
    signals = negated or bool(cues or quantities or comparator_spans)
    parsed = Sentence(claim, terms, names, metric_names, metric_names | targets, quality, denied_words, asserted,
                      comparisons, quantities, conditions, signals)
    return parsed, conditions, raw_terms
