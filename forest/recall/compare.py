"""Compare papers, as Elicit's and SciSpace's tables do: rows are papers, columns the questions a
researcher types, and each cell the sentences of one paper that best answer one question, cited
with their page and section, or "not found".

A cell is found through its paper's tree the way the offline agent finds an answer, with the walk
kept to that one paper: the paper's own vector hits and their lowest common ancestor (retrieve
within the paper), the guides among those hits and the paper's BM25 hits (guides_under), and the
walk down toward them (OfflinePolicy: drill-down, reranked). A cell quotes one passage, so a
click opens one highlighted page: of the passages the walk went toward, the one the drill-down
scored highest that has a sentence to quote, and in it the agent's choice of sentences
(answer_sentences), up to MAX_CELL_SENTENCES. An overview question ("what is the paper about?") is answered from the
abstract, as the agent answers it.

A cell is "not found" when that passage's relevance, the score the drill-down gave it (the
reranker's, 0-1), is under the threshold: FOUND_THRESHOLD unless the caller gives another. Every
paper has an abstract: an overview question is answered by each.

Cost: each question is embedded once and the papers' vectors are read once for every question
(Retriever.retrieve_each); each cell then costs a BM25 search in its paper and a few drill-downs.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from forest.errors import InvalidInput
from forest.recall.agent import (AgentLoop, AgentState, ContextNode, answer_sentences, asks_for_overview,
                                 guides_under, overview_sentences)
from forest.recall.retrieval import Retriever
from forest.records import Archive, Representative, cite
from forest.storage.archives import ForestStore
from forest.references import is_reference_node
from forest.validation import check_query
from forest.limits import MAX_CELLS, MAX_QUESTIONS

MAX_CELL_SENTENCES = 2
# The relevance that best tells a question's own paper from the other papers of a table (Youden's J,
# on a 0.05 grid, ties to the lower): chosen on QASPER dev papers, checked on held-out papers and
# real PDFs (bench/bench_compare.py, docs/compare.md). The drill threshold, made for choosing which
# sections to open, let most other papers' cells through.
FOUND_THRESHOLD = 0.4
NOT_FOUND = "not found"


@dataclass(frozen=True)
class ComparedPaper:
    archive_id: int
    name: str
    cite_as: str | None = None   # "Buck et al. (2018)", when the paper came from a library

    @property
    def label(self) -> str:
        """What the paper's row is called: how it is cited, else its archive's name."""
        return self.cite_as or self.name

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


@dataclass
class Cell:
    archive_id: int
    question: str
    sentences: list[str] = field(default_factory=list)   # quoted from the passage, best first
    node_id: int | None = None    # the passage quoted: its page opens highlighted
    citation: str = ""            # "p. 7, §4.2 Results": where in the paper (its row names the paper)
    score: float = 0.0            # the passage's drill-down relevance (0-1)
    found: bool = False

    @property
    def text(self) -> str:
        """The cell as a table shows it: its sentences, or "not found"."""
        return " ".join(self.sentences) if self.found else NOT_FOUND

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    model_id: str
    questions: list[str]
    papers: list[ComparedPaper]
    cells: list[Cell]     # paper by paper, each paper's in the questions' order
    threshold: float

    def row(self, archive_id: int) -> list[Cell]:
        """One paper's cells, in the questions' order."""
        return [c for c in self.cells if c.archive_id == archive_id]

    def to_dict(self) -> dict[str, Any]:
        return {"model_id": self.model_id, "questions": self.questions, "threshold": self.threshold,
                "papers": [p.to_dict() for p in self.papers], "cells": [c.to_dict() for c in self.cells]}


def check_questions(questions: Sequence[str]) -> list[str]:
    """1 to MAX_QUESTIONS questions, each a query (forest.validation.check_query); one asked twice
    is one column."""
    if isinstance(questions, (str, bytes)) or not isinstance(questions, Sequence):
        raise InvalidInput("questions must be a list of questions, one per column")
    asked = []
    for number, question in enumerate(questions, 1):
        try:
            asked.append(check_query(question).strip())
        except InvalidInput as exc:
            raise InvalidInput(f"question {number}: {exc}") from None
    asked = list(dict.fromkeys(asked))
    if not asked:
        raise InvalidInput("type at least one question to compare the papers on")
    if len(asked) > MAX_QUESTIONS:
        raise InvalidInput(f"{len(asked)} questions: a comparison takes at most {MAX_QUESTIONS}")
    return asked


def check_table(archives: Sequence[Archive], questions: Sequence[str]) -> None:
    """A table with a row and at most MAX_CELLS cells."""
    if not archives:
        raise InvalidInput("there is no paper to compare: the model_id has no ready archive")
    cells = len(archives) * len(questions)
    if cells > MAX_CELLS:
        raise InvalidInput(f"{len(archives)} papers × {len(questions)} questions is {cells} cells, over the limit "
                           f"of {MAX_CELLS}: choose fewer papers or questions")


def compare_archives(loop: AgentLoop, retriever: Retriever, store: ForestStore, model_id: str,
                     questions: Sequence[str], chosen: tuple[int, ...] | None, top_k: int,
                     threshold: float) -> Comparison:
    """Every question (checked: check_questions) asked of the model_id's ready archives (`chosen`
    only, if given)."""
    papers = [a for a in store.archives(model_id) if a.status == "ready" and (chosen is None or a.id in chosen)]
    check_table(papers, questions)
    return compare_papers(loop, retriever, model_id, questions, papers, top_k, threshold)


def compare_papers(loop: AgentLoop, retriever: Retriever, model_id: str, questions: Sequence[str],
                   archives: Sequence[Archive], top_k: int, threshold: float) -> Comparison:
    """Every question asked of every paper (the model_id's `archives`, checked by the caller)."""
    ids = [a.id for a in archives]
    found = retriever.retrieve_each(model_id, questions, top_k, ids)
    cells = {(archive_id, question): _cell(loop, retriever, model_id, question, archive_id, by_archive[archive_id],
                                           top_k, threshold)
             for question, by_archive in zip(questions, found) for archive_id in ids}
    return Comparison(model_id, list(questions), [ComparedPaper(a.id, a.name, a.cite_as) for a in archives],
                      [cells[a, q] for a in ids for q in questions], threshold)


def _cell(loop: AgentLoop, retriever: Retriever, model_id: str, question: str, archive_id: int,
          representatives: list[Representative], top_k: int, threshold: float) -> Cell:
    if asks_for_overview(question):
        state = loop.start(model_id, question, top_k, threshold, archive_ids=(archive_id,))
    else:
        representatives = [r for r in representatives if not is_reference_node(r.node)]
        words = retriever.search(model_id, question, top_k, "bm25", [archive_id])
        state = AgentState(model_id, question, threshold, [ContextNode(r.node, r.score, r.hint) for r in representatives],
                           guides=guides_under(question, representatives, [], words), archive_ids=(archive_id,))
    while not state.done:
        loop.step(state)
    if state.overview:
        reached = state.cited[:1]   # the abstract
    else:   # the passages the walk went toward, else those the agent quoted
        read = {c.node.id: c for c in state.context if c.node.is_leaf}
        reached = [read[g.node.id] for g in state.guides if g.node.id in read] or state.cited
    if not reached:
        return Cell(archive_id, question)
    # The drill-down's score: a passage retrieve returned itself (a paper of one passage) has only
    # its vector score, on the same scale but without the question's words.
    scores = {s.node.id: s.relevance_score for s in retriever.rerank(model_id, question, [c.node for c in reached])}
    # the best scored passage with a sentence to quote (ties: the better guide)
    for passage in sorted(reached, key=lambda c: -scores[c.node.id]):
        quoted = overview_sentences([passage]) if state.overview else answer_sentences(question, [passage])
        if quoted:
            break
    else:
        return Cell(archive_id, question, score=round(max(scores.values()), 6))
    node = passage.node   # its row names the paper: the cell says where in it
    cell = Cell(archive_id, question, [sentence for sentence, _ in quoted[:MAX_CELL_SENTENCES]], node.id,
                cite(node.page_start, node.page_end, node.section), round(scores[node.id], 6))
    cell.found = state.overview or cell.score >= threshold
    if not cell.found:   # nothing clears the threshold: the cell says so rather than quote it
        cell.sentences, cell.node_id, cell.citation = [], None, ""
    return cell
