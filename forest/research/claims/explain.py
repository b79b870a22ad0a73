"""The sentences a person reads: a disagreement quoted from both sources, and the offline
side-by-side for reconciling two statements, with a verdict that names both sources."""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from forest.research.claims.compare import SENTENCE_OVERLAP, Match, strongest
from forest.research.claims.conditions import Condition, dataset_norm, same_condition
from forest.research.claims.numbers import format_measure, values_agree
from forest.research.claims.statements import Parsed, Statement, parse
from forest.research.claims.words import join, same_name
from forest.text import truncate

OFFLINE_REVIEW = "offline rules (not reviewed by an LLM)"
_CONDITION_OPENERS = frozenset(["with", "without", "when", "if", "under", "using", "on", "in", "across", "given",
                                "assuming", "unless"])


def source_label(statement: Statement) -> str:
    """"Ask the Right Questions (p. 7, §5.5 Results)": the source and where in it."""
    return f"{statement.source} ({statement.citation})" if statement.citation else statement.source


def describe(match: Match, a: Statement, b: Statement) -> str:
    """'<lead> <A> says “…”, but <B> says “…”.': the match's sentences, x from a and y from b."""
    first = source_label(a)
    return f"{match.lead} {first[:1].upper()}{first[1:]} says {_quote(match.x.claim.sentence)}, but " \
           f"{source_label(b)} says {_quote(match.y.claim.sentence)}."


def side_by_side(a: Statement, b: Statement) -> dict[str, Any]:
    """The offline comparison for reconciliation: both sides' claims, measures and conditions, the
    conditions only one side states, the measures both report, the conflicting sentences when the
    rules find a disagreement, and a verdict written as a sentence naming both sources."""
    x, y = parse(a), parse(b)
    only_a = [c.text for c in x.conditions if not _states(y, c)]
    only_b = [c.text for c in y.conditions if not _states(x, c)]
    found = strongest(x, y, SENTENCE_OVERLAP)
    detail = describe(found, a, b) if found else None
    shared = _shared_metrics(x, y)
    return {"a": _side(x), "b": _side(y), "conditions_only_in_a": only_a, "conditions_only_in_b": only_b,
            "boundary_conditions": [f"{source_label(a)}: {c}" for c in only_a] + [f"{source_label(b)}: {c}" for c in only_b],
            "shared_metrics": shared,
            "conflict": {"kind": found.kind, "a_sentence": found.x.claim.sentence,
                         "b_sentence": found.y.claim.sentence, "detail": detail} if found else None,
            "verdict": _verdict(a, b, detail, only_a, only_b, shared), "reviewed_by": OFFLINE_REVIEW}


def _states(p: Parsed, condition: Condition) -> bool:
    """Whether the statement states this condition too, or names the dataset anywhere."""
    if any(same_condition(condition, d) for d in p.conditions):
        return True
    return condition.category == "dataset" and any(same_name(condition.norm, dataset_norm(n)) for n in p.names)


def _shared_metrics(x: Parsed, y: Parsed) -> list[dict[str, Any]]:
    ours = [q for s in x.sentences for q in s.quantities]
    theirs = [q for s in y.sentences for q in s.quantities]
    shared = []
    for metric in sorted({q.measure.metric for q in ours} & {q.measure.metric for q in theirs}):
        a_values = [q for q in ours if q.measure.metric == metric]
        b_values = [q for q in theirs if q.measure.metric == metric]
        shared.append({"metric": metric, "a": [format_measure(q.measure) for q in a_values],
                       "b": [format_measure(q.measure) for q in b_values],
                       "agree": any(values_agree(p, q) for p in a_values for q in b_values)})
    return shared


def _verdict(a: Statement, b: Statement, disagreement: str | None, only_a: list[str], only_b: list[str],
             shared: list[dict[str, Any]]) -> str:
    """The offline verdict as a researcher would write it: what disagrees, quoted, and the conditions
    that might explain it; nothing is said about what is absent."""
    differing = [m["metric"] for m in shared if not m["agree"]]
    if disagreement:
        verdict = disagreement
    elif differing:
        verdict = (f"{source_label(a)[:1].upper()}{source_label(a)[1:]} and {source_label(b)} give different values for "
                   f"{join(differing, 'and')}, but not for the same experiment (dataset, subject or setting), "
                   "so the offline rules do not count that as a contradiction.")
    else:
        verdict = f"The offline rules find no contradiction between {source_label(a)} and {source_label(b)}."
    stated = [f"only {source_label(s)} states {join([_lower_first(c) for c in conds], 'and')}"
              for s, conds in ((a, only_a), (b, only_b)) if conds]
    if stated:
        verdict += f" The settings differ ({'; '.join(stated)}), which may explain " \
                   f"{'it' if disagreement else 'any gap'}."
    return verdict


def _lower_first(text: str) -> str:
    """"With 5 examples" -> "with 5 examples", but "ResNet-50" stays."""
    first = text.split(" ", 1)[0]
    return text[:1].lower() + text[1:] if first.lower() in _CONDITION_OPENERS else text


def _side(p: Parsed) -> dict[str, Any]:
    claims = [s.claim for s in p.sentences]
    return {"key": p.statement.key, "source": p.statement.source, "citation": p.statement.citation,
            "claims": [asdict(c) for c in claims], "measures": [asdict(m) for c in claims for m in c.measures],
            "conditions": [c.text for c in p.conditions]}


def _quote(sentence: str) -> str:
    return f"“{truncate(sentence.rstrip('. '), 400)}”"
