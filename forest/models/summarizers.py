"""Summarizers for leaves (raw chunks) and summary nodes (the text below them, with a title).

The offline default is extractive (TextRank for leaves; for summary nodes the sentences nearest
the node's centroid, see forest.models.extractive) and says so in each node's summary_source; the
configured LLM (Claude, or an OpenAI-compatible server) is used when there is one, falling back to
the extractive summary (with a logged warning) when its answers are unusable. A model server that
does not answer fails the build (ModelUnavailable): nothing of the archive is kept.
"""
from __future__ import annotations

import logging
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import networkx as nx

from forest.models.extractive import TermStats, central_sentences, group_labels, lead_sentences, summary_budget
from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import leaf_summary_prompt, node_summary_prompt
from forest.models.replies import SummaryReply, TitledSummaryReply
from forest.text import cjk_ratio, content_terms, split_sentences, truncate

log = logging.getLogger("forest.models.summarizers")

EXTRACTIVE_LABEL = "extractive:textrank"
EXTRACTIVE_NODE_LABEL = "extractive:centroid"
NODE_SUMMARY_CHARS = 400


@dataclass(frozen=True)
class Summary:
    text: str
    source: str  # e.g. "extractive:textrank" or "claude:claude-sonnet-4-5"
    title: str | None = None   # summary nodes: the heading path, or a label of the content


@dataclass(frozen=True)
class NodeBrief:
    """What a summary node's summary is written from."""

    title: str | None            # heading path ("3 Method › 3.2 Training") or document title; None: label it
    parts: list[str]             # the text under each child, in document order
    weights: list[int]           # leaves under each child
    stats: TermStats = field(repr=False)
    lead: str | None = None      # a document node: its abstract (or opening paragraph), said first
    label: str | None = None     # no heading: the offline name, chosen among its siblings (build)

    @property
    def leaves(self) -> int:
        return sum(self.weights)


class Summarizer(ABC):
    max_chars: int = 200

    @abstractmethod
    def summarize_leaf(self, text: str) -> Summary: ...

    @abstractmethod
    def summarize_node(self, brief: NodeBrief) -> Summary: ...


class TextRankSummarizer(Summarizer):
    """Deterministic extractive summaries: TextRank for leaves (PageRank over a word-overlap
    graph); for summary nodes, centroid sentences covering the children, or a document's lead."""

    def __init__(self, max_chars: int = 200) -> None:
        self.max_chars = max_chars

    def summarize_leaf(self, text: str) -> Summary:
        return Summary(self._extract(text), EXTRACTIVE_LABEL)

    def summarize_node(self, brief: NodeBrief) -> Summary:
        budget = summary_budget(brief.leaves, NODE_SUMMARY_CHARS)
        if brief.lead:
            text = lead_sentences(brief.lead, NODE_SUMMARY_CHARS)
        else:
            text = central_sentences(brief.parts, brief.weights, brief.stats, budget)
        text_below = "\n\n".join(brief.parts)
        title = brief.title or brief.label or group_labels([text_below], brief.stats)[0] or truncate(text_below, 60)
        return Summary(text, EXTRACTIVE_NODE_LABEL, title)

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


class LLMSummarizer(Summarizer):
    """The seed's PROMPT_CREATE_LEAF_SUMMARY / PROMPT_CREATE_PARENT_SUMMARY through the configured LLM."""

    def __init__(self, client: StructuredLLM, max_chars: int = 200) -> None:
        self.client = client
        self.max_chars = max_chars
        self.fallback = TextRankSummarizer(max_chars)

    def summarize_leaf(self, text: str) -> Summary:
        return self._ask(leaf_summary_prompt(text, self.max_chars), lambda: self.fallback.summarize_leaf(text))

    def summarize_node(self, brief: NodeBrief) -> Summary:
        """The seed's parent prompt over the children's text, with the heading path as context;
        without a heading the model also names the node."""
        budget = summary_budget(brief.leaves, NODE_SUMMARY_CHARS)
        parts = [truncate(part, 1500) for part in brief.parts]
        prompt = node_summary_prompt(parts, budget, brief.title, brief.lead)
        fallback = self.fallback.summarize_node(brief)
        summary = self._ask(prompt, lambda: fallback, budget, need_title=brief.title is None)
        if summary is fallback:
            return summary
        return Summary(summary.text, summary.source, brief.title or summary.title)

    def _ask(self, prompt: str, fallback, limit: int | None = None, need_title: bool = False) -> Summary:
        shape = TitledSummaryReply if need_title else SummaryReply
        try:
            reply = self.client.ask(prompt, shape, context={"max_chars": limit or self.max_chars})
        except LLMError as exc:
            log.warning("%s gave no usable summary, using the extractive summary instead: %s", self.client.label, exc)
            return fallback()
        return Summary(reply.summary, self.client.label, getattr(reply, "title", None))
