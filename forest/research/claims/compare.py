"""Comparing two parsed statements: whether they are on one topic, and the strongest disagreement
between their sentences under compatible conditions: a denied word the other asserts, two things
ranked oppositely, a quantity moved in opposite directions, or numbers for the same measure that
cannot be the same value."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from forest.research.claims.conditions import settings_compatible
from forest.research.claims.direction import opposed
from forest.research.claims.metrics import METRIC_KEYS, is_setting
from forest.research.claims.negation import EFFECT_WORDS, asserts
from forest.research.claims.numbers import Quantity, values_agree
from forest.research.claims.statements import Parsed, Sentence
from forest.research.claims.words import is_number, join, names_meet, overlap, same_name
from forest.text import s_stem

SENTENCE_OVERLAP = 0.5      # share of the smaller sentence's words the other must hold to be "about the same"
KINDS = ("negation", "direction", "numbers")   # strongest first: the one kept for a pair


@dataclass
class Match:
    """The disagreement kept for a pair of statements: x is a sentence of the first, y of the second."""
    kind: str
    x: Sentence
    y: Sentence
    lead: str         # what disagrees, before the two sentences are quoted: "They contradict each other."


def topic_similarity(x: Parsed, y: Parsed, calibrate: Callable[[float], float] | None) -> float:
    """The cosine of the statements' vectors when both have one, else the overlap of their content words."""
    u, v = x.statement.vector, y.statement.vector
    if u is not None and v is not None and len(u) == len(v):
        cosine = sum(p * q for p, q in zip(u, v))
        return float(calibrate(cosine)) if calibrate else cosine
    return overlap(x.terms, y.terms)


def strongest(x: Parsed, y: Parsed, sentence_overlap: float) -> Match | None:
    """The strongest kind of disagreement between the statements, best aligned sentences first."""
    best: tuple[tuple[int, float], Match] | None = None
    for sx in x.sentences:
        for sy in y.sentences:
            if not settings_compatible(sx.setting, sy.setting):
                continue      # "5-shot" vs "1-shot", "on ImageNet" vs "on CIFAR-10": different experiments
            found = _negation(sx, sy, x, y) or _reversed(sx, sy) or _opposite_change(sx, sy, sentence_overlap)
            if found:
                rank = (KINDS.index(found.kind), -overlap(sx.terms, sy.terms))
                if best is None or rank < best[0]:
                    best = (rank, found)
    return best[1] if best else _numbers(x, y, sentence_overlap)


def _negation(x: Sentence, y: Sentence, a: Parsed, b: Parsed) -> Match | None:
    """One sentence denies a word the other asserts, about the same thing: two more words in common,
    or a name in common (one word more when the name is elsewhere in the other statement)."""
    for (neg, n_side), (pos, p_side) in (((x, a), (y, b)), ((y, b), (x, a))):
        for word in neg.denied:
            effect = word in EFFECT_WORDS and pos.quality is not None and not pos.denied
            if not (effect or asserts(pos.asserted, word)):
                continue
            shared = (neg.terms & pos.terms) - {s_stem(word)}
            if len(shared) < 2 and not names_meet(neg.names, pos.names) and not (
                    shared and names_meet(n_side.names, p_side.names)):
                continue
            if word.startswith(("outperform", "surpass", "beat", "exceed")) and opposed(neg.comparisons,
                                                                                         pos.comparisons):
                continue      # "A does not outperform B" agrees with "B outperforms A"
            return Match("negation", x, y, "They contradict each other.")
    return None


def _reversed(x: Sentence, y: Sentence) -> Match | None:
    """The same two things ranked oppositely: "A outperforms B" against "B outperforms A"."""
    if x.denied or y.denied:
        return None
    if opposed(x.comparisons, y.comparisons):
        return Match("direction", x, y, "They rank the same two the other way round.")
    return None


def _opposite_change(x: Sentence, y: Sentence, sentence_overlap: float) -> Match | None:
    """The same quantity moved in opposite directions: "increases error" against "reduces error"."""
    if x.claim.negated or y.claim.negated or not (x.quality and y.quality) or x.quality == y.quality:
        return None
    if x.comparisons or y.comparisons or not _same_target(x, y) or aligned(x, y, sentence_overlap) is None:
        return None
    about = " and ".join(sorted(x.metrics & y.metrics))
    return Match("direction", x, y, f"They move {about or 'it'} in opposite directions.")


