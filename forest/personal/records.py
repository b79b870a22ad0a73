"""The records personal memory returns (PersonalMemory, MemoryTool): frozen, typed, each with a
to_dict() giving the wire shape every face sends (the MCP tools, REST, the CLI's --json, mem0's
routes build on them). Faces serialize once, at their edge."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from forest.records import iso

if TYPE_CHECKING:  # only named in annotations: the graph module loads networkx, which the mem0 routes need not
    from forest.personal.graph import Triple


@dataclass(frozen=True, slots=True)
class PersonalMemoryRecord:
    """One live memory of a user, with its scope (agent, run) and metadata."""
    id: int
    user_id: str
    agent_id: str | None
    run_id: str | None
    memory: str
    metadata: dict[str, Any]
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "memory": self.memory, "user_id": self.user_id, "agent_id": self.agent_id,
                "run_id": self.run_id, "metadata": self.metadata, "created_at": iso(self.created_at),
                "updated_at": iso(self.updated_at)}


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One change to a memory: ADD, UPDATE or DELETE, who made it, why and when."""
    memory_id: int
    event: str
    old_value: str | None
    new_value: str | None
    actor: str
    reason: str
    created_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "event": self.event, "old_value": self.old_value,
                "new_value": self.new_value, "actor": self.actor, "reason": self.reason,
                "created_at": iso(self.created_at)}


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A memory found for a query, with its calibrated similarity to it."""
    record: PersonalMemoryRecord
    score: float

    def to_dict(self) -> dict[str, Any]:
        """The memory tool's search result: the memory and its score (4 decimals)."""
        return {**self.record.to_dict(), "score": round(self.score, 4)}

    def context_dict(self) -> dict[str, Any]:
        """process_memory's vector chunk: the words, score and id only (what an agent's prompt needs)."""
        return {"memory": self.record.memory, "score": round(self.score, 4), "id": self.record.id}


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """process_memory's reply: status (success, fallback, disabled), the memories and relations
    bearing on the input, and whether the input was queued for writing (`error`: why not)."""
    status: str
    memories: tuple[MemoryHit, ...]
    relations: tuple[Triple, ...]
    retrieval_ms: float
    queued: bool
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"retrieval_time_ms": round(self.retrieval_ms, 1),
                                    "has_memory": bool(self.memories or self.relations), "queued": self.queued}
        if self.error:
            metadata["error"] = self.error
        return {"status": self.status, "vector_chunks": [m.context_dict() for m in self.memories],
                "graph_relations": [r.to_dict() for r in self.relations], "metadata": metadata}


@dataclass(frozen=True, slots=True)
class AddedMemory:
    """What an explicit add did: the memory's id, its words, the event as mem0 names it (ADD,
    UPDATE when it superseded one, NONE when already held) and why."""
    memory_id: int
    memory: str
    event: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"memory_id": self.memory_id, "memory": self.memory, "event": self.event, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Added:
    """The memory tool's add payload."""
    results: tuple[AddedMemory, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"results": [r.to_dict() for r in self.results]}


@dataclass(frozen=True, slots=True)
class Found:
    """The memory tool's search payload, best first."""
    hits: tuple[MemoryHit, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"results": [h.to_dict() for h in self.hits]}


@dataclass(frozen=True, slots=True)
class History:
    """The memory tool's history payload; `memory_id` set after an update or delete of that memory."""
    entries: tuple[HistoryEntry, ...]
    memory_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        history = {"history": [e.to_dict() for e in self.entries]}
        return history if self.memory_id is None else {"memory_id": self.memory_id, **history}


@dataclass(frozen=True, slots=True)
class Refused:
    """Why the memory tool did nothing: bad input or an unknown id (`error`), or memory switched
    off (`reason`, with status disabled)."""
    message: str
    disabled: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"reason" if self.disabled else "error": self.message}


ToolPayload = Added | Found | History | Refused


@dataclass(frozen=True, slots=True)
class ToolReply:
    """The memory tool's reply: {operation, status: success | fallback | disabled, payload}."""
    operation: str
    status: str
    payload: ToolPayload

    @property
    def ok(self) -> bool:
        return self.status == "success"

    def to_dict(self) -> dict[str, Any]:
        return {"operation": self.operation, "status": self.status, "payload": self.payload.to_dict()}


