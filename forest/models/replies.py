"""The shapes an LLM's answer must have where it is data, one pydantic model each.

A provider sends the model's JSON schema the way its API takes it (forest.models.llm) and the
reply is validated against it. Rules that depend on the call (a summary's length limit, the node
ids the agent was shown) read the validation context the caller passes to `ask`.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

NonEmpty = Field(min_length=1)


class Reply(BaseModel):
    """Base of every reply: unknown keys are ignored (models add their own), strings are stripped."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)


def _context(info: ValidationInfo, key: str) -> Any:
    return (info.context or {}).get(key)


class SummaryReply(Reply):
    """PROMPT_CREATE_LEAF_SUMMARY / PROMPT_CREATE_PARENT_SUMMARY: the forest spec's summary prompts."""

    summary: str = NonEmpty

    @field_validator("summary")
    @classmethod
    def _within_limit(cls, summary: str, info: ValidationInfo) -> str:
        limit = _context(info, "max_chars")
        if limit is not None and len(summary) > limit:
            raise ValueError(f"summary has {len(summary)} characters, the limit is {limit}")
        return summary


class TitledSummaryReply(SummaryReply):
    """A summary node without a heading: the model names it too."""

    title: str = NonEmpty


class StepPayload(Reply):
    final_answer: str | None = None
    cited_node_ids: list[int] = []
    node_id_to_explore: int | None = None
    reasoning_for_exploration: str = ""


class AgentStep(Reply):
    """PROMPT_AGENTIC_REASONING_LOOP, the forest spec's ANSWER or EXPLORE. Context: `passages`
    (the leaf ids it may cite) and `explorable` (the summary node ids it may open)."""

    action: Literal["ANSWER", "EXPLORE"]
    payload: StepPayload

    @model_validator(mode="after")
    def _ids_from_the_context(self, info: ValidationInfo) -> AgentStep:
        payload = self.payload
        if self.action == "ANSWER":
            if not payload.final_answer:
                raise ValueError("ANSWER needs a non-empty final_answer")
            passages = _context(info, "passages")
            if passages is not None and any(i not in passages for i in payload.cited_node_ids):
                raise ValueError(f"cited_node_ids must list LEAF_CHUNK ids from the context ({sorted(passages)})")
            return self
        if payload.node_id_to_explore is None:
            raise ValueError("EXPLORE needs an integer node_id_to_explore")
        explorable = _context(info, "explorable")
        if explorable is not None and payload.node_id_to_explore not in explorable:
            raise ValueError(f"node {payload.node_id_to_explore} is not an unexplored summary node in the context")
        return self


class ReconciliationReply(Reply):
    """PROMPT_LLM_MEDIATED_RECONCILIATION: the DeepScholar spec's merged conclusion with its boundaries."""

    merged_conclusion: str = NonEmpty
    boundary_conditions: list[str]
    conditions_a: list[str] = []
    conditions_b: list[str] = []
    real_conflict: bool | None = None
    confidence: Literal["high", "medium", "low"] | None = None

    @field_validator("confidence", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value


class Finding(Reply):
    text: str
    source: str | None = None


class FlushReply(Reply):
    """The DeepScholar spec's pre-compaction flush: findings worth keeping and a summary."""

    findings: list[Finding]
    summary: str = NonEmpty


class PrivacyReply(Reply):
    """The privacy classifier (NeuroMemory v2 spec): PRIVATE or PUBLIC, with a reason."""

    label: Literal["PRIVATE", "PUBLIC"]
    reason: str = ""

    @field_validator("label", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value


class Triple(Reply):
    source: str = NonEmpty
    relationship: str = NonEmpty
    target: str = NonEmpty


class TriplesReply(Reply):
    """Knowledge-graph extraction: the NeuroMemory v2 spec's (source, relationship, target) triples."""

    triples: list[Triple]


class UpdateReply(Reply):
    """Which earlier statements a later one replaces (forest.personal.updates). Context: `earlier`,
    how many were numbered."""

    replaces: list[int]   # required: a reply without it is no decision (the rules decide then)
    reason: str = ""

    @field_validator("replaces")
    @classmethod
    def _numbers_shown(cls, replaces: list[int], info: ValidationInfo) -> list[int]:
        shown = _context(info, "earlier")
        if shown is not None and any(not 1 <= n <= shown for n in replaces):
            raise ValueError(f"replaces must list numbers of the earlier statements shown (1 to {shown})")
        return sorted(set(replaces))

