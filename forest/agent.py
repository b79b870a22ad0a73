"""The ANSWER/EXPLORE loop of seed 000 §3.2 and §5.2 as a step-wise state machine.

`start` retrieves the representative nodes; each `step` asks the policy for a decision and, on
EXPLORE, replaces the explored node in the context by its children that clear the threshold
(drill-down, one level). The workbench steps through it by hand (and may override a decision);
MCP's ask_memory and the OpenAI endpoint call `run`.

Policies: Claude with PROMPT_AGENTIC_REASONING_LOOP when a key is set; offline a deterministic
policy that goes where the search hits lie (it explores the summary node that holds the best
passage not read yet, a section at a time), then answers extractively from the passages read,
labelled as such.
"""
from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from forest.errors import InvalidInput
from forest.llm import ClaudeJSON, LLMError
from forest.prompts import agent_loop_prompt
from forest.records import MemoryNode, ScoredNode
from forest.text import content_terms, split_sentences, term_coverage, truncate

log = logging.getLogger("forest.agent")

ANSWER, EXPLORE = "ANSWER", "EXPLORE"
OFFLINE_LABEL = "offline:deterministic-policy"
EXTRACTIVE_NOTE = "Extractive answer (offline, no LLM): sentences quoted from the cited passages."
MAX_ANSWER_SENTENCES = 4
GUIDING_HITS = 3   # the offline policy reads down to the best few search hits


@dataclass
class ContextNode:
    node: MemoryNode
    score: float
    hint: str

    def to_dict(self) -> dict[str, Any]:
        """What the policy (and a person stepping through) sees of a node: a summary node's title,
        summary, pages and leaf count; a leaf's summary and citation (its text is added for
        Claude)."""
        shown = {"node_id": self.node.id, "node_type": self.node.node_type, "summary": self.node.summary,
                 "hint": self.hint, "score": self.score, "archive_id": self.node.archive_id,
                 "citation": self.node.citation, "page_start": self.node.page_start, "page_end": self.node.page_end}
        if not self.node.is_leaf:
            shown.update(title=self.node.title, leaf_count=self.node.leaf_count)
        return shown


@dataclass
class Decision:
    action: str                      # ANSWER or EXPLORE
    source: str                      # "claude:<model>", OFFLINE_LABEL, or "user" (a manual override)
    node_id: int | None = None       # EXPLORE
    reasoning: str = ""
    final_answer: str = ""           # ANSWER
    cited_ids: list[int] = field(default_factory=list)   # ANSWER: the passages the answer rests on

    def to_seed_json(self) -> dict[str, Any]:
        """The decision as the seed's output format (§5.2.1), with the passages cited."""
        if self.action == ANSWER:
            return {"action": ANSWER, "payload": {"final_answer": self.final_answer, "cited_node_ids": self.cited_ids}}
        return {"action": EXPLORE, "payload": {"node_id_to_explore": self.node_id,
                                               "reasoning_for_exploration": self.reasoning}}


@dataclass
class Step:
    number: int
    context: list[dict[str, Any]]                 # what the policy saw
    decision: Decision
    children: list[dict[str, Any]] = field(default_factory=list)  # drill-down result, with scores

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.number, "context": self.context, "decision": self.decision.to_seed_json(),
                "decided_by": self.decision.source, "children": self.children}


@dataclass
class AgentState:
    model_id: str
    question: str
    threshold: float
    context: list[ContextNode]
    steps: list[Step] = field(default_factory=list)
    explored: list[int] = field(default_factory=list)
    answer: str | None = None
    answered_by: str | None = None
    cited: list[ContextNode] = field(default_factory=list)
    # A research session's directives, knowledge and briefing: first in every prompt (seed 002).
    preamble: str = ""
    hits: list[ScoredNode] = field(default_factory=list)   # the search hits behind the context, best first

    @property
    def done(self) -> bool:
        return self.answer is not None

    @property
    def explorable(self) -> list[ContextNode]:
        """The summary nodes in the context not explored yet."""
        return [c for c in self.context if not c.node.is_leaf and c.node.id not in self.explored]

    def to_dict(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "question": self.question, "threshold": self.threshold,
                "done": self.done, "answer": self.answer, "answered_by": self.answered_by,
                "cited_nodes": [c.to_dict() for c in self.cited],
                "context": [c.to_dict() for c in self.context], "explored": self.explored,
                "trace": [s.to_dict() for s in self.steps], "preamble": self.preamble}


