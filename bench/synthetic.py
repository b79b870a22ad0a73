"""Synthetic documents for benchmarks: vectors drift along the document like topics in a paper,
and the "models" are instant, so timings measure the engine, not the models."""
from __future__ import annotations

import hashlib
import re

import numpy as np

from forest.models.embedders import Embedder
from forest.models.summarizers import Summary, Summarizer

DIM = 384
# A leaf's text ("leaf <i> of the synthetic document, ...") wherever it stands in what is embedded:
# a leaf is embedded behind its archive's title ("archive 0 | leaf 5 of ..."), a summary holds its
# first child's text after its title.
LEAF = re.compile(r"\bleaf (\d+) of the synthetic document")


def drifting_vectors(n: int, seed: int = 0, drift: float = 0.3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    steps = rng.normal(size=(n, DIM)) * drift
    steps[0] = rng.normal(size=DIM)
    walk = np.cumsum(steps, axis=0)
    return (walk / np.linalg.norm(walk, axis=1, keepdims=True)).astype(np.float32)


class SyntheticEmbedder(Embedder):
    """A text holding leaf i's text gets the i-th drifting vector (a summary: its first leaf's);
    any other text, questions included, a hashed random one."""

    name = "bench/synthetic"
    dim = DIM

    def __init__(self, leaf_vectors: np.ndarray) -> None:
        self.leaf_vectors = leaf_vectors

    def _embed(self, texts, is_query):
        rows = np.empty((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            leaf = LEAF.search(text)
            if leaf:
                rows[row] = self.leaf_vectors[int(leaf.group(1))]
            else:
                seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
                rows[row] = np.random.default_rng(seed).normal(size=DIM)
        return rows


class HeadSummarizer(Summarizer):
    """No model call: the first 200 characters."""

    def summarize_leaf(self, text):
        return Summary(text[:200], "bench:head")

    def summarize_node(self, brief):
        return Summary(" | ".join(brief.parts)[:200], "bench:head", brief.title or "group")


def synthetic_text(n: int) -> str:
    """n paragraphs of ~90 characters; with chunk_size 100 each paragraph is one leaf."""
    return "\n\n".join(f"leaf {i} of the synthetic document, about topic {i // 50} and its details." for i in range(n))
