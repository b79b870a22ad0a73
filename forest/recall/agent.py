"""The spec's reasoning loop (ANSWER, or EXPLORE one summary node) as a step-wise state machine.

`start` retrieves the representative nodes; each `step` asks the policy for a decision and, on
EXPLORE, replaces the explored node in the context by its children that clear the threshold
(drill-down, one level). `step` may be given the node to explore (a person's override); the
workbench's Ask page, MCP's ask_memory and the OpenAI endpoint run it to its answer (`finish`,
through MemoryForest.ask), over all of a model_id's archives or the ones chosen.

`start` also picks the guides, the passages to read toward (choose_guides): the passage whose
sentence holds every word of the question closest together first, then the best of the budgeted
context's ranking and of the vector search's, taken in turn. Explored children that lead to a
guide are kept whatever their score; reference lists never are, and are never guides. A question
that asks what a paper is about and names nothing in it (asks_for_overview) starts at the roots
of the papers retrieved, and its guides are their abstracts.

A question asked over several chosen papers (`archive_ids` naming two or more) is retrieved and
guided paper by paper, so the walk reads toward each; the answer speaks of each paper, or says
that nothing in it addresses the question (the LLM is told the papers asked too).

Policies: Claude with PROMPT_AGENTIC_REASONING_LOOP when a key is set; offline a deterministic
policy that goes where the guides lie (it explores the summary node holding the best guide not
read yet, a level at a time, for at most MAX_EXPLORES steps per paper asked once a guide is
read), then answers extractively from the guides it read, quoting the sentences that address the
question (an overview: the abstract's opening sentences), labelled as such. A quoted sentence
reads as one: never a fragment of a sentence begun elsewhere (a passage cut at a column or page
break) nor one ending in a broken word, and table cells only to a question asking for numbers.
"""
from __future__ import annotations

import logging
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise, zip_longest
from typing import Any, Protocol

from forest.errors import InvalidInput
from forest.models.llm import LLMError, StructuredLLM
from forest.models.prompts import agent_loop_prompt
from forest.models.replies import AgentStep
from forest.storage.paths import path_ids
from forest.records import Archive, ContextResult, MemoryNode, Representative, ScoredNode
from forest.references import is_reference_node, looks_like_citations
from forest.text import (STOPWORDS, content_terms, display_title, matching_terms, s_stem, split_sentences,
                         term_coverage, tokenize, truncate)

log = logging.getLogger("forest.recall.agent")

ANSWER, EXPLORE = "ANSWER", "EXPLORE"
OFFLINE_LABEL = "offline:deterministic-policy"
EXTRACTIVE_NOTE = "Extractive answer (offline, no LLM): sentences quoted from the cited passages."
NOTHING_RELEVANT = "The memory holds nothing relevant to this question."
MAX_ANSWER_SENTENCES = 4
# A sentence addresses the question when it holds at least this share of the question's words
# that the best sentence holds (and one at least); chosen on QASPER dev papers, checked on
# held-out ones (bench/eval_answers.py).
ADDRESS_SHARE = 0.5
OVERVIEW_SENTENCES = 3   # an abstract's opening sentences, the lead an overview quotes
HINT_OVERVIEW = "The paper's root: an overview question is answered from its abstract."
# Words that ask for a paper's gist without naming anything in it ("What is this paper about?").
_OVERVIEW_CUES = frozenset("about summarize summarise summary overview gist tldr".split())
_GENERIC = frozenset(
    "paper papers article document documents work study report text it this about summarize summarise summary "
    "overview gist tldr main idea ideas topic topics describe give tell me briefly brief short".split())
