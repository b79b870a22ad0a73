"""Compaction (DeepScholar spec): when a session's live messages pass a share of the token limit,
the oldest are replaced by a short summary, after the pre-compaction flush has written their
high-value findings to the workspace. Nothing is lost: every message is also an episodic event.

Claude writes the findings and the summary when a key is set; offline, rules pick the sentences
that carry results (numbers, comparisons, negations) with their citations, and the summary is
extractive, labelled as such.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any

from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import compaction_prompt
from forest.models.replies import FlushReply
from forest.research.claims import extract_claims
from forest.research.memory_store import Message
from forest.text import split_sentences, truncate

log = logging.getLogger("forest.research")

OFFLINE_FLUSH = "offline:rules (extractive, no LLM)"
KEEP_SHARE = 0.3        # after compaction the newest messages keep up to this share of the limit
MAX_FINDINGS = 8
SUMMARY_CHARS = 800
# Starts where its blanks start: "\s*" tried from every blank of a run would rescan it (quadratic).
_CITATION = re.compile(r"(?<!\s)\s*\[(node \d+[^\]]*)\]\s*$")


@dataclass
class Flush:
    findings: list[tuple[str, str]]   # (text, source)
    summary: str
    made_by: str


@dataclass
class CompactionReport:
    compacted_message_ids: list[int]
    kept_message_ids: list[int]
    tokens_before: int
    tokens_after: int
    token_limit: int
    findings_added: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    made_by: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"compacted_messages": len(self.compacted_message_ids), "kept_messages": len(self.kept_message_ids),
                "tokens_before": self.tokens_before, "tokens_after": self.tokens_after,
                "token_limit": self.token_limit, "findings_added": self.findings_added,
                "summary": self.summary, "made_by": self.made_by}


def over_threshold(messages: list[Message], token_limit: int, ratio: float) -> bool:
    return sum(m.tokens for m in messages) > ratio * token_limit


def split_old_and_recent(messages: list[Message], token_limit: int) -> tuple[list[Message], list[Message]]:
    """The newest messages that fit in KEEP_SHARE of the limit stay (at least the last one)."""
    kept: list[Message] = []
    budget = KEEP_SHARE * token_limit
    for message in reversed(messages):
        if kept and sum(m.tokens for m in kept) + message.tokens > budget:
            break
        kept.insert(0, message)
    return messages[: len(messages) - len(kept)], kept


class Flusher:
    """Findings and a summary from the messages about to be compacted."""

    def __init__(self, llm: StructuredLLM | None = None) -> None:
        self.llm = llm

    def flush(self, messages: list[Message], existing_findings: list[str], preamble: str = "") -> Flush:
        if self.llm is None:
            return offline_flush(messages, existing_findings)
        shown = [{"role": m.role, "content": truncate(m.content, 3000)} for m in messages]
        try:
            reply = self.llm.ask(compaction_prompt(preamble, shown, existing_findings), FlushReply, max_tokens=2048)
        except LLMError as exc:
            log.warning("%s could not compact (%s); using the offline rules", self.llm.label, exc)
            fallback = offline_flush(messages, existing_findings)
            fallback.made_by = f"{OFFLINE_FLUSH} (fallback: {exc})"
            return fallback
        findings = [(f.text, f.source or "") for f in reply.findings]
        known = {_normal(t) for t in existing_findings}
        findings = [f for f in findings if f[0] and _normal(f[0]) not in known][:MAX_FINDINGS]
        return Flush(findings, truncate(reply.summary, SUMMARY_CHARS), self.llm.label)


def offline_flush(messages: list[Message], existing_findings: list[str]) -> Flush:
    """Sentences of the assistant's messages that state a result (a number, a comparison or a
    negation), with their citation; the summary lists the questions and the first answer lines."""
    known = {_normal(t) for t in existing_findings}
    candidates: list[tuple[int, str, str]] = []
    for message in messages:
        if message.role != "assistant":
            continue
        for line in message.content.splitlines():
            source_match = _CITATION.search(line)
            source = source_match.group(1) if source_match else ""
            body = _CITATION.sub("", line).lstrip("-• ").strip()
            for claim in extract_claims(body):
                weight = 2 * len(claim.measures) + bool(claim.direction) + claim.negated + bool(source)
                if weight and _normal(claim.sentence) not in known:
                    known.add(_normal(claim.sentence))
                    candidates.append((weight, claim.sentence, source))
    candidates.sort(key=lambda c: -c[0])  # stable: equal weights keep conversation order
    findings = [(truncate(text, 400), source) for _, text, source in candidates[:MAX_FINDINGS]]
    questions = [truncate(m.content, 160) for m in messages if m.role == "user"]
    answers = [truncate(_first_statement(m.content), 200) for m in messages if m.role == "assistant"]
    earlier = [truncate(m.content, 300) for m in messages if m.role == "summary"]
    parts = [f"Summary of {len(messages)} earlier messages (offline, extractive; not written by an LLM)."]
    parts += [f"Before that: {' '.join(earlier)}"] if earlier else []
    parts += [f"Questions: {' | '.join(questions)}"] if questions else []
    parts += [f"Answers began: {' | '.join(answers)}"] if answers else []
    return Flush(findings, truncate(" ".join(parts), SUMMARY_CHARS), OFFLINE_FLUSH)


def _first_statement(text: str) -> str:
    """The first sentence that is not an offline-answer label line."""
    for line in text.splitlines():
        body = _CITATION.sub("", line).lstrip("-• ").strip()
        if body and not body.lower().startswith("extractive answer"):
            return split_sentences(body)[0]
    return text


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