class Policy(ABC):
    label: str

    @abstractmethod
    def decide(self, state: AgentState) -> Decision: ...


class OfflinePolicy(Policy):
    """Deterministic: explore the summary node in the context that holds the best search hit not
    read yet (GUIDING_HITS of them); once those passages are in the context (or none is under a
    node left to explore), answer from the passages read."""

    label = OFFLINE_LABEL

    def decide(self, state: AgentState) -> Decision:
        explorable = state.explorable
        for hit in _unread_hits(state):
            holder = next((c for c in explorable if c.node.archive_id == hit.node.archive_id
                           and hit.node.path.startswith(c.node.path)), None)
            if holder is not None:
                where = ", ".join(p for p in (holder.node.title, holder.node.citation) if p) or f"node {holder.node.id}"
                return Decision(EXPLORE, self.label, node_id=holder.node.id,
                                reasoning=f"{where} holds the best passage not read yet "
                                          f"(search score {hit.relevance_score:.2f}); exploring node {holder.node.id}")
        return answer_from_evidence(state, self.label)


class ClaudePolicy(Policy):
    """PROMPT_AGENTIC_REASONING_LOOP with Claude; a bad or failed reply falls back to the offline
    policy for that step (logged, and labelled in the trace)."""

    def __init__(self, llm: ClaudeJSON) -> None:
        self.llm = llm
        self.label = f"claude:{llm.model}"
        self.fallback = OfflinePolicy()

    def decide(self, state: AgentState) -> Decision:
        explorable = {c.node.id for c in state.explorable}
        nodes = [{**c.to_dict(), **({"content": truncate(c.node.content, 1500)} if c.node.is_leaf else {})}
                 for c in state.context]

        passages = {c.node.id for c in state.context if c.node.is_leaf}

        def validate(reply: dict[str, Any]) -> str | None:
            payload = reply.get("payload")
            if reply.get("action") not in (ANSWER, EXPLORE) or not isinstance(payload, dict):
                return "action must be ANSWER or EXPLORE with a payload object"
            if reply["action"] == ANSWER:
                if not (isinstance(payload.get("final_answer"), str) and payload["final_answer"].strip()):
                    return "ANSWER needs a non-empty final_answer"
                cited = payload.get("cited_node_ids", [])
                if not isinstance(cited, list) or not all(isinstance(i, int) and i in passages for i in cited):
                    return f"cited_node_ids must list LEAF_CHUNK ids from the context ({sorted(passages)})"
                return None
            try:
                node_id = int(payload.get("node_id_to_explore"))
            except (TypeError, ValueError):
                return "EXPLORE needs an integer node_id_to_explore"
            return None if node_id in explorable else f"node {node_id} is not an unexplored summary node in the context"

        try:
            reply = self.llm.ask(agent_loop_prompt(state.question, nodes, state.preamble), validate)
        except LLMError as exc:
            log.warning("Claude could not decide (%s); using the offline policy for this step", exc)
            decision = self.fallback.decide(state)
            decision.source = f"{OFFLINE_LABEL} (fallback: {exc})"
            return decision
        payload = reply["payload"]
        if reply["action"] == ANSWER:
            return Decision(ANSWER, self.label, final_answer=payload["final_answer"].strip(),
                            cited_ids=list(dict.fromkeys(payload.get("cited_node_ids", []))))
        return Decision(EXPLORE, self.label, node_id=int(payload["node_id_to_explore"]),
                        reasoning=str(payload.get("reasoning_for_exploration", "")))