GUIDES = 3         # the passages the offline policy reads toward (each paper asked: its share, rounded up)
# The offline policy's budget, per paper asked: a 15-page paper's passage is three levels below its
# root (paper, section, subsection), and what was read by then is what it answers from.
MAX_EXPLORES = 3
NOTHING_IN_PAPER = "Nothing in {paper} addresses this."
# A table read as text: two numbers side by side with only a space between ("0.758 0.853"), as a
# PDF gives a table's rows; prose separates numbers by words or commas.
_NUMBER = r"[-+±]?\d+(?:[.,]\d+)*%?"
_CELL_PAIR = re.compile(rf"(?<![^\s(]){_NUMBER}\s+{_NUMBER}(?![^\s)])")
# the rest of a row's numbers, each run of blanks entered once, from its start (no rescan)
_MORE_CELLS = re.compile(rf"(?:(?<!\s)\s+{_NUMBER}(?![^\s)]))*")
_NUMBERS = re.compile(rf"(?<![\w.,]){_NUMBER}(?!\w)")
_BROKEN_END = re.compile(r"[^\W\d_]-$")          # "the shared en-": a word broken at a line end
# A question asking for a quantity, the cue for quoting table cells: "how many/much/large/well ...",
# or a measure named (bench/eval_answer_form.py measures it against QASPER's numeric answers).
_HOW_MUCH = frozenset("many much big large long well fast better good high low small".split())
_QUANTITIES = frozenset("accuracy accuracies f1 score scores precision recall bleu rouge meteor perplexity auc "
                        "percentage rate error performance results improvement size number".split())


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
    source: str                      # "<provider>:<model>" (an LLM), OFFLINE_LABEL, or "user" (a manual override)
    node_id: int | None = None       # EXPLORE
    reasoning: str = ""              # why: an EXPLORE's choice, or what made the policy answer
    final_answer: str = ""           # ANSWER
    cited_ids: list[int] = field(default_factory=list)   # ANSWER: the passages the answer rests on

    def to_seed_json(self) -> dict[str, Any]:
        """The decision in the spec's loop-prompt format ({action, payload}), with the passages cited."""
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
                "decided_by": self.decision.source, "reasoning": self.decision.reasoning,
                "children": self.children}


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
    # A research session's directives, knowledge and briefing: first in every prompt (DeepScholar spec).
    preamble: str = ""
    guides: list[ScoredNode] = field(default_factory=list)   # passages to read toward, best first
    archive_ids: tuple[int, ...] | None = None   # the archives asked over; None: all of the model_id's
    overview: bool = False   # "what is this paper about?": answered from the abstracts' opening sentences
    # archive id -> name of each paper, when `archive_ids` names several: the answer speaks of each
    papers: dict[int, str] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.answer is not None

    @property
    def explorable(self) -> list[ContextNode]:
        """The summary nodes in the context not explored yet."""
        return [c for c in self.context if not c.node.is_leaf and c.node.id not in self.explored]

    def to_dict(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "question": self.question, "threshold": self.threshold,
                "archive_ids": None if self.archive_ids is None else list(self.archive_ids),
                "done": self.done, "answer": self.answer, "answered_by": self.answered_by,
                "guides": [g.node.id for g in self.guides], "overview": self.overview,
                "papers": [{"archive_id": a, "name": name} for a, name in self.papers.items()],
                "cited_nodes": [c.to_dict() for c in self.cited],
                "context": [c.to_dict() for c in self.context], "explored": self.explored,
                "trace": [s.to_dict() for s in self.steps], "preamble": self.preamble}


class Policy(ABC):
    label: str

    @abstractmethod
    def decide(self, state: AgentState) -> Decision: ...


