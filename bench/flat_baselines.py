"""Flat retrieval baselines the forest is compared with, every time (bench/eval_qasper.py).

A flat system is a chunker plus the text each chunk is embedded from; it ranks every chunk in
scope by cosine with the question (or by BM25) and packs the budget with the forest's own rule
(forest.recall.retrieval.fill_budget). Embeddings go through one EmbeddingCache per run, so a text is
embedded once however many systems share it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forest.ingest.document import Document
from forest.models.embedders import Embedder
from forest.tree.leaves import embed_text, leaf_chunks
from forest.recall.retrieval import fill_budget, reciprocal_rank_fusion
from forest.text import content_terms, estimate_tokens, term_coverage


@dataclass(frozen=True)
class FlatConfig:
    """A flat system's settings: how documents are cut and what each chunk is embedded from."""
    name: str
    chunker: str            # forest.config.CHUNKERS: "paragraph" or "recursive"
    size: int               # max chars per chunk
    overlap: int = 0        # recursive only
    context: bool = False   # embed "title | heading path | text" instead of the text alone

    def chunks(self, document: Document) -> list:
        return leaf_chunks(document, self.chunker, self.size, self.overlap)

    def embedded(self, document: Document, chunk) -> str:
        if not self.context:
            return chunk.text
        path = chunk.heading_path or ((chunk.section,) if chunk.section else ())
        return embed_text(chunk.text, document.title, path)


DENSE_1000 = FlatConfig("flat dense 1000", "recursive", 1000, 100)


class CachedEmbedder(Embedder):
    """Another embedder with a memory of passages: a text embedded once in a run (one protocol's
    ingest) costs nothing the next time (the other protocol's ingest of the same paper, a flat
    system's chunk). Same name, size and calibration, so stores built through it are the same."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name, self.dim, self.similarity_floor = inner.name, inner.dim, inner.similarity_floor
        self.passages: dict[str, np.ndarray] = {}

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        if is_query:
            return self.inner._embed(texts, True)
        todo = [t for t in dict.fromkeys(texts) if t not in self.passages]
        if todo:
            self.passages.update(zip(todo, self.inner._embed(todo, False)))
        return np.stack([self.passages[t] for t in texts])


class EmbeddingCache:
    """Passage vectors by text: each distinct text is embedded once per run."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.vectors: dict[str, np.ndarray] = {}

    def matrix(self, texts: list[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if todo:
            for text, row in zip(todo, self.embedder.embed_passages(todo)):
                self.vectors[text] = np.asarray(row, dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, self.embedder.dim), np.float32)


@dataclass
class FlatIndex:
    """One flat system over a set of documents: chunk texts, their paper, tokens and vectors."""
    config: FlatConfig
    texts: list[str]
    papers: list[str]
    tokens: list[int]
    matrix: np.ndarray

    @classmethod
    def build(cls, config: FlatConfig, documents: dict[str, Document], cache: EmbeddingCache) -> FlatIndex:
        texts, papers, embedded = [], [], []
        for paper, document in documents.items():
            for chunk in config.chunks(document):
                texts.append(chunk.text)
                papers.append(paper)
                embedded.append(config.embedded(document, chunk))
        return cls(config, texts, papers, [estimate_tokens(t) for t in texts], cache.matrix(embedded))

    def scope(self, paper: str | None) -> np.ndarray:
        """Row indexes searched: one paper's chunks (per-paper protocol) or all (forest protocol)."""
        if paper is None:
            return np.arange(len(self.texts))
        return np.flatnonzero(np.array(self.papers) == paper)

    def dense(self, query: np.ndarray, budget: int, paper: str | None = None) -> list[str]:
        rows = self.scope(paper)
        order = rows[np.argsort(-(self.matrix[rows] @ query.astype(np.float32)), kind="stable")]
        return pack(order, self.texts, self.tokens, budget)

    def top_paper(self, query: np.ndarray) -> str:
        """The paper of the chunk most similar to the query, over every paper (forest protocol)."""
        return self.papers[int(np.argmax(self.matrix @ query.astype(np.float32)))]

    def hybrid(self, query: np.ndarray, question: str, budget: int, paper: str | None = None) -> list[str]:
        """The forest's own leaf ranking without the tree: cosine and the share of the question's
        words in the chunk, reciprocal-rank fused."""
        rows = self.scope(paper)
        words = set(content_terms(question))
        coverage = [term_coverage(words, self.texts[i]) for i in rows]
        fused = reciprocal_rank_fusion([list(self.matrix[rows] @ query.astype(np.float32)), coverage])
        return pack(rows[np.argsort(-np.array(fused), kind="stable")], self.texts, self.tokens, budget)


def pack(order: np.ndarray, texts: list[str], tokens: list[int], budget: int) -> list[str]:
    taken, _ = fill_budget(list(order), lambda i: tokens[i], budget)
    return [texts[i] for i in taken]


def mcnemar_exact(a: list[bool], b: list[bool]) -> tuple[int, int, float]:
    """(a only, b only, two-sided exact p): binomial test on the discordant pairs, p = 0.5."""
    if len(a) != len(b):
        raise ValueError("paired outcomes must have the same length")
    only_a = sum(x and not y for x, y in zip(a, b))
    only_b = sum(y and not x for x, y in zip(a, b))
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return only_a, only_b, 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return only_a, only_b, min(1.0, 2 * tail)
