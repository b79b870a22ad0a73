"""What every vector store is: one vector per memory node, keyed by the node id, kept apart per
model_id (VectorStore), and the one error that means it failed rather than held nothing."""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from forest.errors import ConfigError, ForestError

if TYPE_CHECKING:
    import numpy as np


class VectorStoreError(ForestError):
    """The vector store failed (not "it holds nothing"): callers must not read this as empty."""


class VectorStore(ABC):
    @abstractmethod
    def upsert(self, model_id: str, ids: Sequence[int], vectors: np.ndarray,
               metadatas: Sequence[dict[str, Any]]) -> None: ...

    @abstractmethod
    def query(self, model_id: str, vector: np.ndarray, top_k: int) -> list[tuple[int, float]]:
        """(node id, cosine similarity), most similar first."""

    @abstractmethod
    def get_vectors(self, model_id: str, ids: Sequence[int]) -> dict[int, np.ndarray]: ...

    @abstractmethod
    def update_metadata(self, model_id: str, ids: Sequence[int], metadatas: Sequence[dict[str, Any]]) -> None:
        """Replace the metadata of existing vectors (when nodes move: appends, archive merges)."""

    @abstractmethod
    def delete(self, model_id: str, ids: Sequence[int]) -> None: ...

    @abstractmethod
    def ids(self, model_id: str) -> list[int]: ...

    @abstractmethod
    def model_ids(self) -> list[str]: ...

    def drop_other_embedders(self, model_id: str) -> int:
        """Delete the model_id's vectors that another embedder made (the way to re-embed it with
        this one: `forest reembed`); how many were deleted."""
        raise ConfigError(f"{type(self).__name__} cannot drop the vectors another embedder made")

    def close(self) -> None:
        """Release what the store holds (a client, a claim on a directory); nothing by default."""