def aligned(x: Sentence, y: Sentence, sentence_overlap: float) -> float | None:
    """How well two claim sentences are about the same thing, or None when they are not."""
    shared = x.terms & y.terms
    if not shared or len(shared) < min(2, len(x.terms), len(y.terms)):
        return None
    score = overlap(x.terms, y.terms)
    if score < sentence_overlap:
        return None
    if x.metrics and y.metrics and not x.metrics & y.metrics:
        return None      # "improves accuracy" vs "improves latency"
    return score


def _same_target(x: Sentence, y: Sentence) -> bool:
    if x.metrics and y.metrics:
        return bool(x.metrics & y.metrics)
    return bool(x.objects & y.objects)


def _numbers(x: Parsed, y: Parsed, sentence_overlap: float) -> Match | None:
    """A number of one statement that every comparable number of the other contradicts."""
    across = _across_documents(x, y)
    for (p, q, first) in ((x, y, True), (y, x, False)):
        for sp in p.sentences:
            for mine in sp.quantities:
                if mine.prior:
                    continue
                theirs = [(sq, other) for sq in q.sentences if settings_compatible(sp.setting, sq.setting)
                          for other in sq.quantities if not other.prior
                          and _comparable(sp, mine, sq, other, sentence_overlap, across)]
                if not theirs or any(values_agree(mine, other) for _, other in theirs):
                    continue
                sq = theirs[0][0]
                values = join(list(dict.fromkeys(o.written for _, o in theirs)), "or")
                lead = f"They give different numbers for {mine.measure.metric}: {mine.written} against {values}."
                if not first:
                    lead = f"They give different numbers for {mine.measure.metric}: {values} against {mine.written}."
                x_side, y_side = (sp, sq) if first else (sq, sp)
                return Match("numbers", x_side, y_side, lead)
    return None


def _comparable(sp: Sentence, mine: Quantity, sq: Sentence, other: Quantity, sentence_overlap: float,
                across: bool) -> bool:
    """Same measure, both levels or both changes, the same dataset and subject (across two documents,
    a subject both name: same_subject), and the two sentences about the same thing (a shared name or
    dataset, else most words)."""
    if mine.change != other.change or not (mine.key == other.key or mine.key in other.words
                                           or other.key in mine.words):
        return False
    if mine.words and other.words and mine.key == other.key and mine.key in METRIC_KEYS \
            and mine.words != other.words and not (mine.words <= other.words or other.words <= mine.words):
        return False      # "joint goal accuracy" vs "joint domain accuracy"
    if mine.dataset and other.dataset and not same_name(mine.dataset, other.dataset):
        return False
    if across and not same_subject(sp, mine, sq, other):
        return False
    if mine.names and other.names:
        return names_meet(mine.names, other.names)
    if mine.dataset and other.dataset:
        return True
    return aligned(sp, sq, sentence_overlap) is not None


def _across_documents(x: Parsed, y: Parsed) -> bool:
    """Passages of two different documents: each one's "we" and "our model" are its own."""
    return x.statement.from_document and y.statement.from_document and x.statement.source != y.statement.source


def same_subject(sp: Sentence, mine: Quantity, sq: Sentence, other: Quantity) -> bool:
    """Whether two numbers of two documents are of one thing both name: a system ("BiDAF reaches 77.3
    F1"), or a dataset counted ("the SQuAD dataset has 107,785 questions"; a metric's value on a
    dataset is some system's, the dataset only its condition). Never what each writer reports of their
    own work ("we train for 10 epochs", "our model reaches 85%", or a number naming nothing: "the batch
    size is 64"), nor a setting of each one's experiment (a batch size, a learning rate, a layer count)
    unless both name the same model ("BERT-base has 12 layers")."""
    if mine.own or other.own:
        return False
    if is_setting(mine.words) or is_setting(other.words):
        return any(c.category == "model" and d.category == "model" and c.norm == d.norm
                   for c in sp.setting for d in sq.setting)
    if names_meet(_named(mine), _named(other)):
        return True
    return not (mine.result or other.result) and bool(mine.dataset and other.dataset)


def _named(quantity: Quantity) -> frozenset[str]:
    """The things a number's clause names, without the writer's own ("ours"), numbers read as names
    ("35M") and the words of the measure itself ("Wikipedia" of "536 Wikipedia articles")."""
    return frozenset(n for n in quantity.names if n != "ours" and not is_number(n) and n not in quantity.words)
