"""The memory access tool (mem0 memory-tool spec): add, search, update, delete and history of a user's
memories, scoped by user_id, agent_id, run_id and metadata. Every change is in the history; an
explicit add skips the privacy filter but may supersede a memory it contradicts."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from forest.config import Settings
from forest.errors import ForestError, InvalidInput, NotFound, ServiceUnavailable
from forest.models.embedders import Embedder
from forest.personal.graph import TripleExtractor
from forest.personal.memory_store import PersonalStore
from forest.personal.policy import WritePlan, WritePolicy, keyed
from forest.personal.recall import PersonalRecall
from forest.personal.records import Added, AddedMemory, Found, History, MemoryHit, Refused, ToolPayload, ToolReply
from forest.personal.turns import first_person
from forest.storage.sql.database import Database
from forest.validation import (check_top_k, checked_metadata, checked_scope, checked_text, checked_user_id,
                               in_id_range)
from forest.limits import MAX_MEMORY_BATCH, MAX_TOP_K_MEMORIES



@dataclass(frozen=True)
class ToolCall:
    """One call of the tool, its ids and scope checked."""
    action: str
    user_id: str
    text: str | list[str] | None
    query: str | None
    memory_id: int | None
    scope: dict[str, str | None]
    metadata: dict[str, Any]
    filters: dict[str, Any] | None
    top_k: int
    actor: str

    def named_memory(self) -> int:
        if self.memory_id is None:
            raise InvalidInput(f"{self.action} needs a memory_id")
        return self.memory_id


class MemoryTool:
    def __init__(self, db: Database, store: PersonalStore, embedder: Embedder, settings: Settings,
                 extractor: TripleExtractor, recall: PersonalRecall, policy: WritePolicy,
                 clock: Callable[[], float]) -> None:
        """`clock` is read at every use (a test may change it)."""
        self.db = db
        self.store = store
        self.embedder = embedder
        self.settings = settings
        self.extractor = extractor
        self.recall = recall
        self.policy = policy
        self.clock = clock

    def run(self, action: str, user_id: str, *, text: str | list[str] | None = None,
            query: str | None = None, memory_id: int | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None,
            filters: dict[str, Any] | None = None, top_k: int = 5, actor: str | None = None) -> ToolReply:
        """The reply (operation, status: success | fallback | disabled, payload), a record the faces
        serialize with to_dict(). Bad input and unknown ids give status fallback with the reason. A database or model server that cannot be reached
        raises ServiceUnavailable: the call was not done, and every face reports it as 503."""
        handler = _HANDLERS.get(action)
        if handler is None:
            return ToolReply(action, "fallback", Refused(f"action must be one of {', '.join(ACTIONS)}"))
        if not self.settings.memory_enabled:
            return ToolReply(action, "disabled", Refused("MEMORY_ENABLED=false: memory is switched off; nothing "
                                                         "was read or written", disabled=True))
        try:
            user_id = checked_user_id(user_id)
            if memory_id is not None and not in_id_range(memory_id):
                raise NotFound(f"memory {memory_id} not found for this user")
            call = ToolCall(action, user_id, text, query, memory_id, checked_scope(agent_id, run_id),
                            checked_metadata(metadata), filters, top_k,
                            actor or agent_id or "memory_tool")
            return ToolReply(action, "success", handler(self, call))
        except ServiceUnavailable:
            raise
        except ForestError as exc:
            return ToolReply(action, "fallback", Refused(str(exc)))

    def _add(self, call: ToolCall) -> Added:
        return Added(tuple(self.add(call.user_id, call.text, call.scope, call.metadata, call.actor)))

    def _search(self, call: ToolCall) -> Found:
        filters = dict(call.filters or {})  # scope ids may come in the filters, as mem0 sends them
        scope = checked_scope(*(filters.pop(key, call.scope[key]) for key in ("agent_id", "run_id")))
        return Found(tuple(self.search(call.user_id, call.query or "", call.top_k, scope, checked_metadata(filters))))

    def _history(self, call: ToolCall, changed: int | None = None) -> History:
        """The history of the call's memory (every change of the user without one); `changed`: the
        memory an update or delete just changed, named in the payload."""
        return History(tuple(self.store.history(call.user_id, call.memory_id)), changed)

    def _update(self, call: ToolCall) -> History:
        memory_id = call.named_memory()
        self.update(call.user_id, memory_id, call.text if isinstance(call.text, str) else "", call.actor, call.metadata)
        return self._history(call, memory_id)

    def _delete(self, call: ToolCall) -> History:
        memory_id = call.named_memory()
        self.delete(call.user_id, memory_id, call.actor)
        return self._history(call, memory_id)

    def search(self, user_id: str, query: str, top_k: int, scope: dict[str, str | None] | None = None,
               metadata: dict[str, Any] | None = None) -> list[MemoryHit]:
        """The user's memories best matching the query (hybrid recall), with their scores."""
        return [MemoryHit(record, score) for record, score in
                self.recall.search(user_id, checked_text(query, "query"), check_top_k(top_k, MAX_TOP_K_MEMORIES),
                                   scope, metadata)]

    def update(self, user_id: str, memory_id: int, text: str | None, actor: str,
               metadata: dict[str, Any] | None = None) -> None:
        """New text for the memory (re-embedded, its facts extracted again) and/or metadata keys
        set over the old ones; without text the memory keeps its words. NotFound for an id the
        user does not hold."""
        current = self.store.memory(user_id, memory_id)
        if current is None:
            raise NotFound(f"memory {memory_id} not found for this user")
        if not text and metadata:
            text = current.memory
        new = checked_text(text or "", "memory")
        # embedding and extraction before the transaction
        vector, triples = self.embedder.embed_passages([new])[0], self.extractor.extract(new, speaker=first_person(new, user_id))
        with self.store.writing(user_id) as conn:
            done = self.store.update(conn, user_id, memory_id, new, vector, self.embedder.name, self.clock(), actor,
                                     metadata=metadata or None)
            if done:
                self.store.drop_facts(conn, user_id, memory_id)
                self.store.add_triples(conn, user_id, memory_id, keyed(triples), self.clock())
        if not done:
            raise NotFound(f"memory {memory_id} not found for this user")

    def delete(self, user_id: str, memory_id: int, actor: str) -> None:
        """Erase the memory (NotFound for an id the user does not hold)."""
        with self.store.writing(user_id) as conn:
            done = self.store.delete(conn, user_id, memory_id, self.clock(), actor)
        if not done:
            raise NotFound(f"memory {memory_id} not found for this user")
        self.db.finish_erasures()

    def add(self, user_id: str, text: str | list[str] | None, scope: dict[str, str | None],
            metadata: dict[str, Any], actor: str) -> list[AddedMemory]:
        """Batch add (explicit writes skip the privacy filter); each may supersede an old memory."""
        texts = [text] if isinstance(text, str) else list(text or [])
        if not texts or len(texts) > MAX_MEMORY_BATCH:
            raise InvalidInput(f"add needs 1 to {MAX_MEMORY_BATCH} memories as text")
        texts = [checked_text(t, "memory") for t in texts]
        results = []
        vectors = self.embedder.embed_passages(texts)
        for memory, vector in zip(texts, vectors):
            plan = WritePlan(user_id, memory, scope, metadata, self.clock(), actor, {})
            self.policy.plan_write(plan, vector)
            with self.store.writing(user_id) as conn:
                memory_id, event, why = self.policy.add_or_supersede(conn, plan)
            results.append(AddedMemory(memory_id, memory, MEM0_EVENTS.get(event, "ADD"), why))
        return results


# What an add did, as mem0 names it: a memory superseded is an UPDATE; one already held, NONE.
MEM0_EVENTS = {"superseded": "UPDATE", "repeated": "NONE"}


# The tool's actions: each a method taking the checked call and giving the reply's payload.
_HANDLERS: dict[str, Callable[[MemoryTool, ToolCall], ToolPayload]] = {
    "add": MemoryTool._add, "search": MemoryTool._search, "update": MemoryTool._update,
    "delete": MemoryTool._delete, "history": MemoryTool._history}
ACTIONS = tuple(_HANDLERS)