class OfflinePolicy(Policy):
    """Deterministic: explore the summary node in the context whose subtree holds the best guides
    not read yet (ties: the node's own score), and say so, naming any node in view that scored
    higher and why it was passed over; answer from the guides read once every guide is read, or
    MAX_EXPLORES steps are taken after the first guide was read, or no node left leads to a guide
    in the steps left. Following the best-scoring section instead (the guides only breaking ties)
    found less evidence and lower answer-F1 on QASPER dev papers (docs/answers.md)."""

    label = OFFLINE_LABEL

    def decide(self, state: AgentState) -> Decision:
        read = {c.node.id for c in state.context if c.node.is_leaf}
        unread = [(rank, g.node) for rank, g in enumerate(state.guides, 1) if g.node.id not in read]
        wanted = _count(len(state.guides), "passage")
        if not unread:
            return answer_from_evidence(state, self.label, f"it had read the {wanted} it was looking for")
        # Until a guide is read the budget does not bind: a deeper tree still gets its first passage.
        budgeted = len(unread) < len(state.guides)
        left = MAX_EXPLORES * max(1, len(state.papers)) - len(state.explored)
        if budgeted and left <= 0:
            return answer_from_evidence(state, self.label, f"it had opened {_count(len(state.explored), 'section')}, "
                                        "as many as it opens once it has read a passage it was looking for")
        best, best_key, best_held, leading = None, None, [], 0
        for candidate in state.explorable:
            held = [(rank, g) for rank, g in unread if _holds(candidate.node, g)
                    and (not budgeted or g.depth - candidate.node.depth <= left)]
            if not held:
                continue
            key = self.priority(candidate, held)
            if best_key is None or key > best_key:
                best, best_key, best_held = candidate, key, held
            leading += 1
        if best is None:
            return answer_from_evidence(
                state, self.label, f"no section left to open leads to another of the {wanted} it was looking for"
                + (f" within {_count(left, 'more step')}" if budgeted else ""))
        why = _why_explore(best_held, leading, state.overview)
        higher = [c for c in state.explorable if c.score > best.score]
        if higher:   # say why the node it scored highest was passed over
            top = max(higher, key=lambda c: c.score)
            inside = [rank for rank, g in unread if _holds(top.node, g)]
            why += (f'; "{top.node.name}" scored higher ({top.score:.2f}) but holds '
                    + (f"only the {_ORDINAL.get(inside[0], f'no. {inside[0]}')} match" if inside
                       else "none of the passages found to match the question"))
        return Decision(EXPLORE, self.label, node_id=best.node.id, reasoning=why)

    @staticmethod
    def priority(candidate: ContextNode, held: list[tuple[int, MemoryNode]]) -> tuple[float, float]:
        """Which node to open first: the one holding the better guides, each weighing 1/rank (#1
        alone outweighs #2 and #3 together), then the one scoring higher."""
        return sum(1 / rank for rank, _ in held), candidate.score


_ORDINAL = {1: "best", 2: "second-best", 3: "third-best"}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _why_explore(held: list[tuple[int, MemoryNode]], leading: int, overview: bool) -> str:
    """Why the offline policy opens a node, in words: which of the passages it looks for (the
    ones search found matching the question best, or an overview's abstracts) lie inside, and,
    when other nodes lead to some too, that none of them holds a better one."""
    found = "; ".join(("the opening of a paper asked about" if overview else
                       f"the {_ORDINAL.get(rank, f'no. {rank}')} match for the question")
                      + f" ({g.citation or f'node {g.id}'})" for rank, g in held)
    why = f"inside it lie{'s' if len(held) == 1 else ''} {found}, not read yet"
    if leading > 1:
        why += f"; none of the other {leading - 1} nodes leading to such passages holds a better match"
    return why


class LLMPolicy(Policy):
    """PROMPT_AGENTIC_REASONING_LOOP with the configured LLM; an unusable reply falls back to the
    offline policy for that step (logged, and labelled in the trace)."""

    def __init__(self, llm: StructuredLLM) -> None:
        self.llm = llm
        self.label = llm.label
        self.fallback = OfflinePolicy()

    def decide(self, state: AgentState) -> Decision:
        explorable = {c.node.id for c in state.explorable}
        nodes = [{**c.to_dict(), **({"content": truncate(c.node.content, 1500)} if c.node.is_leaf else {})}
                 for c in state.context]

        passages = {c.node.id for c in state.context if c.node.is_leaf}
        try:
            papers = [{"archive_id": a, "title": name} for a, name in state.papers.items()]
            reply = self.llm.ask(agent_loop_prompt(state.question, nodes, state.preamble, papers), AgentStep,
                                 context={"passages": passages, "explorable": explorable})
        except LLMError as exc:
            log.warning("%s could not decide (%s); using the offline policy for this step", self.label, exc)
            decision = self.fallback.decide(state)
            decision.source = f"{OFFLINE_LABEL} (fallback: {exc})"
            return decision
        payload = reply.payload
        if reply.action == ANSWER:
            return Decision(ANSWER, self.label, final_answer=payload.final_answer,
                            cited_ids=list(dict.fromkeys(payload.cited_node_ids)))
        return Decision(EXPLORE, self.label, node_id=payload.node_id_to_explore,
                        reasoning=payload.reasoning_for_exploration)


