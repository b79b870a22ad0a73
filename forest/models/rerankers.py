"""Rerankers score (query, candidate) pairs on one 0-1 scale, so a threshold means the same thing
whichever backend is in use."""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from forest.models.embedders import Embedder
from forest.text import content_terms, term_coverage


@dataclass(frozen=True)
class Candidate:
    id: int
    summary: str
    content: str
    vector: np.ndarray | None = None  # the node's stored vector, when the caller has it

    @property
    def text(self) -> str:
        return f"{self.summary}\n{self.content}" if self.summary not in self.content else self.content


class Reranker(ABC):
    name: str

    @abstractmethod
    def score(self, query: str, candidates: list[Candidate]) -> list[float]:
        """One 0-1 relevance score per candidate, in the candidates' order."""


class EmbeddingLexicalReranker(Reranker):
    """Calibrated embedding similarity blended with how much of the query's wording the node contains.

    Uses the vectors already stored for the nodes, so reranking embeds only the query.
    """

    name = "embedding+lexical"

    def __init__(self, embedder: Embedder, semantic_weight: float = 0.7) -> None:
        self.embedder = embedder
        self.semantic_weight = semantic_weight

    def score(self, query: str, candidates: list[Candidate]) -> list[float]:
        if not candidates:
            return []
        query_vector = self.embedder.embed_query(query)
        missing = [c for c in candidates if c.vector is None]
        computed = dict(zip((c.id for c in missing),
                            self.embedder.embed_passages([c.text for c in missing]))) if missing else {}
        vectors = np.stack([c.vector if c.vector is not None else computed[c.id] for c in candidates])
        semantic = np.atleast_1d(self.embedder.calibrate(vectors @ query_vector))
        terms = set(content_terms(query))
        lexical = [term_coverage(terms, c.text) for c in candidates]
        w = self.semantic_weight
        return [round(float(w * s + (1 - w) * lex), 6) for s, lex in zip(semantic, lexical)]


class CrossEncoderReranker(Reranker):
    """FlagEmbedding's FlagReranker over a local cross-encoder directory; sigmoid scores (0-1)."""

    def __init__(self, model_dir: str, max_length: int = 512) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from FlagEmbedding import FlagReranker

        self.name = f"cross-encoder/{os.path.basename(os.path.normpath(model_dir))}"
        self._model = FlagReranker(model_dir, use_fp16=False, devices="cpu", max_length=max_length)

    def score(self, query: str, candidates: list[Candidate]) -> list[float]:
        if not candidates:
            return []
        scores = self._model.compute_score([(query, c.text) for c in candidates], normalize=True)
        return [round(float(s), 6) for s in np.atleast_1d(scores)]
