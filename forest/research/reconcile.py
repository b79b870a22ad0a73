"""Reconciliation of conflicting passages (DeepScholar spec): the configured LLM reviews both sides as
a third party with PROMPT_LLM_MEDIATED_RECONCILIATION and returns a merged conclusion with its
boundary conditions. Offline (or when its answers are unusable) the result is the rule-based
side-by-side of forest.research.claims, labelled as not reviewed by an LLM."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import reconciliation_prompt
from forest.models.replies import ReconciliationReply
from forest.research.claims import Statement, side_by_side, source_label
from forest.text import truncate

log = logging.getLogger("forest.research")


@dataclass
class Reconciliation:
    a: Statement
    b: Statement
    detected: str
    reviewed_by: str
    merged_conclusion: str
    boundary_conditions: list[str]
    conditions_a: list[str]
    conditions_b: list[str]
    real_conflict: bool | None          # None: not judged (offline)
    confidence: str | None
    comparison: dict[str, Any] = field(default_factory=dict)   # the rule-based side-by-side, always

    @property
    def conflict_found(self) -> bool:
        """Whether the passages disagree: the reviewer's judgement, else whether the rules found a
        contradiction. Without one, the verdict is no finding to keep."""
        return self.real_conflict if self.real_conflict is not None else self.comparison.get("conflict") is not None

    def note(self) -> str:
        """One line for an answer or a finding."""
        return (f"Conflict between {source_label(self.a)} and {source_label(self.b)} ({self.reviewed_by}): "
                f"{truncate(self.merged_conclusion, 600)}")

    def to_dict(self) -> dict[str, Any]:
        return {"a": _side(self.a), "b": _side(self.b), "detected": self.detected, "reviewed_by": self.reviewed_by,
                "merged_conclusion": self.merged_conclusion, "boundary_conditions": self.boundary_conditions,
                "conditions_a": self.conditions_a, "conditions_b": self.conditions_b,
                "real_conflict": self.real_conflict, "confidence": self.confidence, "comparison": self.comparison}


class Reconciler:
    def __init__(self, llm: StructuredLLM | None = None) -> None:
        self.llm = llm

    def reconcile(self, a: Statement, b: Statement, detected: str = "", preamble: str = "") -> Reconciliation:
        comparison = side_by_side(a, b)
        offline = _offline(a, b, detected, comparison)
        if self.llm is None:
            return offline
        prompt = reconciliation_prompt(preamble, _side(a, with_text=True), _side(b, with_text=True), detected)
        try:
            reply = self.llm.ask(prompt, ReconciliationReply)
        except LLMError as exc:
            log.warning("%s could not reconcile (%s); showing the offline side-by-side", self.llm.label, exc)
            offline.reviewed_by = f"{offline.reviewed_by} (fallback: {exc})"
            return offline
        return Reconciliation(a, b, detected, self.llm.label, reply.merged_conclusion,
                              _strings(reply.boundary_conditions), _strings(reply.conditions_a),
                              _strings(reply.conditions_b), reply.real_conflict, reply.confidence, comparison)


def _offline(a: Statement, b: Statement, detected: str, comparison: dict[str, Any]) -> Reconciliation:
    return Reconciliation(a, b, detected, comparison["reviewed_by"], comparison["verdict"],
                          comparison.get("boundary_conditions", []), comparison["a"]["conditions"],
                          comparison["b"]["conditions"], None, None, comparison)


def _strings(values: list[str]) -> list[str]:
    return [v.strip() for v in values if v.strip()]


def _side(statement: Statement, with_text: bool = False) -> dict[str, Any]:
    side = {"key": statement.key, "source": statement.source, "citation": statement.citation}
    if with_text:
        side["text"] = truncate(statement.text, 3000)
    else:
        side["excerpt"] = truncate(statement.text, 300)
    return side