class ForestReader(Protocol):
    """What the loop reads of a model_id's forest (MemoryForest is one): searches, a node's
    children, whole trees, and the threshold a drill-down keeps children by."""

    drill_threshold: float

    def retrieve(self, model_id: str, query: str, top_k: int | None = None, mode: str | None = None,
                 archive_ids: Sequence[int] | None = None) -> list[Representative]: ...

    def context(self, model_id: str, question: str, budget_tokens: int | None = None, top_k: int | None = None,
                mode: str | None = None, archive_ids: Sequence[int] | None = None) -> ContextResult: ...

    def search(self, model_id: str, query: str, top_k: int | None = None, mode: str = "vector",
               archive_ids: Sequence[int] | None = None) -> list[ScoredNode]: ...

    def explore(self, model_id: str, node_id: int, query: str, threshold: float | None = None) -> list[ScoredNode]: ...

    def archives(self, model_id: str) -> list[Archive]: ...

    def tree(self, model_id: str, archive_id: int) -> list[MemoryNode]: ...

    def node(self, model_id: str, node_id: int, full_text: bool = False) -> MemoryNode: ...


class AgentLoop:
    """Drives the loop over a forest's retrieve, context and explore; holds no state of its own."""

    def __init__(self, forest: ForestReader, policy: Policy, max_steps: int = 8) -> None:
        self.forest = forest
        self.policy = policy
        self.max_steps = max_steps

    def start(self, model_id: str, question: str, top_k: int | None = None,
              threshold: float | None = None, preamble: str = "",
              archive_ids: tuple[int, ...] | None = None) -> AgentState:
        """Retrieve over the model_id's archives (`archive_ids` only, if given) and pick the guides;
        over several chosen papers, paper by paper (each its share of the guides), so that one
        paper's better matches do not crowd the others out."""
        threshold = self.forest.drill_threshold if threshold is None else threshold
        papers = self._paper_names(model_id, archive_ids)
        scopes = [(archive_id,) for archive_id in papers] or [archive_ids]
        found = [self._representatives(model_id, question, top_k, scope) for scope in scopes]
        representatives = found[0]
        if papers:   # the papers in order of their best match, their representatives together, best first
            order = sorted(range(len(scopes)), key=lambda i: -max((r.score for r in found[i]), default=0.0))
            scopes, found = [scopes[i] for i in order], [found[i] for i in order]
            papers = {scope[0]: papers[scope[0]] for scope in scopes}
            representatives = sorted((r for reps in found for r in reps), key=lambda r: -r.score)
        if asks_for_overview(question):
            return self._overview(model_id, question, threshold, representatives, preamble, archive_ids, papers)
        share = math.ceil(GUIDES / len(scopes))
        per_scope = [self._guides(model_id, question, top_k, scope, reps)[:share] for scope, reps in zip(scopes, found)]
        guides = [g for turn in zip_longest(*per_scope) for g in turn if g is not None]
        context = [ContextNode(r.node, r.score, r.hint) for r in representatives]
        return AgentState(model_id, question, threshold, context, preamble=preamble, archive_ids=archive_ids,
                          guides=guides, papers=papers)

    def _representatives(self, model_id: str, question: str, top_k: int | None,
                         archive_ids: tuple[int, ...] | None) -> list[Representative]:
        # a reference list matches every question that names a method or a dataset: never a start
        return [r for r in self.forest.retrieve(model_id, question, top_k, archive_ids=archive_ids)
                if not is_reference_node(r.node)]

    def _guides(self, model_id: str, question: str, top_k: int | None, archive_ids: tuple[int, ...] | None,
                representatives: list[Representative]) -> list[ScoredNode]:
        ranked = self.forest.context(model_id, question, top_k=top_k, archive_ids=archive_ids).leaves
        words = self.forest.search(model_id, question, top_k, "bm25", archive_ids)
        return guides_under(question, representatives, ranked, words)

    def _paper_names(self, model_id: str, archive_ids: tuple[int, ...] | None) -> dict[int, str]:
        """archive id -> what the answer calls the paper (how the library cites it, else its title),
        when the question is asked over several chosen papers; else nothing."""
        if archive_ids is None or len(set(archive_ids)) < 2:
            return {}
        archives = {a.id: a for a in self.forest.archives(model_id)}
        # a PDF title can carry its footnote mark ("... from Crowd Annotations∗")
        return {a: archives[a].cite_as or truncate(display_title(archives[a].document_title(0)).rstrip(" *∗†‡"), 80)
                for a in dict.fromkeys(archive_ids)}

    def _overview(self, model_id: str, question: str, threshold: float, representatives: list[Representative],
                  preamble: str, archive_ids: tuple[int, ...] | None, papers: dict[int, str]) -> AgentState:
        """'What is this paper about?': the guides are the abstracts (else the opening passage) of
        the papers retrieved, best first (of every paper asked, when several were chosen), and the
        walk starts at each paper's root."""
        guides, context = [], []
        retrieved = list(dict.fromkeys(r.node.archive_id for r in representatives))
        for archive_id in list(papers) or retrieved[:GUIDES]:
            score = max((r.score for r in representatives if r.node.archive_id == archive_id), default=0.0)
            opening = _opening_passage(self.forest.tree(model_id, archive_id))
            if opening is None:
                continue
            root = self.forest.node(model_id, path_ids(opening.path)[0])
            guides.append(ScoredNode(opening, score))
            context.append(ContextNode(root, score, HINT_OVERVIEW))
        return AgentState(model_id, question, threshold, context, preamble=preamble, archive_ids=archive_ids,
                          guides=guides, overview=True, papers=papers)

    def step(self, state: AgentState, explore_node_id: int | None = None) -> AgentState:
        """One decision. `explore_node_id` overrides the policy (the workbench's 'explore this')."""
        if state.done:
            return state
        seen = [c.to_dict() for c in state.context]
        if explore_node_id is not None:
            if explore_node_id not in {c.node.id for c in state.explorable}:
                raise InvalidInput(f"node {explore_node_id} is not an unexplored summary node in the context")
            decision = Decision(EXPLORE, "user", node_id=explore_node_id, reasoning="chosen by the user")
        elif len(state.steps) >= self.max_steps + MAX_EXPLORES * max(0, len(state.papers) - 1) - 1:
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
        # what clears the threshold, and whatever leads to a guide
        kept = [c for c in children if not is_reference_node(c.node) and (
                c.relevance_score >= state.threshold or any(_holds(c.node, g.node) for g in state.guides))] \
            or children[:1]
        step.children = [{**ContextNode(c.node, c.relevance_score, "").to_dict(), "kept": c in kept}
                         for c in children]
        hint = f"child of explored node {decision.node_id}"
        position = next(i for i, c in enumerate(state.context) if c.node.id == decision.node_id)
        state.context[position:position + 1] = [ContextNode(c.node, c.relevance_score, hint) for c in kept]
        state.explored.append(decision.node_id)
        return state

    def finish(self, state: AgentState) -> AgentState:
        """The loop's steps from where `state` is to its answer."""
        while not state.done:
            self.step(state)
        return state


