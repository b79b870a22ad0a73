"""Likely conflicts among research statements: every pair from different sources on one topic,
compared sentence by sentence, the strongest disagreement kept."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

from forest.research.claims.compare import KINDS, SENTENCE_OVERLAP, strongest, topic_similarity
from forest.research.claims.explain import describe
from forest.research.claims.statements import Claim, Statement, parse
from forest.text import truncate

TOPIC_THRESHOLD = 0.3


@dataclass
class Conflict:
    a: Statement
    b: Statement
    kind: str                  # one of KINDS
    topic_similarity: float    # cosine of the vectors when both have one, else content-word overlap
    a_claim: Claim
    b_claim: Claim
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"a": _statement_dict(self.a), "b": _statement_dict(self.b), "kind": self.kind,
                "topic_similarity": round(self.topic_similarity, 4), "a_claim": asdict(self.a_claim),
                "b_claim": asdict(self.b_claim), "detail": self.detail}


def detect_conflicts(statements: Sequence[Statement], *, topic_threshold: float = TOPIC_THRESHOLD,
                     sentence_overlap: float = SENTENCE_OVERLAP,
                     calibrate: Callable[[float], float] | None = None) -> list[Conflict]:
    """Likely conflicts between statements of different sources, most similar pairs first; at most
    one per pair (the strongest kind, then the best-aligned sentences). `calibrate` puts a vector
    cosine on the 0-1 scale the threshold uses (the embedder's: E5 cosines crowd into 0.7-1)."""
    parsed = [parse(s) for s in statements]
    conflicts = []
    for x, y in combinations(parsed, 2):
        if x.statement.source == y.statement.source or not x.sentences or not y.sentences:
            continue
        similarity = topic_similarity(x, y, calibrate)
        if similarity < topic_threshold:
            continue
        found = strongest(x, y, sentence_overlap)
        if found:
            conflicts.append(Conflict(x.statement, y.statement, found.kind, similarity, found.x.claim,
                                      found.y.claim, describe(found, x.statement, y.statement)))
    conflicts.sort(key=lambda c: (-c.topic_similarity, KINDS.index(c.kind)))
    return conflicts


def _statement_dict(statement: Statement) -> dict[str, Any]:
    return {"key": statement.key, "source": statement.source, "citation": statement.citation,
            "excerpt": truncate(statement.text, 300)}