@dataclass(frozen=True, slots=True)
class FactSpan:
    """A fact of the user's graph with its validity: from when, and until when (None: it holds)."""
    source: str
    relationship: str
    target: str
    valid_from: float
    valid_to: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "relationship": self.relationship, "target": self.target,
                "valid_from": iso(self.valid_from), "valid_to": iso(self.valid_to)}


@dataclass(frozen=True, slots=True)
class UserGraph:
    """get_user_graph: the user's relations (Triples that hold now, or FactSpans with ended ones)
    and the entities they join."""
    user_id: str
    relations: tuple[Triple, ...] | tuple[FactSpan, ...]

    @property
    def entities(self) -> list[str]:
        return sorted({r.source for r in self.relations} | {r.target for r in self.relations})

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "entities": self.entities, "relations": [r.to_dict() for r in self.relations]}


@dataclass(frozen=True, slots=True)
class Tag:
    """A preference or topic tag of the user, with its weight."""
    tag: str
    kind: str
    weight: float

    def to_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "kind": self.kind, "weight": self.weight}


@dataclass(frozen=True, slots=True)
class TagReport:
    """The tags found in the user's memories, those applied (none on a dry run) and those stored."""
    candidates: tuple[Tag, ...]
    applied: tuple[Tag, ...]
    stored: tuple[Tag, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"candidates": [t.to_dict() for t in self.candidates], "applied": [t.to_dict() for t in self.applied],
                "stored": [t.to_dict() for t in self.stored]}


@dataclass(frozen=True, slots=True)
class QueueCounts:
    """Queued input by status."""
    pending: int = 0
    done: int = 0
    failed: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"pending": self.pending, "done": self.done, "failed": self.failed}


@dataclass(frozen=True, slots=True)
class QueuedWrite:
    """One queued input: status (pending, done, failed), whether a worker holds it now, attempts,
    the write's decision once made (privacy, action, memory_id ...) and the last error."""
    id: int
    status: str
    attempts: int
    held: bool
    decision: dict[str, Any] | None
    error: str | None
    observed_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "attempts": self.attempts, "held": self.held,
                "decision": self.decision, "error": self.error, "observed_at": self.observed_at}


@dataclass(frozen=True, slots=True)
class QueuedDecision:
    """A latest queue item as the workbench lists it: its input (the memory it became while that
    lives), status, attempts, decision and last error."""
    id: int
    input: str
    status: str
    attempts: int
    decision: dict[str, Any] | None
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "status": self.status, "attempts": self.attempts,
                "decision": self.decision, "error": self.error}


@dataclass(frozen=True, slots=True)
class WriteQueue:
    """The user's queue: counts by status and the latest items."""
    state: QueueCounts
    items: tuple[QueuedDecision, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state.to_dict(), "items": [i.to_dict() for i in self.items]}


@dataclass(frozen=True, slots=True)
class WorkerState:
    """This process's write worker: whether it runs, the queue over every user, failures since
    start, the last error (and when) and how many items it wrote."""
    running: bool
    queue: QueueCounts
    failures: int
    last_error: str | None
    last_error_at: float | None
    written: int

    def to_dict(self) -> dict[str, Any]:
        return {"running": self.running, "queue": self.queue.to_dict(), "failures": self.failures,
                "last_error": self.last_error, "last_error_at": self.last_error_at, "written": self.written}


@dataclass(frozen=True, slots=True)
class EntityCount:
    """Live memories of one (user, agent, run), with the first and last write times."""
    user_id: str
    agent_id: str | None
    run_id: str | None
    count: int
    created_at: float
    updated_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id, "count": self.count,
                "created_at": self.created_at, "updated_at": self.updated_at}


@dataclass(frozen=True, slots=True)
class Cleared:
    """clear_user_memory's reply: whose memory, and how many memories were removed."""
    user_id: str
    memories_removed: int

    def to_dict(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "memories_removed": self.memories_removed}