def _holds(node: MemoryNode, passage: MemoryNode) -> bool:
    """The passage is the node or lies under it."""
    return node.archive_id == passage.archive_id and passage.path.startswith(node.path)


def guides_under(question: str, representatives: Sequence[Representative], ranked: Sequence[ScoredNode],
                 words: Sequence[ScoredNode]) -> list[ScoredNode]:
    """choose_guides among the passages a walk from the representatives can reach: those of the
    budgeted context's ranking (`ranked`), the representatives' own vector hits, and the BM25 hits
    (`words`) that lie under them; never a reference list."""
    reachable = [s for s in ranked if any(_holds(r.node, s.node) for r in representatives)]
    vector = sorted((h for r in representatives for h in r.hits if h.node.is_leaf and not is_reference_node(h.node)),
                    key=lambda h: -h.relevance_score)
    # the answering sentence is a matter of words: look for it where the words are indexed too
    words = [h for h in words if h.node.is_leaf and not is_reference_node(h.node)
             and any(_holds(r.node, h.node) for r in representatives)]
    return choose_guides(question, reachable, vector, words)


def choose_guides(question: str, context: list[ScoredNode], vector: list[ScoredNode],
                  words: Sequence[ScoredNode] = ()) -> list[ScoredNode]:
    """GUIDES passages: the budgeted context's ranking and the vector search's taken in turn (on
    QASPER each ranking found evidence the other missed, on different papers: docs/benchmarks.md), after
    the passage whose sentence holds every word of the question closest together (the shortest
    answering_span), if any, among those and the BM25 hits (`words`). That sentence is the one
    an extractive answer wants: on 1705.07830 page 5's "SearchQA contains over 140k
    question/answer pairs" ranks fourth, and the abstract's "The reformulation system is trained
    end-to-end ... using policy gradient" is found by its words alone."""
    merged: dict[int, ScoredNode] = {}
    for pair in zip_longest(context, vector):
        merged.update((s.node.id, s) for s in pair if s is not None and s.node.id not in merged)
    terms = matching_terms(question)
    candidates = list(merged.values()) + [s for s in words if s.node.id not in merged]
    spans = [(span, rank) for rank, s in enumerate(candidates)
             if (span := answering_span(terms, s.node.content)) is not None]
    answering = [candidates[min(spans)[1]]] if spans else []
    return answering + [s for s in merged.values() if s not in answering][:GUIDES - len(answering)]


