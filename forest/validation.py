"""Checks every face's input goes through before it reaches the engine (one clear message each)."""
from __future__ import annotations

import json
import math
import re
import unicodedata
from datetime import date, datetime, time, timezone
from typing import Any

from forest.errors import InvalidInput, mask_keys
from forest.redaction import redact, redact_metadata, secret_format
from forest.text import single_line
from forest.limits import (
    MAX_ID, MAX_INT_DIGITS, MAX_JSON_DEPTH, MAX_MEMORY_CHARS, MAX_METADATA_KEYS, MAX_MODEL_ID, MAX_NAME_CHARS,
    MAX_QUERY_CHARS, MAX_SCOPE_ID, MAX_SESSION_ID)

# Letters and digits of any script, and . _ - : @ (no space, slash or markup).
_MODEL_ID = re.compile(rf"[\w.:@-]{{1,{MAX_MODEL_ID}}}")
MODEL_ID_RULE = f"letters, digits and . _ - : @ (1-{MAX_MODEL_ID} characters; no spaces or slashes)"
_SCOPE_ID = re.compile(rf"[\w.:@/-]{{1,{MAX_SCOPE_ID}}}")
SCOPE_ID_RULE = f"1-{MAX_SCOPE_ID} letters, digits or . : @ / - _"
_RELATIVE = re.compile(r"^\s*(?:last\s+)?(\d+(?:\.\d+)?)\s*(m|min|minutes?|h|hours?|d|days?|w|weeks?)\s*$", re.I)
_UNIT_SECONDS = {"m": 60.0, "h": 3600.0, "d": 86_400.0, "w": 7 * 86_400.0}
TIME_RANGE_HELP = ("a relative span such as '24h', '7d', '2w' (up to now), or 'START..END' with ISO dates "
                   "or datetimes, either side optional ('2026-11-01..', '..2026-11-15T12:00')")
_METADATA_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def in_id_range(value: int) -> bool:
    """Whether `value` could be a stored row's id (a larger int cannot even be bound to SQLite)."""
    return isinstance(value, int) and 1 <= value <= MAX_ID


def check_model_id(model_id: str) -> str:
    """A tenant's name: an identifier that reads the same in a URL, a command line and a log."""
    _check_name(model_id, "model_id", MAX_MODEL_ID)
    check_not_secret(model_id, "model_id")
    if not _MODEL_ID.fullmatch(model_id):
        raise InvalidInput(f"model_id {model_id[:60]!r} is not a name: it may hold {MODEL_ID_RULE}")
    return model_id


def check_session_id(session_id: str) -> str:
    return _check_name(session_id, "session_id", MAX_SESSION_ID)


