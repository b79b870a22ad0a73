"""The agent loop in words: each step as a sentence (what was chosen, why, with its title, score and
pages), the answer with numbered citations that name the paper, and the whole run as Markdown.

Pure functions over an AgentState, so the workbench, the CLI and MCP can all say the same thing.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from forest.recall.agent import ANSWER, OFFLINE_LABEL, AgentState, Step
from forest.records import Archive, cite
from forest.text import truncate

# "[node 42, p. 7, §3.2 Model]" (the offline answer) or "(node 42)" (how Claude tends to refer)
_MARKER = re.compile(r"\[node (\d+)(?:,[^\]]*)?\]|\(node (\d+)\)")


@dataclass(frozen=True)
class Citation:
    number: int
    node_id: int
    document: str        # "Buck et al. (2018)" for a paper of the researcher's library, else its title (or file name)
    where: str           # "p. 7, §3.2 Model"
    passage: str

    @property
    def label(self) -> str:
        """'Buck et al. (2018), p. 7, §3.2 Model', or 'Attention Is All You Need, p. 7, §3.2 Model'."""
        return ", ".join(part for part in (self.document, self.where) if part)


def citations(state: AgentState, archives: Mapping[int, Archive]) -> list[Citation]:
    """The answer's cited passages, numbered in the order the answer gives them."""
    out = []
    for number, cited in enumerate(state.cited, start=1):
        node = cited.node
        archive = archives.get(node.archive_id)
        # a paper from the researcher's library by author and year, else by its title
        document = node.work or (archive.document_title(node.first_leaf) if archive else f"archive {node.archive_id}")
        out.append(Citation(number, node.id, document, cite(node.page_start, node.page_end, node.section),
                            node.content))
    return out


def numbered_answer(state: AgentState, cites: list[Citation], link: Callable[[Citation], str] | None = None) -> str:
    """The answer with each '[node 42, ...]' marker replaced by its number: '[1]', or a Markdown
    link when `link` gives the citation's target."""
    by_node = {c.node_id: c for c in cites}

    def number(match: re.Match[str]) -> str:
        cite = by_node.get(int(match.group(1) or match.group(2)))
        if cite is None:
            return match.group(0)
        return f"[\\[{cite.number}\\]]({link(cite)})" if link else f"[{cite.number}]"

    return _MARKER.sub(number, state.answer or "")


def link_markers(text: str, link: Callable[[int], str | None]) -> str:
    """Free text that cites passages (a remembered answer, a note's source) with each '[node 42,
    ...]' marker replaced by `link(node_id)`; a marker `link` gives None for stays as written."""
    return _MARKER.sub(lambda m: link(int(m.group(1) or m.group(2))) or m.group(0), text)


def sources_markdown(cites: list[Citation], link: Callable[[Citation], str] | None = None,
                     permalink: Callable[[Citation], str] | None = None) -> str:
    """The numbered list under an answer: each source's paper, page and section; a link to it
    when `link` gives the target (and a 🔗 to its own address when `permalink` gives one), else its
    node id and the passage quoted."""
    if link:
        return "\n".join(f"{c.number}. [{c.label}]({link(c)})" + (f" [🔗]({permalink(c)})" if permalink else "")
                         for c in cites)
    return "\n".join(f"{c.number}. {c.label} (node {c.node_id})\n   > {truncate(' '.join(c.passage.split()), 400)}"
                     for c in cites)


# An LLM's label is "<provider>:<model>" (forest.models.llm).
PROVIDER_NAMES = {"claude": "Claude", "openai": "an OpenAI-compatible model"}


def decided_by(source: str) -> str:
    """Who made a decision, for a reader: 'Claude (claude-x)', 'the offline policy', 'you'."""
    if source == "user":
        return "you"
    provider, _, model = source.partition(":")
    if provider in PROVIDER_NAMES and model:
        return f"{PROVIDER_NAMES[provider]} ({model})"
    if source.startswith(OFFLINE_LABEL):
        reason = source.removeprefix(OFFLINE_LABEL).strip(" ()")
        if reason.startswith("fallback:"):
            return f"the offline policy, because the LLM could not decide ({reason.removeprefix('fallback:').strip()})"
        return f"the offline policy ({reason})" if reason else "the offline policy"
    return source


def _named(entry: Mapping[str, Any]) -> str:
    """A node as a reader knows it: its title (a passage: its page and section)."""
    return f"**{entry.get('title') or entry.get('citation') or entry.get('node_type', 'node')}**"


def _where(entry: Mapping[str, Any]) -> str:
    """'pp. 3-4, 12 passages, node 42': where the node is and how much lies below it."""
    parts = [entry.get("citation") if entry.get("title") else "",
             f"{entry['leaf_count']} passages" if entry.get("leaf_count") else "", f"node {entry['node_id']}"]
    return ", ".join(p for p in parts if p)


def step_sentence(step: Step, threshold: float) -> str:
    """One step in plain words (Markdown): what the agent did, who decided, and why; for an
    opened section, how it scored against the threshold and which of its parts were kept."""
    decision = step.decision
    who = decided_by(decision.source)
    reason = decision.reasoning.strip().rstrip(".")
    if decision.action == ANSWER:
        count = len(decision.cited_ids)
        cited = "nothing it read" if count == 0 else f"{count} passage{'s' if count > 1 else ''} it read"
        return f"Answered, quoting {cited}; decided by {who}" + (f", because {reason}." if reason else ".")
    chosen = next((c for c in step.context if c["node_id"] == decision.node_id), {"node_id": decision.node_id})
    sentence = f"Opened {_named(chosen)} ({_where(chosen)})"
    if "score" in chosen:
        score = chosen["score"]
        if score >= threshold:
            sentence += f", which scored {score:.2f} for the question (the threshold is {threshold:.2f})"
        else:
            sentence += (f", although it scored only {score:.2f} for the question, under the {threshold:.2f} "
                         "threshold: the agent goes where a passage it looks for lies, and a section can "
                         "score low as a whole while holding it")
    sentence += f". Chosen by {who}" + (f": {reason}." if reason and decision.source != "user" else ".")
    if step.children:
        kept = [c for c in step.children if c.get("kept")]
        names = ", ".join(f"{_named(c)} ({c['score']:.2f})" for c in kept[:4]) + (" …" if len(kept) > 4 else "")
        sentence += (f" Of its {len(step.children)} parts it kept {len(kept)}, those scoring at least "
                     f"{threshold:.2f} or holding a passage it looks for: {names}.")
    return sentence


def transcript_markdown(state: AgentState, cites: list[Citation]) -> str:
    """The run as a Markdown document: question, answer with numbered citations, the sources
    (paper, page, section, the passage), and the steps in prose."""
    parts = [f"# {state.question}", numbered_answer(state, cites) or "_(no answer yet)_"]
    if cites:
        parts.append("## Sources\n\n" + sources_markdown(cites))
    if state.answered_by:
        parts.append(f"_Answered by {decided_by(state.answered_by)}._")
    if state.steps:
        parts.append("## Steps\n\n" + "\n".join(f"{s.number}. {step_sentence(s, state.threshold)}" for s in state.steps))
    return "\n\n".join(parts) + "\n"
