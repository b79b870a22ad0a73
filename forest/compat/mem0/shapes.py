"""mem0's shapes for the engine's records: memory, history and event ids as strings, memories and
history rows as mem0 returns them (docs/openapi.json of mem0ai/mem0).

A memory id names its user: "<memory number>.<user_id, base64url>". mem0's get, update, delete and
history take the id alone, with no user; an id that carries its user reaches that user's memory
and no other (a number alone would reach any user's). The other faces show the number."""
from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from forest.errors import InvalidInput
from forest.personal.records import HistoryEntry, PersonalMemoryRecord

_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
_ID_SHAPE = "ids on this server are '<number>.<user>' as add, search and get_all return them"


def _user_part(user_id: str) -> str:
    return base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")


def _user_of(part: str, ref: str) -> str:
    if not _BASE64URL.fullmatch(part):  # b64decode would skip other characters, not refuse them
        raise InvalidInput(f"{ref!r} is not a memory id of this server: {_ID_SHAPE}")
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput(f"{ref!r} is not a memory id of this server: {_ID_SHAPE}") from None


def memory_ref(user_id: str, memory_id: int) -> str:
    return f"{memory_id}.{_user_part(user_id)}"


def parse_memory_ref(ref: str) -> tuple[str, int]:
    """(user_id, memory number) of a memory id; InvalidInput if it is not one."""
    number, _, part = str(ref).partition(".")
    if not number.isdigit() or not part:
        raise InvalidInput(f"{ref!r} is not a memory id of this server: {_ID_SHAPE}")
    return _user_of(part, ref), int(number)


def event_ref(user_id: str, item_ids: list[int]) -> str:
    """An asynchronous add's event: the queue items it made, and their user."""
    return f"{'-'.join(map(str, item_ids))}.{_user_part(user_id)}"


def parse_event_ref(ref: str) -> tuple[str, list[int]]:
    numbers, _, part = str(ref).partition(".")
    items = numbers.split("-")
    if not part or not all(i.isdigit() for i in items):
        raise InvalidInput(f"{ref!r} is not an event id of this server")
    return _user_of(part, ref), [int(i) for i in items]


def memory_shape(record: PersonalMemoryRecord, score: float | None = None) -> dict[str, Any]:
    """A memory as mem0 shows it. The run is both run_id (mem0's open-source Memory) and
    session_id (its platform)."""
    row = record.to_dict()
    shaped = {"id": memory_ref(row["user_id"], row["id"]), "memory": row["memory"], "user_id": row["user_id"],
              "agent_id": row["agent_id"], "run_id": row["run_id"], "session_id": row["run_id"], "app_id": None,
              "metadata": row["metadata"] or None, "categories": [], "created_at": row["created_at"],
              "updated_at": row["updated_at"]}
    if score is not None:
        shaped["score"] = score
    return shaped


def history_shape(user_id: str, history: HistoryEntry, number: int, scope: dict[str, Any]) -> dict[str, Any]:
    """A memory tool history entry as mem0's history row: old and new memory, the event (ADD,
    UPDATE, DELETE), who did it and when. A deleted memory's words are erased: both are then ""."""
    entry = history.to_dict()
    return {"id": f"{memory_ref(user_id, entry['memory_id'])}.h{number}",
            "memory_id": memory_ref(user_id, entry["memory_id"]), "input": [],
            "old_memory": entry["old_value"], "new_memory": entry["new_value"] or "", "user_id": user_id,
            "agent_id": scope.get("agent_id"), "run_id": scope.get("run_id"), "session_id": scope.get("run_id"),
            "app_id": None, "categories": [], "event": entry["event"], "actor_id": entry["actor"],
            "role": None, "metadata": {"reason": entry["reason"]} if entry.get("reason") else None,
            "is_deleted": entry["event"] == "DELETE", "created_at": entry["created_at"],
            "updated_at": entry["created_at"]}


def added_shape(user_id: str, memory_id: int, memory: str, event: str) -> dict[str, Any]:
    """One result of an add: mem0's open-source Memory has "memory", its platform "data"."""
    return {"id": memory_ref(user_id, memory_id), "memory": memory, "data": {"memory": memory}, "event": event}
