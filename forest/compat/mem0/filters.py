"""mem0's `filters` (platform v2/v3 and the open-source Memory): entity ids and metadata keys,
each a value, "*" (any value) or {operator: value}; AND / OR / NOT lists of such filters.

Memories are kept per user, so a filter must name the user(s) it reads: a user_id value, or
several with `in` (or OR). The filter is then a predicate on each of those users' memories; the
plain equalities of its top level are also handed to the store, so a simple filter reads no more
than it returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forest.errors import InvalidInput
from forest.personal.records import PersonalMemoryRecord
from forest.limits import MAX_FILTER_DEPTH

ENTITY_KEYS = ("user_id", "agent_id", "run_id")
UNSUPPORTED_KEYS = ("app_id", "org_id", "project_id")
OPERATORS = ("eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "contains", "icontains")
LOGIC = ("AND", "OR", "NOT")


@dataclass(frozen=True)
class Mem0Filter:
    tree: dict[str, Any]
    users: tuple[str, ...]
    # the top level's plain equalities, which the store can apply itself
    scope: dict[str, str | None] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    # True when the store's filtering is the whole filter (no predicate left to apply)
    pushed_down: bool = False

    def matches(self, record: PersonalMemoryRecord) -> bool:
        return _matches(self.tree, record)


def parse_filters(filters: Any, **entities: str | None) -> Mem0Filter:
    """The filter, with entity ids given beside it (mem0's older top-level user_id, agent_id,
    run_id) folded in. InvalidInput names what is wrong in one line."""
    if filters is None:
        filters = {}
    if not isinstance(filters, dict):
        raise InvalidInput("filters must be a JSON object")
    given = {key: value for key, value in entities.items() if value is not None}
    tree = {"AND": [filters, given]} if filters and given else (filters or given)
    _check(tree, 0)
    users = _users(tree)
    if not users:
        raise InvalidInput("filters must name the user_id (a value, or several with \"in\"): memories are kept "
                           "per user")
    pairs, branching = _conjunction(tree)
    plain = [(key, value) for key, value in pairs if key != "metadata"]
    plain += [(key, value) for k, inner in pairs if k == "metadata" for key, value in inner.items()]
    scope = {key: value for key, value in plain if key in ("agent_id", "run_id") and _plain(value)}
    metadata = {key: value for key, value in plain if key not in ENTITY_KEYS and _plain(value)}
    pushed = not branching and all(_plain(value) for _, value in plain)
    return Mem0Filter(tree, tuple(sorted(users)), scope, metadata, pushed)


def _check(node: Any, depth: int) -> None:
    if depth > MAX_FILTER_DEPTH:
        raise InvalidInput(f"filters nest deeper than {MAX_FILTER_DEPTH} levels")
    if not isinstance(node, dict):
        raise InvalidInput("each filter in AND / OR / NOT must be a JSON object")
    for key, value in node.items():
        if key in LOGIC:
            if not isinstance(value, list) or not value:
                raise InvalidInput(f"{key} takes a non-empty list of filters")
            for child in value:
                _check(child, depth + 1)
        elif key in UNSUPPORTED_KEYS:
            raise InvalidInput(f"{key} is not supported: memories are scoped by user_id, agent_id and run_id")
        elif key == "metadata":
            if not isinstance(value, dict):
                raise InvalidInput("the metadata filter must be a JSON object of keys and values")
            for inner in value.values():
                _check_condition(inner)
        else:
            _check_condition(value)


def _check_condition(value: Any) -> None:
    if not isinstance(value, dict):
        return
    for operator, operand in value.items():
        if operator not in OPERATORS:
            raise InvalidInput(f"unknown filter operator {operator!r}: use one of {', '.join(OPERATORS)}")
        if operator in ("in", "nin") and not isinstance(operand, list):
            raise InvalidInput(f"{operator} takes a list of values")


def _users(node: dict[str, Any]) -> set[str] | None:
    """The users a filter can match: None when it leaves the user open (then it reads everyone's)."""
    found: set[str] | None = None
    for key, value in node.items():
        if key == "AND":
            for child in value:
                found = _meet(found, _users(child))
        elif key == "OR":
            branches = [_users(child) for child in value]
            found = _meet(found, None if any(b is None for b in branches) else set().union(*branches))
        elif key == "user_id":
            if isinstance(value, str) and value != "*":
                found = _meet(found, {value})
            elif isinstance(value, dict) and set(value) <= {"eq", "in"}:
                allowed = set(value.get("in", [])) if "in" in value else {value["eq"]}
                if "in" in value and "eq" in value:
                    allowed &= {value["eq"]}
                found = _meet(found, {u for u in allowed if isinstance(u, str)})
    return found


def _meet(known: set[str] | None, more: set[str] | None) -> set[str] | None:
    if more is None:
        return known
    return more if known is None else known & more


def _conjunction(node: dict[str, Any]) -> tuple[list[tuple[str, Any]], bool]:
    """The top level's (key, condition) pairs, a top-level AND's members included, and whether an
    OR or NOT sits among them. Every pair must hold, so handing the plain ones to the store narrows
    what it reads without losing a match."""
    pairs = [(key, value) for key, value in node.items() if key not in LOGIC]
    branching = "OR" in node or "NOT" in node
    for child in node.get("AND", []):
        more, inner = _conjunction(child)
        pairs, branching = pairs + more, branching or inner
    return pairs, branching


def _plain(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and value != "*"


def _matches(node: dict[str, Any], record: PersonalMemoryRecord) -> bool:
    for key, value in node.items():
        if key == "AND":
            ok = all(_matches(child, record) for child in value)
        elif key == "OR":
            ok = any(_matches(child, record) for child in value)
        elif key == "NOT":
            ok = not any(_matches(child, record) for child in value)
        elif key == "metadata":
            ok = all(_holds(record.metadata.get(k, _MISSING), v) for k, v in value.items())
        elif key in ENTITY_KEYS:
            ok = _holds(getattr(record, key), value)
        else:
            ok = _holds(record.metadata.get(key, _MISSING), value)
        if not ok:
            return False
    return True


_MISSING = object()


def _holds(actual: Any, condition: Any) -> bool:
    if condition == "*":
        return actual is not _MISSING and actual is not None
    if not isinstance(condition, dict):
        return actual == condition
    return all(_operator(actual, operator, operand) for operator, operand in condition.items())


def _operator(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "eq":
        return actual == operand
    if operator == "ne":
        return actual != operand
    if operator == "in":
        return actual in operand
    if operator == "nin":
        return actual not in operand
    if actual is _MISSING or actual is None:
        return False
    if operator in ("contains", "icontains"):
        text, part = str(actual), str(operand)
        return part.lower() in text.lower() if operator == "icontains" else part in text
    try:
        return {"gt": actual > operand, "gte": actual >= operand, "lt": actual < operand,
                "lte": actual <= operand}[operator]
    except TypeError:  # a number against a text: no match, as a database would not match it either
        return False