class AgentLoop:
    """Drives the loop over a MemoryForest's retrieve and explore; holds no state of its own."""

    def __init__(self, forest, policy: Policy, max_steps: int = 8) -> None:
        self.forest = forest
        self.policy = policy
        self.max_steps = max_steps

    def start(self, model_id: str, question: str, top_k: int | None = None,
              threshold: float | None = None, preamble: str = "") -> AgentState:
        threshold = self.forest.settings.drill_threshold if threshold is None else threshold
        representatives = self.forest.retrieve(model_id, question, top_k)
        context = [ContextNode(r.node, r.score, r.hint) for r in representatives]
        hits = sorted((h for r in representatives for h in r.hits), key=lambda h: -h.relevance_score)
        return AgentState(model_id, question, threshold, context, preamble=preamble, hits=hits)

    def step(self, state: AgentState, explore_node_id: int | None = None) -> AgentState:
        """One decision. `explore_node_id` overrides the policy (the workbench's 'explore this')."""
        if state.done:
            return state
        seen = [c.to_dict() for c in state.context]
        if explore_node_id is not None:
            if explore_node_id not in {c.node.id for c in state.explorable}:
                raise InvalidInput(f"node {explore_node_id} is not an unexplored summary node in the context")
            decision = Decision(EXPLORE, "user", node_id=explore_node_id, reasoning="chosen by the user")
        elif len(state.steps) >= self.max_steps - 1:
            decision = answer_from_evidence(state, OFFLINE_LABEL + " (step limit)")
        else:
            decision = self.policy.decide(state)
        step = Step(len(state.steps) + 1, seen, decision)
        state.steps.append(step)
        if decision.action == ANSWER:
            state.answer, state.answered_by = decision.final_answer, decision.source
            by_id = {c.node.id: c for c in state.context}
            state.cited = [by_id[i] for i in decision.cited_ids if i in by_id]
            return state
        children = self.forest.explore(state.model_id, decision.node_id, state.question, threshold=0.0)
        guiding = [h.node.path for h in state.hits[:GUIDING_HITS]]
        # what clears the threshold, and whatever leads to one of the best hits
        kept = [c for c in children if c.relevance_score >= state.threshold
                or any(path.startswith(c.node.path) for path in guiding)] or children[:1]
        step.children = [{**ContextNode(c.node, c.relevance_score, "").to_dict(), "kept": c in kept}
                         for c in children]
        hint = f"child of explored node {decision.node_id}"
        position = next(i for i, c in enumerate(state.context) if c.node.id == decision.node_id)
        state.context[position:position + 1] = [ContextNode(c.node, c.relevance_score, hint) for c in kept]
        state.explored.append(decision.node_id)
        return state

    def run(self, model_id: str, question: str, top_k: int | None = None,
            threshold: float | None = None, preamble: str = "") -> AgentState:
        state = self.start(model_id, question, top_k, threshold, preamble)
        while not state.done:
            self.step(state)
        return state


def _unread_hits(state: AgentState) -> list[ScoredNode]:
    """The best hits whose passage is not in the context yet (a summary hit: not explored yet)."""
    in_context = {c.node.id for c in state.context if c.node.is_leaf}
    return [h for h in state.hits[:GUIDING_HITS]
            if h.node.id not in (in_context if h.node.is_leaf else set(state.explored))]


def _evidence(state: AgentState) -> list[ContextNode]:
    """Leaves that clear the threshold or were among the best hits, best first; else the best
    leaves there are."""
    guiding = {h.node.id for h in state.hits[:GUIDING_HITS]}
    leaves = sorted((c for c in state.context if c.node.is_leaf), key=lambda c: -c.score)
    return [c for c in leaves if c.score >= state.threshold or c.node.id in guiding] or leaves[:2]


def answer_from_evidence(state: AgentState, source: str) -> Decision:
    """The offline answer: quoted sentences of the evidence, citing the passages quoted."""
    text, cited = extractive_answer(state.question, _evidence(state))
    return Decision(ANSWER, source, final_answer=text, cited_ids=[c.node.id for c in cited])


def extractive_answer(question: str, evidence: list[ContextNode]) -> tuple[str, list[ContextNode]]:
    """The sentences of the evidence that share most words with the question, each cited, and
    the passages they come from."""
    if not evidence:
        return "The memory holds nothing relevant to this question.", []
    terms = set(content_terms(question))
    candidates = []
    for rank, item in enumerate(evidence):
        for position, sentence in enumerate(split_sentences(item.node.content)):
            candidates.append((term_coverage(terms, sentence), -rank, -position, sentence, item))
    best = sorted(candidates, key=lambda c: c[:3], reverse=True)[:MAX_ANSWER_SENTENCES]
    best.sort(key=lambda c: (-c[1], -c[2]))  # evidence order, then reading order
    lines = [f"- {truncate(sentence, 400)} [node {item.node.id}{', ' + item.node.citation if item.node.citation else ''}]"
             for _, _, _, sentence, item in best]
    cited = list({id(item): item for *_, item in best}.values())
    return EXTRACTIVE_NOTE + "\n" + "\n".join(lines), cited