def answering_span(terms: set[str], text: str) -> int | None:
    """The fewest consecutive words of one sentence of the text that hold every term (term
    proximity: the tighter, the likelier the sentence states what the question asks), or None."""
    best = None
    for sentence in split_sentences(text):
        words = [s_stem(t) for t in tokenize(sentence)]
        if not terms or not terms <= set(words):
            continue
        last_seen: dict[str, int] = {}
        for position, word in enumerate(words):
            if word in terms:
                last_seen[word] = position
                if len(last_seen) == len(terms):
                    span = position - min(last_seen.values()) + 1
                    best = span if best is None else min(best, span)
    return best


def asks_for_overview(question: str) -> bool:
    """The question asks what a paper is about and names nothing in it: 'What is this paper
    about?', 'Summarize the paper', 'What is it about?' (not 'What is SearchQA about?')."""
    words = set(tokenize(question))
    return bool(words & _OVERVIEW_CUES) and not (set(content_terms(question)) - _GENERIC)


def _opening_passage(tree: list[MemoryNode]) -> MemoryNode | None:
    """The first passage under an 'Abstract' heading, else the paper's first passage."""
    leaves = sorted((n for n in tree if n.is_leaf), key=lambda n: n.first_leaf or 0)
    abstract = [n for n in leaves if any(h.strip(" .:").lower() == "abstract" for h in n.headings)]
    return (abstract or leaves or [None])[0]


def _evidence(state: AgentState) -> list[ContextNode]:
    """The guides read, best first; else the best passages read (no reference list). Over several
    chosen papers, so for each paper, paper after paper."""
    read = [c for c in state.context if c.node.is_leaf and not is_reference_node(c.node)]
    if not state.papers:
        return _read_evidence(state.guides, read)
    return [c for archive_id in state.papers
            for c in _read_evidence(state.guides, [c for c in read if c.node.archive_id == archive_id])]


