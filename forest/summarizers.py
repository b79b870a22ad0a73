"""Summarizers for leaves (raw chunks) and parents (their children's summaries).

The offline default is extractive TextRank and says so in each node's summary_source; Claude is
used when an API key is configured, falling back to TextRank (with a logged warning) on failure.
"""
from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

import networkx as nx

from forest.llm import ClaudeJSON, LLMError
from forest.prompts import leaf_summary_prompt, parent_summary_prompt
from forest.text import cjk_ratio, content_terms, split_sentences, truncate

log = logging.getLogger("forest.summarizers")

EXTRACTIVE_LABEL = "extractive:textrank"


@dataclass(frozen=True)
class Summary:
    text: str
    source: str  # e.g. "extractive:textrank" or "claude:claude-sonnet-4-5"


class Summarizer(ABC):
    max_chars: int = 200

    @abstractmethod
    def summarize_leaf(self, text: str) -> Summary: ...

    @abstractmethod
    def summarize_parent(self, child_summaries: list[str]) -> Summary: ...


class TextRankSummarizer(Summarizer):
    """Deterministic extractive summary: sentences ranked by PageRank over a word-overlap graph."""

    def __init__(self, max_chars: int = 200) -> None:
        self.max_chars = max_chars

    def summarize_leaf(self, text: str) -> Summary:
        return Summary(self._extract(text), EXTRACTIVE_LABEL)

    def summarize_parent(self, child_summaries: list[str]) -> Summary:
        return Summary(self._extract("\n\n".join(child_summaries)), EXTRACTIVE_LABEL)

    def _extract(self, text: str) -> str:
        sentences = split_sentences(text)
        if not sentences:
            return ""
        joiner = "" if cjk_ratio(text) > 0.5 else " "
        whole = joiner.join(sentences)
        if len(whole) <= self.max_chars:
            return whole
        ranks = _textrank(sentences)
        order = sorted(range(len(sentences)), key=lambda i: (-ranks[i], i))
        chosen: list[int] = []
        used = 0
        for i in order:
            cost = len(sentences[i]) + (len(joiner) if chosen else 0)
            if used + cost <= self.max_chars:
                chosen.append(i)
                used += cost
        if not chosen:  # even the best sentence is too long: shorten it
            return truncate(sentences[order[0]], self.max_chars)
        return joiner.join(sentences[i] for i in sorted(chosen))


def _textrank(sentences: list[str]) -> list[float]:
    terms = [set(content_terms(s)) for s in sentences]
    graph = nx.Graph()
    graph.add_nodes_from(range(len(sentences)))
    for i in range(len(sentences)):
        for j in range(i + 1, len(sentences)):
            overlap = len(terms[i] & terms[j])
            if overlap:
                norm = math.log(len(terms[i]) + 1) + math.log(len(terms[j]) + 1)
                graph.add_edge(i, j, weight=overlap / norm)
    if graph.number_of_edges() == 0:
        # No shared words: prefer earlier, then longer-on-content sentences (lead bias).
        return [1.0 / (1 + i) for i in range(len(sentences))]
    ranks = nx.pagerank(graph, weight="weight")
    return [ranks[i] for i in range(len(sentences))]


class ClaudeSummarizer(Summarizer):
    """The seed's PROMPT_CREATE_LEAF_SUMMARY / PROMPT_CREATE_PARENT_SUMMARY through Claude."""

    def __init__(self, client: ClaudeJSON, max_chars: int = 200) -> None:
        self.client = client
        self.max_chars = max_chars
        self.fallback = TextRankSummarizer(max_chars)

    def summarize_leaf(self, text: str) -> Summary:
        return self._ask(leaf_summary_prompt(text, self.max_chars), lambda: self.fallback.summarize_leaf(text))

    def summarize_parent(self, child_summaries: list[str]) -> Summary:
        return self._ask(parent_summary_prompt(child_summaries, self.max_chars),
                         lambda: self.fallback.summarize_parent(child_summaries))

    def _ask(self, prompt: str, fallback) -> Summary:
        try:
            reply = self.client.ask(prompt, self._validate)
        except LLMError as exc:
            log.warning("Claude summary failed, using the extractive summary instead: %s", exc)
            return fallback()
        return Summary(reply["summary"].strip(), f"claude:{self.client.model}")

    def _validate(self, reply: dict) -> str | None:
        summary = reply.get("summary")
        if not isinstance(summary, str) or not summary.strip():
            return "reply has no non-empty 'summary' string"
        if len(summary.strip()) > self.max_chars:
            return f"summary has {len(summary.strip())} characters, the limit is {self.max_chars}"
        return None