def _check_name(value: str, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{what} is required")
    if len(value) > limit:
        raise InvalidInput(f"{what} has {len(value):,} characters; it must be at most {limit}")
    if not value.isprintable():
        raise InvalidInput(f"{what} must be printable text: no tabs, line breaks or other control characters")
    return value


def archive_name(name: str) -> str:
    """An archive's name as stored: one line (a title's line breaks and tabs become spaces) of at
    most MAX_NAME_CHARS, so that every archive can be exported and imported again."""
    name = single_line(name)
    if not name:
        raise InvalidInput("the archive needs a name")
    if len(name) > MAX_NAME_CHARS:
        raise InvalidInput(f"the archive name has {len(name):,} characters; it must be at most {MAX_NAME_CHARS:,}")
    if any(unicodedata.category(c) == "Cc" for c in name):
        raise InvalidInput("the archive name must be text without control characters")
    return name


def check_scope_id(value: str, what: str) -> str:
    """A user_id (required)."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(f"{what} is required")
    return _scope_id(value, what)


def check_optional_scope_id(value: str | None, what: str) -> str | None:
    """An agent_id or run_id: absent, or an id like a user_id."""
    return None if value is None else _scope_id(value, what)


def _scope_id(value: str, what: str) -> str:
    # fullmatch: a trailing line break is not part of an id
    if not isinstance(value, str) or not _SCOPE_ID.fullmatch(value):
        raise InvalidInput(f"{what} must be {SCOPE_ID_RULE}")
    return check_not_secret(value, what)


def check_not_secret(value: str, what: str) -> str:
    """Ids are stored, logged, shown and compared in clear, so one that holds a secret by its
    format (a provider's key, a 40-character AWS secret, a token, a card number) is refused rather
    than stored or redacted into another id, and the message does not repeat it."""
    if kind := secret_format(value):
        raise InvalidInput(f"{what} looks like a secret ({kind}): ids are stored in clear, never put a secret in one")
    return value


def check_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Free keys stored with a memory: identifiers mapped to strings, numbers or booleans."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or len(metadata) > MAX_METADATA_KEYS:
        raise InvalidInput(f"metadata must be an object of at most {MAX_METADATA_KEYS} keys")
    for key, value in metadata.items():
        if not isinstance(key, str) or not _METADATA_KEY.fullmatch(key) \
                or not isinstance(value, (str, int, float, bool)):
            raise InvalidInput(f"metadata key {_shown(key)}: keys are identifiers, values strings, numbers or booleans")
        if isinstance(value, str):
            check_unicode(value, f"metadata key {_shown(key)}")
    return metadata


def _shown(key: Any) -> str:
    """A metadata key as a message may repeat it: cut, and never a key-shaped secret."""
    return repr(mask_keys(str(key)[:64]) if isinstance(key, str) else key)


def check_top_k(top_k: int, limit: int) -> int:
    if not isinstance(top_k, int) or not 1 <= top_k <= limit:
        raise InvalidInput(f"top_k must be between 1 and {limit}, got {top_k!r}")
    return top_k


SEARCH_MODES = ("vector", "bm25", "hybrid")


def check_search_mode(mode: str) -> str:
    if mode not in SEARCH_MODES:
        raise InvalidInput(f"search mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    return mode


def check_budget(tokens: int) -> int:
    if tokens < 1:
        raise InvalidInput(f"the token budget must be positive, got {tokens}")
    return tokens


def check_threshold(threshold: float, what: str = "relevance score") -> float:
    """A 0-1 score (relevance, similarity)."""
    if not 0 <= threshold <= 1:
        raise InvalidInput(f"threshold is a 0-1 {what}, got {threshold}")
    return threshold


def check_query(query: str) -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"the query has {len(query):,} characters, over the limit of {MAX_QUERY_CHARS:,}")
    return check_unicode(query, "the query")


def check_text(text: str, what: str, limit: int) -> str:
    """Non-empty text of at most `limit` characters, stripped."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidInput(f"the {what} is empty")
    if len(text) > limit:
        raise InvalidInput(f"the {what} has {len(text):,} characters, over the limit of {limit:,}")
    return check_unicode(text, f"the {what}").strip()


def check_unicode(text: str, what: str) -> str:
    """Text that can be stored and sent: no lone surrogate (U+D800..U+DFFF), which JSON's \\u escapes
    and Python strings can hold but UTF-8, SQLite and every client refuse."""
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInput(f"{what} holds a lone surrogate (U+{ord(text[exc.start]):04X}) at character "
                               f"{exc.start + 1:,}: it is not text") from None
    return text


def parse_time_range(text: str | None, now: float) -> tuple[float | None, float | None]:
    """(since, until) in Unix seconds from TIME_RANGE_HELP's forms; (None, None) for no range."""
    if text is None or not text.strip():
        return None, None
    relative = _RELATIVE.match(text)
    if relative:
        amount, unit = float(relative.group(1)), relative.group(2)[0].lower()
        return now - amount * _UNIT_SECONDS[unit], None
    if ".." not in text:
        raise InvalidInput(f"time_range {text!r} is not understood: use {TIME_RANGE_HELP}")
    start, end = (part.strip() for part in text.split("..", 1))
    since = _instant(start, end_of_day=False) if start else None
    until = _instant(end, end_of_day=True) if end else None
    if since is not None and until is not None and since > until:
        raise InvalidInput(f"time_range {text!r} ends before it starts")
    return since, until


def _instant(text: str, end_of_day: bool) -> float:
    """An ISO date (the whole day counts) or datetime (UTC unless it says otherwise)."""
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime.combine(day, time.max if end_of_day else time.min, tzinfo=timezone.utc)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
    except ValueError:
        raise InvalidInput(f"{text!r} in time_range is not an ISO date or datetime ({TIME_RANGE_HELP})") from None
    return moment.timestamp()


def parse_json(raw: bytes | str, what: str, strict: bool = True) -> Any:
    """`raw` parsed as standard JSON (no NaN, Infinity or number out of a float's range, no integer
    over MAX_INT_DIGITS digits, no lone surrogate in a string) nested at most MAX_JSON_DEPTH deep;
    InvalidInput naming `what` otherwise. `strict=False` lets raw control characters stand inside
    strings (json.loads' own switch), nothing more."""
    try:
        value = json.loads(raw, strict=strict, parse_constant=_refuse_constant, parse_int=_bounded_int,
                           parse_float=_finite_float)
    except RecursionError:
        raise InvalidInput(f"{what} nests deeper than {MAX_JSON_DEPTH} levels") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"{what} is not JSON ({exc})") from None
    _check_tree(value, what)
    return value


def _bounded_int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise InvalidInput(f"an integer of {len(digits.lstrip('-')):,} digits is not a number any call takes "
                           f"(at most {MAX_INT_DIGITS})")
    return int(digits)


def _finite_float(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise InvalidInput(f"{text[:40]} is out of a number's range")
    return number


def _refuse_constant(name: str) -> Any:
    raise InvalidInput(f"{name} is not a JSON number")


def _check_tree(value: Any, what: str) -> None:
    """Lists and objects nest at most MAX_JSON_DEPTH deep and every string (key or value) is text;
    walked without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            check_unicode(item, f"a string in {what}")
            continue
        children = list(item.items()) if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > MAX_JSON_DEPTH:
            raise InvalidInput(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
        for child in children:
            if isinstance(child, tuple):   # an object's (key, value)
                stack.extend(((child[0], depth), (child[1], depth + 1)))
            else:
                stack.append((child, depth + 1))


# --- personal memory: its ids, texts and metadata --------------------------------------------


def checked_text(text: str, what: str) -> str:
    """A text personal memory takes (input, memory, query): checked, then its secrets redacted."""
    return redact(check_text(text, what, MAX_MEMORY_CHARS)).text


def checked_user_id(user_id: str) -> str:
    return check_scope_id(user_id, "user_id")


def checked_scope(agent_id: str | None, run_id: str | None) -> dict[str, str | None]:
    return {"agent_id": check_optional_scope_id(agent_id, "agent_id"),
            "run_id": check_optional_scope_id(run_id, "run_id")}


def checked_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """Checked metadata, its text values redacted (a key is an identifier, a value free text)."""
    metadata = check_metadata(metadata)
    for key in metadata:
        check_not_secret(key, "a metadata key")   # named, not repeated: the message reaches /calls and logs
    return redact_metadata(metadata)
