"""mem0's operations over the engine, shared by the HTTP routes (forest.serving.mem0_routes) and
forest.compat.mem0.Memory: each one a call of the memory tool or PersonalMemory, the same calls
the other faces make, with mem0's arguments and shapes. Errors are ForestErrors (InvalidInput,
NotFound, ServiceUnavailable); a face turns them into its own."""
from __future__ import annotations

import math
import time
from typing import Any

from forest.compat.mem0.filters import parse_filters
from forest.compat.mem0.shapes import (
    added_shape,
    event_ref,
    history_shape,
    memory_shape,
    parse_event_ref,
    parse_memory_ref,
)
from forest.errors import InvalidInput, NotFound, ServiceUnavailable
from forest.personal.records import ToolPayload
from forest.personal.service import PersonalMemory
from forest.personal.tool import MEM0_EVENTS
from forest.records import iso
from forest.service import MemoryForest
from forest.validation import check_top_k, checked_user_id
from forest.limits import MAX_MEMORY_BATCH, MAX_PAGE_SIZE, MAX_TOP_K_MEMORIES

ENTITY_TYPES = ("user", "agent", "run")
# A queue item's status as mem0 names an event's.
_EVENT_STATUS = {"done": "SUCCEEDED", "failed": "FAILED"}


class Mem0Api:
    def __init__(self, forest: MemoryForest) -> None:
        self.forest = forest

    @property
    def personal(self) -> PersonalMemory:
        personal = self.forest.personal
        if not personal.enabled:
            raise ServiceUnavailable("memory is switched off (MEMORY_ENABLED=false): nothing was read or written")
        return personal

    def _tool(self, action: str, user_id: str, **arguments: Any) -> ToolPayload:
        reply = self.personal.memory_tool(action, user_id, actor="mem0", **arguments)
        if not reply.ok:
            raise InvalidInput(reply.payload.message)
        return reply.payload

    # --- writes -----------------------------------------------------------------------------
    def add(self, messages: Any, *, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None, metadata: dict[str, Any] | None = None, infer: bool = True,
            timestamp: float | None = None, wait_seconds: float | None = None) -> dict[str, Any]:
        """infer=False: each message kept as said (the memory tool's add), results at once.
        infer=True: each message queued for the privacy-filtered, extracting write path; the reply
        is {status: PENDING, event_id}, or with `wait_seconds` the event once written."""
        texts = _message_texts(messages)
        if not user_id:
            raise InvalidInput("user_id is required: memories are kept per user")
        if timestamp is not None and (isinstance(timestamp, bool) or not isinstance(timestamp, (int, float))
                                      or not math.isfinite(timestamp) or timestamp < 0):
            raise InvalidInput("timestamp must be Unix seconds")
        if not infer:
            added = self._tool("add", user_id, text=texts, agent_id=agent_id, run_id=run_id, metadata=metadata)
            return {"results": [added_shape(user_id, r.memory_id, r.memory, r.event) for r in added.results],
                    "status": "SUCCEEDED"}
        items = [self.personal.queue_write(user_id, text, agent_id=agent_id, run_id=run_id, metadata=metadata,
                                           observed_at=timestamp) for text in texts]
        event_id = event_ref(user_id, items)
        if wait_seconds is None:
            return {"status": "PENDING", "event_id": event_id, "message": "Memory processing has been queued"}
        deadline = time.monotonic() + wait_seconds
        while (event := self.event(event_id))["status"] in ("PENDING", "RUNNING") and time.monotonic() < deadline:
            time.sleep(0.05)
        return event

    def update(self, ref: str, text: Any = None, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
        """New text and/or metadata keys set over the old ones; the memory as it is now."""
        user_id, number = self._owned(ref)
        if not isinstance(text, str) and not metadata:
            raise InvalidInput("update needs the new text or metadata")
        self._tool("update", user_id, memory_id=number, text=text, metadata=metadata)
        return self.get(ref)

    def delete(self, ref: str) -> None:
        user_id, number = self._owned(ref)
        self._tool("delete", user_id, memory_id=number)

    def delete_all(self, user_id: str | None, agent_id: str | None = None, run_id: str | None = None) -> int:
        """The user's memories in the scope (all of them with no agent or run); how many."""
        if not user_id or user_id == "*":
            raise InvalidInput("delete_all needs a user_id (one user's memories; '*' is not accepted)")
        if agent_id is None and run_id is None:
            return self.personal.clear_user_memory(user_id).memories_removed
        scope = {k: v for k, v in (("agent_id", agent_id), ("run_id", run_id)) if v is not None}
        doomed = [r for r in self.personal.memories(user_id) if all(getattr(r, k) == v for k, v in scope.items())]
        for record in doomed:
            self._tool("delete", user_id, memory_id=record.id)
        return len(doomed)

    def batch(self, action: str, entries: Any) -> int:
        """batch update or delete: [{memory_id, text?}], at most MAX_MEMORY_BATCH; how many were done."""
        if not isinstance(entries, list) or not 1 <= len(entries) <= MAX_MEMORY_BATCH or \
                not all(isinstance(e, dict) and "memory_id" in e for e in entries):
            raise InvalidInput(f"memories must be a list of 1 to {MAX_MEMORY_BATCH} objects with a memory_id")
        for entry in entries:
            if action == "update":
                self.update(entry["memory_id"], entry.get("text"), entry.get("metadata"))
            else:
                self.delete(entry["memory_id"])
        return len(entries)

    def delete_entity(self, kind: str, name: str, user_id: str | None = None) -> int:
        """A user (all of its memory), or an agent's or a run's memories within one user."""
        if kind not in ENTITY_TYPES:
            raise InvalidInput(f"entity type must be one of {', '.join(ENTITY_TYPES)}")
        if kind == "user":
            return self.delete_all(name)
        if not user_id:
            raise InvalidInput(f"deleting a {kind} needs ?user_id=: memories are kept per user")
        return self.delete_all(user_id, **{f"{kind}_id": name})

    # --- reads ------------------------------------------------------------------------------
    def get(self, ref: str) -> dict[str, Any]:
        user_id, number = parse_memory_ref(ref)
        record = self.personal.memory(user_id, number)
        if record is None:
            raise NotFound("Memory not found!")
        return memory_shape(record)

    def search(self, query: Any, filters: Any, top_k: int = 10, threshold: float | None = None) -> list[dict]:
        """The memory tool's search for each user the filter names, merged by score; memories
        the rest of the filter rules out are dropped, and those scoring under `threshold`."""
        chosen, top_k = parse_filters(filters), check_top_k(top_k, MAX_TOP_K_MEMORIES)
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))):
            raise InvalidInput("threshold must be a number")
        if not isinstance(query, str):
            raise InvalidInput("query must be a text")
        found = []
        for user_id in chosen.users:
            # a filter the store cannot apply whole is applied to a longer list
            wanted = top_k if chosen.pushed_down else MAX_TOP_K_MEMORIES
            hits = self.personal.tool.search(checked_user_id(user_id), query, wanted, chosen.scope, chosen.metadata)
            found += [memory_shape(h.record, round(h.score, 4)) for h in hits if chosen.matches(h.record)]
        found.sort(key=lambda m: -m["score"])
        return [m for m in found if threshold is None or m["score"] >= threshold][:top_k]

    def get_all(self, filters: Any, page: int = 1, page_size: int = 100) -> tuple[int, list[dict[str, Any]]]:
        """(how many match, this page of them), oldest first."""
        chosen = parse_filters(filters)
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in (page, page_size)) or page < 1 \
                or not 1 <= page_size <= MAX_PAGE_SIZE:
            raise InvalidInput(f"page must be 1 or more and page_size 1 to {MAX_PAGE_SIZE}")
        matched = [r for user_id in chosen.users for r in self.personal.memories(user_id) if chosen.matches(r)]
        start = (page - 1) * page_size
        return len(matched), [memory_shape(r) for r in matched[start:start + page_size]]

    def history(self, ref: str) -> list[dict[str, Any]]:
        user_id, number = parse_memory_ref(ref)
        entries = self._tool("history", user_id, memory_id=number).entries
        if not entries:
            raise NotFound("Memory not found!")
        record = self.personal.memory(user_id, number)
        scope = {"agent_id": record.agent_id, "run_id": record.run_id} if record else {}
        return [history_shape(user_id, e, n, scope) for n, e in enumerate(entries, 1)]

    def entities(self, user_id: str | None = None) -> list[dict[str, Any]]:
        """mem0's entities: each user (or only `user_id`), and the agents and runs within them."""
        merged: dict[tuple[str, str], dict[str, Any]] = {}
        for row in self.personal.entities(user_id):
            for kind in ENTITY_TYPES:
                name = getattr(row, f"{kind}_id")
                if name is None:
                    continue
                key = (kind, name if kind == "user" else f"{row.user_id}/{name}")
                entity = merged.setdefault(key, {"id": key[1], "name": name, "type": kind, "owner": row.user_id,
                                                 "total_memories": 0, "created_at": row.created_at,
                                                 "updated_at": row.updated_at, "metadata": None})
                entity["total_memories"] += row.count
                entity["created_at"] = min(entity["created_at"], row.created_at)
                entity["updated_at"] = max(entity["updated_at"], row.updated_at)
        return [{**e, "created_at": iso(e["created_at"]), "updated_at": iso(e["updated_at"])}
                for e in merged.values()]

    def event(self, ref: str) -> dict[str, Any]:
        """An asynchronous add's status (PENDING, RUNNING, SUCCEEDED, FAILED) and, once written,
        what each message became (nothing for one the privacy filter left out)."""
        user_id, items = parse_event_ref(ref)
        states = [self.personal.queued_write(user_id, item) for item in items]
        if None in states:
            raise NotFound("Event not found or you don't have permission to access it.")
        statuses = {_EVENT_STATUS.get(s.status, "RUNNING" if s.held else "PENDING") for s in states}
        status = next(s for s in ("FAILED", "RUNNING", "PENDING", "SUCCEEDED") if s in statuses)
        results = []
        for state in states:
            written = (state.decision or {}).get("memory_id")
            record = self.personal.memory(user_id, written) if isinstance(written, int) else None
            if record is not None:
                event = MEM0_EVENTS.get(state.decision.get("action"), "ADD")
                results.append(added_shape(user_id, record.id, record.memory, event))
        errors = [s.error for s in states if s.status == "failed" and s.error]
        created = iso(min(s.observed_at for s in states))
        return {"id": ref, "event_type": "ADD", "status": status, "results": results,
                "payload": {"user_id": user_id}, "metadata": None, "created_at": created, "updated_at": created,
                "error": "; ".join(errors) or None}

    def _owned(self, ref: str) -> tuple[str, int]:
        """The user and number of a memory that exists; NotFound otherwise."""
        user_id, number = parse_memory_ref(ref)
        if self.personal.memory(user_id, number) is None:
            raise NotFound("Memory not found!")
        return user_id, number


def _message_texts(messages: Any) -> list[str]:
    """What to remember of mem0's messages: a text, one {role, content} or a list of them (system
    messages are instructions, not memories)."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        raise InvalidInput("messages must be a text, or a list of {role, content} with text content")
    if len(messages) > MAX_MEMORY_BATCH:
        raise InvalidInput(f"at most {MAX_MEMORY_BATCH} messages per add")
    texts = [m["content"] for m in messages if m.get("role") != "system"]
    if not texts:
        raise InvalidInput("no user or assistant message to remember")
    return texts
