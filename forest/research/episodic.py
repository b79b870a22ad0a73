"""Episodic recall with forgetting, the DeepScholar spec's Ebbinghaus time decay: score =
similarity x retention, where the retention follows Ebbinghaus' curve exp(-dt / S). dt runs from
the last time the memory was laid down or recalled, and S (stability, in days) grows each time it
is recalled, so what keeps being useful keeps being found while untouched notes fade."""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from forest.research.memory_store import EpisodicEvent, ResearchStore

DAY = 86_400.0


def retention(elapsed_seconds: float | np.ndarray, stability_days: float | np.ndarray) -> float | np.ndarray:
    """Ebbinghaus retention exp(-dt/S), dt and S in days; element-wise for arrays."""
    kept = np.exp(-np.maximum(0.0, elapsed_seconds) / DAY / stability_days)
    return float(kept) if np.ndim(kept) == 0 else kept


@dataclass
class RecalledEvent:
    event: EpisodicEvent
    similarity: float   # 0-1, the embedder's calibrated cosine
    retention: float    # 0-1
    score: float        # similarity x retention

    def to_dict(self) -> dict[str, Any]:
        return {**self.event.to_dict(), "similarity": round(self.similarity, 4),
                "retention": round(self.retention, 4), "score": round(self.score, 4)}


class EventVectors:
    """The model_ids' event vectors in memory, read once: an event's vector never changes, so
    each search only reads the rows added since (by any process). 1.5 kB an event (384 floats)."""

    def __init__(self, store: ResearchStore) -> None:
        self.store = store
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    def get(self, model_id: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids ascending, unit vectors) of every event of the model_id."""
        with self._lock:
            ids, matrix = self._cache.get(model_id, (np.zeros(0, dtype=np.int64), None))
            new_ids, new_rows = self.store.event_vectors(model_id, int(ids[-1]) if len(ids) else 0)
            if len(new_ids):
                ids = np.concatenate([ids, new_ids])
                matrix = new_rows if matrix is None else np.vstack([matrix, new_rows])
                self._cache[model_id] = (ids, matrix)
            return ids, matrix if matrix is not None else np.zeros((0, 0), dtype=np.float32)


    def forget(self, model_id: str) -> None:
        """Drop the cached vectors (after they were re-embedded)."""
        with self._lock:
            self._cache.pop(model_id, None)


def rank_events(clocks: np.ndarray, vectors: tuple[np.ndarray, np.ndarray], query_vector: np.ndarray,
                calibrate: Callable[[np.ndarray], Any], now: float, top_k: int) -> list[tuple[int, float, float]]:
    """(event id, similarity, retention) of the top_k events by similarity x retention, among the
    events whose clocks (id, reinforced_at, stability_days) are given. Cost: one matrix-vector
    product over those events and a partial sort."""
    ids, matrix = vectors
    if not len(clocks) or not len(ids):
        return []
    positions = np.searchsorted(ids, clocks[:, 0].astype(np.int64))
    similarity = np.asarray(calibrate(matrix[positions] @ np.asarray(query_vector, dtype=np.float32)), dtype=float)
    kept = retention(now - clocks[:, 1], clocks[:, 2])
    score = similarity * kept
    best = np.argsort(-score, kind="stable")[:top_k] if len(score) <= top_k else \
        np.argpartition(-score, top_k)[:top_k]
    best = sorted(best, key=lambda i: (-score[i], -clocks[i, 1], -clocks[i, 0]))
    return [(int(clocks[i, 0]), float(similarity[i]), float(kept[i])) for i in best]
