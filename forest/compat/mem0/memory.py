"""`from forest.compat.mem0 import Memory` in place of `from mem0 import Memory`: mem0 2.2's Memory
methods and return shapes over this project's engine (the embedded store by default)."""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from forest.compat.mem0.api import Mem0Api
from forest.config import Settings, load_settings
from forest.errors import InvalidInput, NotFound
from forest.service import MemoryForest

log = logging.getLogger("forest.compat.mem0")

# mem0's Memory.add with infer=True returns what was written; the engine writes in the background.
ADD_WAIT_SECONDS = 120.0
_T = TypeVar("_T")


def _as_mem0(call: Callable[[], _T]) -> _T:
    """mem0's Memory raises ValueError for bad input and unknown ids; so does this one."""
    try:
        return call()
    except (InvalidInput, NotFound) as exc:
        raise ValueError(str(exc)) from exc


class Memory:
    """mem0's Memory over the engine. `config`: the engine's settings by name (a dict or Settings);
    mem0's provider sections (llm, embedder, vector_store, ...) are ignored with a warning, since the
    engine's own settings (FOREST_*, forest.toml) choose its models and store."""

    def __init__(self, config: Any = None, *, forest: MemoryForest | None = None) -> None:
        self.forest = forest or MemoryForest(_settings(config))
        self._api = Mem0Api(self.forest)

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> "Memory":
        return cls(config_dict)

    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None, timestamp: Any = None,
            expiration_date: Any = None, infer: bool = True, memory_type: str | None = None,
            prompt: str | None = None) -> dict[str, Any]:
        """Remember messages; infer=True runs the privacy filter and extraction and waits for them."""
        reply = _as_mem0(lambda: self._api.add(messages, user_id=user_id, agent_id=agent_id, run_id=run_id,
                                               metadata=metadata, infer=infer, timestamp=timestamp,
                                               wait_seconds=ADD_WAIT_SECONDS))
        return {"results": [{k: v for k, v in r.items() if k != "data"} for r in reply["results"]]}

    def search(self, query: str, *, top_k: int = 20, filters: dict[str, Any] | None = None,
               threshold: float | None = None, rerank: bool = False, **kwargs: Any) -> dict[str, Any]:
        scoped = _entity_filters(filters, kwargs)
        return {"results": _as_mem0(lambda: self._api.search(query, scoped, top_k, threshold))}

    def get_all(self, *, filters: dict[str, Any] | None = None, top_k: int = 20, **kwargs: Any) -> dict[str, Any]:
        scoped = _entity_filters(filters, kwargs)
        return {"results": _as_mem0(lambda: self._api.get_all(scoped, 1, top_k))[1]}

    def get(self, memory_id: str) -> dict[str, Any] | None:
        try:
            return self._api.get(memory_id)
        except NotFound:
            return None

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               expiration_date: Any = None, data: str | None = None) -> dict[str, str]:
        _as_mem0(lambda: self._api.update(memory_id, text if text is not None else data, metadata))
        return {"message": "Memory updated successfully!"}

    def delete(self, memory_id: str) -> dict[str, str]:
        _as_mem0(lambda: self._api.delete(memory_id))
        return {"message": "Memory deleted successfully!"}

    def delete_all(self, user_id: str | None = None, agent_id: str | None = None,
                   run_id: str | None = None) -> dict[str, str]:
        _as_mem0(lambda: self._api.delete_all(user_id, agent_id, run_id))
        return {"message": "Memories deleted successfully!"}

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        return _as_mem0(lambda: self._api.history(memory_id))

    def reset(self) -> None:
        """Erase the personal memory of every user in this store (documents are left alone): the
        store is this process's own, as mem0's local Memory's is."""
        for entity in self._api.entities():
            if entity["type"] == "user":
                self._api.delete_all(entity["name"])

    def close(self) -> None:
        self.forest.close()


def _entity_filters(filters: dict[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """mem0 1.x put user_id, agent_id and run_id beside filters; 2.x inside them: both work here."""
    entities = {k: kwargs.pop(k) for k in ("user_id", "agent_id", "run_id") if kwargs.get(k) is not None}
    if kwargs:
        log.warning("mem0 arguments not supported here were ignored: %s", ", ".join(sorted(kwargs)))
    return {**(filters or {}), **entities}


def _settings(config: Any) -> Settings:
    if isinstance(config, Settings):
        return config
    given = dict(config) if isinstance(config, dict) else {}
    if config is not None and not isinstance(config, dict):
        log.warning("a mem0 MemoryConfig is ignored: the engine's own settings choose its models and store")
    known = {f.name for f in fields(Settings)}
    ignored = sorted(set(given) - known)
    if ignored:
        log.warning("mem0 config sections ignored (the engine's settings choose its models and store): %s",
                    ", ".join(ignored))
    return load_settings({k: v for k, v in given.items() if k in known})