def _read_evidence(guides: list[ScoredNode], read: list[ContextNode]) -> list[ContextNode]:
    by_id = {c.node.id: c for c in read}
    wanted = [by_id[g.node.id] for g in guides if g.node.id in by_id]
    return wanted or sorted(read, key=lambda c: -c.score)[:2]


def answer_from_evidence(state: AgentState, source: str, reason: str = "") -> Decision:
    """The offline answer: quoted sentences of the evidence, citing every passage quoted."""
    if state.overview:
        text, cited = overview_answer(_evidence(state), state.papers)
    else:
        text, cited = extractive_answer(state.question, _evidence(state), state.papers)
    return Decision(ANSWER, source, reasoning=reason, final_answer=text, cited_ids=[c.node.id for c in cited])


def extractive_answer(question: str, evidence: list[ContextNode],
                      papers: Mapping[int, str] | None = None) -> tuple[str, list[ContextNode]]:
    """answer_sentences quoted, each cited; and the passages quoted. Over several chosen papers
    (`papers`: archive id -> name), each paper's sentences that address the question under its
    name, MAX_ANSWER_SENTENCES shared out, or that nothing in it does: a sentence addresses the
    question when it holds ADDRESS_SHARE of the question's words that the best sentence read in
    any of the papers holds (a paper's weak match to a word or two is no answer). When none holds
    a word of it, each paper's first sentence read is quoted, as over one paper."""
    if not papers:
        quoted = answer_sentences(question, evidence)
        return _quote(quoted) if quoted else (NOTHING_RELEVANT, [])
    terms, numbers = matching_terms(question), asks_for_numbers(question)
    ranked = {a: _ranked_sentences(terms, numbers, [e for e in evidence if e.node.archive_id == a]) for a in papers}
    best = max((r[0][0] for r in ranked.values() if r), default=0.0)
    each = max(1, MAX_ANSWER_SENTENCES // len(papers))
    return _quote_papers([(name, [(sentence, item) for coverage, *_, sentence, item in ranked[a]
                                  if coverage >= ADDRESS_SHARE * best][:each if best > 0 else 1])
                          for a, name in papers.items()])


def answer_sentences(question: str, evidence: list[ContextNode]) -> list[tuple[str, ContextNode]]:
    """The sentences of the evidence that address the question, each with its passage: the one
    holding most of its words (ties: the better passage, then the earlier sentence), and those
    holding at least ADDRESS_SHARE as many, MAX_ANSWER_SENTENCES at most, best first; never from a
    reference list, nor a sentence that reads as a bibliography entry, nor one that is no
    quotable sentence (quotable). None without evidence."""
    candidates = _ranked_sentences(matching_terms(question), asks_for_numbers(question), evidence)
    if not candidates:
        return []
    best = candidates[0][0]
    quoted = [c for c in candidates if c[0] > 0 and c[0] >= ADDRESS_SHARE * best][:MAX_ANSWER_SENTENCES] \
        or candidates[:1]
    return [(sentence, item) for *_, sentence, item in quoted]


def _ranked_sentences(terms: set[str], numbers: bool, evidence: list[ContextNode]
                      ) -> list[tuple[float, int, int, str, ContextNode]]:
    """(share of the terms held, -passage rank, -position, sentence, passage) of every quotable
    sentence of the evidence's first MAX_ANSWER_SENTENCES passages, best first."""
    passages = [item for item in evidence if not is_reference_node(item.node)][:MAX_ANSWER_SENTENCES]
    candidates = [(term_coverage(terms, text, matching_terms), -rank, -position, text, item)
                  for rank, item in enumerate(passages)
                  for position, sentence in enumerate(split_sentences(item.node.content))
                  if not looks_like_citations(sentence) and (text := quotable(sentence, numbers))]
    return sorted(candidates, key=lambda c: c[:3], reverse=True)


def quotable(sentence: str, numbers: bool = False) -> str | None:
    """The sentence as an answer may quote it, or None. Not a fragment: one continuing a sentence
    begun before it (its first word in lower case and no name: a passage cut at a column or page
    break, the line after a formula) or ending in a broken word ("the shared en-"). Table cells
    read as text ("Full LSTM 0.758 0.853") only when the question asks for numbers, and then only
    up to the cells' end when what follows starts in lower case (the rest of a word the PDF broke
    around the table: "0.792 tained lowest F1")."""
    first = sentence.split(None, 1)[0] if sentence.strip() else ""
    if first[:1].islower() and not any(c.isupper() or c.isdigit() for c in first):
        return None
    if has_table_cells(sentence):
        if not numbers:
            return None
        pairs = list(_CELL_PAIR.finditer(sentence))
        end = _MORE_CELLS.match(sentence, pairs[-1].end()).end() if pairs else len(sentence)
        if sentence[end:].lstrip()[:1].islower():
            sentence = sentence[:end]
    return None if _BROKEN_END.search(sentence) else sentence


def has_table_cells(sentence: str) -> bool:
    """Cells of a table read as text: two numbers side by side ("0.758 0.853"), or numbers among
    words without a single function word ("COMER 88.64% - Hierachical-Attn 86.69%")."""
    if _CELL_PAIR.search(sentence):
        return True
    return len(_NUMBERS.findall(sentence)) >= 2 and not any(t in STOPWORDS for t in tokenize(sentence))


def asks_for_numbers(question: str) -> bool:
    """The question asks for a quantity ("How many ...?", "How large ...?", "What F1 does the LSTM
    get?", "What are the results?"): table cells may answer it."""
    words = tokenize(question)
    return bool(set(words) & _QUANTITIES) or any(a == "how" and b in _HOW_MUCH for a, b in pairwise(words))


def overview_answer(evidence: list[ContextNode],
                    papers: Mapping[int, str] | None = None) -> tuple[str, list[ContextNode]]:
    """overview_sentences quoted, each cited; and the passages quoted. Over several chosen papers,
    each paper's under its name."""
    if not papers:
        quoted = overview_sentences(evidence)
        return _quote(quoted) if quoted else (NOTHING_RELEVANT, [])
    each = max(1, OVERVIEW_SENTENCES // len(papers))
    return _quote_papers([(name, overview_sentences([e for e in evidence if e.node.archive_id == a], each))
                          for a, name in papers.items()])


def overview_sentences(evidence: list[ContextNode], each: int | None = None) -> list[tuple[str, ContextNode]]:
    """The opening sentences of each abstract read (OVERVIEW_SENTENCES in all, shared out, or
    `each` of each), each with its passage."""
    if not evidence:
        return []
    each = each or max(1, OVERVIEW_SENTENCES // len(evidence))
    return [(sentence, item) for item in evidence[:OVERVIEW_SENTENCES]
            for sentence in [s for s in split_sentences(item.node.content) if quotable(s)][:each]]


def _quote(sentences: list[tuple[str, ContextNode]]) -> tuple[str, list[ContextNode]]:
    cited = list({id(item): item for _, item in sentences}.values())
    return EXTRACTIVE_NOTE + "\n" + "\n".join(_quote_lines(sentences)), cited


def _quote_lines(sentences: list[tuple[str, ContextNode]]) -> list[str]:
    return [f"- {truncate(sentence, 400)} [node {item.node.id}{', ' + item.node.citation if item.node.citation else ''}]"
            for sentence, item in sentences]


def _quote_papers(papers: list[tuple[str, list[tuple[str, ContextNode]]]]) -> tuple[str, list[ContextNode]]:
    """Each paper's quoted sentences under its name, the papers that had some first; then a line
    for each paper that had none."""
    lines = [line for name, quoted in papers if quoted for line in (f"{name}:", *_quote_lines(quoted))]
    lines += [NOTHING_IN_PAPER.format(paper=name) for name, quoted in papers if not quoted]
    cited = list({id(item): item for _, quoted in papers for _, item in quoted}.values())
    return EXTRACTIVE_NOTE + "\n" + "\n".join(lines), cited
